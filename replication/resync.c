/* resync.c: bringing a replica that was away up to date.
 *
 * The source walks its dirty bitmap for the peer, reads each dirty region
 * from its store and sends it (RS_DATA), or just its range when it is all
 * zeroes (RS_ZERO); a bit is cleared when the peer acknowledges the region.
 * Guest writes go on meanwhile, and go to the peer as usual; a region that
 * a guest write touches while its resync is in flight is redone, and a
 * region is not read while a guest write to it is still in flight, so a
 * stale copy can never land after newer data.  A window of regions is in
 * flight at once.  When the bitmap is empty the source sends its VOLUME
 * state, and the target, Inconsistent until then, becomes UpToDate.
 *
 * Bits are cleared in memory and reach the disk lazily: after a crash a
 * resync repeats some regions, it never skips one.  Loop thread only. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "meta.h"
#include "peer.h"
#include "util.h"

#define RS_WINDOW 16			/* regions in flight while the guest is idle */
#define RS_WINDOW_BUSY 2		/* ... and while it writes */
#define GUEST_BUSY_MS 200		/* a guest write this recent means busy */
#define RS_SEQ_BIT (UINT64_C(1) << 63)
#define RS_RETRY_MS 20
#define RATE_WINDOW_MS 2000

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
	uint64_t cursor;		/* next region to look at */
	uint64_t seq;
	uint64_t total_bytes, done_bytes;
	uint64_t rate_start_ms, rate_bytes, rate_bps;
	uint64_t started_ms;
	void *timer;
	bool finished;
	uint64_t slot_ms, slot_bytes;	/* rate limit: bytes issued this slot */
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

static bool all_zero(const void *buf, size_t len)
{
	const uint8_t *b = buf;

	return len == 0 || (b[0] == 0 && memcmp(b, b + 1, len - 1) == 0);
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
				plog_errno(LOG_ERR, rs->p->vol->name, -io->result,
					   "resync read at %llu", (unsigned long long)io->offset);
			rs_unlink(rs, q);
			rs_pump(rs->p);
		}
		free(io->buf);
		free(q);
		return;
	}
	p = rs->p;
	zero = all_zero(io->buf, io->len);
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
	q->seq = RS_SEQ_BIT | ++rs->seq;
	q->io.op = REPL_IO_READ;
	q->io.offset = off;
	q->io.len = len;
	q->io.done = rs_read_done;
	q->next = rs->inflight;
	rs->inflight = q;
	rs->n_inflight++;
	repl__volume_io(p->vol, &q->io);
}

static void rs_retry(void *arg)
{
	struct peer *p = arg;

	if (p->rs) {
		p->rs->timer = NULL;
		rs_pump(p);
	}
}

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
	sb.peers[p->idx].disk_state = META_UPTODATE;
	if (meta_update(vol->meta, &sb) < 0)
		plog(LOG_ERR, vol->name, "cannot record the end of the resync");
	meta_bitmap_flush(vol->meta);
	plog(LOG_NOTICE, vol->name, "resync of %s done: %llu bytes in %.1f s",
	     p->node, (unsigned long long)rs->done_bytes,
	     (double)(now_mono_ms() - rs->started_ms) / 1000.0);
	p->link = REPL_LINK_CONNECTED;
	p->peer_disk = GEN_DISK_UPTODATE;
	repl__peer_send_volume(p);
	repl__changed(vol);
}

static void rs_pump(struct peer *p)
{
	struct repl_volume *vol = p->vol;
	struct resync *rs = p->rs;
	uint64_t regions = meta_regions(vol->meta);
	bool skipped = false;
	unsigned window;

	if (!rs || rs->finished || !repl__peer_up(p))
		return;
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
	/* Reached the end: start over for what is left, or finish. */
	rs->cursor = 0;
	if (meta_bits_count(vol->meta, p->idx) == 0 && rs->n_inflight == 0)
		rs_finish(p);
	else if ((skipped || rs->n_inflight == 0) && !rs->timer)
		repl__timer_add(vol->eng, RS_RETRY_MS, rs_retry, p, &rs->timer);
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

void repl__rs_on_ack(struct peer *p, uint64_t seq, int result)
{
	struct resync *rs = p->rs;
	struct rs_req *q;

	for (q = rs ? rs->inflight : NULL; q && q->seq != seq; q = q->next)
		;
	if (!q || !q->sent) {
		repl__peer_drop(p, "resync acknowledgement for nothing sent");
		return;
	}
	rs_unlink(rs, q);
	if (result < 0)
		plog_errno(LOG_ERR, p->vol->name, -result, "peer %s failed a resync write",
			   p->node);
	else if (!q->redo && meta_bits_clear_range(p->vol->meta, p->idx, q->io.offset,
						   region_done_len(p, q))) {
		rs->done_bytes += q->io.len;
		rate_note(rs, q->io.len);
	}
	free(q);
	rs_pump(p);
}

void repl__rs_note_write(struct repl_volume *vol, uint64_t offset, uint64_t len)
{
	for (unsigned i = 0; i < vol->n_peers; i++) {
		struct resync *rs = vol->peers[i]->rs;
		for (struct rs_req *q = rs ? rs->inflight : NULL; q; q = q->next)
			if (q->io.offset < offset + len && offset < q->io.offset + q->io.len)
				q->redo = true;
	}
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
	struct meta_super sb = *meta_get(vol->meta);
	struct gen_side g;
	uint64_t sync_id;

	repl__rs_stop(p);
	p->rs = rs_new(p);
	if (!p->rs) {
		repl__peer_drop(p, "out of memory");
		return;
	}
	repl__peer_gen_side(vol, (int)p->idx, &g);
	if (gen_on_sync_source_start(&g, meta_new_gen(), &sync_id) == 0 &&
	    g.bitmap != sb.peers[p->idx].bitmap_gen) {
		repl__gen_store(&sb, (int)p->idx, &g);
		meta_update(vol->meta, &sb);
	}
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

void repl__rs_start_target(struct peer *p)
{
	struct repl_volume *vol = p->vol;
	struct meta_super sb = *meta_get(vol->meta);

	repl__rs_stop(p);
	if (sb.disk_state != META_INCONSISTENT) {
		sb.disk_state = META_INCONSISTENT;
		if (meta_update(vol->meta, &sb) < 0)
			plog(LOG_ERR, vol->name, "cannot record the resync start");
	}
	vol->disk_state = GEN_DISK_INCONSISTENT;
	p->link = REPL_LINK_SYNC_TARGET;
	plog(LOG_NOTICE, vol->name, "resync from %s started", p->node);
}

void repl__rs_on_data(struct peer *p, uint64_t seq, uint64_t offset, uint32_t len,
		      void *data, void *mem)
{
	/* A new Primary making recent writes agree (recent.c) starts a
	 * resync on a connected Secondary without a new handshake. */
	if (p->link == REPL_LINK_CONNECTED && p->peer_role == REPL_PRIMARY)
		repl__rs_start_target(p);
	if (p->link != REPL_LINK_SYNC_TARGET) {
		free(mem);
		repl__peer_drop(p, "resync data while not a sync target");
		return;
	}
	repl__rep_apply(p, seq, data ? REPL_IO_WRITE : REPL_IO_ZERO, 0, offset, len,
			data, mem);
}

void repl__rs_on_done(struct peer *p, const struct wire_volume *v)
{
	struct repl_volume *vol = p->vol;
	struct meta_super sb = *meta_get(vol->meta);

	if (p->link != REPL_LINK_SYNC_TARGET || !gen_disk_consistent(v->disk)) {
		repl__peer_drop(p, "unexpected VOLUME from the peer");
		return;
	}
	sb.gen_current = v->current;
	sb.gen_bitmap = 0;
	sb.gen_history[0] = v->history[0];
	sb.gen_history[1] = v->history[1];
	sb.disk_state = META_UPTODATE;
	sb.flags &= ~META_F_PRIMARY_CRASHED;
	/* Our data is the source's now: what we had recorded as missing on
	 * others (and our activity log) described data we no longer have. */
	for (unsigned i = 0; i < META_MAX_PEERS; i++)
		sb.peers[i].bitmap_gen = 0;
	for (unsigned i = 0; i < META_BITMAPS; i++)
		meta_bits_clear_range(vol->meta, i, 0, vol->size);
	if (meta_update(vol->meta, &sb) < 0 || meta_bitmap_flush(vol->meta) < 0) {
		plog(LOG_ERR, vol->name, "cannot record the end of the resync");
		return;
	}
	vol->disk_state = GEN_DISK_UPTODATE;
	p->link = REPL_LINK_CONNECTED;
	p->peer_disk = v->disk;
	plog(LOG_NOTICE, vol->name, "resync from %s done: UpToDate", p->node);
	repl__peers_tell_state(vol);
	repl__changed(vol);
}

void repl__rs_stop(struct peer *p)
{
	struct resync *rs = p->rs;
	struct rs_req *q, *next;

	if (!rs)
		return;
	repl__timer_del(p->vol->eng, &rs->timer);
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
	if (!rs)
		return;
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
	if (p->rs && !p->rs->finished)
		return;
	repl__rs_start_source(p, false);
}
