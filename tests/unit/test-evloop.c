/* test-evloop.c: the loop contract the engine relies on, on agent/evloop.c
 * (qb_loop underneath): fd_del during a round, fd number reuse, fd_mod 0,
 * POLLHUP, one-shot timers and their handles, signals, run/stop/run_once. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "evloop.h"
#include "unit.h"
#include "util.h"

static struct evloop *L;

/* ---- fd_del of another ready fd from a callback in the same round -------- */

struct pair {
	int a[2], b[2];		/* two socketpairs, both readable */
	int calls_a, calls_b, calls_new;
	int newfd;
};

static void on_new(void *arg, int fd, unsigned ev)
{
	struct pair *p = arg;

	p->calls_new++;
}

static void on_a(void *arg, int fd, unsigned ev)
{
	struct pair *p = arg;

	p->calls_a++;
	/* Delete and close b (its event may already be collected), then make
	 * a new fd that likely takes b's number, registered for POLLIN but
	 * not readable. */
	if (p->b[0] >= 0) {
		int old = p->b[0];
		evloop_fd_del(L, old);
		close(old);
		p->b[0] = -1;
		p->newfd = dup(p->a[1]);	/* a socket end with nothing to read */
		CHECK(p->newfd >= 0);
		evloop_fd_add(L, p->newfd, POLLIN, on_new, p);
	}
	evloop_fd_del(L, fd);
}

static void on_b(void *arg, int fd, unsigned ev)
{
	struct pair *p = arg;

	p->calls_b++;
	if (p->a[0] >= 0) {
		evloop_fd_del(L, p->a[0]);
		close(p->a[0]);
		p->a[0] = -1;
		p->newfd = dup(p->b[1]);
		CHECK(p->newfd >= 0);
		evloop_fd_add(L, p->newfd, POLLIN, on_new, p);
	}
	evloop_fd_del(L, fd);
}

static void test_del_in_round(void)
{
	struct pair p = { .newfd = -1 };

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, p.a) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, p.b) == 0);
	CHECK(write(p.a[1], "x", 1) == 1);
	CHECK(write(p.b[1], "x", 1) == 1);
	CHECK(evloop_fd_add(L, p.a[0], POLLIN, on_a, &p) == 0);
	CHECK(evloop_fd_add(L, p.b[0], POLLIN, on_b, &p) == 0);
	for (int i = 0; i < 5; i++)
		evloop_run_once(L, 20);
	/* Exactly one of them ran: the other was deleted before its turn. */
	CHECK_MSG(p.calls_a + p.calls_b == 1, "a %d b %d", p.calls_a, p.calls_b);
	CHECK_MSG(p.calls_new == 0, "new fd got %d stale callbacks", p.calls_new);
	evloop_fd_del(L, p.newfd);
	close(p.newfd);
	for (int i = 0; i < 2; i++) {
		if (p.a[i] >= 0)
			close(p.a[i]);
		if (p.b[i] >= 0)
			close(p.b[i]);
	}
}

/* ---- fd_mod 0 and POLLHUP ----------------------------------------------- */

struct modz {
	int calls;
	unsigned last;
};

static void on_modz(void *arg, int fd, unsigned ev)
{
	struct modz *m = arg;

	m->calls++;
	m->last = ev;
}

static void test_mod_zero_and_hup(void)
{
	struct modz m = { 0 };
	int sv[2];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK(write(sv[1], "x", 1) == 1);
	CHECK(evloop_fd_add(L, sv[0], POLLIN | POLLOUT, on_modz, &m) == 0);
	CHECK(evloop_fd_mod(L, sv[0], 0) == 0);
	evloop_run_once(L, 50);
	CHECK_MSG(m.calls == 0, "%d callbacks with events 0", m.calls);
	CHECK(evloop_fd_mod(L, sv[0], POLLIN) == 0);
	evloop_run_once(L, 50);
	CHECK(m.calls == 1 && (m.last & POLLIN) && !(m.last & POLLOUT));
	/* Peer gone with events 0: POLLHUP still comes through. */
	CHECK(evloop_fd_mod(L, sv[0], 0) == 0);
	close(sv[1]);
	m.calls = 0;
	evloop_run_once(L, 50);
	CHECK_MSG(m.calls >= 1 && (m.last & POLLHUP) && !(m.last & POLLIN),
		  "calls %d last %#x", m.calls, m.last);
	CHECK(evloop_fd_mod(L, 12345, POLLIN) < 0);
	evloop_fd_del(L, sv[0]);
	evloop_fd_del(L, sv[0]);	/* twice: harmless */
	close(sv[0]);
}

/* ---- timers -------------------------------------------------------------- */

static int fired[4];
static void **self_handle;

static void on_timer(void *arg)
{
	fired[(long)arg]++;
	if ((long)arg == 2)
		evloop_timer_del(L, *self_handle);	/* own handle while firing */
}

static void test_timers(void)
{
	void *h0, *h1, *h2;
	uint64_t t0 = now_mono_ms();

	CHECK(evloop_timer_add(L, 30, on_timer, (void *)0L, &h0) == 0);
	CHECK(evloop_timer_add(L, 10, on_timer, (void *)1L, &h1) == 0);
	CHECK(evloop_timer_add(L, 5, on_timer, (void *)2L, &h2) == 0);
	self_handle = &h2;
	evloop_timer_del(L, h1);
	while (!fired[0] && now_mono_ms() - t0 < 1000)
		evloop_run_once(L, -1);
	CHECK(fired[0] == 1 && fired[1] == 0 && fired[2] == 1);
	CHECK(now_mono_ms() - t0 >= 29);
	evloop_timer_del(L, h0);	/* fired */
	evloop_timer_del(L, h1);	/* deleted */
	evloop_timer_del(L, (void *)&t0);	/* never a handle */
	evloop_run_once(L, 40);
	CHECK(fired[0] == 1 && fired[1] == 0 && fired[2] == 1);	/* one-shot */
}

/* ---- signals, run and stop ----------------------------------------------- */

static int got_sig;

static void on_sig(void *arg, int signo)
{
	got_sig = signo;
	evloop_stop(L);
}

static void raise_usr1(void *arg)
{
	raise(SIGUSR1);
}

static void test_signal_run_stop(void)
{
	uint64_t t0 = now_mono_ms();

	CHECK(evloop_signal_add(L, SIGUSR1, on_sig, NULL) == 0);
	CHECK(evloop_timer_add(L, 10, raise_usr1, NULL, NULL) == 0);
	CHECK(evloop_run(L) == 0);
	CHECK(got_sig == SIGUSR1);
	CHECK(now_mono_ms() - t0 < 1000);
	/* run_once with a timeout and nothing to do returns on time. */
	t0 = now_mono_ms();
	CHECK(evloop_run_once(L, 30) == 0);
	CHECK(now_mono_ms() - t0 >= 29 && now_mono_ms() - t0 < 2000);
}

int main(void)
{
	CHECK(evloop_new(&L) == 0);
	test_del_in_round();
	test_mod_zero_and_hup();
	test_timers();
	test_signal_run_stop();
	evloop_free(L);
	return unit_done("test-evloop");
}
