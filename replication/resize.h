/* resize.h: growing a volume while it is in use, and what replicas do
 * while their sizes differ (resize.c).
 *
 * A grow runs on each replica by itself (the program embedding the engine
 * asks every one of them): the backing grows (a file is extended sparse, a
 * block device must already be large enough and its new area is zeroed),
 * then the metadata (meta_grow(): the bitmaps keep every bit), then the
 * engine's size, and the connected peers hear it (a SIZE frame).  Nothing
 * is ever shrunk.
 *
 * While sizes differ, replication stays correct by three rules:
 *  - a Primary exports (to new NBD clients) the smallest size of itself and
 *    its connected peers, so no write goes beyond what a replica in sync
 *    has; a client keeps the size it negotiated (NBD cannot announce a
 *    new one);
 *  - a link between replicas of different sizes comes up only if no data
 *    has to move (the generations are equal) and no NBD client here uses
 *    more than the peer has; otherwise both wait (Disconnected, not
 *    StandAlone) and retry, and connect once both have grown;
 *  - a resync sends no byte beyond the target's size.
 * Every new area reads as zeroes on every replica, which is why a link
 * whose generations are equal may come up with different sizes.
 *
 * The decisions are pure functions, tested from tables in
 * tests/unit/test-resize.c; the rest is the engine's (loop thread only). */
#ifndef REPL_RESIZE_H
#define REPL_RESIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gen.h"

/* ---- pure decisions ---------------------------------------------------- */

/* Opening a replica whose backing has `backing` bytes (a block device, or
 * a file), whose metadata says `meta`, for a volume that should have `want`
 * bytes (0: whatever the metadata says).  err 0: open at `meta` bytes, then
 * grow to grow_to if it is not 0; err -EINVAL: refuse, why says why. */
struct resize_open {
	int err;
	uint64_t grow_to;
	const char *why;	/* static, for people */
};
struct resize_open resize_open_decide(uint64_t backing, bool blockdev, uint64_t meta,
				      uint64_t want);

/* An online grow from cur to want bytes with 2^region_shift-byte regions:
 * 0, -EALREADY (cur == want), -EINVAL (smaller, not a multiple of 512, or
 * beyond the bitmap limit) with *why for people. */
int resize_check(uint64_t cur, uint64_t want, unsigned region_shift, const char **why);

/* A link whose two VOLUME frames gave these sizes. */
struct resize_link_in {
	uint64_t local, peer;		/* bytes */
	bool no_sync;			/* the generations say: nothing to move */
	uint64_t clients_max;		/* largest size an NBD client here uses (a
					 * Primary's, or a migration window's) */
};

struct resize_link_verdict {
	bool wait;			/* false: the link may come up */
	const char *why;		/* static; NULL when the sizes agree */
};
struct resize_link_verdict resize_link_decide(const struct resize_link_in *in);

/* ---- the engine's side (resize.c) --------------------------------------- */

struct repl_volume;
struct peer;
struct repl_volume_status;

/* At open, after the metadata: checks the sizes (resize_open_decide) and
 * sets vol->size; a grow it asks for starts with repl__resize_opened().
 * 0 or -EINVAL (logged, and the reason put in ERR when ERR is not NULL). */
int repl__resize_open(struct repl_volume *vol, uint64_t want, char *err, size_t errlen);
void repl__resize_opened(struct repl_volume *vol);
/* Teardown: stop (timers; before the pool drains), then free. */
void repl__resize_stop(struct repl_volume *vol);
void repl__resize_free(struct repl_volume *vol);
/* What a new NBD client of this replica gets: the smallest size of this
 * replica and its connected peers. */
uint64_t repl__volume_export_size(const struct repl_volume *vol);
/* The handshake: may a link to p, whose replica has peer_size bytes, come
 * up after the generations decided d?  false: wait (why filled). */
bool repl__resize_link_ok(struct peer *p, uint64_t peer_size, enum gen_decision d,
			  char *why, size_t whylen);
/* From repl__changed(): logs, on a Primary that grew, when the size new
 * NBD clients get changes. */
void repl__resize_changed(struct repl_volume *vol);
/* A SIZE frame: p's replica grew. */
void repl__resize_peer_size(struct peer *p, uint64_t size);
void repl__resize_status(const struct repl_volume *vol, struct repl_volume_status *st);

#endif
