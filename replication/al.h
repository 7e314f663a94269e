/* al.h: the activity log as a set of 4 MiB extents in LRU order, DRBD's
 * "al-extents": which parts of the volume a Primary may be writing, so that
 * after its crash only they are resynced.  This file is the pure core: it
 * decides, for the extents a write touches, whether they are all in the set
 * already (a hit: no I/O), or which enter it and which idle ones leave it
 * (a miss: the caller records that durably before the write starts), or
 * that the write must wait because every slot it could take is busy.  An
 * extent with a write in flight is never evicted; idle extents leave only
 * when a new one needs their slot, never by a timer.  No I/O, no clock, no
 * global state; the caller (al_vol.c) keeps the set on disk and serialises
 * every call on one struct al.
 *
 * Errors: -errno (-EINVAL for a capacity out of bounds or a span over
 * AL_SPAN_MAX, -ENOMEM). */
#ifndef REPL_AL_H
#define REPL_AL_H

#include <stdbool.h>
#include <stdint.h>

#define AL_EXTENT_SHIFT 22		/* 4 MiB per extent */
/* The most extents one call of al_begin() may take: a 32 MiB NBD write
 * spans 9; a larger trim or zero is the caller's to handle without the
 * set.  The capacity is at least this, so a write that fits always gets
 * its slots once the others end. */
#define AL_SPAN_MAX 16
#define AL_EXTENTS_MIN AL_SPAN_MAX
#define AL_EXTENTS_MAX 65534
#define AL_EXTENTS_DEFAULT 1237		/* DRBD's default: about 4.8 GiB hot */

enum al_result {
	AL_HIT,		/* every extent was in the set: start now */
	AL_MISS,	/* some entered (and some idle ones left): record, then start */
	AL_WAIT,	/* not enough idle slots: nothing changed, try again later */
};

/* What a miss changed: the extents that entered and those that left. */
struct al_txn {
	uint64_t added[AL_SPAN_MAX];
	uint64_t evicted[AL_SPAN_MAX];
	unsigned n_added, n_evicted;
};

struct al;

/* An empty set of capacity extents (AL_EXTENTS_MIN..AL_EXTENTS_MAX). */
int al_new(unsigned capacity, struct al **out);
void al_free(struct al *a);
unsigned al_capacity(const struct al *a);
/* Extents in the set now. */
unsigned al_count(const struct al *a);
bool al_contains(const struct al *a, uint64_t ext);
/* Writes in flight on ext (0 if it is not in the set). */
unsigned al_busy(const struct al *a, uint64_t ext);

/* A write touching extents first..last (at most AL_SPAN_MAX) begins: on a
 * hit or a miss each of them is in the set with one more write in flight
 * and becomes the most recently used; on a miss *t says what changed (the
 * evicted extents are the least recently used idle ones).  On AL_WAIT
 * nothing changed.  -EINVAL for a bad span. */
int al_begin(struct al *a, uint64_t first, uint64_t last, struct al_txn *t);
/* A write that began on first..last ended.  Returns how many of those
 * extents became idle (a waiting write may fit now). */
unsigned al_end(struct al *a, uint64_t first, uint64_t last);

/* A number the caller keeps with each extent in the set (the flush after
 * which its entry is durable); 0 for a new extent or one not in the set. */
void al_set_tag(struct al *a, uint64_t ext, uint64_t tag);
uint64_t al_tag(const struct al *a, uint64_t ext);

/* Empties the set if no extent is busy (0), else -EBUSY. */
int al_clear(struct al *a);

#endif
