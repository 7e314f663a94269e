/* test-iopool.c: flushes of the worker pool (replication/iopool.c) that
 * run side by side with one that fails.  Linux reports a failed writeback
 * to one fdatasync of a file description only (its errseq): another,
 * running at the same time on the same fd, returns 0 though the pages it
 * was to make durable were dropped (PostgreSQL's "fsyncgate").  Such a
 * flush must not say "durable" before the engine has heard of the loss,
 * or a peer clears the bits of what this disk lost.  The fdatasync here
 * is the sys table's, so that the first one fails after a while and the
 * others return 0 at once, as that second fdatasync would.  A real pool,
 * real threads, a real file; a loop of poll() over the pool's eventfd. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "repl_int.h"
#include "sys.h"
#include "unit.h"

/* ---- a loop of poll() over what the engine registers ---------------- */

#define FDS_MAX 8

static struct reg {
	int fd;
	repl_fd_fn fn;
	void *arg;
} regs[FDS_MAX];

static int fd_add(void *loop, int fd, unsigned events, repl_fd_fn fn, void *arg)
{
	(void)loop;
	(void)events;
	for (unsigned i = 0; i < FDS_MAX; i++)
		if (!regs[i].fn) {
			regs[i] = (struct reg){ fd, fn, arg };
			return 0;
		}
	return -ENOSPC;
}

static int fd_mod(void *loop, int fd, unsigned events)
{
	(void)loop;
	(void)fd;
	(void)events;
	return 0;
}

static void fd_del(void *loop, int fd)
{
	(void)loop;
	for (unsigned i = 0; i < FDS_MAX; i++)
		if (regs[i].fn && regs[i].fd == fd)
			memset(&regs[i], 0, sizeof(regs[i]));
}

static int timer_add(void *loop, uint64_t after_ms, repl_timer_fn fn, void *arg,
		     void **handle)
{
	(void)loop;
	(void)after_ms;
	(void)fn;
	(void)arg;
	*handle = NULL;
	return 0;
}

static void timer_del(void *loop, void *handle)
{
	(void)loop;
	(void)handle;
}

static const struct repl_loop_ops ops = { fd_add, fd_mod, fd_del, timer_add, timer_del };

/* One turn: waits up to ms for a registered fd, runs its handler. */
static void turn(int ms)
{
	struct pollfd pf[FDS_MAX];
	struct reg r[FDS_MAX];
	unsigned n = 0;

	for (unsigned i = 0; i < FDS_MAX; i++)
		if (regs[i].fn) {
			r[n] = regs[i];
			pf[n++] = (struct pollfd){ .fd = regs[i].fd, .events = POLLIN };
		}
	if (poll(pf, n, ms) <= 0)
		return;
	for (unsigned i = 0; i < n; i++)
		if (pf[i].revents)
			r[i].fn(r[i].arg, r[i].fd, (unsigned)pf[i].revents);
}

/* ---- the fdatasync: the first of a round fails after a while ---------- */

static pthread_mutex_t sync_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned sync_calls;
static unsigned fail_ms;	/* the first call fails after that many ms */
static struct repl_sys_ops sys;

/* Linux's errseq: a writeback error of the file (wb_err counts them) is
 * reported once to each open file description, by the first fdatasync (or
 * RWF_DSYNC write) on it after the error.  The pool has one, its fd:
 * wb_err_seen is what it reported. */
static unsigned wb_err, wb_err_seen;

static int errseq_check(void)
{
	int r = 0;

	pthread_mutex_lock(&sync_lock);
	if (wb_err_seen != wb_err) {
		wb_err_seen = wb_err;
		errno = EIO;
		r = -1;
	}
	pthread_mutex_unlock(&sync_lock);
	return r;
}

static int test_fdatasync(int fd)
{
	unsigned n;

	(void)fd;
	pthread_mutex_lock(&sync_lock);
	n = ++sync_calls;
	pthread_mutex_unlock(&sync_lock);
	if (n == 1 && fail_ms) {
		usleep(fail_ms * 1000);
		errno = EIO;
		return -1;
	}
	return errseq_check();
}

static ssize_t test_pwritev2(int fd, const void *buf, size_t len, off_t off, int rwflags)
{
	ssize_t r = repl__sys_posix.pwritev2(fd, buf, len, off, rwflags & ~RWF_DSYNC);

	if (r >= 0 && (rwflags & RWF_DSYNC) && errseq_check() < 0)
		return -1;
	return r;
}

static void arm(unsigned ms)
{
	pthread_mutex_lock(&sync_lock);
	sync_calls = 0;
	fail_ms = ms;
	pthread_mutex_unlock(&sync_lock);
}

/* Waits (up to 5 s) until n fdatasyncs have begun since arm(). */
static bool syncs_begun(unsigned n)
{
	unsigned got = 0;

	for (int t = 0; t < 5000; t++) {
		pthread_mutex_lock(&sync_lock);
		got = sync_calls;
		pthread_mutex_unlock(&sync_lock);
		if (got >= n)
			return true;
		usleep(1000);
	}
	return false;
}

/* ---- requests and what their ->done saw, in order --------------------- */

struct req {
	struct repl_io io;
	const char *name;
	bool done;
	int result;
	bool lost;
	unsigned order;
};

static unsigned done_count;

static void req_done(struct repl_io *io)
{
	struct req *q = (struct req *)io;

	q->done = true;
	q->result = io->result;
	q->lost = io->flush_lost;
	q->order = ++done_count;
}

static void req_init(struct req *q, const char *name, enum repl_io_op op, void *buf)
{
	memset(q, 0, sizeof(*q));
	q->name = name;
	q->io = (struct repl_io){ .op = op, .buf = buf, .len = buf ? 4096 : 0,
				  .done = req_done };
}

static bool wait_done(struct req *q, int ms)
{
	for (int t = 0; !q->done && t < ms; t += 10)
		turn(10);
	return q->done;
}

/* A 4 KiB write at off that works, not yet durable (no flush failing). */
static void dirty_write(struct iopool *pool, void *buf, uint64_t off)
{
	struct req w;

	arm(0);
	req_init(&w, "write", REPL_IO_WRITE, buf);
	w.io.offset = off;
	repl__iopool_submit(pool, &w.io);
	CHECK(wait_done(&w, 2000) && w.result == 0);
}

/* A write not yet durable, then flush A (its fdatasync fails after 300 ms)
 * and, once A's has begun, flush B (its fdatasync returns 0 at once).  B may
 * fail, or succeed after A's ->done: never succeed before it. */
static void test_concurrent_flush(struct iopool *pool, void *buf)
{
	struct req a, b;

	dirty_write(pool, buf, 0);
	arm(300);
	req_init(&a, "flush A", REPL_IO_FLUSH, NULL);
	req_init(&b, "flush B", REPL_IO_FLUSH, NULL);
	repl__iopool_submit(pool, &a.io);
	CHECK(syncs_begun(1));	/* A's is the one that fails */
	repl__iopool_submit(pool, &b.io);
	usleep(50 * 1000);	/* B waits, or (unfixed) is done */
	CHECK(wait_done(&a, 3000) && wait_done(&b, 3000));
	CHECK_MSG(a.result == -EIO && a.lost, "flush A: %d, lost %d", a.result, a.lost);
	CHECK_MSG(b.result < 0 || b.order > a.order,
		  "flush B said durable (%d) before flush A's loss was handled "
		  "(B done %u, A done %u)", b.result, b.order, a.order);
	if (b.result < 0)
		CHECK_MSG(b.lost, "flush B failed (%d) but not as a lost flush", b.result);
}

/* A write not yet durable whose writeback fails, then a FUA write: its
 * sync is the first on the file description since, so it is what reports
 * the failure (the FLUSH after it hears nothing of it), and it covers the
 * write the disk dropped: a lost flush, not a write that failed alone. */
static void test_fua_reports_loss(struct iopool *pool, void *buf)
{
	struct req x, f;

	dirty_write(pool, buf, 8192);
	pthread_mutex_lock(&sync_lock);
	wb_err++;	/* its page did not reach the disk */
	pthread_mutex_unlock(&sync_lock);
	req_init(&x, "FUA write", REPL_IO_WRITE, buf);
	x.io.flags |= REPL_IO_FUA;
	x.io.offset = 65536;
	repl__iopool_submit(pool, &x.io);
	CHECK(wait_done(&x, 2000));
	CHECK_MSG(x.result == -EIO && x.lost, "the FUA write that met the failed "
		  "writeback: %d, lost %d", x.result, x.lost);
	req_init(&f, "flush", REPL_IO_FLUSH, NULL);
	repl__iopool_submit(pool, &f.io);
	CHECK(wait_done(&f, 2000));
	CHECK_MSG(f.result == 0, "the FLUSH after the loss was heard: %d", f.result);
}

/* A write not yet durable, then flush A, whose fdatasync fails after 50
 * ms; returns when it has failed and its ->done waits for the loop (the
 * engine has not heard of the loss). */
static void loss_unheard(struct iopool *pool, void *buf, struct req *a)
{
	dirty_write(pool, buf, 0);
	arm(50);
	req_init(a, "flush A", REPL_IO_FLUSH, NULL);
	repl__iopool_submit(pool, &a->io);
	CHECK(syncs_begun(1));
	usleep(300 * 1000);
	CHECK(!a->done);
}

/* A flush on the loop thread while a lost flush waits to be handled: it
 * reports the loss too. */
static void test_sync_while_loss_unhandled(struct iopool *pool, void *buf)
{
	struct req a;
	bool lost = false;
	int r;

	loss_unheard(pool, buf, &a);
	r = repl__iopool_sync(pool, &lost);
	CHECK_MSG(r < 0 && lost, "a sync while a lost flush is unhandled: %d, lost %d", r, lost);
	CHECK(wait_done(&a, 2000) && a.result == -EIO && a.lost);
	/* Handled now: a flush that works says so again. */
	arm(0);
	r = repl__iopool_sync(pool, &lost);
	CHECK_MSG(r == 0 && !lost, "a sync after the loss was handled: %d, lost %d", r, lost);
}

/* A read submitted after a flush failed but before the engine heard of
 * it (the flush's ->done not yet taken): the disk may have dropped a write
 * the read covers, and the engine has not acted on it yet; the read fails.
 * Once the loss is heard of, reads work again. */
static void test_read_while_loss_unhandled(struct iopool *pool, void *buf)
{
	struct req a, r, r2;

	loss_unheard(pool, buf, &a);
	req_init(&r, "read", REPL_IO_READ, buf);
	repl__iopool_submit(pool, &r.io);
	CHECK(wait_done(&a, 2000) && a.result == -EIO && a.lost);
	CHECK(wait_done(&r, 2000));
	CHECK_MSG(r.result == -EIO, "a read submitted while a lost flush was not heard "
		  "of: %d", r.result);
	req_init(&r2, "read after", REPL_IO_READ, buf);
	repl__iopool_submit(pool, &r2.io);
	CHECK(wait_done(&r2, 2000));
	CHECK_MSG(r2.result == 0, "a read after the loss was heard of: %d", r2.result);
}

int main(void)
{
	struct repl_loop loop = { &ops, NULL };
	struct repl_engine *eng = NULL;
	struct iopool *pool = NULL;
	char path[] = "/tmp/test-iopool.XXXXXX";
	void *buf = NULL;
	int fd;

	sys = repl__sys_posix;
	sys.fdatasync = test_fdatasync;
	sys.pwritev2 = test_pwritev2;
	repl_sys_set(&sys);
	fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd < 0)
		return unit_done("test-iopool");
	unlink(path);
	CHECK(ftruncate(fd, 1 << 20) == 0);
	CHECK(posix_memalign(&buf, 4096, 4096) == 0);
	memset(buf, 0x5a, 4096);
	CHECK(repl_engine_new(&loop, &eng) == 0);
	CHECK(repl__iopool_new(eng, 4, fd, false, "test", &pool) == 0);
	if (pool) {
		repl__iopool_set_inline(pool, false);
		test_concurrent_flush(pool, buf);
		test_sync_while_loss_unhandled(pool, buf);
		test_fua_reports_loss(pool, buf);
		test_read_while_loss_unhandled(pool, buf);
	}
	repl__iopool_free(pool);
	repl_engine_free(eng);
	repl_sys_set(NULL);
	close(fd);
	free(buf);
	return unit_done("test-iopool");
}
