/* recent.c: what a Secondary applied lately, so that when its Primary is
 * lost the replicas left can make their in-flight writes agree.
 *
 * A write from the Primary that was in flight when it died may have
 * reached one Secondary and not another; nobody acknowledged it, but the
 * replicas must still end equal.  Each Secondary marks the regions it
 * applies in two in-memory bitmaps that take turns (epochs); the Primary's
 * peer-ack (a PING whose seq says "every write below this is on every
 * replica") retires the older epoch.  When a new Primary is promoted after
 * losing the old one, it resyncs its own recent regions to the others and
 * each of them asks (RS_REQUEST) for its own recent regions: the union is
 * made equal, from the new Primary.  Memory only: a Secondary that itself
 * crashes resyncs by the generations anyway.  Loop thread only. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "meta.h"
#include "peer.h"
#include "util.h"

struct recent {
	uint64_t *bm[2];
	uint64_t max_seq[2];
	unsigned cur;
	size_t words;
};

/* The bitmaps follow the volume when it grows: the words it had keep
 * their bits, the new ones start clear. */
static int recent_grow(struct recent *r, size_t words)
{
	for (unsigned i = 0; i < 2; i++) {
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
	r->bm[0] = calloc(words, 8);
	r->bm[1] = calloc(words, 8);
	if (!r->bm[0] || !r->bm[1]) {
		free(r->bm[0]);
		free(r->bm[1]);
		free(r);
		return NULL;
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

/* Calls fn for each recent region (both epochs), as a byte range. */
static void recent_each(struct repl_volume *vol,
			void (*fn)(struct repl_volume *vol, void *arg, uint64_t off, uint64_t len),
			void *arg)
{
	struct recent *r = vol->recent;
	uint64_t rsz = UINT64_C(1) << meta_get(vol->meta)->region_shift;

	for (size_t w = 0; r && w < r->words; w++) {
		uint64_t bits = r->bm[0][w] | r->bm[1][w];
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

static void forget(struct repl_volume *vol)
{
	struct recent *r = vol->recent;

	if (!r)
		return;
	memset(r->bm[0], 0, r->words * 8);
	memset(r->bm[1], 0, r->words * 8);
	r->max_seq[0] = r->max_seq[1] = 0;
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
	forget(vol);
}

/* A Secondary whose old Primary is gone hears of a new one: it asks for
 * its own recent regions. */
void repl__recent_ask(struct peer *new_primary)
{
	struct repl_volume *vol = new_primary->vol;
	uint64_t n = 0;

	recent_each(vol, count, &n);
	plog(LOG_NOTICE, vol->name, "the Primary was lost: asking %s to resync the %llu "
	     "region(s) this replica applied last", new_primary->node, (unsigned long long)n);
	recent_each(vol, ask_peer, new_primary);
	forget(vol);
}

void repl__recent_free(struct repl_volume *vol)
{
	struct recent *r = vol->recent;

	if (!r)
		return;
	free(r->bm[0]);
	free(r->bm[1]);
	free(r);
	vol->recent = NULL;
}
