/* verify.c: online verify.  The node that runs it reads each region of its
 * replica, computes a CRC32C, and asks every connected peer for the CRC of
 * the same region (VERIFY_REQ / VERIFY_REPLY), a window of regions at a
 * time, while the volume stays in use.  A region that a guest write touches
 * while it is being compared is compared again; regions with writes in
 * flight wait.  Regions that differ are reported; with repair (on the
 * Primary) they go into the peer's bitmap and a resync from here follows.
 * The peer side only reads and answers, once no write to the region is in
 * flight there; and a write that reaches the asking side (its own, or one
 * its Primary sends) while a region is being compared has it compared
 * again: the two reads see the same writes (sim seed 884).  A Secondary
 * that follows a Primary compares with the Primary only: another
 * Secondary's copy moves with writes that reach it on another connection,
 * at another time.  A region that is a hole in a
 * file backing is not read (REPL_IO_HOLE_CHECK): its CRC is that of zeroes,
 * so regions that are holes on both sides cost no disk reads and leave the
 * page cache alone.  A region this replica cannot read is read again,
 * VERIFY_READ_TRIES times in all, then counted unreadable and not
 * compared (a disk that fails every read had the verify read the same
 * region again forever: tests/repl-verify-eio.sh).  Loop thread only. */
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

#define VERIFY_WINDOW 16
#define VERIFY_SEQ_BIT (UINT64_C(1) << 62)
#define VERIFY_RETRY_MS 20
#define MAX_DIFFS 64
#define VERIFY_READ_TRIES 3
#define UNREADABLE_LOG_MS 10000

struct vreq {
	struct repl_io io;
	struct verify *v;		/* NULL once the verify is gone */
	struct vreq *next;
	uint64_t seq;
	uint32_t crc;
	unsigned tries;			/* failed reads of its region before */
	bool local_done;
	bool touched;			/* a write hit it meanwhile: compare again */
	unsigned replies_left;
	bool asked[REPL_MAX_PEERS];
	bool answered[REPL_MAX_PEERS];
	uint32_t peer_crc[REPL_MAX_PEERS];
};

struct verify {
	struct repl_volume *vol;
	bool repair, running;
	uint64_t cursor, regions, done;
	uint64_t seq;
	struct vreq *inflight;
	unsigned n_inflight;
	void *timer;
	uint64_t n_diffs[REPL_MAX_PEERS];
	uint64_t diffs[MAX_DIFFS];	/* offsets of the first differing regions */
	unsigned n_listed;
	uint64_t started_ms;
	struct {
		uint64_t region;
		unsigned tries;		/* its failed reads so far */
	} redo[256];			/* regions to compare again */
	unsigned n_redo;
	uint64_t unreadable;		/* regions not compared: reads here failed */
	int read_err;			/* the last such failure's errno */
	struct ratelimit unreadable_log;
};

static void verify_pump(struct verify *v);
static void verify_drop(struct repl_volume *vol);

static uint64_t region_bytes(const struct repl_volume *vol)
{
	return UINT64_C(1) << meta_get(vol->meta)->region_shift;
}

static void note_diff(struct verify *v, unsigned idx, uint64_t off, uint32_t len)
{
	struct repl_volume *vol = v->vol;

	v->n_diffs[idx]++;
	if (v->n_listed < MAX_DIFFS &&
	    (v->n_listed == 0 || v->diffs[v->n_listed - 1] != off)) {
		v->diffs[v->n_listed++] = off;
		/* the listed ones; the others are counted at the end */
		plog(LOG_WARNING, vol->name, "verify: region at %llu (%u bytes) differs on %s%s",
		     (unsigned long long)off, len, vol->peers[idx]->node,
		     v->n_listed == MAX_DIFFS ? " (more are counted, not logged)" : "");
	}
	if (v->repair)
		meta_bits_set_range(vol->meta, idx, off, len);
}

static void vreq_unlink(struct verify *v, struct vreq *q)
{
	for (struct vreq **pp = &v->inflight; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			v->n_inflight--;
			return;
		}
}

static void vreq_issue(struct verify *v, uint64_t off, uint32_t len, unsigned tries);

/* q's region could not be read here, VERIFY_READ_TRIES times. */
static void unreadable(struct verify *v, const struct vreq *q)
{
	unsigned skipped;
	char more[64];

	v->unreadable++;
	v->read_err = -q->io.result;
	v->done++;
	if (!ratelimit_ok(&v->unreadable_log, now_mono_ms(), UNREADABLE_LOG_MS, &skipped))
		return;
	plog_errno(LOG_ERR, v->vol->name, v->read_err, "verify: region at %llu could not be "
		   "read here, %u times%s", (unsigned long long)q->io.offset,
		   VERIFY_READ_TRIES, ratelimit_more(skipped, more, sizeof(more)));
}

static void vreq_complete(struct verify *v, struct vreq *q)
{
	bool failed;

	if (!q->local_done || q->replies_left)
		return;
	vreq_unlink(v, q);
	failed = q->io.result < 0;
	if (failed && (q->tries + 1 >= VERIFY_READ_TRIES || v->n_redo == ARRAY_SIZE(v->redo))) {
		unreadable(v, q);
	} else if ((q->touched || failed) && v->n_redo < ARRAY_SIZE(v->redo)) {
		v->redo[v->n_redo].region = q->io.offset / region_bytes(v->vol);
		v->redo[v->n_redo++].tries = q->tries + failed;
	} else {
		for (unsigned i = 0; i < v->vol->n_peers; i++)
			if (q->answered[i] && q->peer_crc[i] != q->crc)
				note_diff(v, i, q->io.offset, q->io.len);
		v->done++;
	}
	free(q->io.buf);
	free(q);
	verify_pump(v);
}

static void vreq_read_done(struct repl_io *io)
{
	struct vreq *q = (struct vreq *)io;

	if (!q->v) {
		free(io->buf);
		free(q);
		return;
	}
	if (io->flags & REPL_IO_WAS_HOLE)
		memset(io->buf, 0, io->len);
	if (io->result == 0)
		q->crc = crc32c(0, io->buf, io->len);
	q->local_done = true;
	vreq_complete(q->v, q);
}

static bool connected(const struct peer *p)
{
	return repl__peer_up(p) && p->link == REPL_LINK_CONNECTED && !p->suppressed;
}

/* Is p a peer this replica compares with: connected, and the Primary if
 * we are a Secondary that follows one? */
static bool comparable(const struct repl_volume *vol, const struct peer *p)
{
	if (!connected(p))
		return false;
	if (vol->role == REPL_PRIMARY || p->peer_role == REPL_PRIMARY)
		return true;
	for (unsigned i = 0; i < vol->n_peers; i++)
		if (connected(vol->peers[i]) && vol->peers[i]->peer_role == REPL_PRIMARY)
			return false;
	return true;
}

static void vreq_issue(struct verify *v, uint64_t off, uint32_t len, unsigned tries)
{
	struct repl_volume *vol = v->vol;
	struct vreq *q = calloc(1, sizeof(*q));
	struct wire_msg m = { .type = WIRE_VERIFY_REQ };

	if (!q || !(q->io.buf = malloc(len))) {
		free(q);
		return;
	}
	q->v = v;
	q->tries = tries;
	q->seq = VERIFY_SEQ_BIT | ++v->seq;
	q->io = (struct repl_io){ .op = REPL_IO_READ, .flags = REPL_IO_HOLE_CHECK, .offset = off,
				  .len = len, .buf = q->io.buf, .done = vreq_read_done };
	m.seq = q->seq;
	m.u.range = (struct wire_range){ off, len, 0 };
	for (unsigned i = 0; i < vol->n_peers; i++) {
		struct peer *p = vol->peers[i];
		if (comparable(vol, p) && repl__peer_send_msg(p, &m) == 0) {
			q->asked[i] = true;
			q->replies_left++;
		}
	}
	q->next = v->inflight;
	v->inflight = q;
	v->n_inflight++;
	repl__rep_read(vol, &q->io);
}

static void verify_finish(struct verify *v)
{
	struct repl_volume *vol = v->vol;
	uint64_t total = 0;

	v->running = false;
	for (unsigned i = 0; i < vol->n_peers; i++)
		total += v->n_diffs[i];
	plog(total || v->unreadable ? LOG_WARNING : LOG_NOTICE, vol->name,
	     "verify done in %.1f s: %llu region(s) checked, %llu differ%s%s",
	     (double)(now_mono_ms() - v->started_ms) / 1000.0, (unsigned long long)v->done,
	     (unsigned long long)total, total && v->repair ? ": resyncing them" : "",
	     v->unreadable ? "; some could not be read here (see status)" : "");
	if (!total || !v->repair)
		return;
	meta_bitmap_flush(vol->meta);
	for (unsigned i = 0; i < vol->n_peers; i++)
		if (v->n_diffs[i] && repl__peer_up(vol->peers[i]))
			repl__rs_start_source(vol->peers[i], false);
}

static void verify_retry(void *arg)
{
	struct verify *v = arg;

	v->timer = NULL;
	verify_pump(v);
}

static void verify_pump(struct verify *v)
{
	struct repl_volume *vol = v->vol;
	uint64_t rsz = region_bytes(vol);

	while (v->running && v->n_inflight < VERIFY_WINDOW &&
	       (v->n_redo || v->cursor < v->regions)) {
		uint64_t r = v->n_redo ? v->redo[v->n_redo - 1].region : v->cursor;
		unsigned tries = v->n_redo ? v->redo[v->n_redo - 1].tries : 0;
		uint64_t off = r * rsz;
		uint32_t len = (uint32_t)MIN(rsz, vol->size - off);
		bool busy = repl__writes_overlap(vol, off, len);

		for (struct vreq *q = v->inflight; q && !busy; q = q->next)
			busy = q->io.offset == off;
		if (busy) {
			if (!v->timer)
				repl__timer_add(vol->eng, VERIFY_RETRY_MS, verify_retry, v, &v->timer);
			return;
		}
		if (v->n_redo)
			v->n_redo--;
		else
			v->cursor++;
		vreq_issue(v, off, len, tries);
	}
	if (v->running && v->cursor >= v->regions && !v->n_redo && v->n_inflight == 0)
		verify_finish(v);
}

int repl_volume_verify(struct repl_volume *vol, bool repair, char *why, size_t len)
{
	struct verify *v = vol->verify;
	bool any = false;

	if (v && v->running) {
		snprintf(why, len, "a verify is already running");
		return -EBUSY;
	}
	if (repair && vol->role != REPL_PRIMARY) {
		snprintf(why, len, "--repair resyncs from the Primary: run it there");
		return -EPERM;
	}
	for (unsigned i = 0; i < vol->n_peers; i++) {
		const struct peer *p = vol->peers[i];
		if (repl__peer_up(p) && p->size != vol->size) {
			snprintf(why, len, "a resize is going round: peer %s has %llu bytes, this "
				 "replica %llu; verify once both have grown", p->node,
				 (unsigned long long)p->size, (unsigned long long)vol->size);
			return -EAGAIN;
		}
		any |= comparable(vol, p);
	}
	if (!any) {
		snprintf(why, len, "no peer is connected and in sync");
		return -ENOTCONN;
	}
	verify_drop(vol);
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->vol = vol;
	v->repair = repair;
	v->running = true;
	v->regions = meta_regions(vol->meta);
	v->started_ms = now_mono_ms();
	vol->verify = v;
	plog(LOG_NOTICE, vol->name, "verify started%s", repair ? " (repair)" : "");
	verify_pump(v);
	return 0;
}

static struct vreq *find_vreq(struct verify *v, uint64_t seq)
{
	for (struct vreq *q = v ? v->inflight : NULL; q; q = q->next)
		if (q->seq == seq)
			return q;
	return NULL;
}

void repl__verify_on_reply(struct peer *p, uint64_t seq, const struct wire_verify *r)
{
	struct verify *v = p->vol->verify;
	struct vreq *q = find_vreq(v, seq);

	if (!q || !q->asked[p->idx] || q->answered[p->idx] || r->offset != q->io.offset) {
		repl__peer_drop(p, "verify answer for nothing asked");
		return;
	}
	q->answered[p->idx] = true;
	q->peer_crc[p->idx] = r->crc;
	q->replies_left--;
	vreq_complete(v, q);
}

void repl__verify_peer_down(struct peer *p)
{
	struct verify *v = p->vol->verify;
	struct vreq *q, *next;

	for (q = v ? v->inflight : NULL; q; q = next) {
		next = q->next;
		if (q->asked[p->idx] && !q->answered[p->idx]) {
			q->asked[p->idx] = false;
			q->replies_left--;
			vreq_complete(v, q);
		}
	}
}

void repl__verify_note_write(struct repl_volume *vol, uint64_t off, uint64_t len)
{
	for (struct vreq *q = vol->verify ? vol->verify->inflight : NULL; q; q = q->next)
		if (q->io.offset < off + len && off < q->io.offset + q->io.len)
			q->touched = true;
}

bool repl__verify_running(const struct repl_volume *vol)
{
	return vol->verify && vol->verify->running;
}

void repl__verify_status(const struct repl_volume *vol, struct repl_volume_status *st)
{
	const struct verify *v = vol->verify;

	if (!v)
		return;
	st->verify_running = v->running;
	st->verify_done = v->done;
	st->verify_total = v->regions;
	st->verify_repair = v->repair;
	for (unsigned i = 0; i < vol->n_peers; i++)
		st->peers[i].verify_differing = v->n_diffs[i];
	st->verify_n_listed = v->n_listed;
	memcpy(st->verify_listed, v->diffs, v->n_listed * sizeof(v->diffs[0]));
	st->verify_region_size = region_bytes(vol);
	st->verify_unreadable = v->unreadable;
	if (v->unreadable)
		snprintf(st->verify_read_error, sizeof(st->verify_read_error), "%s",
			 strerror(v->read_err));
}

static void answers_free(struct repl_volume *vol);

void repl__verify_free(struct repl_volume *vol)
{
	answers_free(vol);
	verify_drop(vol);
}

/* The last verify's state goes (a new one starts, or the volume closes). */
static void verify_drop(struct repl_volume *vol)
{
	struct verify *v = vol->verify;
	struct vreq *q, *next;

	if (!v)
		return;
	repl__timer_del(vol->eng, &v->timer);
	for (q = v->inflight; q; q = next) {
		next = q->next;
		if (q->local_done) {
			free(q->io.buf);
			free(q);
		} else {
			q->v = NULL;	/* its read is running: freed there */
		}
	}
	free(v);
	vol->verify = NULL;
}

/* ---- the peer side ---------------------------------------------------------- */

struct vanswer {
	struct peer_answer a;		/* first: its io is the vanswer's */
	struct vanswer *next;		/* waiting for writes to its range */
};

/* Requests whose region has a write in flight here: read once it ended. */
struct verify_ans {
	struct repl_volume *vol;
	struct vanswer *waiting;
	void *timer;
};

static void vanswer_done(struct repl_io *io)
{
	struct peer_answer *a = (struct peer_answer *)io;
	struct wire_msg m = { .type = WIRE_VERIFY_REPLY, .seq = a->seq };

	if (io->flags & REPL_IO_WAS_HOLE)
		memset(io->buf, 0, io->len);
	m.u.verify = (struct wire_verify){ io->offset, io->len,
		io->result == 0 ? crc32c(0, io->buf, io->len) : 0 };
	if (io->result < 0)
		m.u.verify.crc = ~crc32c(0, io->buf, 0);	/* never matches a good read */
	if (repl__peer_answer_live(a))
		repl__peer_send_msg(a->p, &m);
	free(io->buf);
	free(a);
}

static void answers_retry(void *arg);

void repl__verify_on_request(struct peer *p, uint64_t seq, uint64_t off, uint32_t len)
{
	struct verify_ans *va = p->vol->verify_ans;
	struct vanswer *a = repl__peer_answer_new(p, sizeof(*a), seq, off, len,
						  REPL_IO_HOLE_CHECK, vanswer_done);

	if (!a)
		return;
	if (!repl__writes_overlap(p->vol, off, len)) {
		repl__rep_read(p->vol, &a->a.io);
		return;
	}
	/* A write to it is in flight here: the asker may already hold it,
	 * or not yet; reading after it ended, we hold it too, and a write
	 * sent after it reaches the asker before our answer. */
	if (!va && (va = p->vol->verify_ans = calloc(1, sizeof(*va))))
		va->vol = p->vol;
	if (!va) {
		free(a->a.io.buf);
		free(a);
		repl__peer_drop(p, "out of memory");
		return;
	}
	a->next = va->waiting;
	va->waiting = a;
	if (!va->timer)
		repl__timer_add(p->vol->eng, VERIFY_RETRY_MS, answers_retry, va, &va->timer);
}

static void answers_retry(void *arg)
{
	struct verify_ans *va = arg;
	struct vanswer **pp = &va->waiting, *a;

	va->timer = NULL;
	while ((a = *pp)) {
		if (repl__writes_overlap(va->vol, a->a.io.offset, a->a.io.len)) {
			pp = &a->next;
			continue;
		}
		*pp = a->next;
		repl__rep_read(va->vol, &a->a.io);
	}
	if (va->waiting)
		repl__timer_add(va->vol->eng, VERIFY_RETRY_MS, answers_retry, va, &va->timer);
}

static void answers_free(struct repl_volume *vol)
{
	struct verify_ans *va = vol->verify_ans;
	struct vanswer *a;

	if (!va)
		return;
	repl__timer_del(vol->eng, &va->timer);
	while ((a = va->waiting)) {
		va->waiting = a->next;
		free(a->a.io.buf);
		free(a);
	}
	free(va);
	vol->verify_ans = NULL;
}
