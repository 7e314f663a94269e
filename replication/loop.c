/* loop.c: the bottom of the engine, where it meets its caller: fds and
 * timers on the loop the caller gave the engine (struct repl_loop_ops:
 * libqb's in replagentd, the simulator's own in tests/sim), and the
 * notice that something a status shows changed (the caller's
 * hooks.changed).  It is the only file that calls those tables, and it
 * calls nothing else in the engine by name, so that every layer (link.c,
 * peer.c, and the modules above) may use it. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stddef.h>

#include "repl_int.h"

int repl__fd_add(struct repl_engine *eng, int fd, unsigned events, repl_fd_fn fn, void *arg)
{
	return eng->loop.ops->fd_add(eng->loop.data, fd, events, fn, arg);
}

int repl__fd_mod(struct repl_engine *eng, int fd, unsigned events)
{
	return eng->loop.ops->fd_mod(eng->loop.data, fd, events);
}

void repl__fd_del(struct repl_engine *eng, int fd)
{
	eng->loop.ops->fd_del(eng->loop.data, fd);
}

int repl__timer_add(struct repl_engine *eng, uint64_t ms, repl_timer_fn fn, void *arg,
		    void **handle)
{
	return eng->loop.ops->timer_add(eng->loop.data, ms, fn, arg, handle);
}

/* Cancels *handle if armed and clears it. */
void repl__timer_del(struct repl_engine *eng, void **handle)
{
	if (*handle) {
		eng->loop.ops->timer_del(eng->loop.data, *handle);
		*handle = NULL;
	}
}

int repl__listen_start(struct repl_engine *eng, struct repl_listen *ls, int fd, repl_fd_fn fn,
		       void *arg)
{
	int r = repl__fd_add(eng, fd, POLLIN, fn, arg);

	if (r < 0)
		return r;
	*ls = (struct repl_listen){ .eng = eng, .fd = fd, .fn = fn, .arg = arg,
				    .accepting = true };
	return 0;
}

static void listen_resume(void *arg)
{
	struct repl_listen *ls = arg;

	ls->pause_timer = NULL;
	if (repl__fd_add(ls->eng, ls->fd, POLLIN, ls->fn, ls->arg) == 0)
		ls->accepting = true;
	else
		repl__timer_add(ls->eng, REPL_ACCEPT_PAUSE_MS, listen_resume, ls, &ls->pause_timer);
}

bool repl__listen_pause(struct repl_listen *ls, int err)
{
	if (err != EMFILE && err != ENFILE && err != ENOBUFS && err != ENOMEM)
		return false;
	if (ls->accepting)
		repl__fd_del(ls->eng, ls->fd);
	ls->accepting = false;
	if (!ls->pause_timer)
		repl__timer_add(ls->eng, REPL_ACCEPT_PAUSE_MS, listen_resume, ls,
				&ls->pause_timer);
	return true;
}

void repl__listen_stop(struct repl_listen *ls)
{
	if (!ls->eng)
		return;
	repl__timer_del(ls->eng, &ls->pause_timer);
	if (ls->accepting)
		repl__fd_del(ls->eng, ls->fd);
	ls->accepting = false;
}

void repl__batch_begin(struct repl_engine *eng)
{
	eng->batch_depth++;
}

void repl__batch_end(struct repl_engine *eng)
{
	if (--eng->batch_depth)
		return;
	/* In the order they were deferred (a Primary's frames to its peers
	 * go out before its own write is handed to a worker).  A deferred fn
	 * runs outside any batch: what it causes is not deferred again. */
	while (eng->deferred) {
		struct repl_deferred *d = eng->deferred;
		eng->deferred = d->next;
		if (!eng->deferred)
			eng->deferred_tail = NULL;
		d->next = NULL;
		d->queued = false;
		d->fn(d->arg);
	}
}

__thread bool repl__on_worker;

bool repl__defer(struct repl_engine *eng, struct repl_deferred *d)
{
	if (repl__on_worker || !eng->batch_depth)
		return false;
	if (!d->queued) {
		d->queued = true;
		d->next = NULL;
		if (eng->deferred)
			eng->deferred_tail->next = d;
		else
			eng->deferred = d;
		eng->deferred_tail = d;
	}
	return true;
}

void repl__undefer(struct repl_engine *eng, struct repl_deferred *d)
{
	struct repl_deferred *prev = NULL;

	if (!d->queued)
		return;
	for (struct repl_deferred **pp = &eng->deferred; *pp; prev = *pp, pp = &(*pp)->next)
		if (*pp == d) {
			*pp = d->next;
			if (eng->deferred_tail == d)
				eng->deferred_tail = prev;
			break;
		}
	d->next = NULL;
	d->queued = false;
}

/* Something a status shows changed: the engine's own observer first
 * (resize.c: the size new NBD clients get), then the caller's. */
void repl__changed(struct repl_volume *vol)
{
	struct repl_engine *eng = vol->eng;

	if (eng->changed_first)
		eng->changed_first(vol);
	if (eng->hooks.changed)
		eng->hooks.changed(eng->hooks.arg, vol);
}
