/* iopool.c: the worker threads of one volume.  The loop thread queues a
 * struct repl_io; a worker runs it against the volume's fd and puts it on
 * the done list, then wakes the loop through an eventfd; the loop calls
 * ->done.  Each volume has its own pool, so a slow disk under one volume
 * never queues I/O of another.  It knows nothing about NBD or replication.
 *
 * Locking: one mutex per pool guards both lists; workers sleep on a
 * condition variable.  The eventfd is written only when the done list goes
 * from empty to non-empty, so a burst costs the loop one wake-up.  What
 * the loop submits inside a batch (loop.c: the requests of one read, the
 * frames of one wake-up) is queued at the batch's end, under one lock,
 * after the frames that batch sends to the peers.
 *
 * A pool starts with one worker and grows, up to its size, only when a
 * request is queued while more are waiting than workers are idle: an idle
 * volume costs one thread, not io-threads of them (hundreds of volumes on
 * a node).  Workers are not retired; the pool keeps what a burst needed.
 *
 * Inline writes: a thread hop each way costs more than a 4k write into the
 * page cache (perf on a 2-CPU VM: half of a 1-replica write's CPU was
 * context switches).  So at a batch's end, when the pool is idle (nothing
 * but flushes queued or running, nothing done and not collected), the
 * writes at the head of what the batch submitted run right there on the
 * loop thread, and their ->done runs after them, in a batch of its own,
 * as the workers' completions do (complete()).  Only writes that cannot
 * wait for the disk in the page cache's normal course: whole 4 KiB pages
 * (no read of a partial page), at most 64 KiB, not FUA; never a read (a
 * miss waits for the disk), a flush, a trim or a call.  Writes over
 * INLINE_SLOW_NS (dirty pages throttled, a journal full, a slow disk)
 * that add up to INLINE_SLOW_SUM_NS within INLINE_SLOW_WINDOW_NS (a
 * single one of a slow disk does) turn inline writes off on that pool
 * for INLINE_OFF_NS: a slow disk then stalls its workers, not the loop
 * every volume shares.
 * They come back once INLINE_OFF_NS has passed and the workers have done
 * INLINE_FAST_STREAK such writes in a row each under INLINE_SLOW_NS: a
 * disk that still hangs keeps them off (before, a write tried inline
 * again every 10 s, and could hang the loop with it).  A write of a few
 * ms now and then does not count: under writeback (2 replicas at 4k QD32,
 * a journal commit of the Secondary's flush) a pool met one within
 * seconds, and then paid two thread hops per write for 10 s.
 *
 * Under the simulator (sys.h's pool_kick set) a pool has no threads and no
 * eventfd: it keeps its queue, tells the simulator of each submit, and
 * the simulator runs one queued I/O of its choosing on the loop thread
 * with repl__iopool_step(), as a worker would, and later hands the
 * completions gathered meanwhile to their ->done with
 * repl__iopool_deliver(), as the loop's dispatch does (so a flush may run
 * while another's failure is not yet heard of).  Its pool_inline, if set,
 * says whether the writes of a batch's end run inline, as above. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
#include "repl_int.h"
#include "sys.h"
#include "util.h"

#define INLINE_MAX_LEN (64u << 10)
#define INLINE_SLOW_NS (2 * 1000000ull)
#define INLINE_SLOW_SUM_NS (20 * 1000000ull)
#define INLINE_SLOW_WINDOW_NS (1000 * 1000000ull)
#define INLINE_OFF_NS (1000 * 1000000ull)
#define INLINE_FAST_STREAK 64u
/* A read, write, flush, trim or zero the store took this long is logged
 * (at most once per DISK_SLOW_LOG_NS per pool): the operator sees a disk
 * that stalls its guests, and a test an ack late for the disk's sake. */
#define DISK_SLOW_NS (1000 * 1000000ull)
#define DISK_SLOW_LOG_NS (10 * 1000000000ull)

struct iopool {
	struct repl_engine *eng;
	const char *name;
	int fd;
	bool blockdev;
	int efd;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct repl_io *queue_head, **queue_tail;
	struct repl_io *done_head, **done_tail;
	bool stopping;
	unsigned nthreads, max_threads;
	unsigned idle;			/* workers waiting for a request */
	unsigned executing;		/* taken by a worker, not done yet, but
					 * flushes (atomic) */
	unsigned queued;		/* requests in the queue */
	/* loop thread: submitted in the current batch, not yet queued */
	struct repl_io *pend_head, **pend_tail;
	unsigned npend;
	struct repl_deferred kick;
	bool freeing;			/* no more deferring: submit queues at once */
	uint64_t inline_off_until;	/* now_mono_ns(): no inline writes before */
	uint64_t slow_since, slow_sum;	/* inline writes over INLINE_SLOW_NS */
	unsigned fast_streak;		/* atomic: workers' fast small writes in a row */
	bool no_inline;			/* repl__iopool_set_inline(false) */
	/* Called on the worker before a write reaches the store (cbt.c's
	 * changed-block tracking), or NULL. */
	void (*before_write)(void *arg, uint64_t off, uint64_t len);
	void *before_write_arg;
	/* Atomics: plain data writes done, and how many of them the last
	 * FLUSH that succeeded covers (those done before its submission). */
	uint64_t writes_done, flushed;
	/* Atomic: flushes that failed with writes not yet durable (what a
	 * read returns after one may be data the disk dropped), and how many
	 * of them the engine has heard of (their ->done taken to run, or a
	 * repl__iopool_sync() that said so). */
	uint64_t lost, lost_heard;
	/* Held across a flush's fdatasync and what it counts (flush()). */
	pthread_mutex_t flush_lock;
	uint64_t slow_logged;		/* atomic: now_mono_ns() of the last slow-disk line */
	unsigned slow_unlogged;		/* atomic: slow requests since that line */
	pthread_t threads[];
};

/* What a request whose store call is timed is, for the log; the others
 * (calls, read-ahead, lookups) may take long by design. */
static const char *const timed_op[] = {
	[REPL_IO_READ] = "a read", [REPL_IO_WRITE] = "a write",
	[REPL_IO_FLUSH] = "a flush", [REPL_IO_TRIM] = "a trim",
	[REPL_IO_ZERO] = "a write of zeroes",
};

static bool timed(const struct repl_io *io)
{
	return !repl__sys->pool_kick && (unsigned)io->op < ARRAY_SIZE(timed_op) && timed_op[io->op];
}

/* Any thread: io took took_ns, ending at now. */
static void slow_disk(struct iopool *p, const struct repl_io *io, uint64_t took_ns, uint64_t now)
{
	uint64_t last = __atomic_load_n(&p->slow_logged, __ATOMIC_RELAXED);
	char where[64] = "", more[64] = "";
	unsigned n;

	if ((last && now - last < DISK_SLOW_LOG_NS) ||
	    !__atomic_compare_exchange_n(&p->slow_logged, &last, now, false,
					 __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
		__atomic_add_fetch(&p->slow_unlogged, 1, __ATOMIC_RELAXED);
		return;
	}
	n = __atomic_exchange_n(&p->slow_unlogged, 0, __ATOMIC_RELAXED);
	if (io->op != REPL_IO_FLUSH)
		snprintf(where, sizeof(where), " of %u bytes at %llu", io->len,
			 (unsigned long long)io->offset);
	if (n)
		snprintf(more, sizeof(more), " (and %u more slow request(s) since the last line)", n);
	log_warn("[%s] the disk took %llu ms for %s%s%s", p->name,
		 (unsigned long long)(took_ns / 1000000), timed_op[io->op], where, more);
}

/* A flush that covers the writes done before mark succeeded. */
static void flushed_to(struct iopool *p, uint64_t mark)
{
	uint64_t had = __atomic_load_n(&p->flushed, __ATOMIC_ACQUIRE);

	while (had < mark &&
	       !__atomic_compare_exchange_n(&p->flushed, &had, mark, false,
					    __ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
		;
}

/* A flush of the pool's file failed (a FLUSH's fdatasync, or a FUA
 * request's sync): were writes done on it not yet durable (then counted:
 * reads in flight fail, exec())? */
static bool flush_failed(struct iopool *p)
{
	if (!repl__iopool_unflushed(p))
		return false;
	__atomic_add_fetch(&p->lost, 1, __ATOMIC_RELEASE);
	return true;
}

/* The fdatasync of a FLUSH (io) or of repl__iopool_sync() (io NULL), with
 * the writes done before it (mark): 0, or -errno with *lost.  One at a
 * time: Linux reports a failed writeback to one fdatasync of a file
 * description (its errseq), and another running beside it on our one fd
 * returns 0 for pages that were dropped; its success would count those
 * writes durable, and the one that failed would then find none at risk.
 * Nor does a flush that works vouch for anything while a lost one is not
 * heard of (its ->done not yet taken): a peer would clear the bits of
 * what this disk dropped before the engine knows of it
 * (tests/unit/test-iopool.c).  It fails as lost too. */
static int flush(struct iopool *p, struct repl_io *io, uint64_t mark, bool *lost)
{
	int r;

	pthread_mutex_lock(&p->flush_lock);
	r = io ? repl__store_exec(p->fd, p->blockdev, io) : repl__store_sync(p->fd);
	*lost = false;
	if (r < 0) {
		*lost = flush_failed(p);
	} else if (__atomic_load_n(&p->lost, __ATOMIC_ACQUIRE) !=
		   __atomic_load_n(&p->lost_heard, __ATOMIC_ACQUIRE)) {
		__atomic_add_fetch(&p->lost, 1, __ATOMIC_RELEASE);
		*lost = true;
		r = -EIO;
	} else {
		flushed_to(p, mark);
	}
	pthread_mutex_unlock(&p->flush_lock);
	return r;
}

/* The engine hears of io, a FLUSH (or a FUA request) that lost writes:
 * its ->done runs next (or in this batch, before any other:
 * lost_first()). */
static void heard(struct iopool *p, const struct repl_io *io)
{
	if (io->result < 0 && io->flush_lost)
		__atomic_add_fetch(&p->lost_heard, 1, __ATOMIC_RELEASE);
}

/* May io's ->done run here, on a worker? */
static bool any_thread(const struct repl_io *io)
{
	return (io->flags & REPL_IO_DONE_ANY_THREAD) &&
	       !(io->result < 0 && (io->flags & REPL_IO_FAIL_ON_LOOP));
}

static bool inline_write(const struct repl_io *io)
{
	return io->op == REPL_IO_WRITE && !(io->flags & REPL_IO_FUA) &&
	       io->len <= INLINE_MAX_LEN && !(io->offset & 4095) && !(io->len & 4095);
}

/* Runs io; before a write, the before_write hook sees its range; after
 * it, writes and flushes are counted (repl__iopool_unflushed).  *took, if
 * not NULL: how long the store took, 0 if untimed (timed()). */
static int exec(struct iopool *p, struct repl_io *io, uint64_t *took)
{
	bool data = io->op == REPL_IO_WRITE || io->op == REPL_IO_TRIM || io->op == REPL_IO_ZERO;
	uint64_t t0, t = 0;
	int r;

	if (p->before_write && data)
		p->before_write(p->before_write_arg, io->offset, io->len);
	t0 = timed(io) ? now_mono_ns() : 0;
	io->flags &= ~REPL_IO_SYNC_FAILED;	/* a write tried again */
	if (io->op == REPL_IO_FLUSH)
		r = flush(p, io, io->pool_mark, &io->flush_lost);
	else
		r = repl__store_exec(p->fd, p->blockdev, io);
	/* A read submitted before a flush failed, or before the engine heard
	 * of one that had (repl__iopool_submit()), and done after it may
	 * see data the disk dropped, or not: it fails rather than guess. */
	if (r >= 0 && io->op == REPL_IO_READ &&
	    __atomic_load_n(&p->lost, __ATOMIC_ACQUIRE) != io->pool_mark)
		r = -EIO;
	if (t0 && (t = now_mono_ns() - t0) >= DISK_SLOW_NS)
		slow_disk(p, io, t, t0 + t);
	if (took)
		*took = t;
	else if (t0 && inline_write(io)) {	/* one off the loop: the streak */
		if (t < INLINE_SLOW_NS)
			__atomic_add_fetch(&p->fast_streak, 1, __ATOMIC_RELAXED);
		else
			__atomic_store_n(&p->fast_streak, 0, __ATOMIC_RELAXED);
	}
	if (r == 0 && data && !(io->flags & REPL_IO_FUA))
		__atomic_add_fetch(&p->writes_done, 1, __ATOMIC_RELEASE);
	/* A FUA write is a write with RWF_DSYNC, and a FUA trim or zero is
	 * followed by an fdatasync: each reports the file's failed
	 * writebacks as a FLUSH does (Linux's errseq, once per file
	 * description: the FLUSH after it hears nothing of them).  The
	 * writeback of other writes may be what failed: a lost flush.  Not
	 * when the sync did not run (store.c: a full disk refused the data;
	 * full-disk sim seed 353 took that for lost writes). */
	if (r < 0 && data && (io->flags & REPL_IO_SYNC_FAILED))
		io->flush_lost = flush_failed(p);
	return r;
}

int repl__iopool_sync(struct iopool *p, bool *lost)
{
	uint64_t mark = __atomic_load_n(&p->writes_done, __ATOMIC_ACQUIRE);
	int r = flush(p, NULL, mark, lost);

	if (*lost)	/* our caller hears of it now */
		__atomic_add_fetch(&p->lost_heard, 1, __ATOMIC_RELEASE);
	return r;
}

uint64_t repl__iopool_mark(const struct iopool *p)
{
	return __atomic_load_n(&p->writes_done, __ATOMIC_ACQUIRE);
}

bool repl__iopool_durable(const struct iopool *p, uint64_t mark)
{
	return __atomic_load_n(&p->flushed, __ATOMIC_ACQUIRE) >= mark;
}

void repl__iopool_set_inline(struct iopool *p, bool on)
{
	p->no_inline = !on;
}

bool repl__iopool_unflushed(const struct iopool *p)
{
	return __atomic_load_n(&p->writes_done, __ATOMIC_ACQUIRE) >
	       __atomic_load_n(&p->flushed, __ATOMIC_ACQUIRE);
}

void repl__iopool_set_before_write(struct iopool *p,
				   void (*fn)(void *arg, uint64_t off, uint64_t len), void *arg)
{
	p->before_write = fn;
	p->before_write_arg = arg;
}

static struct repl_io *pop_queue(struct iopool *p)
{
	struct repl_io *io = p->queue_head;

	if (io) {
		p->queued--;
		p->queue_head = io->next;
		if (!p->queue_head)
			p->queue_tail = &p->queue_head;
		io->next = NULL;
	}
	return io;
}

static void push_done(struct iopool *p, struct repl_io *io)
{
	bool wake;
	uint64_t one = 1;

	pthread_mutex_lock(&p->lock);
	wake = p->done_head == NULL;
	*p->done_tail = io;
	p->done_tail = &io->next;
	pthread_mutex_unlock(&p->lock);
	if (wake && write(p->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_err_errno(errno, "[%s] eventfd write", p->name);
}

static void submit_pending(void *arg);

static void *worker_main(void *arg)
{
	struct iopool *p = arg;
	struct repl_io *io;
	bool counted;

	repl__on_worker = true;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		io = pop_queue(p);
		if (!io) {
			if (p->stopping)
				break;
			p->idle++;
			pthread_cond_wait(&p->cond, &p->lock);
			p->idle--;
			continue;
		}
		counted = io->op != REPL_IO_FLUSH;
		if (counted)
			__atomic_add_fetch(&p->executing, 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&p->lock);
		io->result = exec(p, io, NULL);
		if (counted)
			__atomic_sub_fetch(&p->executing, 1, __ATOMIC_RELEASE);
		if (any_thread(io)) {
			heard(p, io);
			io->done(io);
		} else {
			push_done(p, io);
		}
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Loop thread: ->done of each of the list io, in order, in one batch (a
 * Secondary's acks, a Primary's replies: one sendmsg). */
static void complete(struct repl_engine *eng, struct repl_io *io)
{
	struct repl_io *next;

	repl__batch_begin(eng);
	for (; io; io = next) {
		next = io->next;
		io->next = NULL;
		io->done(io);
	}
	repl__batch_end(eng);
}

/* The list io with the FLUSHes that lost writes first, heard of now: no
 * other ->done of the batch acts on a flush of its own that worked as if
 * nothing were lost (repl__iopool_sync() fails until then). */
static struct repl_io *lost_first(struct iopool *p, struct repl_io *io)
{
	struct repl_io *lost = NULL, **lt = &lost, *rest = NULL, **rt = &rest, *next;

	for (; io; io = next) {
		next = io->next;
		io->next = NULL;
		if (io->result < 0 && io->flush_lost) {
			heard(p, io);
			*lt = io;
			lt = &io->next;
		} else {
			*rt = io;
			rt = &io->next;
		}
	}
	*lt = rest;
	return lost;
}

/* Loop thread: run ->done of everything the workers finished. */
static void pool_dispatch(void *arg, int fd, unsigned revents)
{
	struct iopool *p = arg;
	struct repl_io *io;
	uint64_t n;

	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_err_errno(errno, "[%s] eventfd read", p->name);
	pthread_mutex_lock(&p->lock);
	io = lost_first(p, p->done_head);
	p->done_head = NULL;
	p->done_tail = &p->done_head;
	pthread_mutex_unlock(&p->lock);
	complete(p->eng, io);	/* a ->done may free the pool */
}

int repl__iopool_new(struct repl_engine *eng, unsigned threads, int fd,
		     bool blockdev, const char *name, struct iopool **out)
{
	struct iopool *p;
	int r;

	if (threads < 1)
		threads = 1;
	p = calloc(1, sizeof(*p) + threads * sizeof(pthread_t));
	if (!p)
		return -ENOMEM;
	p->eng = eng;
	p->name = name;
	p->fd = fd;
	p->blockdev = blockdev;
	p->queue_tail = &p->queue_head;
	p->done_tail = &p->done_head;
	p->pend_tail = &p->pend_head;
	p->kick = (struct repl_deferred){ .fn = submit_pending, .arg = p };
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->flush_lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	if (repl__sys->pool_kick) {
		p->efd = -1;
		*out = p;
		return 0;
	}
	p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (p->efd < 0) {
		r = -errno;
		goto fail;
	}
	r = repl__fd_add(eng, p->efd, POLLIN, pool_dispatch, p);
	if (r < 0)
		goto fail;
	p->max_threads = threads;
	r = -pthread_create(&p->threads[0], NULL, worker_main, p);
	if (r < 0)
		goto fail;
	p->nthreads = 1;
	*out = p;
	return 0;
fail:
	repl__iopool_free(p);
	return r;
}

/* Appends the n requests head..*tail to the queue and wakes workers for
 * them. */
static void enqueue(struct iopool *p, struct repl_io *head, struct repl_io **tail, unsigned n)
{
	unsigned wake;

	pthread_mutex_lock(&p->lock);
	*p->queue_tail = head;
	p->queue_tail = tail;
	p->queued += n;
	/* More waiting than idle workers to take them: more workers (a
	 * failure is not an error, the ones there are take them in turn). */
	while (p->queued > p->idle && p->nthreads < p->max_threads && !p->stopping &&
	       pthread_create(&p->threads[p->nthreads], NULL, worker_main, p) == 0)
		p->nthreads++;
	wake = MAX(1u, MIN(n, p->idle));
	while (wake--)
		pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	if (repl__sys->pool_kick)
		while (n--)
			repl__sys->pool_kick(p);
}

/* Loop thread: may the write at the head of a batch's submissions run
 * here?  Nothing else of the pool may be under way: what runs inline must
 * not pass a write a worker has yet to do, nor its completion one that
 * waits to be collected.  A FLUSH, queued or running, may be passed: it
 * covers the writes done before its submission (pool_mark), so one done
 * inline after it is just not covered; and a Secondary's fdatasync, every
 * few hundred writes and milliseconds long, would otherwise send every
 * write to the workers while it runs.  A worker that has just handed its
 * completion over counts as done, though it has not gone back to waiting
 * yet: otherwise the next write, at QD1, finds it so, goes to a worker
 * too, and so on. */
static bool inline_now(struct iopool *p, const struct repl_io *head)
{
	bool idle;

	if (p->no_inline || p->freeing || !inline_write(head))
		return false;
	if (repl__sys->pool_kick) {
		if (!repl__sys->pool_inline || !repl__sys->pool_inline(p))
			return false;
	} else if (p->inline_off_until) {
		if (now_mono_ns() < p->inline_off_until ||
		    __atomic_load_n(&p->fast_streak, __ATOMIC_RELAXED) < INLINE_FAST_STREAK)
			return false;
		p->inline_off_until = 0;
		log_info("[%s] small writes run on the loop thread again", p->name);
	}
	pthread_mutex_lock(&p->lock);
	idle = !p->done_head && !__atomic_load_n(&p->executing, __ATOMIC_ACQUIRE);
	for (const struct repl_io *io = p->queue_head; idle && io; io = io->next)
		idle = io->op == REPL_IO_FLUSH;
	pthread_mutex_unlock(&p->lock);
	return idle;
}

/* Loop thread: an inline write took took_ns, over INLINE_SLOW_NS.  True
 * if those of the last INLINE_SLOW_WINDOW_NS add up to INLINE_SLOW_SUM_NS. */
static bool slow_inline(struct iopool *p, uint64_t took_ns, uint64_t *sum_ns)
{
	uint64_t now = now_mono_ns();

	if (!p->slow_since || now - p->slow_since > INLINE_SLOW_WINDOW_NS) {
		p->slow_since = now;
		p->slow_sum = 0;
	}
	p->slow_sum += took_ns;
	if (p->slow_sum < INLINE_SLOW_SUM_NS)
		return false;
	*sum_ns = p->slow_sum;
	p->slow_since = p->slow_sum = 0;
	return true;
}

/* Runs the inline writes at the head of head..*tail (n requests), queues
 * the rest, then completes the inline ones. */
static void run_inline(struct iopool *p, struct repl_io *head, struct repl_io **tail, unsigned n)
{
	struct repl_io *done = head, **dtail = &done, *io;
	uint64_t took, slow_ns;

	while (head && inline_write(head)) {
		io = head;
		head = io->next;
		n--;
		io->result = exec(p, io, &took);	/* took 0 under the simulator */
		dtail = &io->next;
		if (took > INLINE_SLOW_NS && slow_inline(p, took, &slow_ns)) {
			/* the rest go to the workers, and later batches too */
			p->inline_off_until = now_mono_ns() + INLINE_OFF_NS;
			__atomic_store_n(&p->fast_streak, 0, __ATOMIC_RELAXED);
			log_info("[%s] a write took %llu ms on the loop thread (slow ones: %llu ms "
				 "in the last second): writes go to the workers until they are fast "
				 "again", p->name, (unsigned long long)(took / 1000000),
				 (unsigned long long)(slow_ns / 1000000));
			break;
		}
	}
	*dtail = NULL;
	if (n)
		enqueue(p, head, tail, n);
	complete(p->eng, done);	/* a ->done may free the pool */
}

/* The end of a batch: what it submitted, in order. */
static void submit_pending(void *arg)
{
	struct iopool *p = arg;
	struct repl_io *head = p->pend_head, **tail = p->pend_tail;
	unsigned n = p->npend;

	p->pend_head = NULL;
	p->pend_tail = &p->pend_head;
	p->npend = 0;
	if (n && inline_now(p, head))
		run_inline(p, head, tail, n);
	else if (n)
		enqueue(p, head, tail, n);
}

void repl__iopool_submit(struct iopool *p, struct repl_io *io)
{
	io->next = NULL;
	io->flush_lost = false;
	if (io->op == REPL_IO_FLUSH) {
		io->pool_mark = __atomic_load_n(&p->writes_done, __ATOMIC_ACQUIRE);
	} else if (io->op == REPL_IO_READ) {
		/* What the engine has heard of: a flush that failed before
		 * and is not heard of yet fails this read too (exec()); the
		 * engine has not acted on that loss (a Primary steps down
		 * and its reads go to no client, outdate.c), and this disk
		 * may have dropped writes the read would miss (replsim
		 * --inline seed 26050: a Primary read an acknowledged write
		 * its disk had dropped, submitted after the flush failed,
		 * done after it stepped down). */
		io->pool_mark = __atomic_load_n(&p->lost_heard, __ATOMIC_ACQUIRE);
	}
	if (!p->freeing && repl__defer(p->eng, &p->kick)) {
		*p->pend_tail = io;
		p->pend_tail = &io->next;
		p->npend++;
		return;
	}
	enqueue(p, io, &io->next, 1);
}

unsigned repl__iopool_queued(const struct iopool *p)
{
	unsigned n = 0;

	for (const struct repl_io *io = p->queue_head; io; io = io->next)
		n++;
	return n;
}

bool repl__iopool_step(struct iopool *p, unsigned i)
{
	struct repl_io **pp = &p->queue_head, *io;
	bool wake;

	while (*pp && i--)
		pp = &(*pp)->next;
	io = *pp;
	if (!io)
		return false;
	*pp = io->next;
	if (!p->queue_head)
		p->queue_tail = &p->queue_head;
	else if (p->queue_tail == &io->next)
		p->queue_tail = pp;
	io->next = NULL;
	io->result = exec(p, io, NULL);
	if (any_thread(io)) {
		heard(p, io);
		io->done(io);
		return false;
	}
	wake = !p->done_head;
	*p->done_tail = io;
	p->done_tail = &io->next;
	return wake;
}

bool repl__iopool_loss_unheard(const struct iopool *p)
{
	return __atomic_load_n(&p->lost, __ATOMIC_ACQUIRE) !=
	       __atomic_load_n(&p->lost_heard, __ATOMIC_ACQUIRE);
}

void repl__iopool_deliver(struct iopool *p)
{
	struct repl_io *io = lost_first(p, p->done_head);

	p->done_head = NULL;
	p->done_tail = &p->done_head;
	complete(p->eng, io);	/* a ->done may free the pool */
}

void repl__iopool_free(struct iopool *p)
{
	if (!p)
		return;
	/* What this batch submitted is queued now, and what the completions
	 * below submit is queued at once: all of it runs before the end. */
	p->freeing = true;
	repl__undefer(p->eng, &p->kick);
	submit_pending(p);
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	if (p->efd >= 0) {
		/* Completions nobody collected: hand them back now.  What they
		 * submit in turn (a write a bitmap flush released, the next
		 * flush) runs here, the workers being gone: nothing submitted
		 * is lost, so every request is answered. */
		repl__fd_del(p->eng, p->efd);
		for (;;) {
			struct repl_io *io;

			pool_dispatch(p, p->efd, POLLIN);
			if (!(io = pop_queue(p)))
				break;
			io->result = exec(p, io, NULL);
			if (any_thread(io)) {
				heard(p, io);
				io->done(io);
			} else {
				push_done(p, io);
			}
		}
		close(p->efd);
	} else if (repl__sys->pool_kick) {
		/* Completions not yet delivered, then what is still queued,
		 * in order, as above. */
		for (;;) {
			repl__iopool_deliver(p);
			if (!p->queue_head)
				break;
			repl__iopool_step(p, 0);
		}
		repl__sys->pool_gone(p);
	}
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->flush_lock);
	pthread_cond_destroy(&p->cond);
	free(p);
}
