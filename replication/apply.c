/* apply.c: a Secondary applying the writes of the Primary it follows.
 * Writes (and trims, zeroes, flushes) are applied in parallel on the I/O
 * pool, except that one overlapping a write still in flight waits for it:
 * overlapping writes land in the order the Primary sent them.  Each is
 * acknowledged on the connection that brought it, once done.  The
 * Primary's side is replicate.c; it only asks what is being applied
 * (repl__apply_overlaps), tells it when its own write ends
 * (repl__apply_unblock: after a step-down, data waits for the old
 * Primary's writes still running) and is told when an apply ends through
 * the observer it set (repl__apply_set_observer), so nothing here calls
 * up into it.  Its state is its own (struct apply, vol->apply).  Not here: which
 * frames are taken from whom (peer.c), resync data (resync.c).  Loop
 * thread only. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "bufpool.h"
#include "log.h"
#include "meta.h"
#include "peer.h"
#include "ratelimit.h"
#include "util.h"

struct sapply {
	struct repl_io io;
	void *mem;			/* holds io.buf */
	struct peer *p;
	uint64_t conn_id;		/* answer only the connection that asked */
	uint64_t seq;
	bool torn;			/* a flush here lost writes meanwhile */
	struct sapply *next;
};

/* A volume's applies: running (newest first), and blocked behind an
 * overlapping one (in arrival order). */
struct apply {
	struct sapply *running;
	struct sapply *wait_head, *wait_tail;
	void (*observer)(struct repl_volume *vol);	/* NULL: nobody listens */
	uint64_t failures;		/* applies that failed here, ever */
	struct ratelimit fail_log;	/* a full disk fails each of them */
};

int repl__apply_open(struct repl_volume *vol)
{
	vol->apply = calloc(1, sizeof(*vol->apply));
	return vol->apply ? 0 : -ENOMEM;
}

void repl__apply_free(struct repl_volume *vol)
{
	free(vol->apply);
	vol->apply = NULL;
}

void repl__apply_set_observer(struct repl_volume *vol, void (*fn)(struct repl_volume *vol))
{
	vol->apply->observer = fn;
}

static bool overlaps(const struct repl_io *a, const struct repl_io *b)
{
	if (a->op == REPL_IO_FLUSH || b->op == REPL_IO_FLUSH)
		return false;
	return a->offset < b->offset + b->len && b->offset < a->offset + a->len;
}

static bool changes_data(enum repl_io_op op)
{
	return op == REPL_IO_WRITE || op == REPL_IO_TRIM || op == REPL_IO_ZERO;
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
			if (o->local_busy && changes_data(o->local.op) &&
			    overlaps(&o->local, &a->io))
				return true;
	for (struct sapply *s = vol->apply->running; s; s = s->next)
		if (overlaps(&s->io, &a->io))
			return true;
	for (struct sapply *s = vol->apply->wait_head; s && s != upto; s = s->next)
		if (overlaps(&s->io, &a->io))
			return true;
	return false;
}

bool repl__apply_overlaps(const struct repl_volume *vol, const struct repl_io *io)
{
	for (const struct sapply *s = vol->apply->running; s; s = s->next)
		if (overlaps(&s->io, io))
			return true;
	for (const struct sapply *s = vol->apply->wait_head; s; s = s->next)
		if (overlaps(&s->io, io))
			return true;
	return false;
}

static void apply_submit(struct repl_volume *vol, struct sapply *a)
{
	a->next = vol->apply->running;
	vol->apply->running = a;
	vol->inflight++;
	repl__iopool_submit(vol->pool, &a->io);
}

void repl__apply_unblock(struct repl_volume *vol)
{
	struct sapply **pp = &vol->apply->wait_head, *a, *prev = NULL;

	while ((a = *pp)) {
		if (blocked(vol, a, a)) {
			prev = a;
			pp = &a->next;
			continue;
		}
		*pp = a->next;
		if (vol->apply->wait_tail == a)
			vol->apply->wait_tail = prev;
		apply_submit(vol, a);
	}
}

/* A flush here lost writes not yet durable: any write a peer sent us and
 * we acknowledged since the last flush that worked may be gone, a resync's
 * copies among them.  Where our STATE tells (UpToDate to Inconsistent on a
 * link in sync: peer_state.c), the Primary marks what we acknowledged and
 * had not flushed.  Elsewhere nothing would: a resync source clears the
 * bits of copies whose flush works after this one (nothing is pending by
 * then), and a FLUSH of an earlier connection gets no error acknowledged
 * (sim seed 140408 of the EIO profile: a resync target, Inconsistent
 * already, came back UpToDate without a copy this flush tore).  Such
 * links go: the writer takes a link lost as it does any, and keeps the
 * bits of what was not confirmed durable. */
static void drop_writers(struct repl_volume *vol, bool was_uptodate)
{
	for (unsigned i = 0; i < vol->n_peers; i++) {
		struct peer *p = vol->peers[i];

		if (!repl__peer_up(p))
			continue;
		if (p->link == REPL_LINK_SYNC_TARGET ||
		    (p->peer_role == REPL_PRIMARY &&
		     !(was_uptodate && p->link == REPL_LINK_CONNECTED)))
			repl__peer_disk_drop(p, "a flush here lost writes acknowledged to it");
	}
}

/* Our disk failed a write (or a flush) of the Primary's, or a flush of
 * our own that found writes not yet durable (outdate.c's
 * repl__rep_disk_lost(), at a promotion): this replica no longer holds
 * what the Primary acknowledged, so it must not be promoted, unless
 * partial (below).  It records itself Inconsistent and tells its peers;
 * the Primary, told by the failed acknowledgement or the state, resyncs
 * the range while connected (replicate.c) and the end of that resync
 * makes us UpToDate again (resync.c).  DRBD detaches the disk here;
 * without a Diskless mode this is the closest.  A metadata write that
 * fails too leaves the metadata broken, which refuses a promotion as
 * well, until the daemon restarts (tests/sim/known-failures-inline,
 * 1508). */
static void go_inconsistent(struct repl_volume *vol, const char *what, bool partial)
{
	struct meta_super sb = *meta_get(vol->meta);
	uint32_t flags = partial ? sb.flags | META_F_PARTIAL : sb.flags & ~META_F_PARTIAL;
	bool was_partial = repl__partial(vol);

	vol->own_write_failed = true;
	if (sb.disk_state != META_INCONSISTENT || sb.flags != flags) {
		sb.disk_state = META_INCONSISTENT;
		sb.flags = flags;
		if (meta_update(vol->meta, &sb) < 0) {
			plog(LOG_ERR, vol->name, "cannot record that this replica is "
			     "Inconsistent");
			/* no later update may write the UpToDate of before,
			 * nor a partial that is not */
			sb.flags &= ~META_F_PARTIAL;
			meta_assume(vol->meta, &sb);
			repl__lossmark_set(vol, REPL_LOSS_INCONSISTENT);
		} else {
			repl__lossmark_recorded(vol, REPL_LOSS_INCONSISTENT);
		}
	}
	if (vol->disk_state == GEN_DISK_INCONSISTENT) {
		if (repl__partial(vol) != was_partial)
			repl__peers_tell_state(vol);
		return;
	}
	vol->disk_state = GEN_DISK_INCONSISTENT;
	plog(LOG_WARNING, vol->name, "%s: Inconsistent until resynced%s", what,
	     repl__partial(vol) ? " (everywhere else it holds every acknowledged "
	     "write: partial)" : "");
	repl__peers_tell_state(vol);
	repl__changed(vol);
}

/* A flush here lost writes not yet durable: among them, perhaps, those
 * of the applies still running that the pool has run already, their
 * completions waiting behind the flush's (iopool.c runs a lost flush's
 * first): none of them may be acknowledged as written.  Acknowledged
 * after the loss, such a write counted as held here, outside what the
 * Primary marks for us, and a resync of only those regions made us
 * UpToDate without it (sim seed 10828 of --small-al, once completions
 * came late in the simulator).  Those not run yet are written after the
 * loss, but which ones is not known here: all fail, and the Primary
 * resyncs their ranges. */
static void tear_running(struct repl_volume *vol)
{
	for (struct sapply *a = vol->apply->running; a; a = a->next)
		if (changes_data(a->io.op))
			a->torn = true;
}

void repl__apply_disk_failed(struct repl_volume *vol, const char *what, bool lost)
{
	bool was_uptodate = vol->disk_state == GEN_DISK_UPTODATE;

	if (vol->role == REPL_PRIMARY)
		return;
	if (lost)
		tear_running(vol);
	go_inconsistent(vol, what, false);
	if (lost)
		drop_writers(vol, was_uptodate);
}

/* A write of our Primary's failed here (not a flush that lost writes:
 * then any write not yet durable may be gone).  Every other write it
 * sent us is here, as it was acknowledged, so where we held every
 * acknowledged write before (UpToDate, or partial already), we still do
 * outside the range of this one, which the Primary had not acknowledged
 * (it waits for our answer, or for the cluster's record that we are
 * Outdated, outdate.c): partial (gen.h).  The range goes into every
 * peer's bitmap first, durably, so that whoever takes our data later
 * takes it there too.  Such a replica may be promoted where none
 * UpToDate can be (role.c; sim seed 95820 of the EIO profile: the
 * Primary's flush failed right after and it stepped down, with the other
 * Secondary Outdated: nobody could be promoted). */
static void write_failed(struct repl_volume *vol, const struct sapply *a)
{
	const struct meta_super *sb = meta_get(vol->meta);
	bool partial = a->p->peer_role == REPL_PRIMARY && !(sb->flags & META_F_POWER_LOST) &&
		       a->io.len &&
		       (vol->disk_state == GEN_DISK_UPTODATE || repl__partial(vol));

	if (partial) {
		for (unsigned i = 0; i < vol->n_peers; i++)
			meta_bits_set_range(vol->meta, vol->peers[i]->idx, a->io.offset,
					    a->io.len);
		partial = meta_bitmap_flush(vol->meta) == 0;
	}
	go_inconsistent(vol, "a write failed here", partial);
}

#define FAIL_LOG_MS 10000

/* One line every FAIL_LOG_MS at most: a full disk fails every write the
 * Primary and the resync send (tests/repl-disk-full.sh). */
static void log_failure(struct repl_volume *vol, const struct sapply *a, int err)
{
	unsigned skipped;
	char more[64];

	if (!ratelimit_ok(&vol->apply->fail_log, now_mono_ms(), FAIL_LOG_MS, &skipped))
		return;
	plog_errno(LOG_ERR, vol->name, err, "applying a write from %s at %llu%s", a->p->node,
		   (unsigned long long)a->io.offset, ratelimit_more(skipped, more, sizeof(more)));
}

static void apply_done(struct repl_io *io)
{
	struct sapply *a = (struct sapply *)io;
	struct repl_volume *vol = a->p->vol;
	struct sapply **pp;

	vol->inflight--;
	for (pp = &vol->apply->running; *pp != a; pp = &(*pp)->next)
		;
	*pp = a->next;
	if (a->torn && io->result == 0)
		io->result = -EIO;
	if (io->op == REPL_IO_FLUSH && io->result < 0 && !io->flush_lost) {
		/* Every write done here had been made durable by a flush that
		 * worked (sim seed 1931: Inconsistent for good, with nothing
		 * to resync): nothing the Primary acknowledged is at risk, so
		 * this replica stays what it was.  With writes not yet
		 * durable, any of them may be gone (iopool.c), also those a
		 * later flush reports durable. */
		plog_errno(LOG_WARNING, vol->name, -io->result, "a flush failed here, with "
			   "nothing written since the last one that worked: nothing lost");
		io->result = 0;
	}
	if (io->result < 0) {
		log_failure(vol, a, -io->result);
		vol->apply->failures++;
		if (io->flush_lost)
			repl__apply_disk_failed(vol, "a flush here lost writes not yet "
						"durable", true);
		else if (vol->role != REPL_PRIMARY)
			write_failed(vol, a);
	}
	if (repl__peer_up(a->p) && a->p->conn_id == a->conn_id)
		repl__peer_send_ack(a->p, a->seq, io->result);
	repl__buf_put(a->mem);
	free(a);
	repl__apply_unblock(vol);
	if (vol->apply->observer)
		vol->apply->observer(vol);	/* a promotion's writes may wait for it */
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
	if (changes_data(op))
		vol->eng->write_obs->applying(vol, seq, offset, len);
	a->p = p;
	a->mem = mem;
	a->conn_id = p->conn_id;
	a->seq = seq;
	a->io = (struct repl_io){ .op = op, .flags = flags, .offset = offset,
				  .len = len, .buf = data, .done = apply_done };
	if (blocked(vol, a, NULL)) {
		if (vol->apply->wait_tail)
			vol->apply->wait_tail->next = a;
		else
			vol->apply->wait_head = a;
		vol->apply->wait_tail = a;
		return;
	}
	apply_submit(vol, a);
}

uint64_t repl__apply_failures(const struct repl_volume *vol)
{
	return vol->apply->failures;
}

bool repl__apply_overlaps_range(const struct repl_volume *vol, uint64_t off, uint64_t len)
{
	const struct sapply *lists[2] = { vol->apply->running, vol->apply->wait_head };

	for (unsigned i = 0; i < 2; i++)
		for (const struct sapply *s = lists[i]; s; s = s->next)
			if (s->io.op != REPL_IO_FLUSH && s->io.len &&
			    s->io.offset < off + len && off < s->io.offset + s->io.len)
				return true;
	return false;
}
