/* evloop.h: the daemon's main loop, libqb's qb_loop underneath, with
 * one-shot timers and signals as loop events, implementing the engine's
 * struct repl_loop_ops.  It is what replagentd runs on; it is not thread
 * safe (one thread).  Callbacks are never called for an fd after
 * evloop_fd_del() returns, even when its event was already collected in the
 * same round; with events 0 an fd reports only POLLERR/POLLHUP. */
#ifndef REPL_AGENT_EVLOOP_H
#define REPL_AGENT_EVLOOP_H

#include <stdbool.h>
#include <stdint.h>

#include "repl.h"

struct evloop;

int evloop_new(struct evloop **out);
void evloop_free(struct evloop *l);
/* The engine-facing view of this loop. */
void evloop_as_repl(struct evloop *l, struct repl_loop *out);

int evloop_fd_add(struct evloop *l, int fd, unsigned events, repl_fd_fn fn, void *arg);
int evloop_fd_mod(struct evloop *l, int fd, unsigned events);
void evloop_fd_del(struct evloop *l, int fd);
int evloop_timer_add(struct evloop *l, uint64_t after_ms, repl_timer_fn fn, void *arg,
		     void **handle);
void evloop_timer_del(struct evloop *l, void *handle);

typedef void (*evloop_signal_fn)(void *arg, int signo);
/* Catches the signal (libqb's handler, with SA_RESTART; unblocked in the
 * calling thread) and delivers it as a loop event.  evloop_free() puts
 * back the disposition it had before. */
int evloop_signal_add(struct evloop *l, int signo, evloop_signal_fn fn, void *arg);

/* Runs the loop until evloop_stop() is called (from a callback); 0 or
 * -errno. */
int evloop_run(struct evloop *l);
/* Makes evloop_run() (or evloop_run_once()) return after the current
 * callback. */
void evloop_stop(struct evloop *l);

/* Runs until at least one callback ran or timeout_ms passed (-1 = no
 * limit); 0 or -errno.  Costlier than evloop_run(): for tests and tools. */
int evloop_run_once(struct evloop *l, int timeout_ms);

#endif
