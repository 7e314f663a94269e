/* replicate.c: the synchronous write path between replicas ("protocol C").
 *
 * On the Primary, a write goes to the local store and to every connected
 * peer at once, many in flight per peer; it is acknowledged when the local
 * write and every peer it was sent to are done.  For a peer that is away,
 * the write's regions are set in that peer's dirty bitmap, and the write is
 * acknowledged only after those bits are on disk.  When a peer is lost,
 * writes it had not acknowledged go to its bitmap too, the peer is recorded
 * Outdated in the metadata (and on the other replicas, when reachable)
 * before any further acknowledgement, so a promotion decision sees it.
 *
 * On a Secondary, writes from the Primary are applied in parallel, except
 * that a write overlapping one still in flight waits for it: overlapping
 * writes land in the order the Primary sent them.
 *
 * Not here: sockets and frames (peer.c), resync (resync.c). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "al_vol.h"
#include "bufpool.h"
#include "log.h"
#include "meta.h"
#include "peer.h"
#include "sys.h"
#include "util.h"

/* ---- bitmap flushes: one at a time, numbered ------------------------------- */

/* Flushes are numbered from 1 as they begin.  A write that needs the bits
 * set so far on disk waits for the next number to begin (a running flush
 * copied its pages before these bits were set); a flush that ends
 * releases every write waiting for its number or an earlier one.  A write
 * waits for one number at most, raised when it needs later bits too, and
 * holds one reference for it however often it is told to wait (a Primary
 * losing both peers while a flush runs waits twice).  A write whose bits
 * were set already, by a write whose flush still runs, waits for the
 * running number (bm_need()). */

#define INTENT_SWEEP_MS 2000

static void vwrite_put(struct vwrite *w);
static void bm_flush_start(struct repl_volume *vol);
static void rep_start(struct repl_volume *vol, struct vwrite *w);

static int bm_flush_run(void *arg)
{
	return meta_flush_job_run(arg);
}

/* Drops w's reference for a flush that ended with r. */
static void bm_release(struct repl_volume *vol, struct vwrite *w, int r)
{
	if (r < 0)
		w->result = r;
	if (w->start_after_flush) {
		w->start_after_flush = false;
		if (r < 0) {
			/* Its activity-log bits may not be on disk: it is not
			 * written anywhere, and its local write's reference
			 * goes too, or it would never be answered. */
			w->local_pending = false;
			vwrite_put(w);
		} else {
			rep_start(vol, w);
		}
	}
	vwrite_put(w);
}

/* Flush number bm_started ended with r (0 or -errno). */
static void bm_flush_end(struct repl_volume *vol, int r)
{
	struct vwrite *batch = NULL, *w;
	bool news = (r < 0) != (vol->bm_error < 0);

	meta_flush_job_end(vol->meta, vol->bm_job, r);
	vol->bm_job = NULL;
	vol->bm_flushing = false;
	vol->bm_done = vol->bm_started;
	if (r < 0 && !vol->bm_error)
		plog_errno(LOG_ERR, vol->name, -r,
			   "cannot record out-of-sync regions: failing the writes");
	vol->bm_error = MIN(r, 0);
	if (r < 0)	/* extents it was to record are not known to be on disk */
		vol->al_fail_max = vol->bm_done;
	/* Collected first: answering one may send, drop a peer or finish
	 * others, and each collected write keeps its reference until then. */
	for (w = vol->writes; w; w = w->vnext)
		if (w->bm_epoch && w->bm_epoch <= vol->bm_done) {
			w->bm_epoch = 0;
			w->bnext = batch;
			batch = w;
		}
	vol->bm_releasing = true;
	while ((w = batch)) {
		batch = w->bnext;
		w->bnext = NULL;
		bm_release(vol, w, r);
	}
	vol->bm_releasing = false;
	if (news)
		repl__changed(vol);
}

static void bm_flush_done(struct repl_io *io)
{
	struct repl_volume *vol = (struct repl_volume *)((char *)io -
						 offsetof(struct repl_volume, bm_io));

	bm_flush_end(vol, io->result);
	if (vol->bm_wanted > vol->bm_done)
		bm_flush_start(vol);
}

/* Begins the next flush unless one runs (or its waiters are being
 * answered).  One that cannot begin, or finds nothing to write, ends at
 * once, and the next begins if writes wait for it. */
static void bm_flush_start(struct repl_volume *vol)
{
	int r;

	while (!vol->bm_flushing && !vol->bm_releasing) {
		vol->bm_started++;
		vol->bm_flushing = true;
		r = meta_bitmap_flush_begin(vol->meta, &vol->bm_job);
		if (r == 0 && vol->bm_job) {
			vol->bm_io = (struct repl_io){ .op = REPL_IO_CALL, .fn = bm_flush_run,
						       .arg = vol->bm_job, .done = bm_flush_done };
			repl__stats_inc(&vol->stats.bitmap_writes);
			repl__iopool_submit(vol->pool, &vol->bm_io);
			return;
		}
		bm_flush_end(vol, r);
		if (vol->bm_wanted <= vol->bm_done)
			return;
	}
}

/* w must not be acknowledged before flush number need has ended. */
static void bm_wait_for(struct repl_volume *vol, struct vwrite *w, uint64_t need)
{
	if (!w->bm_epoch)
		w->pending++;
	w->bm_epoch = MAX(w->bm_epoch, need);
	vol->bm_wanted = MAX(vol->bm_wanted, need);
	bm_flush_start(vol);
}

/* The flush after which the bits just set in bitmap for io's range are
 * durable, or 0 if they are already.  A bit that was set already changes
 * no page (meta_bitmap_needs_flush() stays false), yet it may be set only
 * in memory: an earlier write set it and the running flush is still
 * writing its page.  A write acknowledged before that flush ends would be
 * unknown to the recovery after a crash. */
uint64_t repl__bm_need_range(struct repl_volume *vol, unsigned bitmap, uint64_t offset,
			     uint64_t len)
{
	if (meta_bitmap_needs_flush(vol->meta))
		return vol->bm_started + 1;
	if (vol->bm_flushing && meta_bits_in_flush(vol->meta, bitmap, offset, len))
		return vol->bm_started;
	return 0;
}

static uint64_t bm_need(struct repl_volume *vol, unsigned bitmap, const struct repl_io *io)
{
	return repl__bm_need_range(vol, bitmap, io->offset, io->len);
}

static bool io_changes_data(enum repl_io_op op)
{
	return op == REPL_IO_WRITE || op == REPL_IO_TRIM || op == REPL_IO_ZERO;
}

/* Records that peer idx misses w's range; returns the flush to wait for
 * (bm_need()), 0 if none. */
static uint64_t mark_missing(struct repl_volume *vol, unsigned idx, const struct repl_io *io)
{
	if (!io_changes_data(io->op))
		return 0;
	meta_bits_set_range(vol->meta, idx, io->offset, io->len);
	return bm_need(vol, idx, io);
}

/* ---- completion -------------------------------------------------------- */

static void al_resume_later(struct repl_volume *vol);

static void vwrite_finish(struct vwrite *w)
{
	struct repl_volume *vol = w->vol;

	if (repl__al_end(vol, w) && vol->al_wait)
		al_resume_later(vol);

	if (w->vprev)
		w->vprev->vnext = w->vnext;
	else
		vol->writes = w->vnext;
	if (w->vnext)
		w->vnext->vprev = w->vprev;
	w->io->result = w->result;
	w->io->done(w->io);
	free(w);
}

/* Acknowledgements wait while a lost peer is not yet recorded Outdated,
 * and while the partition has no quorum. */
static bool acks_held(const struct repl_volume *vol)
{
	return vol->freeze || !vol->quorate;
}

static void vwrite_put(struct vwrite *w)
{
	struct repl_volume *vol = w->vol;

	if (--w->pending)
		return;
	/* A failure claims nothing: it is answered at once. */
	if (w->result == 0 && acks_held(vol)) {
		if (!vol->closing) {
			/* A lost peer is not yet recorded Outdated everywhere. */
			w->wnext = vol->frozen;
			vol->frozen = w;
			return;
		}
		/* A stop must not turn an unsecured write into a success. */
		w->result = -ESHUTDOWN;
	}
	vwrite_finish(w);
}

static void thaw(struct repl_volume *vol)
{
	struct vwrite *w = vol->frozen, *next;

	if (acks_held(vol) && !vol->closing)
		return;
	vol->frozen = NULL;
	for (; w; w = next) {
		next = w->wnext;
		vwrite_finish(w);
	}
}

static void local_unblock(struct repl_volume *vol);
static void apply_unblock(struct repl_volume *vol);

static void local_done(struct repl_io *io)
{
	struct vwrite *w = (struct vwrite *)((char *)io - offsetof(struct vwrite, local));
	struct repl_volume *vol = w->vol;

	if (io->result < 0)
		w->result = io->result;
	w->local_busy = false;
	w->local_pending = false;
	vwrite_put(w);
	local_unblock(vol);
	apply_unblock(vol);	/* after a step-down, data may wait for it (blocked()) */
}

static void unacked_unlink(struct peer *p, struct vwrite *w)
{
	unsigned i = p->idx;

	if (w->pprev[i])
		w->pprev[i]->pnext[i] = w->pnext[i];
	else
		p->unacked_head = w->pnext[i];
	if (w->pnext[i])
		w->pnext[i]->pprev[i] = w->pprev[i];
	else
		p->unacked_tail = w->pprev[i];
	w->pnext[i] = w->pprev[i] = NULL;
	w->on_peer[i] = false;
	p->unacked--;
}

static void unacked_append(struct peer *p, struct vwrite *w)
{
	unsigned i = p->idx;

	w->on_peer[i] = true;
	w->pprev[i] = p->unacked_tail;
	w->pnext[i] = NULL;
	if (p->unacked_tail)
		p->unacked_tail->pnext[i] = w;
	else
		p->unacked_head = w;
	p->unacked_tail = w;
	p->unacked++;
}

/* ---- Primary: the write path -------------------------------------------- */

static bool peer_takes_writes(const struct peer *p)
{
	return repl__peer_up(p) &&
	       (p->link == REPL_LINK_CONNECTED || p->link == REPL_LINK_SYNC_SOURCE);
}

/* Overlapping writes reach the local store in the order they were sent to
 * the peers (which apply them in arrival order): a write waits while an
 * earlier overlapping one is still being written here. */
static bool vw_overlaps(const struct vwrite *a, const struct vwrite *b)
{
	const struct repl_io *x = a->io, *y = b->io;

	if (!io_changes_data(x->op) || !io_changes_data(y->op))
		return false;
	return x->offset < y->offset + y->len && y->offset < x->offset + x->len;
}

static bool applying_overlaps(const struct repl_volume *vol, const struct repl_io *io);

/* Also after a write of the Primary this replica followed before its
 * promotion, still being applied here: the pool may run the two in any
 * order, and the old one must not land last. */
static bool local_blocked(const struct repl_volume *vol, const struct vwrite *w)
{
	if (io_changes_data(w->io->op) && applying_overlaps(vol, w->io))
		return true;
	for (const struct vwrite *o = vol->writes; o; o = o->vnext)
		if (o != w && o->local_busy && vw_overlaps(o, w))
			return true;
	for (const struct vwrite *o = vol->local_wait; o && o != w; o = o->lnext)
		if (vw_overlaps(o, w))
			return true;
	return false;
}

static void local_submit(struct repl_volume *vol, struct vwrite *w)
{
	w->local_busy = true;
	repl__iopool_submit(vol->pool, &w->local);
}

static void local_unblock(struct repl_volume *vol)
{
	struct vwrite **pp = &vol->local_wait, *w;

	while ((w = *pp)) {
		if (local_blocked(vol, w)) {
			pp = &w->lnext;
			continue;
		}
		*pp = w->lnext;
		w->lnext = NULL;
		local_submit(vol, w);
	}
}

static void local_start(struct repl_volume *vol, struct vwrite *w)
{
	struct vwrite **pp;

	if (!local_blocked(vol, w)) {
		local_submit(vol, w);
		return;
	}
	for (pp = &vol->local_wait; *pp; pp = &(*pp)->lnext)
		;
	*pp = w;
}

/* Sends w to the peers and starts it locally. */
static void rep_start(struct repl_volume *vol, struct vwrite *w)
{
	struct peer *failed[REPL_MAX_PEERS];
	unsigned nfailed = 0;
	uint64_t need = 0;

	w->sent_ns = now_mono_ns();
	for (unsigned i = 0; i < vol->n_peers; i++) {
		struct peer *p = vol->peers[i];
		int n = peer_takes_writes(p) ? repl__peer_send_io(p, w) : 0;
		if (n > 0) {
			unacked_append(p, w);
			w->acks_left[i] = (unsigned)n;
			w->pending++;
			if (w->io->op == REPL_IO_FLUSH)
				w->flush_no[i] = repl__unfl_flush_sent(p);
		} else {
			need = MAX(need, mark_missing(vol, i, w->io));
			if (n < 0)
				failed[nfailed++] = p;
		}
	}
	if (need)
		bm_wait_for(vol, w, need);
	local_start(vol, w);
	/* A peer we could not send to is no longer in sync: drop it (which
	 * outdates it) before anything more is acknowledged. */
	for (unsigned i = 0; i < nfailed; i++)
		repl__peer_drop(failed[i], "could not send a write");
}

/* w's activity-log extents are in the set: it starts once they are on
 * disk (after flush number need, 0: now). */
static void al_go(struct repl_volume *vol, struct vwrite *w, uint64_t need)
{
	if (need) {
		w->start_after_flush = true;
		bm_wait_for(vol, w, need);
		return;
	}
	rep_start(vol, w);
}

/* Writes that waited for a slot of the activity log, in order, as long
 * as they fit.  From a timer, not from the answer that freed a slot:
 * starting a write there could answer others under the caller's feet. */
static void al_resume(void *arg)
{
	struct repl_volume *vol = arg;
	struct vwrite *w;
	uint64_t need;

	vol->al_timer = NULL;
	while ((w = vol->al_wait) && !vol->closing) {
		if (repl__al_begin(vol, w, &need))
			return;
		vol->al_wait = w->anext;
		if (!vol->al_wait)
			vol->al_wait_tail = &vol->al_wait;
		w->anext = NULL;
		al_go(vol, w, need);
	}
}

static void al_resume_later(struct repl_volume *vol)
{
	if (!vol->al_timer && !vol->closing)
		repl__timer_add(vol->eng, 0, al_resume, vol, &vol->al_timer);
}

/* A stop fails the writes that never got their slots (nothing of them
 * was written anywhere). */
static void al_fail_waiting(struct repl_volume *vol)
{
	struct vwrite *w;

	while ((w = vol->al_wait)) {
		vol->al_wait = w->anext;
		w->anext = NULL;
		w->result = -ESHUTDOWN;
		w->local_pending = false;
		vwrite_put(w);
	}
	vol->al_wait_tail = &vol->al_wait;
}

void repl__rep_io(struct repl_volume *vol, struct repl_io *io)
{
	int broken = meta_broken(vol->meta);
	struct vwrite *w;
	uint64_t need;

	/* Without metadata to record the activity log in, nothing may be
	 * written (status says why: repl_volume_status). */
	if (broken) {
		io->result = broken;
		io->done(io);
		return;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		io->result = -ENOMEM;
		io->done(io);
		return;
	}
	w->vol = vol;
	w->io = io;
	w->seq = ++vol->seq;
	vol->last_guest_write_ms = now_mono_ms();
	w->local = *io;
	w->local.flags &= ~REPL_IO_DONE_ANY_THREAD;	/* vwrites are loop-owned */
	w->local.done = local_done;
	w->pending = 1;			/* its local write's */
	w->local_pending = true;
	w->vnext = vol->writes;
	if (vol->writes)
		vol->writes->vprev = w;
	vol->writes = w;
	if (io_changes_data(io->op)) {
		repl__rs_note_write(vol, io->offset, io->len);
		repl__verify_note_write(vol, io->offset, io->len);
		/* The activity log: the extents are recorded as being
		 * written, durably, before any replica writes them (al_vol.c);
		 * writes waiting for a slot keep their order. */
		if (vol->n_peers) {
			if (vol->al_wait || repl__al_begin(vol, w, &need)) {
				*vol->al_wait_tail = w;
				vol->al_wait_tail = &w->anext;
				return;
			}
			al_go(vol, w, need);
			return;
		}
	}
	rep_start(vol, w);
}

/* Tells the Secondaries which writes are everywhere (below the oldest
 * in flight), so that they can forget them (recent.c). */
static void peer_ack(struct repl_volume *vol)
{
	struct wire_msg m = { .type = WIRE_PING, .seq = vol->seq + 1 };

	if (vol->role != REPL_PRIMARY)
		return;
	for (const struct vwrite *w = vol->writes; w; w = w->vnext)
		m.seq = MIN(m.seq, w->seq);
	for (unsigned i = 0; i < vol->n_peers; i++)
		if (repl__peer_up(vol->peers[i]))
			repl__peer_send_msg(vol->peers[i], &m);
}

/* Every 2 s, the Secondaries hear which writes are everywhere.  (The
 * activity log no longer leaves by a timer: al_vol.c evicts extents only
 * when the set overflows.) */
static void intent_sweep(void *arg)
{
	struct repl_volume *vol = arg;

	vol->intent_timer = NULL;
	peer_ack(vol);
	if (!vol->closing)
		repl__timer_add(vol->eng, INTENT_SWEEP_MS, intent_sweep, vol, &vol->intent_timer);
}

void repl__rep_intent_start(struct repl_volume *vol)
{
	if (!vol->intent_timer && vol->n_peers)
		repl__timer_add(vol->eng, INTENT_SWEEP_MS, intent_sweep, vol, &vol->intent_timer);
}

static void unfl_flush_done(struct repl_io *io)
{
	free(io);
}

/* A FLUSH of our own, to every peer, so that what they acknowledged is
 * known durable (peer_unflushed.c). */
static void unfl_flush(struct repl_volume *vol)
{
	struct repl_io *io;

	if (vol->role != REPL_PRIMARY || vol->closing || !vol->quorate)
		return;
	io = calloc(1, sizeof(*io));
	if (!io)
		return;		/* the set only grows: it stays correct */
	io->op = REPL_IO_FLUSH;
	io->done = unfl_flush_done;
	repl__rep_io(vol, io);
}

void repl__rep_ack(struct peer *p, uint64_t seq, int result)
{
	struct repl_volume *vol = p->vol;
	struct vwrite *w;
	uint64_t need;
	bool kick = false;

	for (w = p->unacked_head; w && w->seq != seq; w = w->pnext[p->idx])
		;
	if (!w) {
		repl__peer_drop(p, "acknowledgement for a write never sent");
		return;
	}
	if (result < 0)
		w->peer_error[p->idx] = result;
	if (--w->acks_left[p->idx])
		return;		/* more frames of this write to come */
	result = w->peer_error[p->idx];
	unacked_unlink(p, w);
	if (w->io->op == REPL_IO_FLUSH)
		repl__unfl_flush_done(p, w->flush_no[p->idx], result);
	else if (result == 0 && io_changes_data(w->io->op) && !(w->io->flags & REPL_IO_FUA))
		kick = repl__unfl_note(p, w->io->offset, w->io->len);
	if (result == 0)
		repl__hist_add(&p->vol->stats.ack[p->idx], now_mono_ns() - w->sent_ns);
	if (result < 0) {
		plog_errno(LOG_ERR, p->vol->name, -result,
			   "peer %s failed a write at %llu", p->node,
			   (unsigned long long)w->io->offset);
		repl__rs_note_failed(p, w->io->offset, w->io->len);
		need = mark_missing(p->vol, p->idx, w->io);
		if (need)
			bm_wait_for(p->vol, w, need);
	}
	vwrite_put(w);
	if (kick)
		unfl_flush(vol);
}

/* ---- losing a peer -------------------------------------------------------- */

/* The lost peer p gets a new generation here (its bitmap generation is
 * what it holds): from now on this replica's data is ahead of it. */
static void new_gen_for(struct peer *p)
{
	struct repl_volume *vol = p->vol;
	struct meta_super sb = *meta_get(vol->meta);
	struct gen_side g;
	uint64_t id = p->gen_pending;

	p->gen_pending = 0;
	repl__peer_gen_side(vol, (int)p->idx, &g);
	g.primary = true;
	if (gen_on_disconnect_primary(&g, id) < 0)
		return;
	repl__gen_store(&sb, (int)p->idx, &g);
	if (meta_update(vol->meta, &sb) < 0)
		plog(LOG_ERR, vol->name, "cannot record a new generation for %s", p->node);
	repl__peers_tell_state(vol);
}

/* The outdates are confirmed (or the wait for them timed out): the
 * generations they deferred are made, before any held write is
 * acknowledged. */
static void new_gens_pending(struct repl_volume *vol)
{
	for (unsigned i = 0; i < vol->n_peers; i++)
		if (vol->peers[i]->gen_pending)
			new_gen_for(vol->peers[i]);
}

void repl__rep_gen_catch_up(struct peer *p)
{
	if (p->gen_pending)
		new_gen_for(p);
}

/* No confirmation is awaited any more; one that comes late is ignored. */
static void freeze_clear(struct repl_volume *vol)
{
	vol->freeze = 0;
	for (unsigned i = 0; i < vol->n_peers; i++)
		vol->peers[i]->outdate_waits = 0;
}

static void freeze_timeout(void *arg)
{
	struct repl_volume *vol = arg;

	vol->freeze_timer = NULL;
	if (!vol->freeze)
		return;
	plog(LOG_WARNING, vol->name, "other replicas did not confirm the outdate "
	     "within %u ms: continuing on the local record alone",
	     vol->outdate_timeout_ms);
	new_gens_pending(vol);
	freeze_clear(vol);
	thaw(vol);
}

/* The peer will not see writes from now on: say so durably, here and on
 * the other connected replicas, before acknowledging anything further.
 * The new generation waits for that confirmation, as DRBD's new current
 * UUID waits for the fence-peer handler with I/O suspended: a Primary cut
 * off without quorum acknowledges nothing more, and if it crashes so, it
 * comes back with the generation the others hold, its data a prefix of
 * theirs plus writes nobody was told of (the activity log resyncs them
 * away), not in a split brain with the Primary promoted meanwhile. */
static void outdate_peer(struct peer *p)
{
	struct repl_volume *vol = p->vol;
	struct meta_super sb = *meta_get(vol->meta);
	int r;

	/* Our data first: the peer holds every write acknowledged until now,
	 * durable here or not; a record of it Outdated lets a crashed
	 * Primary be promoted without asking it (role.c), so nothing it
	 * holds may be lost with our power after the record.  Rare enough to
	 * wait for here, as promotion does. */
	if (vol->fd >= 0 && repl__sys->fdatasync(vol->fd) < 0)
		plog_errno(LOG_ERR, vol->name, errno, "flushing the backing before "
			   "recording %s Outdated", p->node);
	p->gen_pending = meta_new_gen();
	sb.peers[p->idx].disk_state = META_OUTDATED;
	r = meta_update(vol->meta, &sb);
	if (r < 0)
		plog_errno(LOG_ERR, vol->name, -r, "cannot record %s as Outdated", p->node);
	else
		plog(LOG_WARNING, vol->name, "peer %s is gone: recorded as Outdated", p->node);
	/* Cluster mode: the group records it; that alone releases the acks,
	 * with no timeout (a partition without quorum never confirms). */
	if (vol->eng->hooks.outdate &&
	    vol->eng->hooks.outdate(vol->eng->hooks.arg, vol, p->node, ++vol->outdate_token) == 0) {
		vol->freeze++;
		for (unsigned i = 0; i < vol->n_peers; i++) {
			struct peer *o = vol->peers[i];
			if (o != p && repl__peer_up(o))
				repl__peer_send_outdate(o, p, vol->outdate_token);
		}
		return;
	}
	/* Each notice has its token; only its confirmation counts (any
	 * other STATE of the peer says nothing about this record). */
	for (unsigned i = 0; i < vol->n_peers; i++) {
		struct peer *o = vol->peers[i];
		if (o == p || !repl__peer_up(o) ||
		    repl__peer_send_outdate(o, p, ++vol->outdate_token) < 0)
			continue;
		vol->freeze++;
		o->outdate_waits++;
		o->outdate_wait_token = vol->outdate_token;
	}
	if (!vol->freeze)
		new_gen_for(p);	/* nobody to confirm: at once */
	if (vol->freeze && !vol->freeze_timer)
		repl__timer_add(vol->eng, vol->outdate_timeout_ms, freeze_timeout, vol,
				&vol->freeze_timer);
}

static void fail_frozen(struct repl_volume *vol, int err);

/* Held acknowledgements are failed, not given: a stop must not turn a
 * write the cluster has not secured into a success. */
void repl__rep_close(struct repl_volume *vol)
{
	vol->closing = true;
	repl__timer_del(vol->eng, &vol->freeze_timer);
	repl__timer_del(vol->eng, &vol->intent_timer);
	repl__timer_del(vol->eng, &vol->al_timer);
	al_fail_waiting(vol);
	/* The held writes are on this disk: a stop without the confirmation
	 * keeps this replica ahead of the lost peer, as it is. */
	new_gens_pending(vol);
	freeze_clear(vol);
	fail_frozen(vol, -ESHUTDOWN);
}

void repl_volume_outdate_done(struct repl_volume *vol, uint64_t token)
{
	if (!vol->freeze)
		return;
	plog(LOG_INFO, vol->name, "the cluster recorded the outdate (%llu)",
	     (unsigned long long)token);
	if (--vol->freeze == 0) {
		new_gens_pending(vol);
		thaw(vol);
	}
}

/* p confirmed the notice with this token: it, and the notices sent to p
 * before it (p handles them in order), are recorded there. */
void repl__rep_outdate_confirmed(struct peer *p, uint64_t token)
{
	struct repl_volume *vol = p->vol;

	if (vol->eng->hooks.outdate)
		return;		/* the group confirms, not the peers */
	if (!p->outdate_waits || token != p->outdate_wait_token)
		return;		/* not the last notice we sent it: wait for that one */
	vol->freeze -= MIN(vol->freeze, p->outdate_waits);
	p->outdate_waits = 0;
	if (vol->freeze == 0) {
		repl__timer_del(vol->eng, &vol->freeze_timer);
		new_gens_pending(vol);
		thaw(vol);
	}
}

void repl__rep_peer_down(struct peer *p)
{
	struct repl_volume *vol = p->vol;
	bool was_in_sync = p->link == REPL_LINK_CONNECTED || p->link == REPL_LINK_SYNC_SOURCE;
	struct vwrite *w;
	uint64_t need;

	repl__rs_stop(p);
	/* Its confirmations cannot come any more (a new link confirms only
	 * its own notices): what it owed stays held until the timeout. */
	p->outdate_waits = 0;
	/* What it acknowledged and may have lost with its power goes to its
	 * bitmap, written out with the record below or the next flush. */
	if (repl__unfl_count(p)) {
		repl__unfl_lost(p);
		if (!vol->bm_flushing)
			bm_flush_start(vol);
	}
	/* The record comes first: no write may complete before it. */
	if (vol->role == REPL_PRIMARY && was_in_sync && !vol->closing)
		outdate_peer(p);
	while ((w = p->unacked_head)) {
		unacked_unlink(p, w);
		w->pending++;
		need = mark_missing(vol, p->idx, w->io);
		if (need)
			bm_wait_for(vol, w, need);
		w->pending--;
		vwrite_put(w);
	}
	p->peer_role = REPL_SECONDARY;
	p->peer_disk = GEN_DISK_UNKNOWN;
}

void repl__rep_peer_up(struct peer *p, enum gen_decision d)
{
	switch (d) {
	case GEN_SOURCE_BITMAP:
	case GEN_SOURCE_FULL:
		repl__rs_start_source(p, d == GEN_SOURCE_FULL);
		break;
	case GEN_TARGET_BITMAP:
	case GEN_TARGET_FULL:
		repl__rs_start_target(p);
		break;
	default:
		p->link = REPL_LINK_CONNECTED;
		break;
	}
}

/* ---- Secondary: applying the Primary's writes ----------------------------- */

struct sapply {
	struct repl_io io;
	void *mem;			/* holds io.buf */
	struct peer *p;
	uint64_t conn_id;		/* answer only the connection that asked */
	uint64_t seq;
	struct sapply *next;
};

static bool overlaps(const struct repl_io *a, const struct repl_io *b)
{
	if (a->op == REPL_IO_FLUSH || b->op == REPL_IO_FLUSH)
		return false;
	return a->offset < b->offset + b->len && b->offset < a->offset + a->len;
}

static bool blocked(struct repl_volume *vol, const struct sapply *a, const struct sapply *upto)
{
	/* A Primary that stepped down (repl_volume_step_down()) failed its
	 * writes in flight, but those already running still reach the
	 * store: the new Primary's data for their range (its resync, its
	 * writes) lands after them, or theirs would stay here, where no
	 * bitmap knows of it (sim seed 4232).  They end by themselves. */
	if (vol->role != REPL_PRIMARY)
		for (const struct vwrite *o = vol->writes; o; o = o->vnext)
			if (o->local_busy && io_changes_data(o->local.op) &&
			    overlaps(&o->local, &a->io))
				return true;
	for (struct sapply *s = vol->applying; s; s = s->next)
		if (overlaps(&s->io, &a->io))
			return true;
	for (struct sapply *s = vol->apply_wait_head; s && s != upto; s = s->next)
		if (overlaps(&s->io, &a->io))
			return true;
	return false;
}

static bool applying_overlaps(const struct repl_volume *vol, const struct repl_io *io)
{
	for (const struct sapply *s = vol->applying; s; s = s->next)
		if (overlaps(&s->io, io))
			return true;
	for (const struct sapply *s = vol->apply_wait_head; s; s = s->next)
		if (overlaps(&s->io, io))
			return true;
	return false;
}

static void apply_submit(struct repl_volume *vol, struct sapply *a)
{
	a->next = vol->applying;
	vol->applying = a;
	vol->inflight++;
	repl__iopool_submit(vol->pool, &a->io);
}

static void apply_unblock(struct repl_volume *vol)
{
	struct sapply **pp = &vol->apply_wait_head, *a, *prev = NULL;

	while ((a = *pp)) {
		if (blocked(vol, a, a)) {
			prev = a;
			pp = &a->next;
			continue;
		}
		*pp = a->next;
		if (vol->apply_wait_tail == a)
			vol->apply_wait_tail = prev;
		apply_submit(vol, a);
	}
}

static void apply_done(struct repl_io *io)
{
	struct sapply *a = (struct sapply *)io;
	struct repl_volume *vol = a->p->vol;
	struct sapply **pp;

	vol->inflight--;
	for (pp = &vol->applying; *pp != a; pp = &(*pp)->next)
		;
	*pp = a->next;
	if (io->result < 0)
		plog_errno(LOG_ERR, vol->name, -io->result, "applying a write from %s",
			   a->p->node);
	if (repl__peer_up(a->p) && a->p->conn_id == a->conn_id)
		repl__peer_send_ack(a->p, a->seq, io->result);
	repl__buf_put(a->mem);
	free(a);
	apply_unblock(vol);
	local_unblock(vol);	/* a promotion's writes may wait for it */
}

void repl__rep_apply(struct peer *p, uint64_t seq, enum repl_io_op op,
		     unsigned flags, uint64_t offset, uint32_t len, void *data, void *mem)
{
	struct repl_volume *vol = p->vol;
	struct sapply *a = calloc(1, sizeof(*a));

	if (!a) {
		free(mem);
		repl__peer_drop(p, "out of memory");
		return;
	}
	if ((op == REPL_IO_WRITE || op == REPL_IO_ZERO || op == REPL_IO_TRIM) &&
	    !(seq & (UINT64_C(1) << 63)))
		repl__recent_note(vol, seq, offset, len);
	a->p = p;
	a->mem = mem;
	a->conn_id = p->conn_id;
	a->seq = seq;
	a->io = (struct repl_io){ .op = op, .flags = flags, .offset = offset,
				  .len = len, .buf = data, .done = apply_done };
	if (blocked(vol, a, NULL)) {
		if (vol->apply_wait_tail)
			vol->apply_wait_tail->next = a;
		else
			vol->apply_wait_head = a;
		vol->apply_wait_tail = a;
		return;
	}
	apply_submit(vol, a);
}

/* ---- quorum ---------------------------------------------------------------- */

void repl__rep_hold(struct repl_volume *vol, struct repl_io *io)
{
	io->next = NULL;
	*vol->held_tail = io;
	vol->held_tail = &io->next;
}

static struct repl_io *take_held(struct repl_volume *vol)
{
	struct repl_io *io = vol->held_head;

	vol->held_head = NULL;
	vol->held_tail = &vol->held_head;
	return io;
}

void repl_volume_set_quorate(struct repl_volume *vol, bool quorate)
{
	struct repl_io *io, *next;

	if (vol->quorate == quorate)
		return;
	vol->quorate = quorate;
	if (!quorate) {
		if (vol->role == REPL_PRIMARY && vol->n_peers)
			plog(LOG_WARNING, vol->name, "partition lost quorum: I/O frozen "
			     "until it returns");
		repl__changed(vol);
		return;
	}
	plog(LOG_NOTICE, vol->name, "quorum is back: I/O resumes");
	thaw(vol);
	for (io = take_held(vol); io; io = next) {
		next = io->next;
		repl__volume_io(vol, io);
	}
	repl__changed(vol);
}

static void fail_frozen(struct repl_volume *vol, int err)
{
	struct vwrite *w = vol->frozen, *next;
	struct repl_io *io, *inext;

	vol->frozen = NULL;
	for (; w; w = next) {
		next = w->wnext;
		w->result = err;
		vwrite_finish(w);
	}
	for (io = take_held(vol); io; io = inext) {
		inext = io->next;
		io->result = err;
		io->done(io);
	}
}

void repl_volume_step_down(struct repl_volume *vol)
{
	if (vol->role != REPL_PRIMARY)
		return;
	{
		unsigned nw = 0, nf = 0, nh = 0, nl = 0;
		for (struct vwrite *w = vol->writes; w; w = w->vnext)
			nw++;
		for (struct vwrite *w = vol->frozen; w; w = w->wnext)
			nf++;
		for (struct repl_io *io = vol->held_head; io; io = io->next)
			nh++;
		for (struct vwrite *w = vol->local_wait; w; w = w->lnext)
			nl++;
		plog(LOG_WARNING, vol->name, "another replica was promoted while this one was "
		     "cut off: stepping down; %u write(s) in flight, %u held for acks, "
		     "%u request(s) held, %u waiting locally: failed, never acknowledged",
		     nw, nf, nh, nl);
	}
	repl__writes_check(vol, "step down", false);
	/* Whenever what is in flight ends, it is answered with an error. */
	for (struct vwrite *w = vol->writes; w; w = w->vnext)
		w->result = -ESHUTDOWN;
	repl__timer_del(vol->eng, &vol->freeze_timer);
	freeze_clear(vol);
	fail_frozen(vol, -ESHUTDOWN);
	/* Nothing this replica wrote since the cut was acknowledged, and
	 * writes in flight at the cut may be on this disk alone: it starts
	 * over as a blank replica and takes the new Primary's data. */
	repl__volume_start_over(vol, "re-deciding after stepping down");
	repl__writes_check(vol, "step down", false);
}

void repl__volume_start_over(struct repl_volume *vol, const char *why)
{
	repl__window_free(vol);
	repl__nbd_conns_drop_volume(vol->eng, vol);
	if (repl__volume_make_blank(vol) < 0)
		plog(LOG_ERR, vol->name, "cannot record that this replica starts over");
	for (unsigned i = 0; i < vol->n_peers; i++) {
		vol->peers[i]->took_primary = false;
		vol->peers[i]->gen_pending = 0;	/* blank now */
		if (vol->peers[i]->conn != PC_IDLE)
			repl__peer_drop(vol->peers[i], why);
		repl__peer_retry(vol->peers[i]);
	}
	repl__changed(vol);
}

/* Is a write in flight here over [off, off + len)?  The Primary's own, or
 * one of a Primary this replica followed before its promotion, still being
 * applied: a resync (or verify) read of that range would take the data
 * from before it, and the write then lands here only. */
bool repl__writes_overlap(const struct repl_volume *vol, uint64_t off, uint64_t len)
{
	const struct sapply *lists[2] = { vol->applying, vol->apply_wait_head };

	for (const struct vwrite *w = vol->writes; w; w = w->vnext)
		if (w->io->len && w->io->offset < off + len && off < w->io->offset + w->io->len)
			return true;
	for (unsigned i = 0; i < 2; i++)
		for (const struct sapply *s = lists[i]; s; s = s->next)
			if (s->io.op != REPL_IO_FLUSH && s->io.len &&
			    s->io.offset < off + len && off < s->io.offset + s->io.len)
				return true;
	return false;
}
