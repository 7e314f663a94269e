/* evloop.c: see evloop.h.  Handlers are kept in a table indexed by fd;
 * a handler removed while its event is being dispatched is not called
 * again in that round (the generation check). */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "evloop.h"
#include "log.h"
#include "util.h"

struct handler {
	repl_fd_fn fn;
	void *arg;
	uint64_t gen;		/* 0 = free slot */
};

struct timer {
	struct timer *next;
	uint64_t when_ms;
	repl_timer_fn fn;
	void *arg;
};

struct sig {
	evloop_signal_fn fn;
	void *arg;
};

struct evloop {
	int epfd;
	struct handler *h;
	size_t nh;
	uint64_t next_gen;
	struct timer *timers;	/* sorted by when_ms */
	int sigfd;
	sigset_t sigs;
	struct sig sig[65];
};

static uint32_t to_epoll(unsigned ev)
{
	return ((ev & POLLIN) ? EPOLLIN : 0) | ((ev & POLLOUT) ? EPOLLOUT : 0);
}

static unsigned from_epoll(uint32_t ev)
{
	return ((ev & EPOLLIN) ? POLLIN : 0u) | ((ev & EPOLLOUT) ? POLLOUT : 0u) |
	       ((ev & EPOLLERR) ? POLLERR : 0u) | ((ev & EPOLLHUP) ? POLLHUP : 0u);
}

int evloop_new(struct evloop **out)
{
	struct evloop *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->sigfd = -1;
	l->next_gen = 1;
	sigemptyset(&l->sigs);
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		int r = -errno;
		free(l);
		return r;
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
	if (l->sigfd >= 0)
		close(l->sigfd);
	close(l->epfd);
	free(l->h);
	free(l);
}

int evloop_fd_add(struct evloop *l, int fd, unsigned events, repl_fd_fn fn, void *arg)
{
	struct epoll_event ee = { .events = to_epoll(events), .data.fd = fd };

	if (fd < 0)
		return -EBADF;
	if ((size_t)fd >= l->nh) {
		size_t n = MAX((size_t)fd + 1, l->nh * 2);
		struct handler *h = realloc(l->h, n * sizeof(*h));
		if (!h)
			return -ENOMEM;
		memset(h + l->nh, 0, (n - l->nh) * sizeof(*h));
		l->h = h;
		l->nh = n;
	}
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ee) < 0)
		return -errno;
	l->h[fd] = (struct handler){ fn, arg, l->next_gen++ };
	return 0;
}

int evloop_fd_mod(struct evloop *l, int fd, unsigned events)
{
	struct epoll_event ee = { .events = to_epoll(events), .data.fd = fd };

	return epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ee) < 0 ? -errno : 0;
}

void evloop_fd_del(struct evloop *l, int fd)
{
	if (fd < 0 || (size_t)fd >= l->nh || !l->h[fd].gen)
		return;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	l->h[fd].gen = 0;
}

int evloop_timer_add(struct evloop *l, uint64_t after_ms, repl_timer_fn fn, void *arg,
		     void **handle)
{
	struct timer *t = calloc(1, sizeof(*t)), **pp;

	if (!t)
		return -ENOMEM;
	t->when_ms = now_mono_ms() + after_ms;
	t->fn = fn;
	t->arg = arg;
	for (pp = &l->timers; *pp && (*pp)->when_ms <= t->when_ms; pp = &(*pp)->next)
		;
	t->next = *pp;
	*pp = t;
	if (handle)
		*handle = t;
	return 0;
}

void evloop_timer_del(struct evloop *l, void *handle)
{
	for (struct timer **pp = &l->timers; *pp; pp = &(*pp)->next) {
		if (*pp == handle) {
			struct timer *t = *pp;
			*pp = t->next;
			free(t);
			return;
		}
	}
}

static void signal_dispatch(void *arg, int fd, unsigned revents)
{
	struct evloop *l = arg;
	struct signalfd_siginfo si;

	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		if (si.ssi_signo < ARRAY_SIZE(l->sig) && l->sig[si.ssi_signo].fn)
			l->sig[si.ssi_signo].fn(l->sig[si.ssi_signo].arg, (int)si.ssi_signo);
}

int evloop_signal_add(struct evloop *l, int signo, evloop_signal_fn fn, void *arg)
{
	int fd, r;

	if (signo <= 0 || (size_t)signo >= ARRAY_SIZE(l->sig))
		return -EINVAL;
	sigaddset(&l->sigs, signo);
	if (sigprocmask(SIG_BLOCK, &l->sigs, NULL) < 0)
		return -errno;
	fd = signalfd(l->sigfd, &l->sigs, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (l->sigfd < 0) {
		r = evloop_fd_add(l, fd, POLLIN, signal_dispatch, l);
		if (r < 0) {
			close(fd);
			return r;
		}
		l->sigfd = fd;
	}
	l->sig[signo] = (struct sig){ fn, arg };
	return 0;
}

static int next_timeout(struct evloop *l, int timeout_ms)
{
	uint64_t now;
	int t;

	if (!l->timers)
		return timeout_ms;
	now = now_mono_ms();
	t = l->timers->when_ms <= now ? 0 : (int)MIN(l->timers->when_ms - now, (uint64_t)INT32_MAX);
	return timeout_ms < 0 ? t : MIN(t, timeout_ms);
}

static void run_timers(struct evloop *l)
{
	uint64_t now = now_mono_ms();

	while (l->timers && l->timers->when_ms <= now) {
		struct timer *t = l->timers;
		l->timers = t->next;
		t->fn(t->arg);
		free(t);
	}
}

int evloop_run_once(struct evloop *l, int timeout_ms)
{
	struct epoll_event ev[64];
	uint64_t gens[64];
	int n;

	n = epoll_wait(l->epfd, ev, 64, next_timeout(l, timeout_ms));
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++)
		gens[i] = l->h[ev[i].data.fd].gen;
	for (int i = 0; i < n; i++) {
		int fd = ev[i].data.fd;
		struct handler *h = &l->h[fd];
		/* Skip handlers removed (or replaced) earlier in this round. */
		if (h->gen && h->gen == gens[i])
			h->fn(h->arg, fd, from_epoll(ev[i].events));
	}
	run_timers(l);
	return 0;
}

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
