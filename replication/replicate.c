/* replicate.c: the synchronous write path between replicas ("protocol C").
 *
 * On the Primary, a write goes to the local store and to every connected
 * peer at once, many in flight per peer; it is acknowledged when the local
 * write and every peer it was sent to are done.  For a peer that is away,
 * the write's regions are set in that peer's dirty bitmap, and the write is
 * acknowledged only after those bits are on disk.  When a peer is lost,
 * writes it had not acknowledged go to its bitmap too, and the
 * acknowledgements are held (vol->freeze) while outdate.c records the peer
 * Outdated, so a promotion decision sees it.
 *
 * Not here: sockets and frames (peer.c), resync (resync.c), the
 * Secondary's side (apply.c). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agree.h"
#include "al_vol.h"
#include "log.h"
#include "meta.h"
#include "peer.h"
#include "sys.h"
#include "util.h"

/* Reads up to this size try the page cache on the loop thread first. */
#define INLINE_READ_MAX (64 * 1024)

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

void repl__rep_thaw(struct repl_volume *vol)
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
static bool peer_takes_writes(const struct peer *p);

#define LOCAL_RETRIES 2
/* A full or failing disk fails every write: one message per 10 s. */
#define WRITE_FAIL_LOG_MS 10000

/* Our own write of w failed, and the peers may hold it: the client gets
 * the error, but the replicas must not differ where nothing records it
 * (sim seed 3).  Written again (the guest's buffer is still ours until
 * the answer), up to LOCAL_RETRIES times; then the range goes into every
 * peer's bitmap, and the connected ones get it back from us at once (our
 * data, old or new, is the reference either way).  False: w was
 * resubmitted. */
static bool local_failed(struct repl_volume *vol, struct vwrite *w)
{
	uint64_t need = 0;
	unsigned skipped;
	char more[64];

	if (!io_changes_data(w->local.op) || vol->role != REPL_PRIMARY || vol->closing)
		return true;
	if (w->local_tries++ < LOCAL_RETRIES) {
		w->local.result = 0;
		repl__iopool_submit(vol->pool, &w->local);
		return false;
	}
	if (ratelimit_ok(&vol->write_fail_log, now_mono_ms(), WRITE_FAIL_LOG_MS, &skipped))
		plog_errno(LOG_ERR, vol->name, -w->local.result, "writing at %llu failed, "
			   "tried %u times%s: the peers resync the range from this replica",
			   (unsigned long long)w->local.offset, LOCAL_RETRIES + 1,
			   ratelimit_more(skipped, more, sizeof(more)));
	for (unsigned i = 0; i < vol->n_peers; i++) {
		need = MAX(need, mark_missing(vol, i, w->io));
		/* A resync copy of the range taken before now must not clear
		 * the bit when its flush is acknowledged: the peer may apply
		 * this write after it (sim seed 2374). */
		vol->eng->write_obs->missed(vol->peers[i], w->io->offset, w->io->len);
	}
	if (need)
		bm_wait_for(vol, w, need);
	(void)repl__agree_add(vol, w->seq, w->io->offset, w->io->len);
	for (unsigned i = 0; i < vol->n_peers; i++)
		if (peer_takes_writes(vol->peers[i]))
			vol->peers[i]->hooks->rs_more(vol->peers[i]);
	return true;
}

static void local_done(struct repl_io *io)
{
	struct vwrite *w = (struct vwrite *)((char *)io - offsetof(struct vwrite, local));
	struct repl_volume *vol = w->vol;
	bool lost = io->result < 0 && io->flush_lost;	/* a FLUSH's, or a FUA write's */

	if (io->op == REPL_IO_FLUSH && io->result == 0 && vol->role == REPL_PRIMARY &&
	    repl__al_flushed(vol))
		bm_flush_start(vol);
	/* Not written again when lost: the loss goes to disk_lost below
	 * (the write that found it fails: sim seed 904 of the EIO profile,
	 * written again, it hid the writes it had dropped until a FLUSH). */
	if (io->result < 0 && !lost && !local_failed(vol, w))
		return;
	if (io->result < 0)
		w->result = io->result;
	w->local_busy = false;
	w->local_pending = false;
	vwrite_put(w);
	local_unblock(vol);
	repl__apply_unblock(vol);	/* after a step-down, data may wait for it (apply.c) */
	if (lost)
		vol->eng->write_obs->disk_lost(vol);
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

/* Also after a write of the Primary this replica followed before its
 * promotion, still being applied here: the pool may run the two in any
 * order, and the old one must not land last. */
static bool local_blocked(const struct repl_volume *vol, const struct vwrite *w)
{
	if (io_changes_data(w->io->op) && repl__apply_overlaps(vol, w->io))
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
	/* An apply that ends may be what it waits for (apply.c tells). */
	repl__apply_set_observer(vol, local_unblock);
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

	/* Failed while it waited for its activity-log extents (a Primary
	 * stepping down, repl_volume_step_down()): written nowhere.  Its
	 * local write, started after the step-down, landed over the new
	 * Primary's resync of its range (sim seed 3711 of --inline). */
	if (w->result < 0) {
		w->local_pending = false;
		vwrite_put(w);	/* the reference its local write would hold */
		return;
	}
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
	if (w->peers_only) {
		w->local_pending = false;
		vwrite_put(w);	/* the reference its local write would hold */
	} else {
		local_start(vol, w);
	}
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
void repl__rep_al_fail_waiting(struct repl_volume *vol)
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

static void rep_io(struct repl_volume *vol, struct repl_io *io, bool peers_only)
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
	w->peers_only = peers_only;
	w->vnext = vol->writes;
	if (vol->writes)
		vol->writes->vprev = w;
	vol->writes = w;
	if (io_changes_data(io->op)) {
		vol->eng->write_obs->writing(vol, io->offset, io->len);
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

void repl__rep_io(struct repl_volume *vol, struct repl_io *io)
{
	rep_io(vol, io, false);
}

/* Tells the Secondaries which writes are everywhere (below the oldest
 * in flight), so that they can forget them (recent.c). */
static void peer_ack(struct repl_volume *vol)
{
	struct wire_msg m = { .type = WIRE_PING, .seq = vol->seq + 1 };

	if (vol->role != REPL_PRIMARY) {
		repl__agree_free(vol);
		return;
	}
	for (const struct vwrite *w = vol->writes; w; w = w->vnext)
		m.seq = MIN(m.seq, w->seq);
	/* and below what a peer still lacks of a write our disk failed */
	m.seq = repl__agree_bound(vol, m.seq);
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
 * known durable (peer_unflushed.c).  Not of our own disk: nothing here
 * waits for that, and the page cache writes it back in its own time,
 * after rewrites of the same pages have met there (with our disk flushed
 * too, 2 replicas did half the 4k writes per second, both disks writing
 * every page back within milliseconds of its write). */
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
	rep_io(vol, io, true);
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
		if (w->io->op == REPL_IO_FLUSH)
			plog_errno(LOG_ERR, p->vol->name, -result, "peer %s failed a flush",
				   p->node);
		else
			plog_errno(LOG_ERR, p->vol->name, -result,
				   "peer %s failed a write at %llu", p->node,
				   (unsigned long long)w->io->offset);
		/* Recorded before this write can complete (outdate.c). */
		vol->eng->write_obs->peer_failed(p);
		/* A failed flush may have dropped anything it had not made
		 * durable (iopool.c): resync copies too. */
		if (w->io->op == REPL_IO_FLUSH)
			vol->eng->write_obs->missed(p, 0, UINT64_MAX);
		else
			vol->eng->write_obs->missed(p, w->io->offset, w->io->len);
		need = mark_missing(p->vol, p->idx, w->io);
		if (need)
			bm_wait_for(p->vol, w, need);
		/* The peer went Inconsistent (apply.c): it gets the range
		 * back now, not at its next handshake. */
		if (vol->role == REPL_PRIMARY && peer_takes_writes(p) &&
		    meta_bits_count(vol->meta, p->idx))
			p->hooks->rs_more(p);
	}
	vwrite_put(w);
	if (kick)
		unfl_flush(vol);
}

/* ---- losing a peer (outdate.c decides; the write path's part) ----------------- */

void repl__rep_unfl_lost(struct peer *p)
{
	struct repl_volume *vol = p->vol;

	if (repl__unfl_count(p)) {
		repl__unfl_lost(p);
		if (!vol->bm_flushing)
			bm_flush_start(vol);
	}
}

void repl__rep_unacked_lost(struct peer *p)
{
	struct repl_volume *vol = p->vol;
	struct vwrite *w;
	uint64_t need;

	while ((w = p->unacked_head)) {
		unacked_unlink(p, w);
		w->pending++;
		need = mark_missing(vol, p->idx, w->io);
		if (need)
			bm_wait_for(vol, w, need);
		w->pending--;
		vwrite_put(w);
	}
}

/* ---- quorum ---------------------------------------------------------------- */

bool repl__rep_hold(struct repl_volume *vol, struct repl_io *io)
{
	/* Another node may be promoted meanwhile, and our data (even what a
	 * read would see) be stale. */
	if (!vol->n_peers || vol->role != REPL_PRIMARY || vol->quorate)
		return false;
	io->next = NULL;
	*vol->held_tail = io;
	vol->held_tail = &io->next;
	return true;
}

struct repl_io *repl__rep_take_held(struct repl_volume *vol)
{
	struct repl_io *io = vol->held_head;

	vol->held_head = NULL;
	vol->held_tail = &vol->held_head;
	return io;
}

/* What only reads this replica (gate.c): held like everything while a
 * Primary with peers lacks quorum.  A small read the page cache holds is
 * answered inline (RWF_NOWAIT never blocks); larger ones go to the
 * workers, which copy and send them in parallel. */
void repl__rep_read(struct repl_volume *vol, struct repl_io *io)
{
	int r;

	if (repl__rep_hold(vol, io))
		return;
	if (io->op == REPL_IO_READ && io->len <= INLINE_READ_MAX) {
		r = repl__store_read_nowait(vol->fd, io);
		if (r != -EAGAIN) {
			io->result = r;
			io->done(io);
			return;
		}
	}
	repl__iopool_submit(vol->pool, io);
}

void repl__rep_fail_frozen(struct repl_volume *vol, int err)
{
	struct vwrite *w = vol->frozen, *next;
	struct repl_io *io, *inext;

	vol->frozen = NULL;
	for (; w; w = next) {
		next = w->wnext;
		w->result = err;
		vwrite_finish(w);
	}
	for (io = repl__rep_take_held(vol); io; io = inext) {
		inext = io->next;
		io->result = err;
		io->done(io);
	}
}

/* Is a write in flight here over [off, off + len)?  The Primary's own, or
 * one of a Primary this replica followed before its promotion, still being
 * applied: a resync (or verify) read of that range would take the data
 * from before it, and the write then lands here only. */
bool repl__writes_overlap(const struct repl_volume *vol, uint64_t off, uint64_t len)
{
	for (const struct vwrite *w = vol->writes; w; w = w->vnext)
		if (w->io->len && w->io->offset < off + len && off < w->io->offset + w->io->len)
			return true;
	return repl__apply_overlaps_range(vol, off, len);
}
