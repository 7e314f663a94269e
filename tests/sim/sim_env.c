/* sim_env.c: the simulator's clock, PRNG, trace and event queue, the loop
 * ops every node's engine runs on, and the worker-pool seam (each queued
 * I/O runs as an event of its own, in an order the PRNG picks).
 *
 * After every event the readiness sweep calls the handlers of the
 * simulated fds that are ready (level-triggered, as epoll without ET), in
 * fd order, until none is: a handler that never consumes what makes its fd
 * ready is a livelock and ends the run. */
#include "config.h"

#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "repl_int.h"
#include "sim.h"
#include "sys.h"

uint64_t sim_now;
uint64_t run_seed;
bool sim_tracing;
int sim_cur = -1;

static uint64_t rng_s[4];
bool sim_inline;
static uint64_t inline_rng;	/* its own stream: --inline moves no other draw */

uint64_t sim_splitmix(uint64_t *x)
{
	uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

void sim_seed(uint64_t seed)
{
	inline_rng = seed ^ UINT64_C(0x696e6c696e65);
	for (int i = 0; i < 4; i++)
		rng_s[i] = sim_splitmix(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t rnd(void)	/* xoshiro256** */
{
	uint64_t r = rotl(rng_s[1] * 5, 7) * 9, t = rng_s[1] << 17;

	rng_s[2] ^= rng_s[0];
	rng_s[3] ^= rng_s[1];
	rng_s[1] ^= rng_s[2];
	rng_s[0] ^= rng_s[3];
	rng_s[2] ^= t;
	rng_s[3] = rotl(rng_s[3], 45);
	return r;
}

uint64_t rnd_below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

bool rnd_chance(unsigned permille)
{
	return rnd_below(1000) < permille;
}

void trace(const char *fmt, ...)
{
	va_list ap;

	if (!sim_tracing)
		return;
	printf("%10.6f ", (double)sim_now / 1e9);
	if (sim_cur >= 0)
		printf("n%d ", sim_cur);
	else
		printf("-- ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* ---- events: a binary heap by (time, sequence) ---- */

struct sim_ev {
	uint64_t t, seq;
	int node;
	bool cancelled;
	sim_fn fn;
	void *a;
	uint64_t b;
	struct sim_ev *arena_next;
};

static struct sim_ev **heap;
static size_t heap_n, heap_cap;
static uint64_t ev_seq;
/* Events are freed at the end of a run only: a handle of a timer that
 * fired stays valid, so timer_del of it is a no-op, as the loop promises. */
static struct sim_ev *arena;

static bool ev_less(const struct sim_ev *x, const struct sim_ev *y)
{
	return x->t < y->t || (x->t == y->t && x->seq < y->seq);
}

struct sim_ev *sim_at(uint64_t t, int node, sim_fn fn, void *a, uint64_t b)
{
	struct sim_ev *e = calloc(1, sizeof(*e));
	size_t i;

	if (!e || (heap_n == heap_cap &&
		   !(heap = realloc(heap, (heap_cap = heap_cap ? heap_cap * 2 : 1024) *
					  sizeof(*heap))))) {
		fprintf(stderr, "replsim: out of memory\n");
		exit(2);
	}
	e->t = t < sim_now ? sim_now : t;
	e->seq = ev_seq++;
	e->node = node;
	e->fn = fn;
	e->a = a;
	e->b = b;
	e->arena_next = arena;
	arena = e;
	for (i = heap_n++; i > 0 && ev_less(e, heap[(i - 1) / 2]); i = (i - 1) / 2)
		heap[i] = heap[(i - 1) / 2];
	heap[i] = e;
	return e;
}

void sim_cancel(struct sim_ev *e)
{
	if (e)
		e->cancelled = true;
}

void sim_cancel_node(int node)
{
	for (size_t i = 0; i < heap_n; i++)
		if (heap[i]->node == node)
			heap[i]->cancelled = true;
}

static void cancel_arg(void *a)
{
	for (size_t i = 0; i < heap_n; i++)
		if (heap[i]->a == a)
			heap[i]->cancelled = true;
}

static struct sim_ev *pop(void)
{
	struct sim_ev *top = heap[0], *last = heap[--heap_n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= heap_n)
			break;
		if (c + 1 < heap_n && ev_less(heap[c + 1], heap[c]))
			c++;
		if (!ev_less(heap[c], last))
			break;
		heap[i] = heap[c];
		i = c;
	}
	if (heap_n)
		heap[i] = last;
	return top;
}

/* ---- the loop: fds and timers ---- */

struct fdreg {
	bool reg;
	int node;
	unsigned events;
	repl_fd_fn fn;
	void *arg;
};

#define MAX_FDS 65536
static struct fdreg fds[MAX_FDS];
/* the registered ones, in the order they were registered */
static int active[MAX_FDS];
static unsigned n_active;

static void active_del(int i)
{
	for (unsigned k = 0; k < n_active; k++) {
		if (active[k] == i) {
			memmove(active + k, active + k + 1, (n_active - k - 1) * sizeof(int));
			n_active--;
			return;
		}
	}
}

static struct fdreg *fdreg_of(int fd)
{
	if (fd < SIM_FD_BASE || fd >= SIM_FD_BASE + MAX_FDS)
		return NULL;	/* a real fd (the NBD notify eventfd): never ready */
	return &fds[fd - SIM_FD_BASE];
}

static int loop_fd_add(void *loop, int fd, unsigned events, repl_fd_fn fn, void *arg)
{
	struct fdreg *r = fdreg_of(fd);

	if (r && !r->reg)
		active[n_active++] = fd - SIM_FD_BASE;
	if (r)
		*r = (struct fdreg){ .reg = true, .node = (int)(intptr_t)loop, .events = events,
				     .fn = fn, .arg = arg };
	return 0;
}

static int loop_fd_mod(void *loop, int fd, unsigned events)
{
	struct fdreg *r = fdreg_of(fd);

	(void)loop;
	if (r)
		r->events = events;
	return 0;
}

static void loop_fd_del(void *loop, int fd)
{
	struct fdreg *r = fdreg_of(fd);

	(void)loop;
	if (r && r->reg) {
		r->reg = false;
		active_del(fd - SIM_FD_BASE);
	}
}

void sim_fd_forget_node(int node)
{
	for (unsigned k = 0; k < n_active;) {
		int i = active[k];
		if (fds[i].node == node) {
			fds[i].reg = false;
			active_del(i);
		} else {
			k++;
		}
	}
}

struct timer_call {
	repl_timer_fn fn;
	void *arg;
};

static void timer_fire(void *a, uint64_t b)
{
	struct timer_call *tc = a;

	(void)b;
	tc->fn(tc->arg);
}

static int loop_timer_add(void *loop, uint64_t after_ms, repl_timer_fn fn, void *arg,
			  void **handle)
{
	struct timer_call *tc = malloc(sizeof(*tc));
	struct sim_ev *e;

	if (!tc)
		return -1;
	tc->fn = fn;
	tc->arg = arg;
	if (after_ms > UINT64_C(1) << 40)
		after_ms = UINT64_C(1) << 40;
	e = sim_at(sim_now + after_ms * SIM_MS, (int)(intptr_t)loop, timer_fire, tc, 0);
	/* the arena frees the event; the call goes with it */
	e->b = (uint64_t)(uintptr_t)tc;
	if (handle)
		*handle = e;
	return 0;
}

static void loop_timer_del(void *loop, void *handle)
{
	(void)loop;
	sim_cancel(handle);
}

const struct repl_loop_ops sim_loop_ops = {
	.fd_add = loop_fd_add,
	.fd_mod = loop_fd_mod,
	.fd_del = loop_fd_del,
	.timer_add = loop_timer_add,
	.timer_del = loop_timer_del,
};

static void sweep(void)
{
	for (int round = 0; round < 100000; round++) {
		bool progress = false;

		for (unsigned k = 0; k < n_active; k++) {
			int i = active[k];
			struct fdreg *r = &fds[i];
			unsigned ready;

			if (!r->reg)
				continue;
			ready = sim_net_ready(SIM_FD_BASE + i) &
				(r->events | POLLERR | POLLHUP);
			if (!ready)
				continue;
			sim_cur = r->node;
			if (round > 99990)
				trace("sweep: fd %d ready %#x events %#x", SIM_FD_BASE + i, ready,
				      r->events);
			r->fn(r->arg, SIM_FD_BASE + i, ready);
			sim_cur = -1;
			progress = true;
		}
		if (!progress)
			return;
	}
	printf("seed %" PRIu64 ": VIOLATION livelock at t=%.6f: an fd stays ready and its "
	       "handler never consumes it\n  replay: replsim --seed %" PRIu64 " --trace\n",
	       run_seed, (double)sim_now / 1e9, run_seed);
	fflush(stdout);
	_exit(1);
}

bool sim_step(void)
{
	struct sim_ev *e;

	do {
		if (!heap_n)
			return false;
		e = pop();
	} while (e->cancelled);
	sim_now = e->t;
	sim_cur = e->node;
	e->fn(e->a, e->b);
	sim_cur = -1;
	sweep();
	return true;
}

void sim_env_reset(void)
{
	while (arena) {
		struct sim_ev *e = arena;
		arena = e->arena_next;
		if (e->fn == timer_fire)
			free(e->a);
		free(e);
	}
	heap_n = 0;
	sim_now = 0;
	ev_seq = 0;
	for (unsigned k = 0; k < n_active; k++)
		fds[active[k]].reg = false;
	n_active = 0;
}

/* ---- the worker pool ---- */

struct pool_node {
	struct iopool *p;
	int node;
};

static uint64_t pool_latency(int node)
{
	if (node >= 0 && sim_diskcfg.slow[node])
		return 20 * SIM_MS + rnd_below(400 * SIM_MS);
	return 50000 + rnd_below(2 * SIM_MS);
}

static void pool_deliver_ev(void *a, uint64_t b)
{
	(void)b;
	repl__iopool_deliver(a);
}

/* A worker runs one queued I/O; the loop takes the completions a little
 * later, with whatever else ran meanwhile (iopool.c's dispatch). */
static void pool_step_ev(void *a, uint64_t b)
{
	struct iopool *p = a;
	unsigned n = repl__iopool_queued(p);

	(void)b;
	if (n && repl__iopool_step(p, (unsigned)rnd_below(n)))
		sim_at(sim_now + 10000 + rnd_below(SIM_MS), sim_cur, pool_deliver_ev, p, 0);
}

void sim_pool_kick(struct iopool *p)
{
	sim_at(sim_now + pool_latency(sim_cur), sim_cur, pool_step_ev, p, 0);
}

/* --inline: half of the batches that end with an idle pool run their
 * writes there and then (iopool.c), as the daemon does. */
bool sim_pool_inline(struct iopool *p)
{
	(void)p;
	if (!sim_inline || !(sim_splitmix(&inline_rng) & 1))
		return false;
	if (sim_tracing)
		trace("pool: the batch's writes run inline");
	return true;
}

void sim_pool_gone(struct iopool *p)
{
	cancel_arg(p);
}
