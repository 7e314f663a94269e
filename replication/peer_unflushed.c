/* peer_unflushed.c: what a Secondary acknowledged but may not have on disk.
 *
 * A Secondary acknowledges a plain write when its pwrite is done, not when
 * it is durable (protocol C, as DRBD).  If it then loses power, those
 * writes are gone, although the Primary counted them as on that peer and
 * set no bit for it: after the restart a bitmap resync would leave the
 * replicas different while both say UpToDate.  DRBD answers this with its
 * transfer log: requests stay in it until the barrier ack of their epoch
 * (the peer flushed), and a lost connection marks everything still in it
 * out of sync.  We do the same per region: the Primary keeps, for each
 * peer, the regions of the writes that peer acknowledged since the last
 * flush it confirmed, each with the number of the flush that will cover it
 * (the next one sent to that peer: a write acknowledged before a FLUSH is
 * sent was complete on the peer before the peer's fdatasync).  A confirmed
 * flush drops what it covers; a lost link ORs what is left into the peer's
 * bitmap, before the peer is recorded Outdated, so the next resync copies
 * those regions again.  To keep the set small without a flush per write,
 * the Primary sends a FLUSH of its own (to the peers only, not to its own
 * disk: replicate.c, unfl_flush()) when a peer has more than
 * UNFL_MAX_REGIONS regions pending or its oldest is older than
 * UNFL_MAX_AGE_MS; guest FLUSHes empty the set as well.  FUA writes are
 * durable on the peer when acknowledged and are not kept.  In memory only:
 * a Primary that crashes resyncs its own activity log anyway. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "log.h"
#include "meta.h"
#include "peer.h"
#include "util.h"

#define UNFL_MAX_REGIONS 512
#define UNFL_MAX_AGE_MS 2000

struct unfl_slot {
	uint64_t region_plus1;		/* 0: free */
	uint64_t flush_no;		/* the flush that covers it */
};

struct peer_unflushed {
	struct unfl_slot *slot;
	size_t cap, used;		/* cap: power of two, or 0 */
	uint64_t flush_sent, flush_done;	/* numbered per link, from 1 */
	uint64_t oldest_ms;		/* when the set last became non-empty */
};

static struct peer_unflushed *unfl_of(struct peer *p)
{
	if (!p->unfl)
		p->unfl = calloc(1, sizeof(*p->unfl));
	return p->unfl;
}

static size_t slot_of(uint64_t region, size_t cap)
{
	return (size_t)((region * UINT64_C(0x9E3779B97F4A7C15)) >> 17) & (cap - 1);
}

static void put(struct unfl_slot *tab, size_t cap, uint64_t region, uint64_t flush_no)
{
	size_t i = slot_of(region, cap);

	while (tab[i].region_plus1 && tab[i].region_plus1 != region + 1)
		i = (i + 1) & (cap - 1);
	tab[i].region_plus1 = region + 1;
	tab[i].flush_no = MAX(tab[i].flush_no, flush_no);
}

/* Rebuilds the table into cap slots keeping entries still uncovered. */
static int rebuild(struct peer_unflushed *u, size_t cap)
{
	struct unfl_slot *tab = NULL;
	size_t used = 0;

	if (cap) {
		tab = calloc(cap, sizeof(*tab));
		if (!tab)
			return -ENOMEM;
	}
	for (size_t i = 0; i < u->cap; i++) {
		const struct unfl_slot *s = &u->slot[i];
		if (!s->region_plus1 || s->flush_no <= u->flush_done)
			continue;
		put(tab, cap, s->region_plus1 - 1, s->flush_no);
		used++;
	}
	free(u->slot);
	u->slot = tab;
	u->cap = cap;
	u->used = used;
	return 0;
}

static void forget_all(struct peer_unflushed *u)
{
	free(u->slot);
	u->slot = NULL;
	u->cap = u->used = 0;
}

/* Marks every region still uncovered as missing on p. */
static void mark_all(struct peer *p, const struct peer_unflushed *u)
{
	struct repl_volume *vol = p->vol;
	unsigned shift = meta_get(vol->meta)->region_shift;

	for (size_t i = 0; i < u->cap; i++) {
		const struct unfl_slot *s = &u->slot[i];
		if (s->region_plus1 && s->flush_no > u->flush_done)
			meta_bits_set_range(vol->meta, p->idx,
					    (s->region_plus1 - 1) << shift, UINT64_C(1) << shift);
	}
}

uint64_t repl__unfl_flush_sent(struct peer *p)
{
	struct peer_unflushed *u = unfl_of(p);

	return u ? ++u->flush_sent : 0;
}

void repl__unfl_flush_done(struct peer *p, uint64_t flush_no, int result)
{
	struct peer_unflushed *u = p->unfl;

	if (!u)
		return;
	if (result < 0) {
		/* Nothing it holds is known durable, not even what a flush
		 * sent after this one reported first: its disk may have
		 * dropped any write not durable when this one failed
		 * (iopool.c).  It misses all of it. */
		mark_all(p, u);
		u->flush_done = MAX(u->flush_done, flush_no);
		forget_all(u);
		return;
	}
	if (flush_no <= u->flush_done)
		return;
	u->flush_done = flush_no;
	if (u->used)
		(void)rebuild(u, u->cap);	/* same size: cannot fail */
	if (u->used)
		u->oldest_ms = now_mono_ms();
}

bool repl__unfl_note(struct peer *p, uint64_t offset, uint64_t len)
{
	struct peer_unflushed *u = unfl_of(p);
	unsigned shift = meta_get(p->vol->meta)->region_shift;
	uint64_t first, last;
	size_t i;

	if (!len)
		return false;
	if (!u) {
		/* Cannot remember it: the peer misses it, as if lost now. */
		meta_bits_set_range(p->vol->meta, p->idx, offset, len);
		return false;
	}
	first = offset >> shift;
	last = (offset + len - 1) >> shift;
	for (uint64_t r = first; r <= last; r++) {
		if ((u->used + 1) * 2 > u->cap &&
		    rebuild(u, u->cap ? u->cap * 2 : 64) < 0) {
			meta_bits_set_range(p->vol->meta, p->idx, r << shift,
					    (last - r + 1) << shift);
			break;
		}
		if (!u->used)
			u->oldest_ms = now_mono_ms();
		i = slot_of(r, u->cap);
		while (u->slot[i].region_plus1 && u->slot[i].region_plus1 != r + 1)
			i = (i + 1) & (u->cap - 1);
		if (!u->slot[i].region_plus1)
			u->used++;
		u->slot[i].region_plus1 = r + 1;
		u->slot[i].flush_no = u->flush_sent + 1;
	}
	/* One FLUSH of ours (or a guest's) at a time is enough. */
	if (u->flush_sent != u->flush_done)
		return false;
	return u->used > UNFL_MAX_REGIONS ||
	       (u->used && now_mono_ms() - u->oldest_ms > UNFL_MAX_AGE_MS);
}

size_t repl__unfl_count(const struct peer *p)
{
	return p->unfl ? p->unfl->used : 0;
}

void repl__unfl_lost(struct peer *p)
{
	struct peer_unflushed *u = p->unfl;

	if (!u)
		return;
	if (u->used)
		plog(LOG_INFO, p->vol->name, "peer %s: %zu region(s) it may not have "
		     "flushed go to its bitmap", p->node, u->used);
	mark_all(p, u);
	/* The FLUSHes in flight on the lost link will not be confirmed. */
	u->flush_done = u->flush_sent;
	forget_all(u);
}

void repl__unfl_free(struct peer *p)
{
	if (p->unfl)
		free(p->unfl->slot);
	free(p->unfl);
	p->unfl = NULL;
}
