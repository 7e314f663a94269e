/* pread.c: a client's read that the Primary's own disk failed is read
 * from a peer instead, as DRBD does after a local read error: the guest
 * sees its data, not an I/O error, while one replica still holds it.  A
 * peer answers only if it holds every write this Primary acknowledged in
 * that range: connected, UpToDate, not recorded Outdated, with no bit of
 * the range in its bitmap here.  Such a peer applied every write whose
 * acknowledgement came before the read (each waited for its ack), and
 * what is in flight may be read either way, as on one disk.  Requests
 * larger than a frame go as several READ_REQs with consecutive seqs.  A
 * peer that fails, or whose link goes, hands the read to the next; with
 * none left the client gets the local error.  The peer's side reads its
 * replica as a verify answer does and sends the bytes back.
 *
 * The failed read's ->done comes here on the loop thread (gate.c arms
 * it, iopool.c routes a failure so); a read that works only passes
 * through local_done(): 2-replica reads measure the same with and
 * without the arming (9 interleaved bench runs).  The bad sectors
 * are not written over with the peer's bytes: a client write could land
 * between our read and such a repair.  Loop thread only. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "meta.h"
#include "peer.h"
#include "pread.h"
#include "ratelimit.h"
#include "stats.h"
#include "util.h"
#include "wire.h"

#define PREAD_LOG_MS 10000	/* its log line: at most this often */

struct pread {
	struct pread *next;
	struct repl_io *io;
	struct peer *p;			/* asked now */
	uint64_t seq;			/* the first chunk's; the rest follow */
	unsigned chunks, left;		/* READ_REQs sent, answers still due */
	unsigned tried;			/* peers asked (bit per index) */
	int err;			/* the local read's */
};

struct preads {
	struct pread *head;
	uint64_t seq;
	struct ratelimit log;
};

/* May p answer our reads (where its bitmap here is clean)? */
static bool may_answer(const struct peer *p)
{
	return repl__peer_up(p) && repl__peer_answers_reads(p) &&
	       p->link == REPL_LINK_CONNECTED && !p->suppressed &&
	       p->peer_role != REPL_PRIMARY && p->peer_disk == GEN_DISK_UPTODATE &&
	       meta_get(p->vol->meta)->peers[p->idx].disk_state != META_OUTDATED;
}

/* Does p hold every write acknowledged over io's range?  The bits of the
 * range only: a read that fails is rare, a scan of the whole bitmap on
 * each read that works would not be. */
static bool holds_range(const struct peer *p, const struct repl_io *io)
{
	const struct meta *m = p->vol->meta;
	unsigned shift = meta_get(m)->region_shift;

	if (!may_answer(p))
		return false;
	for (uint64_t r = io->offset >> shift; r <= (io->offset + io->len - 1) >> shift; r++)
		if (meta_bit_test(m, p->idx, r))
			return false;
	return true;
}

static struct peer *pick(const struct repl_volume *vol, const struct repl_io *io,
			 unsigned tried)
{
	for (unsigned i = 0; i < vol->n_peers; i++)
		if (!(tried & (1u << i)) && holds_range(vol->peers[i], io))
			return vol->peers[i];
	return NULL;
}

static void finish(struct repl_volume *vol, struct pread *q, int result)
{
	struct repl_io *io = q->io;

	for (struct pread **pp = &vol->pread->head; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			break;
		}
	free(q);
	if (!result)
		repl__stats_inc(&vol->stats.peer_reads);
	io->result = result;
	io->done = io->client_done;
	io->flags &= ~REPL_IO_FAIL_ON_LOOP;
	io->done(io);
}

/* q to the next peer that may answer it, or back to the client. */
static void ask_next(struct repl_volume *vol, struct pread *q)
{
	struct repl_io *io = q->io;
	struct peer *p = vol->closing || vol->role != REPL_PRIMARY ? NULL :
			 pick(vol, io, q->tried);
	struct wire_msg m = { .type = WIRE_READ_REQ };

	if (!p) {
		finish(vol, q, q->err);
		return;
	}
	q->p = p;
	q->tried |= 1u << p->idx;
	q->chunks = q->left = DIV_ROUND_UP(io->len, WIRE_DATA_MAX);
	q->seq = vol->pread->seq + 1;
	vol->pread->seq += q->chunks;
	for (unsigned i = 0; i < q->chunks; i++) {
		uint64_t off = (uint64_t)i * WIRE_DATA_MAX;

		m.seq = q->seq + i;
		m.u.range = (struct wire_range){ io->offset + off,
						 MIN((uint64_t)WIRE_DATA_MAX, io->len - off), 0 };
		if (repl__peer_send_msg(p, &m) < 0) {
			ask_next(vol, q);
			return;
		}
	}
}

/* The client's read failed on our disk (loop thread), or worked. */
static void local_done(struct repl_io *io)
{
	struct repl_volume *vol = io->vol;
	struct pread *q;
	unsigned skipped;
	char more[64];

	if (io->result >= 0 || io->result == -ESHUTDOWN || vol->closing ||
	    vol->role != REPL_PRIMARY || !pick(vol, io, 0) ||
	    (!vol->pread && !(vol->pread = calloc(1, sizeof(*vol->pread)))) ||
	    !(q = calloc(1, sizeof(*q)))) {
		io->done = io->client_done;
		io->flags &= ~REPL_IO_FAIL_ON_LOOP;
		io->done(io);
		return;
	}
	q->io = io;
	q->err = io->result;
	q->next = vol->pread->head;
	vol->pread->head = q;
	if (ratelimit_ok(&vol->pread->log, now_mono_ms(), PREAD_LOG_MS, &skipped))
		plog_errno(LOG_WARNING, vol->name, -q->err, "a read failed here at %llu+%u: "
			   "reading it from a peer instead%s", (unsigned long long)io->offset,
			   io->len, ratelimit_more(skipped, more, sizeof(more)));
	ask_next(vol, q);
}

void repl__pread_arm(struct repl_volume *vol, struct repl_io *io)
{
	bool any = false;

	/* Armed once: a read held for quorum comes through here again. */
	if (io->op != REPL_IO_READ || !io->len || io->done == local_done)
		return;
	for (unsigned i = 0; i < vol->n_peers && !any; i++)
		any = may_answer(vol->peers[i]);
	if (!any)
		return;
	io->vol = vol;
	io->client_done = io->done;
	io->done = local_done;
	io->flags |= REPL_IO_FAIL_ON_LOOP;
}

static struct pread *find(struct repl_volume *vol, const struct peer *p, uint64_t seq)
{
	if (!vol->pread)
		return NULL;
	for (struct pread *q = vol->pread->head; q; q = q->next)
		if (q->p == p && seq >= q->seq && seq - q->seq < q->chunks)
			return q;
	return NULL;
}

void repl__pread_on_answer(struct peer *p, uint64_t seq, const struct wire_write *w, int err)
{
	struct repl_volume *vol = p->vol;
	struct pread *q = find(vol, p, seq);
	uint64_t off;

	if (!q)		/* a read asked of it before its link last went */
		return;
	if (!w) {
		plog_errno(LOG_WARNING, vol->name, -err, "peer %s could not read %llu+%u "
			   "for us either", p->node, (unsigned long long)q->io->offset,
			   q->io->len);
		ask_next(vol, q);
		return;
	}
	off = (seq - q->seq) * WIRE_DATA_MAX;
	if (w->offset != q->io->offset + off ||
	    w->len != MIN((uint64_t)WIRE_DATA_MAX, q->io->len - off)) {
		repl__peer_drop(p, "read answer for another range than asked");
		return;
	}
	memcpy((uint8_t *)q->io->buf + off, w->data, w->len);
	if (!--q->left)
		finish(vol, q, 0);
}

void repl__pread_peer_down(struct peer *p)
{
	struct repl_volume *vol = p->vol;
	struct pread *q;

	if (!vol->pread)
		return;
	/* ask_next() may finish (unlink) any of them: start over each time. */
	for (;;) {
		for (q = vol->pread->head; q; q = q->next)
			if (q->p == p)
				break;
		if (!q)
			return;
		q->p = NULL;
		ask_next(vol, q);
	}
}

void repl__pread_free(struct repl_volume *vol)
{
	if (!vol->pread)
		return;
	while (vol->pread->head)
		finish(vol, vol->pread->head, vol->pread->head->err);
	free(vol->pread);
	vol->pread = NULL;
}

/* ---- the peer's side --------------------------------------------------- */

static void answer_done(struct repl_io *io)
{
	struct peer_answer *a = (struct peer_answer *)io;
	struct peer *p = a->p;
	struct wire_msg m = { .type = WIRE_READ_FAIL };

	if (!repl__peer_answer_live(a)) {
		free(io->buf);
	} else if (io->result < 0) {
		free(io->buf);
		m.u.ack = (struct wire_ack){ a->seq, (uint32_t)-io->result };
		repl__peer_send_msg(p, &m);
	} else {
		repl__peer_send_read_data(p, a->seq, io->offset, io->len, io->buf);
	}
	free(a);
}

void repl__pread_on_request(struct peer *p, uint64_t seq, uint64_t off, uint32_t len)
{
	struct repl_volume *vol = p->vol;
	struct peer_answer *a = repl__peer_answer_new(p, sizeof(*a), seq, off, len, 0,
						      answer_done);

	if (!a)
		return;
	/* Not ours to give: the asker's view of us is out of date. */
	if (vol->role == REPL_PRIMARY || vol->disk_state != GEN_DISK_UPTODATE) {
		a->io.result = -ENODATA;
		answer_done(&a->io);
		return;
	}
	repl__rep_read(vol, &a->io);
}
