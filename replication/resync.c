/* resync.c: bringing a replica that was away up to date.
 *
 * The source walks its dirty bitmap for the peer, reads each dirty region
 * from its store and sends it (RS_DATA), or just its range when it is all
 * zeroes (RS_ZERO), which the target punches as a hole.  A region that is a
 * hole in the source's file backing is not even read (REPL_IO_HOLE_CHECK):
 * a resync of a sparse volume moves its data, not its size.  An
 * acknowledged region is only written on the target, not yet durable: its
 * bit is cleared when a FLUSH the source sends after that acknowledgement
 * is acknowledged (the target fdatasyncs first), one flush for a batch of
 * regions, as DRBD's barriers cover an epoch.  A target that loses power,
 * or a resync cut short, thus repeats what was not durable, never skips
 * it.
 * Guest writes go on meanwhile, and go to the peer as usual; a region that
 * a guest write touches while its resync is in flight is redone, and a
 * region is not read while a guest write to it is still in flight, so a
 * stale copy can never land after newer data.  A window of regions is in
 * flight at once.  When the bitmap is empty (the last batch flushed) the
 * source sends its VOLUME state; the target, Inconsistent until then, takes
 * the source's generations and becomes UpToDate once its own fdatasync is
 * done (a source that did not flush cannot make it claim data its disk
 * does not hold), and says so in its STATE: only then does the source
 * record it UpToDate and count it in sync.
 *
 * Bits are cleared in memory and reach the disk lazily: after a crash a
 * resync repeats some regions, it never skips one.  This file is the
 * source's side, and the resync's lifetime and status; the target's is
 * resync_target.c.  Loop thread only. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "meta.h"
#include "peer.h"
#include "ratelimit.h"
#include "util.h"

#define RS_WINDOW 16			/* regions in flight while the guest is idle */
#define RS_WINDOW_BUSY 2		/* ... and while it writes */
#define GUEST_BUSY_MS 200		/* a guest write this recent means busy */
#define RS_RETRY_MS 20
#define RS_RECORD_RETRY_MS 1000
#define RATE_WINDOW_MS 2000
/* A flush of the acknowledged regions when this many bytes or this much
 * time have gathered, and at the end of every pass. */
#define RS_FLUSH_BYTES (8u << 20)
#define RS_FLUSH_MS 1000
/* A region that fails (our read, or the target's write) pauses the
 * resync, for longer each time while failures go on, up to RS_PAUSE_MAX_MS;
 * without failures for twice that, the next pause is short again.  A full
 * disk was otherwise sent the same regions as fast as it failed them
 * (tests/repl-disk-full.sh: 5 GB in 5 s for 16 MiB out of sync). */
#define RS_PAUSE_MIN_MS 250
#define RS_PAUSE_MAX_MS 10000
#define RS_PAUSE_LOG_MS 60000		/* a message a minute, at most */

struct rs_req {
	struct repl_io io;
	struct resync *rs;		/* NULL once the resync is gone */
	struct rs_req *next;
	uint64_t seq;
	bool sent;
	bool redo;			/* a guest write touched it meanwhile */
};

struct resync {
	struct peer *p;
	struct rs_req *inflight;
	unsigned n_inflight;
	/* acknowledged, not known durable: gathering for the next flush, and
	 * covered by the flush in flight (flush_seq, 0: none) */
	struct rs_req *acked, *flushing;
	uint64_t acked_bytes, acked_since_ms, flush_seq;
	uint64_t cursor;		/* next region to look at */
	uint64_t seq;
	uint64_t total_bytes, done_bytes;
	uint64_t rate_start_ms, rate_bytes, rate_bps;
	uint64_t started_ms;
	void *timer;
	bool finished;
	bool record_retry;		/* the target's end to record again */
	bool agreement;			/* repl__rs_target_holds_all() */
	uint64_t slot_ms, slot_bytes;	/* rate limit: bytes issued this slot */
	/* paused after a failure (see RS_PAUSE_MIN_MS) until paused_until */
	uint64_t paused_until, last_failure_ms;
	unsigned pause_ms;
	int failure;			/* its errno; 0 once a region went through */
	bool failure_here;		/* our read failed, not the target's write */
	struct ratelimit failure_log, going_log;
};

#define RATE_SLOT_MS 100

/* resync-rate-max: at most rate/10 bytes per 100 ms slot. */
static bool over_rate(struct repl_volume *vol, struct resync *rs)
{
	uint64_t now = now_mono_ms();

	if (!vol->resync_rate_max)
		return false;
	if (now - rs->slot_ms >= RATE_SLOT_MS) {
		rs->slot_ms = now;
		rs->slot_bytes = 0;
	}
	return rs->slot_bytes >= vol->resync_rate_max * RATE_SLOT_MS / 1000;
}

static uint64_t region_size(const struct repl_volume *vol)
{
	return UINT64_C(1) << meta_get(vol->meta)->region_shift;
}

/* Region r as the peer can take it: never past the end of its replica,
 * which is smaller than ours while a grow goes round (resize.h).  False
 * if none of it is there yet. */
static bool region_range(const struct peer *p, uint64_t r, uint64_t *off, uint32_t *len)
{
	const struct repl_volume *vol = p->vol;
	uint64_t rs = region_size(vol), end = vol->size;

	if (p->size && p->size < end)
		end = p->size;
	*off = r * rs;
	if (*off >= end)
		return false;
	*len = (uint32_t)MIN(rs, end - *off);
	return true;
}

/* The bytes of a sent region whose bit may go: all of it, also when it
 * was cut at the end of a smaller peer (the rest is new area, zeroes on
 * both sides until a client of a larger export writes there). */
static uint64_t region_done_len(const struct peer *p, const struct rs_req *q)
{
	if (q->io.offset + q->io.len == p->size && p->size < p->vol->size)
		return region_size(p->vol);
	return q->io.len;
}

static bool busy_region(const struct repl_volume *vol, const struct resync *rs,
			uint64_t off, uint32_t len)
{
	if (repl__writes_overlap(vol, off, len))
		return true;
	for (const struct rs_req *q = rs->inflight; q; q = q->next)
		if (q->io.offset == off)
			return true;
	/* sent already, its bit goes with the flush */
	for (const struct rs_req *q = rs->acked; q; q = q->next)
		if (q->io.offset == off)
			return true;
	for (const struct rs_req *q = rs->flushing; q; q = q->next)
		if (q->io.offset == off)
			return true;
	return false;
}

static void rs_pump(struct peer *p);

static void rs_unlink(struct resync *rs, struct rs_req *q)
{
	for (struct rs_req **pp = &rs->inflight; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			rs->n_inflight--;
			return;
		}
}

/* A region failed (here: our read; else the target's write), with err:
 * the resync pauses.  Regions in flight when the pause began fail within
 * it, and are only counted. */
static void rs_failed(struct peer *p, struct resync *rs, int err, bool here, uint64_t offset)
{
	uint64_t now = now_mono_ms();
	unsigned skipped;
	char buf[64];
	const char *more;

	rs->failure = err;
	rs->failure_here = here;
	if (now >= rs->paused_until) {
		if (!rs->pause_ms || now - rs->last_failure_ms > 2 * RS_PAUSE_MAX_MS)
			rs->pause_ms = RS_PAUSE_MIN_MS;
		else
			rs->pause_ms = MIN(2 * rs->pause_ms, RS_PAUSE_MAX_MS);
		rs->paused_until = now + rs->pause_ms;
	}
	rs->last_failure_ms = now;
	if (!ratelimit_ok(&rs->failure_log, now, RS_PAUSE_LOG_MS, &skipped))
		return;
	more = ratelimit_more(skipped, buf, sizeof(buf));
	if (here)
		plog_errno(LOG_ERR, p->vol->name, err, "resync read at %llu failed%s; the resync "
			   "of %s waits %u ms, longer while failures go on",
			   (unsigned long long)offset, more, p->node, rs->pause_ms);
	else
		plog_errno(LOG_ERR, p->vol->name, err, "peer %s failed a resync write at %llu%s; "
			   "the resync waits %u ms, longer while failures go on", p->node,
			   (unsigned long long)offset, more, rs->pause_ms);
}

/* A region went through: after failures, the resync is moving again
 * (a region of zeroes goes through a full disk: said once a minute). */
static void rs_went(struct peer *p, struct resync *rs)
{
	unsigned skipped;

	if (!rs->failure)
		return;
	rs->failure = 0;
	if (ratelimit_ok(&rs->going_log, now_mono_ms(), RS_PAUSE_LOG_MS, &skipped))
		plog(LOG_NOTICE, p->vol->name, "resync of %s goes on: %s took a region again",
		     p->node, rs->failure_here ? "this replica's disk" : "its disk");
}

static void rs_read_done(struct repl_io *io)
{
	struct rs_req *q = (struct rs_req *)io;
	struct resync *rs = q->rs;
	struct peer *p;
	bool zero;

	if (!rs || io->result < 0 || q->redo) {
		if (rs) {
			if (io->result < 0)
				rs_failed(rs->p, rs, -io->result, true, io->offset);
			rs_unlink(rs, q);
			rs_pump(rs->p);
		}
		free(io->buf);
		free(q);
		return;
	}
	p = rs->p;
	zero = (io->flags & REPL_IO_WAS_HOLE) || all_zero(io->buf, io->len);
	q->sent = true;
	if (zero) {
		free(io->buf);
		repl__peer_send_rs_data(p, q->seq, io->offset, io->len, NULL, true);
	} else {
		p->resync_sent_bytes += io->len;
		/* the link owns the buffer from here */
		repl__peer_send_rs_data(p, q->seq, io->offset, io->len, io->buf, false);
	}
	io->buf = NULL;
}

static void rs_issue(struct peer *p, struct resync *rs, uint64_t off, uint32_t len)
{
	struct rs_req *q = calloc(1, sizeof(*q));

	if (!q || !(q->io.buf = malloc(len))) {
		free(q);
		return;
	}
	q->rs = rs;
	q->seq = WIRE_RS_SEQ_BIT | ++rs->seq;
	q->io.op = REPL_IO_READ;
	q->io.flags = REPL_IO_HOLE_CHECK;
	q->io.offset = off;
	q->io.len = len;
	q->io.done = rs_read_done;
	q->next = rs->inflight;
	rs->inflight = q;
	rs->n_inflight++;
	repl__rep_read(p->vol, &q->io);
}

static void rs_retry(void *arg)
{
	struct peer *p = arg;

	if (p->rs) {
		p->rs->timer = NULL;
		rs_pump(p);
	}
}

static void rate_note(struct resync *rs, uint64_t bytes)
{
	uint64_t now = now_mono_ms();

	rs->rate_bytes += bytes;
	if (now - rs->rate_start_ms >= RATE_WINDOW_MS) {
		rs->rate_bps = rs->rate_bytes * 1000 / (now - rs->rate_start_ms);
		rs->rate_start_ms = now;
		rs->rate_bytes = 0;
	}
}

/* The FLUSH that makes the acknowledged regions durable on the target:
 * when enough gathered, or at the end of a pass (force).  One at a time;
 * regions acknowledged meanwhile wait for the next one.  False if the
 * send failed: the peer is dropped and rs freed (sim seed 21439 with
 * --inline, where rs_pump went on with it). */
static bool rs_flush(struct peer *p, struct resync *rs, bool force)
{
	struct wire_msg m = { .type = WIRE_FLUSH };

	if (!rs->acked || rs->flush_seq)
		return true;
	if (!force && rs->acked_bytes < RS_FLUSH_BYTES &&
	    now_mono_ms() - rs->acked_since_ms < RS_FLUSH_MS)
		return true;
	m.seq = WIRE_RS_SEQ_BIT | ++rs->seq;
	rs->flushing = rs->acked;
	rs->acked = NULL;
	rs->acked_bytes = 0;
	rs->flush_seq = m.seq;
	if (repl__peer_send_msg(p, &m) < 0) {
		repl__peer_drop(p, "cannot send a resync flush");
		return false;
	}
	return true;
}

/* The target says every region acknowledged before the flush is on its
 * disk: their bits go. */
static void rs_flushed(struct peer *p, struct resync *rs, int result)
{
	struct rs_req *q, *next;

	if (result < 0) {
		plog_errno(LOG_ERR, p->vol->name, -result, "peer %s failed a resync flush: "
			   "its regions will be sent again", p->node);
		/* Its disk may have dropped any write not yet durable there
		 * (iopool.c): the regions it acknowledged since this flush
		 * was sent go again too, and our writes it acknowledged go
		 * to its bitmap. */
		for (q = rs->acked; q; q = q->next)
			q->redo = true;
		repl__unfl_lost(p);
	}
	for (q = rs->flushing; q; q = next) {
		next = q->next;
		if (result == 0 && !q->redo &&
		    meta_bits_clear_range(p->vol->meta, p->idx, q->io.offset,
					  region_done_len(p, q))) {
			rs->done_bytes += q->io.len;
			rate_note(rs, q->io.len);
		}
		free(q);
	}
	rs->flushing = NULL;
	rs->flush_seq = 0;
}

static void rs_free_list(struct rs_req *q)
{
	for (struct rs_req *next; q; q = next) {
		next = q->next;
		free(q);
	}
}

/* Every region is on the target's disk: our VOLUME tells it so, with our
 * generations.  It stays our target until its STATE says it recorded the
 * end (repl__rs_on_peer_state()): until then it is Inconsistent by its
 * own record, so what we acknowledge is not counted as held there, while
 * losing it still outdates it (outdate.c).  Counted in sync from here, a
 * Primary that lost its power before the VOLUME arrived came back the one
 * consistent replica and resynced over the one copy of a write it had
 * acknowledged as held by both (sim seed 21283 --no-eio). */
static void rs_finish(struct peer *p)
{
	struct repl_volume *vol = p->vol;
	struct resync *rs = p->rs;
	struct meta_super sb = *meta_get(vol->meta);
	struct gen_side g;

	rs->finished = true;
	repl__peer_gen_side(vol, (int)p->idx, &g);
	if (g.bitmap && gen_on_resync_done(&g) == 0)
		repl__gen_store(&sb, (int)p->idx, &g);
	sb.flags &= ~META_F_PRIMARY_CRASHED;
	if (meta_update(vol->meta, &sb) < 0)
		plog(LOG_ERR, vol->name, "cannot record the end of the resync");
	meta_bitmap_flush(vol->meta);
	plog(LOG_INFO, vol->name, "resync of %s: every region sent; waiting for it to "
	     "record the end", p->node);
	repl__peer_send_volume(p);
	repl__changed(vol);
}

bool repl__rs_sent_all(const struct peer *p)
{
	return p->rs && p->rs->finished && p->link == REPL_LINK_SYNC_SOURCE;
}

void repl__rs_on_peer_state(struct peer *p)
{
	struct repl_volume *vol = p->vol;
	struct resync *rs = p->rs;
	struct meta_super sb = *meta_get(vol->meta);

	if (!rs || !rs->finished || p->link != REPL_LINK_SYNC_SOURCE ||
	    !gen_disk_consistent(p->peer_disk))
		return;
	/* Regions it missed since the VOLUME (a write it failed starts a
	 * pass itself, replicate.c): another pass first. */
	if (meta_bits_count(vol->meta, p->idx)) {
		repl__rs_start_source(p, false);
		return;
	}
	/* Recorded first: a power loss here must find the peer a replica
	 * that may hold what we acknowledge from now on (role.c).  If that
	 * fails, the peer stays our target, holding every write still but
	 * not counted: dropping it would make the cluster record it
	 * Outdated, and with our metadata failing (the cluster restarts us,
	 * taken as a power loss) no replica would be left to promote (sim
	 * EIO seed 13920).  We try again, as the peer says it only once. */
	sb.peers[p->idx].disk_state = META_UPTODATE;
	if (meta_update(vol->meta, &sb) < 0) {
		if (!rs->record_retry)
			plog(LOG_ERR, vol->name, "cannot record that %s is in sync: it stays "
			     "the resync's target for now", p->node);
		rs->record_retry = true;
		if (!rs->timer)
			repl__timer_add(vol->eng, RS_RECORD_RETRY_MS, rs_retry, p, &rs->timer);
		return;
	}
	rs->record_retry = false;
	plog(LOG_NOTICE, vol->name, "resync of %s done: %llu bytes in %.1f s",
	     p->node, (unsigned long long)rs->done_bytes,
	     (double)(now_mono_ms() - rs->started_ms) / 1000.0);
	p->link = REPL_LINK_CONNECTED;
	repl__changed(vol);
}

static void rs_pump(struct peer *p)
{
	struct repl_volume *vol = p->vol;
	struct resync *rs = p->rs;
	uint64_t regions = meta_regions(vol->meta);
	bool skipped = false;
	unsigned window;

	if (!rs || !repl__peer_up(p))
		return;
	if (rs->finished) {
		if (rs->record_retry)
			repl__rs_on_peer_state(p);
		return;
	}
	if (!rs_flush(p, rs, false))
		return;
	if (now_mono_ms() < rs->paused_until) {	/* after a failed region */
		if (!rs->timer)
			repl__timer_add(vol->eng, rs->paused_until - now_mono_ms(), rs_retry, p,
					&rs->timer);
		return;
	}
	/* The guest first: while it writes, the resync keeps a small window
	 * (its latency stays close to the no-resync one); idle, it goes as
	 * fast as the link and the disks allow.  A timer picks up the pace
	 * again when the guest stops. */
	window = now_mono_ms() - vol->last_guest_write_ms < GUEST_BUSY_MS ? RS_WINDOW_BUSY
									   : RS_WINDOW;
	if (window == RS_WINDOW_BUSY && !rs->timer)
		repl__timer_add(vol->eng, GUEST_BUSY_MS, rs_retry, p, &rs->timer);
	while (rs->n_inflight < window) {
		uint64_t r = meta_bit_next(vol->meta, p->idx, rs->cursor), off;
		uint32_t len;

		if (over_rate(vol, rs)) {
			if (!rs->timer)
				repl__timer_add(vol->eng, RATE_SLOT_MS, rs_retry, p, &rs->timer);
			return;
		}
		if (r >= regions)
			break;
		rs->cursor = r + 1;
		if (!region_range(p, r, &off, &len) || busy_region(vol, rs, off, len)) {
			skipped = true;
			continue;
		}
		rs_issue(p, rs, off, len);
		rs->slot_bytes += len;
	}
	if (rs->n_inflight >= window)
		return;
	/* Reached the end: flush what was acknowledged, start over for what
	 * is left, or finish. */
	rs->cursor = 0;
	if (rs->n_inflight == 0 && !rs_flush(p, rs, true))
		return;
	if (meta_bits_count(vol->meta, p->idx) == 0 && rs->n_inflight == 0 && !rs->flush_seq &&
	    !rs->acked)
		rs_finish(p);
	else if ((skipped || rs->n_inflight == 0) && !rs->timer)
		repl__timer_add(vol->eng, RS_RETRY_MS, rs_retry, p, &rs->timer);
}

void repl__rs_on_ack(struct peer *p, uint64_t seq, int result)
{
	struct resync *rs = p->rs;
	struct rs_req *q;

	if (rs && seq == rs->flush_seq) {
		rs_flushed(p, rs, result);
		rs_pump(p);
		return;
	}
	for (q = rs ? rs->inflight : NULL; q && q->seq != seq; q = q->next)
		;
	if (!q || !q->sent) {
		repl__peer_drop(p, "resync acknowledgement for nothing sent");
		return;
	}
	rs_unlink(rs, q);
	if (result < 0)
		rs_failed(p, rs, -result, false, q->io.offset);
	else
		rs_went(p, rs);
	if (result < 0 || q->redo) {
		free(q);
	} else {
		/* Written there, not yet durable: its bit waits for a flush. */
		if (!rs->acked)
			rs->acked_since_ms = now_mono_ms();
		q->next = rs->acked;
		rs->acked = q;
		rs->acked_bytes += q->io.len;
	}
	rs_pump(p);
}

/* Marks every request of list q that overlaps [offset, offset + len) to be
 * redone (never counted done). */
static void redo_overlapping(struct rs_req *q, uint64_t offset, uint64_t len)
{
	for (; q; q = q->next)
		if (q->io.offset < offset + len && offset < q->io.offset + q->io.len)
			q->redo = true;
}

void repl__rs_note_write(struct repl_volume *vol, uint64_t offset, uint64_t len)
{
	for (unsigned i = 0; i < vol->n_peers; i++) {
		struct resync *rs = vol->peers[i]->rs;
		if (rs)
			redo_overlapping(rs->inflight, offset, len);
	}
}

/* A guest write to [offset, offset + len) failed on p: a resync copy of
 * that range acknowledged before it (waiting for, or in, a flush) must not
 * clear the bit the failure sets when that flush is acknowledged. */
void repl__rs_note_failed(struct peer *p, uint64_t offset, uint64_t len)
{
	struct resync *rs = p->rs;

	if (!rs)
		return;
	redo_overlapping(rs->inflight, offset, len);
	redo_overlapping(rs->acked, offset, len);
	redo_overlapping(rs->flushing, offset, len);
}

static struct resync *rs_new(struct peer *p)
{
	struct resync *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return NULL;
	rs->p = p;
	rs->started_ms = rs->rate_start_ms = now_mono_ms();
	return rs;
}

void repl__rs_start_source(struct peer *p, bool full)
{
	struct repl_volume *vol = p->vol;

	repl__rs_stop(p);
	p->rs = rs_new(p);
	if (!p->rs) {
		repl__peer_drop(p, "out of memory");
		return;
	}
	/* No bitmap generation is made here when the peer has none (DRBD's
	 * sync UUID, gen_on_sync_source_start()): our target keeps its
	 * current until the end and then takes ours with our history
	 * (repl__rs_on_done()), so a fresh id would only be pushed into both
	 * histories by rs_finish(), pushing out an older generation that a
	 * replica away still holds (seeds 244, 401 of tests/sim.sh: "no
	 * common generation" after the next failover).  An interrupted
	 * resync is safe without it: this Primary losing the target records
	 * the bitmap generation then (gen_on_disconnect_primary()), and the
	 * bits not sent yet are still set. */
	if (full)
		meta_bits_set_all(vol->meta, p->idx);
	p->rs->total_bytes = MIN(meta_bits_count(vol->meta, p->idx) * region_size(vol),
				 vol->size);
	p->link = REPL_LINK_SYNC_SOURCE;
	p->peer_disk = GEN_DISK_INCONSISTENT;
	plog(LOG_NOTICE, vol->name, "resync to %s: %llu bytes out of sync (%s)", p->node,
	     (unsigned long long)p->rs->total_bytes, full ? "full" : "bitmap");
	rs_pump(p);
}

void repl__rs_stop(struct peer *p)
{
	struct resync *rs = p->rs;
	struct rs_req *q, *next;

	if (!rs)
		return;
	repl__timer_del(p->vol->eng, &rs->timer);
	/* Not known durable there: their bits stay. */
	rs_free_list(rs->acked);
	rs_free_list(rs->flushing);
	for (q = rs->inflight; q; q = next) {
		next = q->next;
		if (q->sent)
			free(q);
		else
			q->rs = NULL;	/* its read is still running: freed there */
	}
	free(rs);
	p->rs = NULL;
}

void repl__rs_status(const struct peer *p, struct repl_peer_status *st)
{
	const struct resync *rs = p->rs;
	uint64_t left;

	st->resync_sent_bytes = p->resync_sent_bytes;
	st->resync_eta_s = -1;
	if (!rs && p->link == REPL_LINK_SYNC_TARGET) {
		/* The total is in the source's bitmap only: what came so far. */
		uint64_t ms = now_mono_ms() - p->rs_recv_started_ms;

		st->resync_done_bytes = p->rs_recv_bytes;
		if (ms > 0)
			st->resync_rate_bps = p->rs_recv_bytes * 1000 / ms;
		return;
	}
	if (!rs)
		return;
	if (rs->failure)
		snprintf(st->resync_error, sizeof(st->resync_error), "%s%s: %s",
			 rs->failure_here ? "a read here failed" : p->node,
			 rs->failure_here ? "" : "'s disk failed a write", strerror(rs->failure));
	st->resync_total_bytes = rs->total_bytes;
	st->resync_done_bytes = rs->done_bytes;
	st->resync_rate_bps = rs->rate_bps;
	if (!rs->rate_bps && rs->done_bytes && now_mono_ms() > rs->started_ms)
		st->resync_rate_bps = rs->done_bytes * 1000 / (now_mono_ms() - rs->started_ms);
	left = st->out_of_sync_bytes;
	if (st->resync_rate_bps)
		st->resync_eta_s = (int64_t)(left / st->resync_rate_bps);
}

/* More regions joined the peer's bitmap: a running resync takes them on
 * its next pass; otherwise one starts. */
void repl__rs_more(struct peer *p)
{
	bool agreement = p->link == REPL_LINK_CONNECTED && p->peer_disk == GEN_DISK_UPTODATE;

	if (p->rs && !p->rs->finished)
		return;
	repl__rs_start_source(p, false);
	if (p->rs)
		p->rs->agreement = agreement;
	/* Such a target holds every acknowledged write throughout: lost
	 * now, it is one a Primary whose flush then failed steps down for
	 * (outdate.c's holds_acked(); sim seed 28061 of the EIO profile). */
	if (p->rs && agreement)
		p->peer_disk = GEN_DISK_UPTODATE;
}

bool repl__rs_target_holds_all(const struct peer *p)
{
	/* not once it says it went Inconsistent (a flush there lost writes) */
	return repl__peer_up(p) && p->link == REPL_LINK_SYNC_SOURCE && p->rs &&
	       p->rs->agreement && p->peer_disk == GEN_DISK_UPTODATE;
}
