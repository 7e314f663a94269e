/* nbd_notify.c: the notify list.  A volume worker that answered a request
 * itself (nbd_cmd.c) may leave something to the loop thread: a full socket
 * to watch for POLLOUT, room in the window for input that waits, a
 * connection to close.  It puts the connection on the engine's list under
 * the connection's lock and wakes the loop through an eventfd; the loop
 * takes the whole list and calls the service function nbd_conn.c gave for
 * each.  The list and the wake-up are here; what is done with a
 * connection is not. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
#include "nbd_conn_int.h"
#include "nbd_notify.h"
#include "repl_int.h"

struct nbd_notify {
	pthread_mutex_t lock;
	int efd;
	struct nbd_conn *head;
	void (*service)(struct nbd_conn *c);	/* nbd_conn.c's */
};

/* Called with c->lock held (so the loop cannot free c meanwhile). */
void repl__nbd_conn_notify_locked(struct nbd_conn *c)
{
	struct nbd_notify *n = c->eng->notify;
	uint64_t one = 1;
	bool first;

	if (c->notified)
		return;
	c->notified = true;
	pthread_mutex_lock(&n->lock);
	first = !n->head;
	c->notify_next = n->head;
	n->head = c;
	pthread_mutex_unlock(&n->lock);
	if (first && write(n->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_err_errno(errno, "notify eventfd");
}

static void notify_dispatch(void *arg, int fd, unsigned revents)
{
	struct nbd_notify *n = arg;
	struct nbd_conn *c, *next;
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_err_errno(errno, "notify eventfd");
	pthread_mutex_lock(&n->lock);
	c = n->head;
	n->head = NULL;
	pthread_mutex_unlock(&n->lock);
	for (; c; c = next) {
		next = c->notify_next;
		n->service(c);
	}
}

int repl__nbd_notify_open(struct repl_engine *eng, void (*service)(struct nbd_conn *c))
{
	struct nbd_notify *n = calloc(1, sizeof(*n));
	int r;

	if (!n)
		return -ENOMEM;
	pthread_mutex_init(&n->lock, NULL);
	n->service = service;
	n->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (n->efd < 0) {
		r = -errno;
		free(n);
		return r;
	}
	r = repl__fd_add(eng, n->efd, POLLIN, notify_dispatch, n);
	if (r < 0) {
		close(n->efd);
		free(n);
		return r;
	}
	eng->notify = n;
	return 0;
}

void repl__nbd_notify_free(struct repl_engine *eng)
{
	struct nbd_notify *n = eng->notify;

	if (!n)
		return;
	repl__fd_del(eng, n->efd);
	close(n->efd);
	pthread_mutex_destroy(&n->lock);
	free(n);
	eng->notify = NULL;
}
