/* recent.c: what a Secondary applied lately, so that when its Primary is
 * lost the replicas left can make their in-flight writes agree.
 *
 * A write from the Primary that was in flight when it died may have
 * reached one Secondary and not another; nobody acknowledged it, but the
 * replicas must still end equal.  Each Secondary marks the regions it
 * applies in two in-memory bitmaps that take turns (epochs); the Primary's
 * peer-ack (a PING whose seq says "every write below this is on every
 * replica") retires the older epoch.  (A write the Primary's own disk
 * failed is on every replica only once it gave the peers its data there
 * back: replicate.c's struct agree holds the peer-ack below it until
 * then.)  When a new Primary is promoted after
 * losing the old one, it resyncs its own recent regions to the others and
 * each of them asks (RS_REQUEST) for its own recent regions: the union is
 * made equal, from the new Primary.  The regions asked for stay in a third
 * bitmap until that Primary answers the PING sent after them (its
 * PING_ACK echoes the seq): asks lost with a link that broke are asked
 * again at the next connection to a Primary, the same one included (sim
 * seed 41157 with --inline: a region never resynced, the replicas
 * different).  Memory only: a Secondary that itself crashes resyncs by
 * the generations anyway.  Loop thread only. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "meta.h"
#include "peer.h"
#include "util.h"

struct recent {
	uint64_t *bm[3];		/* two epochs, then what was asked for */
	uint64_t max_seq[2];
	unsigned cur;
	size_t words;
	uint64_t ask_seq;		/* the PING after the asks; 0: none pending */
	uint64_t asks;			/* PINGs sent after asks so far */
	unsigned asked_idx;		/* of the peer asked */
};

#define ASKED 2

static void free_recent(struct recent *r)
{
	for (unsigned i = 0; i < ARRAY_SIZE(r->bm); i++)
		free(r->bm[i]);
	free(r);
}

/* The bitmaps follow the volume when it grows: the words it had keep
 * their bits, the new ones start clear. */
static int recent_grow(struct recent *r, size_t words)
{
	for (unsigned i = 0; i < ARRAY_SIZE(r->bm); i++) {
		uint64_t *bm = realloc(r->bm[i], words * 8);
		if (!bm)
			return -ENOMEM;
		memset(bm + r->words, 0, (words - r->words) * 8);
		r->bm[i] = bm;
	}
	r->words = words;
	return 0;
}

static struct recent *recent_get(struct repl_volume *vol)
{
	struct recent *r = vol->recent;
	size_t words = (size_t)DIV_ROUND_UP(meta_regions(vol->meta), 64);

	if (r && r->words < words && recent_grow(r, words) < 0)
		return NULL;
	if (r)
		return r;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->words = words;
	for (unsigned i = 0; i < ARRAY_SIZE(r->bm); i++) {
		if (!(r->bm[i] = calloc(words, 8))) {
			free_recent(r);
			return NULL;
		}
	}
	vol->recent = r;
	return r;
}

void repl__recent_note(struct repl_volume *vol, uint64_t seq, uint64_t off, uint64_t len)
{
	struct recent *r = recent_get(vol);
	unsigned shift = meta_get(vol->meta)->region_shift;

	if (!r || !len)
		return;
	for (uint64_t b = off >> shift; b <= (off + len - 1) >> shift; b++)
		r->bm[r->cur][b / 64] |= UINT64_C(1) << (b % 64);
	r->max_seq[r->cur] = MAX(r->max_seq[r->cur], seq);
}

/* The Primary says every write below seq is everywhere: an epoch whose
 * writes are all below it is forgotten, and the other one starts anew. */
void repl__recent_peer_ack(struct repl_volume *vol, uint64_t seq)
{
	struct recent *r = vol->recent;
	unsigned prev;

	if (!r)
		return;
	prev = r->cur ^ 1;
	if (r->max_seq[prev] >= seq)
		return;
	memset(r->bm[prev], 0, r->words * 8);
	r->max_seq[prev] = 0;
	r->cur = prev;
}

/* Calls fn for each recent region (both epochs, and what was asked for
 * unconfirmed), as a byte range. */
static void recent_each(struct repl_volume *vol,
			void (*fn)(struct repl_volume *vol, void *arg, uint64_t off, uint64_t len),
			void *arg)
{
	struct recent *r = vol->recent;
	uint64_t rsz = UINT64_C(1) << meta_get(vol->meta)->region_shift;

	for (size_t w = 0; r && w < r->words; w++) {
		uint64_t bits = r->bm[0][w] | r->bm[1][w] | r->bm[ASKED][w];
		while (bits) {
			unsigned b = (unsigned)__builtin_ctzll(bits);
			uint64_t off = ((uint64_t)w * 64 + b) * rsz;
			bits &= bits - 1;
			if (off < vol->size)
				fn(vol, arg, off, MIN(rsz, vol->size - off));
		}
	}
}

static void mark_for_peer(struct repl_volume *vol, void *arg, uint64_t off, uint64_t len)
{
	meta_bits_set_range(vol->meta, ((struct peer *)arg)->idx, off, len);
}

static void ask_peer(struct repl_volume *vol, void *arg, uint64_t off, uint64_t len)
{
	struct wire_msg m = { .type = WIRE_RS_REQUEST };

	m.u.range = (struct wire_range){ off, len, 0 };
	repl__peer_send_msg(arg, &m);
}

/* What was asked for is answered, or was asked for in another way. */
static void forget_asks(struct recent *r)
{
	memset(r->bm[ASKED], 0, r->words * 8);
	r->ask_seq = 0;
}

/* The epochs start over; with asked, what was asked for goes too. */
static void forget(struct repl_volume *vol, bool asked)
{
	struct recent *r = vol->recent;

	if (!r)
		return;
	memset(r->bm[0], 0, r->words * 8);
	memset(r->bm[1], 0, r->words * 8);
	r->max_seq[0] = r->max_seq[1] = 0;
	if (asked)
		forget_asks(r);
}

/* The Primary asked has read every ask sent before this PING. */
void repl__recent_ping_acked(struct peer *p, uint64_t seq)
{
	struct recent *r = p->vol->recent;

	if (r && r->ask_seq && seq == r->ask_seq && p->idx == r->asked_idx)
		forget_asks(r);
}

/* The new Primary, its old one lost: our recent regions go to every
 * connected peer. */
static void count(struct repl_volume *vol, void *arg, uint64_t off, uint64_t len)
{
	(*(uint64_t *)arg)++;
}

void repl__recent_after_promotion(struct repl_volume *vol)
{
	uint64_t n = 0;

	recent_each(vol, count, &n);
	plog(LOG_NOTICE, vol->name, "promoted after losing the Primary: %llu recent "
	     "region(s) here are resynced to the other replicas", (unsigned long long)n);
	/* Every peer, connected or not (one reconnecting after the promotion
	 * gets them through its bitmap resync). */
	for (unsigned i = 0; i < vol->n_peers; i++)
		recent_each(vol, mark_for_peer, vol->peers[i]);
	meta_bitmap_flush(vol->meta);
	for (unsigned i = 0; i < vol->n_peers; i++) {
		struct peer *p = vol->peers[i];
		if (repl__peer_up(p) && p->link == REPL_LINK_CONNECTED &&
		    meta_bits_count(vol->meta, p->idx))
			repl__rs_start_source(p, false);
	}
	forget(vol, true);
}

/* A Secondary whose old Primary is gone hears of a new one: it asks for
 * its own recent regions, and for those it asked for before without an
 * answer.  The Primary it lost, back, has our recent writes (its own) and
 * its bitmap: it is asked only when asks are unanswered, and then for
 * those and the recent regions alike. */
void repl__recent_ask(struct peer *new_primary)
{
	struct repl_volume *vol = new_primary->vol;
	struct recent *r = recent_get(vol);
	struct wire_msg ping = { .type = WIRE_PING };
	uint64_t n = 0;

	if (!r)
		return;
	if (new_primary->idx == vol->lost_primary_idx && !r->ask_seq)
		return;
	if (new_primary->idx != vol->lost_primary_idx) {
		for (size_t w = 0; w < r->words; w++)
			r->bm[ASKED][w] |= r->bm[0][w] | r->bm[1][w];
		forget(vol, false);
	}
	recent_each(vol, count, &n);
	plog(LOG_NOTICE, vol->name, "the Primary was lost: asking %s to resync the %llu "
	     "region(s) this replica applied last", new_primary->node, (unsigned long long)n);
	recent_each(vol, ask_peer, new_primary);
	r->asked_idx = new_primary->idx;
	r->ask_seq = ping.seq = WIRE_PING_ECHO_BIT | ++r->asks;
	repl__peer_send_msg(new_primary, &ping);
}

void repl__recent_free(struct repl_volume *vol)
{
	struct recent *r = vol->recent;

	if (!r)
		return;
	free_recent(r);
	vol->recent = NULL;
}
