/* evloop.c: see evloop.h.  A thin layer over libqb's qb_loop that keeps
 * the engine's loop contract:
 *
 * - fds: one registration per fd, in a table indexed by fd.  qb_loop
 *   queues ready fds as jobs before dispatching them; qb_loop_poll_del()
 *   takes a queued job off the queue, so an fd deleted by an earlier
 *   callback of the same round (and a new fd that reuses its number) gets
 *   no stale callback.  The callback only sees the bits it still asked for
 *   (plus POLLERR/POLLHUP): a job queued before an fd_mod that dropped
 *   them is not delivered.
 * - timers: one-shot; the handle is our own record, so timer_del of a
 *   fired or unknown handle finds nothing and does nothing.
 * - signals: qb_loop_signal_add() (a handler that writes to a pipe the
 *   loop polls), with SA_RESTART added so that other threads' system calls
 *   are not cut short by EINTR.
 *
 * Priority: every source is registered at QB_LOOP_HIGH.  qb_loop_run()
 * serves at most 4 jobs per level per turn and skips the MED level one
 * turn in three and LOW two in three, so HIGH is the only level served on
 * every turn; with a single level, fds, timers and signals are dispatched
 * in the order they became ready, as in a plain epoll loop.  There is no
 * other work in the daemon that should go before or after them. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <qb/qbdefs.h>
#include <qb/qbloop.h>

#include "evloop.h"
#include "log.h"
#include "util.h"

#define PRIO QB_LOOP_HIGH
#define NSIG_MAX 65

struct fdh {
	struct evloop *l;
	repl_fd_fn fn;
	void *arg;
	unsigned events;	/* POLLIN/POLLOUT asked for */
};

struct timer {
	struct timer *prev, *next;
	struct evloop *l;
	qb_loop_timer_handle qh;
	repl_timer_fn fn;
	void *arg;
};

struct sig {
	evloop_signal_fn fn;
	void *arg;
	qb_loop_signal_handle qh;
	struct sigaction old;	/* restored by evloop_free */
};

struct evloop {
	qb_loop_t *qb;
	struct fdh **fds;	/* indexed by fd */
	size_t nfds;
	struct timer *timers;	/* armed, not yet fired */
	bool once;		/* in evloop_run_once: stop after a callback */
	struct sig sig[NSIG_MAX];
};

int evloop_new(struct evloop **out)
{
	struct evloop *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->qb = qb_loop_create();
	if (!l->qb) {
		free(l);
		return -ENOMEM;
	}
	*out = l;
	return 0;
}

void evloop_free(struct evloop *l)
{
	if (!l)
		return;
	while (l->timers) {
		struct timer *t = l->timers;
		l->timers = t->next;
		free(t);
	}
	/* Destroys the poll entries, the timers and the signal pipe. */
	qb_loop_destroy(l->qb);
	for (size_t fd = 0; fd < l->nfds; fd++)
		free(l->fds[fd]);
	free(l->fds);
	for (int s = 1; s < NSIG_MAX; s++)
		if (l->sig[s].fn)
			sigaction(s, &l->sig[s].old, NULL);
	free(l);
}

/* ---- fds ------------------------------------------------------------------ */

static void after_callback(struct evloop *l)
{
	if (l->once)
		qb_loop_stop(l->qb);
}

static int32_t fd_dispatch(int32_t fd, int32_t revents, void *data)
{
	struct fdh *h = data;
	struct evloop *l = h->l;
	unsigned ev = (unsigned)revents & (h->events | POLLERR | POLLHUP);

	if (ev) {
		h->fn(h->arg, fd, ev);	/* may free h */
		after_callback(l);
	}
	return 0;	/* < 0 would make qb_loop drop the fd behind our back */
}

static struct fdh *fd_lookup(struct evloop *l, int fd)
{
	return fd >= 0 && (size_t)fd < l->nfds ? l->fds[fd] : NULL;
}

int evloop_fd_add(struct evloop *l, int fd, unsigned events, repl_fd_fn fn, void *arg)
{
	struct fdh *h;
	int r;

	if (fd < 0)
		return -EBADF;
	if ((size_t)fd >= l->nfds) {
		size_t n = MAX((size_t)fd + 1, l->nfds * 2);
		struct fdh **t = realloc(l->fds, n * sizeof(*t));
		if (!t)
			return -ENOMEM;
		memset(t + l->nfds, 0, (n - l->nfds) * sizeof(*t));
		l->fds = t;
		l->nfds = n;
	}
	/* A registration left over from an fd closed without evloop_fd_del:
	 * qb_loop would keep both entries and match the stale one by number. */
	if (l->fds[fd])
		evloop_fd_del(l, fd);
	h = malloc(sizeof(*h));
	if (!h)
		return -ENOMEM;
	*h = (struct fdh){ l, fn, arg, events & (POLLIN | POLLOUT) };
	r = qb_loop_poll_add(l->qb, PRIO, fd, (int32_t)h->events, h, fd_dispatch);
	if (r < 0) {
		free(h);
		return r;
	}
	l->fds[fd] = h;
	return 0;
}

int evloop_fd_mod(struct evloop *l, int fd, unsigned events)
{
	struct fdh *h = fd_lookup(l, fd);
	int r;

	if (!h)
		return -ENOENT;
	events &= POLLIN | POLLOUT;
	if (events == h->events)
		return 0;
	r = qb_loop_poll_mod(l->qb, PRIO, fd, (int32_t)events, h, fd_dispatch);
	if (r == 0)
		h->events = events;
	return r;
}

void evloop_fd_del(struct evloop *l, int fd)
{
	struct fdh *h = fd_lookup(l, fd);

	if (!h)
		return;
	/* Also dequeues an event already collected for this fd. */
	qb_loop_poll_del(l->qb, fd);
	l->fds[fd] = NULL;
	free(h);
}

/* ---- timers --------------------------------------------------------------- */

static void timer_unlink(struct evloop *l, struct timer *t)
{
	if (t->prev)
		t->prev->next = t->next;
	else
		l->timers = t->next;
	if (t->next)
		t->next->prev = t->prev;
}

static void timer_dispatch(void *data)
{
	struct timer *t = data;
	struct evloop *l = t->l;

	/* Unlinked first: a timer_del of this handle from its own callback
	 * finds nothing. */
	timer_unlink(l, t);
	t->fn(t->arg);
	free(t);
	after_callback(l);
}

/* A timer of SLACK_FROM_MS or more comes due on a SLACK_GRID_MS grid of the
 * monotonic clock (late by less than the grid, a quarter of its time at
 * most): the pings of a few hundred replica links (replication/peer.c) then
 * come due together and are served in a few turns of the loop instead of a
 * turn each, and each of qb_loop's turns costs O(registered fds) (its fd
 * usage check).  Issue 16: idle CPU at 200 volumes. */
#define SLACK_FROM_MS 1000
#define SLACK_GRID_NS (250 * QB_TIME_NS_IN_MSEC)

static uint64_t with_slack(uint64_t after_ms)
{
	uint64_t now, due;

	if (after_ms > UINT64_MAX / QB_TIME_NS_IN_MSEC / 2)
		return UINT64_MAX / 2;
	if (after_ms < SLACK_FROM_MS)
		return after_ms * QB_TIME_NS_IN_MSEC;
	now = now_mono_ns();
	due = now + after_ms * QB_TIME_NS_IN_MSEC;
	due += SLACK_GRID_NS - 1 - (due + SLACK_GRID_NS - 1) % SLACK_GRID_NS;
	return due - now;
}

int evloop_timer_add(struct evloop *l, uint64_t after_ms, repl_timer_fn fn, void *arg,
		     void **handle)
{
	struct timer *t = calloc(1, sizeof(*t));
	uint64_t ns = with_slack(after_ms);
	int r;

	if (!t)
		return -ENOMEM;
	t->l = l;
	t->fn = fn;
	t->arg = arg;
	r = qb_loop_timer_add(l->qb, PRIO, ns, t, timer_dispatch, &t->qh);
	if (r < 0) {
		free(t);
		return r;
	}
	t->next = l->timers;
	if (t->next)
		t->next->prev = t;
	l->timers = t;
	if (handle)
		*handle = t;
	return 0;
}

void evloop_timer_del(struct evloop *l, void *handle)
{
	/* Only a handle still on the list is touched: a fired or unknown
	 * handle is never dereferenced. */
	for (struct timer *t = l->timers; t; t = t->next) {
		if (t == handle) {
			qb_loop_timer_del(l->qb, t->qh);
			timer_unlink(l, t);
			free(t);
			return;
		}
	}
}

/* ---- signals -------------------------------------------------------------- */

static int32_t signal_dispatch(int32_t signo, void *data)
{
	struct evloop *l = data;

	if (signo > 0 && signo < NSIG_MAX && l->sig[signo].fn)
		l->sig[signo].fn(l->sig[signo].arg, signo);
	after_callback(l);
	return 0;	/* != 0 would unregister the signal */
}

/* qb_loop installs its handler without SA_RESTART, and does so again for
 * every signal each time one is added. */
static void signals_restart(struct evloop *l)
{
	struct sigaction sa;

	for (int s = 1; s < NSIG_MAX; s++) {
		if (!l->sig[s].fn || sigaction(s, NULL, &sa) < 0 || (sa.sa_flags & SA_RESTART))
			continue;
		sa.sa_flags |= SA_RESTART;
		sigaction(s, &sa, NULL);
	}
}

int evloop_signal_add(struct evloop *l, int signo, evloop_signal_fn fn, void *arg)
{
	sigset_t set;
	int r;

	if (signo <= 0 || signo >= NSIG_MAX || !fn)
		return -EINVAL;
	if (l->sig[signo].fn) {
		l->sig[signo].fn = fn;
		l->sig[signo].arg = arg;
		return 0;
	}
	if (sigaction(signo, NULL, &l->sig[signo].old) < 0)
		return -errno;
	r = qb_loop_signal_add(l->qb, PRIO, signo, l, signal_dispatch, &l->sig[signo].qh);
	if (r < 0)
		return r;
	l->sig[signo].fn = fn;
	l->sig[signo].arg = arg;
	signals_restart(l);
	/* Delivered in whichever thread does not block it: make sure this one
	 * (and the threads it starts later) does not. */
	sigemptyset(&set);
	sigaddset(&set, signo);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	return 0;
}

/* ---- running -------------------------------------------------------------- */

int evloop_run(struct evloop *l)
{
	l->once = false;
	qb_loop_run(l->qb);
	return 0;
}

void evloop_stop(struct evloop *l)
{
	qb_loop_stop(l->qb);
}

static void once_limit(void *data)
{
	struct evloop *l = data;

	qb_loop_stop(l->qb);
}

static void once_kick(void *data)
{
}

int evloop_run_once(struct evloop *l, int timeout_ms)
{
	qb_loop_timer_handle kick = 0, limit = 0;
	int r;

	/* A timer that is already due makes qb_loop_run's first poll not
	 * block, so that callbacks still queued when the previous call
	 * stopped run first. */
	r = qb_loop_timer_add(l->qb, PRIO, 0, l, once_kick, &kick);
	if (r == 0 && timeout_ms >= 0)
		r = qb_loop_timer_add(l->qb, PRIO, (uint64_t)timeout_ms * QB_TIME_NS_IN_MSEC,
				      l, once_limit, &limit);
	if (r < 0) {
		qb_loop_timer_del(l->qb, kick);
		return r;
	}
	l->once = true;
	qb_loop_run(l->qb);
	l->once = false;
	/* Harmless for timers that fired. */
	qb_loop_timer_del(l->qb, kick);
	if (limit)
		qb_loop_timer_del(l->qb, limit);
	return 0;
}

/* ---- the engine's view ---------------------------------------------------- */

static int op_fd_add(void *l, int fd, unsigned ev, repl_fd_fn fn, void *arg)
{
	return evloop_fd_add(l, fd, ev, fn, arg);
}
static int op_fd_mod(void *l, int fd, unsigned ev) { return evloop_fd_mod(l, fd, ev); }
static void op_fd_del(void *l, int fd) { evloop_fd_del(l, fd); }
static int op_timer_add(void *l, uint64_t ms, repl_timer_fn fn, void *arg, void **h)
{
	return evloop_timer_add(l, ms, fn, arg, h);
}
static void op_timer_del(void *l, void *h) { evloop_timer_del(l, h); }

static const struct repl_loop_ops evloop_ops = {
	.fd_add = op_fd_add,
	.fd_mod = op_fd_mod,
	.fd_del = op_fd_del,
	.timer_add = op_timer_add,
	.timer_del = op_timer_del,
};

void evloop_as_repl(struct evloop *l, struct repl_loop *out)
{
	out->ops = &evloop_ops;
	out->data = l;
}
