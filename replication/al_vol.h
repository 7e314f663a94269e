/* al_vol.h: a Primary's activity log kept on disk (al_vol.c), between the
 * write path (replicate.c) and the pure extent set (al.h). */
#ifndef REPL_AL_VOL_H
#define REPL_AL_VOL_H

#include <stdbool.h>
#include <stdint.h>

struct repl_volume;
struct vwrite;

/* The set for a volume opened with al-extents extents of 2^shift bytes
 * (0: the defaults; the caller checks shift against the regions once the
 * metadata is open); -EINVAL for extents out of bounds, -ENOMEM. */
int repl__al_open(struct repl_volume *vol, unsigned extents, unsigned shift);
/* The bitmap flush (numbered as replicate.c numbers them) after which
 * bits just set in bitmap for [offset, offset + len) are on disk, 0 if
 * they are already. */
uint64_t repl__bm_need_range(struct repl_volume *vol, unsigned bitmap, uint64_t offset,
			     uint64_t len);
void repl__al_free(struct repl_volume *vol);
/* Before w writes anything: 1 if it must wait for a slot (the caller
 * queues it and calls again after repl__al_end() says a slot is free),
 * else 0 with *need the bitmap flush after which its extents are on disk
 * (0: they are already). */
int repl__al_begin(struct repl_volume *vol, struct vwrite *w, uint64_t *need);
/* w is answered: its extents may leave the set.  True if one went idle. */
bool repl__al_end(struct repl_volume *vol, struct vwrite *w);
/* A FLUSH of the data succeeded: extents evicted before it leave the
 * activity log (their bits cleared in memory).  True if any did: the
 * caller writes the bitmap then, so that a crash resyncs no more than
 * the set (and what waits for a flush still). */
bool repl__al_flushed(struct repl_volume *vol);
/* Nothing in flight (a demote): the set empties; its bits leave the
 * activity log with the next flush (staying longer only resyncs more). */
void repl__al_reset(struct repl_volume *vol);
/* The volume grew from old_size to vol->size: an extent of the set that
 * reaches past the old end gets its new regions' bits too. */
void repl__al_grown(struct repl_volume *vol, uint64_t old_size);

#endif
