/* writecheck.c: checks that a Primary's write accounting adds up, at the
 * moments when a leak would leave a client without an answer for good (a
 * step down, a demote, a volume's teardown).  A write in flight holds one
 * reference per thing it waits for: its local write (to come, waiting
 * behind an overlapping one, or running), each peer it was sent to and
 * that has not acknowledged it, and one bitmap flush.  Its pending count
 * must equal that sum; a write at 0 is on the list of writes whose
 * acknowledgement is held; the peers' lists hold exactly the writes that
 * say they are on them.  It only reads (and logs): with
 * --enable-debug-checks (on with --enable-sanitizers) a problem aborts, so
 * that the tests under ASan stop at the moment it is found.
 *
 * Not here: fixing anything (replicate.c answers the writes). */
#include "config.h"

#include <stdlib.h>

#include "log.h"
#include "peer.h"

#define MAX_REPORTED 8

struct wcheck {
	const struct repl_volume *vol;
	const char *when;
	unsigned bad;
};

#define problem(c, ...) do {							\
		if ((c)->bad++ < MAX_REPORTED)					\
			plog(LOG_CRIT, (c)->vol->name, "write accounting at %s: " \
			     __VA_ARGS__);					\
	} while (0)

static bool on_list(const struct vwrite *head, const struct vwrite *w)
{
	for (; head; head = head->wnext)
		if (head == w)
			return true;
	return false;
}

static bool on_local_wait(const struct repl_volume *vol, const struct vwrite *w)
{
	for (const struct vwrite *o = vol->local_wait; o; o = o->lnext)
		if (o == w)
			return true;
	return false;
}

/* Waiting for a slot in the activity log (replicate.c, al_vol.c). */
static bool on_al_wait(const struct repl_volume *vol, const struct vwrite *w)
{
	for (const struct vwrite *o = vol->al_wait; o; o = o->anext)
		if (o == w)
			return true;
	return false;
}

static bool on_unacked(const struct peer *p, const struct vwrite *w)
{
	for (const struct vwrite *o = p->unacked_head; o; o = o->pnext[p->idx])
		if (o == w)
			return true;
	return false;
}

static bool in_flight(const struct repl_volume *vol, const struct vwrite *w)
{
	for (const struct vwrite *o = vol->writes; o; o = o->vnext)
		if (o == w)
			return true;
	return false;
}

/* The references w must hold, from what it waits for. */
static unsigned refs_of(struct wcheck *c, const struct vwrite *w)
{
	const struct repl_volume *vol = c->vol;
	unsigned n = w->local_pending + (w->bm_epoch != 0);
	unsigned long long seq = (unsigned long long)w->seq;

	for (unsigned i = 0; i < vol->n_peers; i++) {
		n += w->on_peer[i];
		if (w->on_peer[i] && !on_unacked(vol->peers[i], w))
			problem(c, "write %llu is sent to %s but not on its list", c->when, seq,
				vol->peers[i]->node);
	}
	if (w->local_pending && !w->local_busy && !w->start_after_flush &&
	    !on_local_wait(vol, w) && !on_al_wait(vol, w))
		problem(c, "write %llu waits for a local write that was never started",
			c->when, seq);
	if (w->start_after_flush && !w->bm_epoch)
		problem(c, "write %llu waits to start after no flush", c->when, seq);
	if (w->bm_epoch && (w->bm_epoch <= vol->bm_done || w->bm_epoch > vol->bm_started + 1))
		problem(c, "write %llu waits for bitmap flush %llu (begun %llu, ended %llu)",
			c->when, seq, (unsigned long long)w->bm_epoch,
			(unsigned long long)vol->bm_started, (unsigned long long)vol->bm_done);
	return n;
}

static void check_writes(struct wcheck *c)
{
	const struct repl_volume *vol = c->vol;

	for (const struct vwrite *w = vol->writes; w; w = w->vnext) {
		unsigned want = refs_of(c, w);

		if (w->pending == 0 && !on_list(vol->frozen, w))
			problem(c, "write %llu is done but neither answered nor held",
				c->when, (unsigned long long)w->seq);
		else if (w->pending && w->pending != want)
			problem(c, "write %llu holds %u reference(s) and waits for %u",
				c->when, (unsigned long long)w->seq, w->pending, want);
	}
	for (const struct vwrite *w = vol->frozen; w; w = w->wnext)
		if (w->pending || !in_flight(vol, w))
			problem(c, "a held write (%llu) is not done or not in flight", c->when,
				(unsigned long long)w->seq);
}

static void check_peers(struct wcheck *c)
{
	const struct repl_volume *vol = c->vol;

	for (unsigned i = 0; i < vol->n_peers; i++) {
		const struct peer *p = vol->peers[i];
		unsigned n = 0;

		for (const struct vwrite *w = p->unacked_head; w; w = w->pnext[i], n++)
			if (!w->on_peer[i] || !in_flight(vol, w))
				problem(c, "%s's list holds a write (%llu) not in flight to it",
					c->when, p->node, (unsigned long long)w->seq);
		if (n != p->unacked)
			problem(c, "%s's list holds %u write(s), its count says %u", c->when,
				p->node, n, p->unacked);
	}
}

static void check_idle(struct wcheck *c)
{
	const struct repl_volume *vol = c->vol;
	unsigned n = 0;

	for (const struct vwrite *w = vol->writes; w; w = w->vnext)
		n++;
	if (n)
		problem(c, "%u write(s) still in flight", c->when, n);
	if (vol->held_head)
		problem(c, "requests still held for quorum", c->when);
}

unsigned repl__writes_check(const struct repl_volume *vol, const char *when, bool idle)
{
	struct wcheck c = { .vol = vol, .when = when };

	check_writes(&c);
	check_peers(&c);
	if (idle)
		check_idle(&c);
	if (c.bad > MAX_REPORTED)
		plog(LOG_CRIT, vol->name, "write accounting at %s: %u problem(s) in all",
		     when, c.bad);
#if REPL_DEBUG_CHECKS
	if (c.bad)
		abort();
#endif
	return c.bad;
}
