/* al_vol.c: a Primary's activity log, 4 MiB extents (vol->al_shift) in an
 * LRU set (al.c), kept durable in the metadata's write-intent bitmap
 * (META_INTENT): an extent in the set has all its bits set.  A write whose
 * extents are in the set starts at once, without I/O, unless the bitmap
 * flush that recorded one of them is still running (it then waits for that
 * flush, numbered as replicate.c numbers them).  A write that brings
 * extents in sets their bits and waits for the next flush (one pwrite of
 * the changed page and an fdatasync); the idle extents it evicts have
 * their bits cleared in memory, written by a later flush (a bit left set
 * on disk only makes a resync larger).  After a crash, volume.c moves the
 * set bits into every peer's bitmap, so the resync covers the set.
 *
 * An evicted extent's writes are done but may not be durable: the data
 * file is not the metadata, whose fdatasync does not flush it.  Cleared
 * at once, a power loss took such a write with nothing left to resync it
 * (sim seed 5755 of the --small-al profile).  So its bits stay set until
 * a flush of the data submitted after the eviction succeeded (a guest's
 * FLUSH, after which replicate.c writes the bitmap, or our own once
 * AL_CLEAR_FLUSH_AT evictions wait), as DRBD's activity-log transaction
 * flushes the disk it shares with the data.
 *
 * A trim or zero spanning more than AL_SPAN_MAX extents does not use the
 * set: its extents' bits are set for its duration, and when no such write
 * is in flight any more (and a flush covers it) the bits of extents not
 * in the set are cleared.  Evictions leave the bits alone while one is in
 * flight. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "al.h"
#include "al_vol.h"
#include "log.h"
#include "meta.h"
#include "peer.h"
#include "util.h"

/* A bit that was set already changes no page (meta_bitmap_needs_flush()
 * stays false), yet it may be set only in memory: an earlier write set it
 * and the running flush is still writing its page.  A write acknowledged
 * before that flush ends would be unknown to the recovery after a crash. */
uint64_t repl__bm_need_range(struct repl_volume *vol, unsigned bitmap, uint64_t offset,
			     uint64_t len)
{
	if (meta_bitmap_needs_flush(vol->meta))
		return vol->bm_started + 1;
	if (vol->bm_flushing && meta_bits_in_flush(vol->meta, bitmap, offset, len))
		return vol->bm_started;
	return 0;
}

/* Our own flush of the data once this many evictions wait for one. */
#define AL_CLEAR_FLUSH_AT 32

/* Extents evicted whose bits wait for a data flush, oldest first (a
 * ring), each with the pool's mark at its eviction; a sweep of every bit
 * outside the set waiting likewise; our own flush. */
struct al_clear {
	struct repl_volume *vol;
	struct al_evicted {
		uint64_t ext, mark;
	} *q;
	size_t head, n, cap;
	bool sweep;
	uint64_t sweep_mark;
	bool flushing;
	struct repl_io io;
};

int repl__al_open(struct repl_volume *vol, unsigned extents, unsigned shift)
{
	vol->al_shift = shift ? shift : AL_EXTENT_SHIFT;
	vol->al_clear = calloc(1, sizeof(*vol->al_clear));
	if (!vol->al_clear)
		return -ENOMEM;
	vol->al_clear->vol = vol;
	return al_new(extents ? extents : AL_EXTENTS_DEFAULT, &vol->al);
}

void repl__al_free(struct repl_volume *vol)
{
	al_free(vol->al);
	vol->al = NULL;
	if (vol->al_clear)
		free(vol->al_clear->q);
	free(vol->al_clear);
	vol->al_clear = NULL;
}

static uint64_t ext_bytes(const struct repl_volume *vol)
{
	return UINT64_C(1) << vol->al_shift;
}

/* Every bit outside the set is cleared.  With regions larger than an
 * extent a region may hold an extent of the set, so nothing is then. */
static void clear_outside_set(struct repl_volume *vol)
{
	uint64_t regions = meta_regions(vol->meta);
	uint32_t shift = meta_get(vol->meta)->region_shift;

	if (shift > vol->al_shift)
		return;
	for (uint64_t r = meta_bit_next(vol->meta, META_INTENT, 0); r < regions;
	     r = meta_bit_next(vol->meta, META_INTENT, r + 1))
		if (!al_contains(vol->al, (r << shift) >> vol->al_shift))
			meta_bits_clear_range(vol->meta, META_INTENT, r << shift,
					      UINT64_C(1) << shift);
}

/* Extent ext's intent bits go (in memory). */
static void ext_clear(struct repl_volume *vol, uint64_t ext)
{
	meta_bits_clear_range(vol->meta, META_INTENT, ext << vol->al_shift, ext_bytes(vol));
}

/* Bits whose writes a flush has made durable leave the activity log (in
 * memory; the next bitmap flush writes them), unless their extent came
 * back into the set.  None while a write too large for the set is in
 * flight: its bits are there too, and its end sweeps.  True if any went. */
static bool clear_durable(struct repl_volume *vol)
{
	struct al_clear *c = vol->al_clear;
	struct al_evicted *e;
	bool any = false;

	if (vol->al_oversize)
		return false;
	while (c->n && repl__iopool_durable(vol->pool, (e = &c->q[c->head])->mark)) {
		if (!al_contains(vol->al, e->ext)) {
			ext_clear(vol, e->ext);
			any = true;
		}
		c->head = (c->head + 1) % c->cap;
		c->n--;
	}
	if (c->sweep && repl__iopool_durable(vol->pool, c->sweep_mark)) {
		c->sweep = false;
		clear_outside_set(vol);
		any = true;
	}
	return any;
}

bool repl__al_flushed(struct repl_volume *vol)
{
	return vol->al && (vol->al_clear->n || vol->al_clear->sweep) && clear_durable(vol);
}

static void clear_flush_done(struct repl_io *io)
{
	struct al_clear *c = (struct al_clear *)((char *)io - offsetof(struct al_clear, io));
	struct repl_volume *vol = c->vol;

	c->flushing = false;
	if (io->result < 0 && io->flush_lost)
		vol->eng->write_obs->disk_lost(vol);
	clear_durable(vol);	/* the pool drains before the metadata closes */
}

/* Our own flush of the data, when bits pile up waiting for one that the
 * guest does not send.  A failure is a failed FLUSH like a guest's
 * (disk_lost when it found writes not yet durable); the bits stay. */
static void clear_flush(struct repl_volume *vol)
{
	struct al_clear *c = vol->al_clear;

	if (c->flushing || vol->closing)
		return;
	c->flushing = true;
	c->io = (struct repl_io){ .op = REPL_IO_FLUSH, .done = clear_flush_done };
	repl__iopool_submit(vol->pool, &c->io);
}

/* Extent ext left the set: its bits go once its writes are durable. */
static void evicted(struct repl_volume *vol, uint64_t ext)
{
	struct al_clear *c = vol->al_clear;
	uint64_t mark = repl__iopool_mark(vol->pool);

	if (repl__iopool_durable(vol->pool, mark)) {
		ext_clear(vol, ext);
		return;
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct al_evicted *q = malloc(cap * sizeof(*q));

		if (!q)
			return;		/* its bits stay: a larger resync only */
		for (size_t i = 0; i < c->n; i++)
			q[i] = c->q[(c->head + i) % c->cap];
		free(c->q);
		c->q = q;
		c->head = 0;
		c->cap = cap;
	}
	c->q[(c->head + c->n++) % c->cap] = (struct al_evicted){ .ext = ext, .mark = mark };
	if (c->n >= AL_CLEAR_FLUSH_AT)
		clear_flush(vol);
}

static void w_extents(const struct repl_volume *vol, const struct vwrite *w, uint64_t *first,
		      uint64_t *last)
{
	uint64_t len = w->io->len ? w->io->len : 1;

	*first = w->io->offset >> vol->al_shift;
	*last = (w->io->offset + len - 1) >> vol->al_shift;
}

/* The flush after which extents first..last, just set, are on disk. */
static uint64_t set_extents(struct repl_volume *vol, uint64_t first, uint64_t last)
{
	uint64_t off = first << vol->al_shift, len = (last - first + 1) << vol->al_shift;

	meta_bits_set_range(vol->meta, META_INTENT, off, len);
	return repl__bm_need_range(vol, META_INTENT, off, len);
}

/* Whether a region of w's range in extent ext has lost its bit although
 * the extent is in the set.  The set outlives a step-down with writes in
 * flight (repl__al_reset() can only empty it once they are answered), and
 * a resync that makes this replica a copy of its source clears the bits
 * under it: a hit after the next promotion would write where no bit says
 * so, and a crash then resyncs less than it wrote (sim seed 13268). */
static bool intent_gone(struct repl_volume *vol, const struct vwrite *w, uint64_t ext)
{
	uint32_t shift = meta_get(vol->meta)->region_shift;
	uint64_t len = w->io->len ? w->io->len : 1;
	uint64_t from = MAX(w->io->offset, ext << vol->al_shift);
	uint64_t to = MIN(w->io->offset + len, (ext + 1) << vol->al_shift);

	for (uint64_t r = from >> shift; r <= (to - 1) >> shift; r++)
		if (!meta_bit_test(vol->meta, META_INTENT, r))
			return true;
	return false;
}

int repl__al_begin(struct repl_volume *vol, struct vwrite *w, uint64_t *need)
{
	uint64_t first, last, tag;
	struct al_txn t;
	int r;

	*need = 0;
	w_extents(vol, w, &first, &last);
	if (last - first >= AL_SPAN_MAX) {
		w->al_oversize = true;
		vol->al_oversize++;
		*need = set_extents(vol, first, last);
		if (*need)
			repl__stats_inc(&vol->stats.al_transactions);
		return 0;
	}
	r = al_begin(vol->al, first, last, &t);
	if (r == AL_WAIT)
		return 1;
	w->al_held = true;
	if (r == AL_MISS) {
		clear_durable(vol);
		for (unsigned i = 0; i < t.n_evicted && !vol->al_oversize; i++)
			evicted(vol, t.evicted[i]);
		for (unsigned i = 0; i < t.n_added; i++)
			al_set_tag(vol->al, t.added[i], set_extents(vol, t.added[i], t.added[i]));
		repl__stats_inc(&vol->stats.al_transactions);
	}
	/* A hit on an extent whose entry is still being written waits too;
	 * one whose flush may have failed (one that could not begin leaves
	 * its pages to the next), or whose bits went since (intent_gone()),
	 * is asked again. */
	for (uint64_t e = first; e <= last; e++) {
		tag = al_tag(vol->al, e);
		if (intent_gone(vol, w, e)) {
			tag = set_extents(vol, e, e);
			al_set_tag(vol->al, e, tag);
			repl__stats_inc(&vol->stats.al_transactions);
		} else if (tag && tag <= vol->al_fail_max) {
			tag = repl__bm_need_range(vol, META_INTENT, e << vol->al_shift, ext_bytes(vol));
			al_set_tag(vol->al, e, tag);
		}
		if (tag > vol->bm_done)
			*need = MAX(*need, tag);
	}
	return 0;
}

/* No write too large for the set is in flight: only the set's extents
 * stay in the activity log, once a flush covers what was written. */
static void oversize_done(struct repl_volume *vol)
{
	struct al_clear *c = vol->al_clear;

	c->sweep = true;
	c->sweep_mark = repl__iopool_mark(vol->pool);
	clear_durable(vol);
	if (c->sweep)
		clear_flush(vol);
}

bool repl__al_end(struct repl_volume *vol, struct vwrite *w)
{
	uint64_t first, last;

	if (w->al_oversize) {
		w->al_oversize = false;
		if (!--vol->al_oversize)
			oversize_done(vol);
		return false;
	}
	if (!w->al_held)
		return false;
	w->al_held = false;
	w_extents(vol, w, &first, &last);
	return al_end(vol->al, first, last) > 0;
}

void repl__al_reset(struct repl_volume *vol)
{
	if (vol->al_oversize || al_clear(vol->al) < 0)
		return;
	vol->al_clear->n = 0;
	vol->al_clear->sweep = false;
	meta_bits_clear_range(vol->meta, META_INTENT, 0, vol->size);
}

/* An extent's bits are set within the size the volume had when it came
 * into the set; one still in the set when the volume grows past its old
 * end has no bits for its new regions, and a write there hits the set
 * without setting them: after a crash its region was not resynced (sim
 * seed 3666, diverged).  They are set now, and a write to the extent
 * waits for the flush that records them, as a write that brought the
 * extent in would. */
void repl__al_grown(struct repl_volume *vol, uint64_t old_size)
{
	uint64_t first, last;

	if (!vol->al || !old_size || vol->size <= old_size)
		return;
	first = (old_size - 1) >> vol->al_shift;
	last = (vol->size - 1) >> vol->al_shift;
	for (uint64_t e = first; e <= last; e++)
		if (al_contains(vol->al, e))
			al_set_tag(vol->al, e, set_extents(vol, e, e));
}
