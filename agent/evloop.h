/* evloop.h: a small epoll main loop with one-shot timers and signals as
 * loop events, implementing the engine's struct repl_loop_ops.  It is what
 * replagentd runs on in static mode; it is not thread safe (one thread). */
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
/* Blocks the signal and delivers it as a loop event. */
int evloop_signal_add(struct evloop *l, int signo, evloop_signal_fn fn, void *arg);

/* Runs one round (waits at most timeout_ms, -1 = until something
 * happens); 0 or -errno. */
int evloop_run_once(struct evloop *l, int timeout_ms);

#endif
