/* link_accept.c: a volume's listener and the links it accepted that have
 * not proved the key yet (link.c does the rest of a link's life).
 *
 * Anyone who can reach the port can connect, so a listener keeps at most
 * HANDSHAKES_MAX such links, HANDSHAKES_PER_SOURCE per source address; a
 * new one over a limit pushes out the oldest (of its source first), since
 * a real peer's handshake takes one round trip and a stranger's waits.
 * Out of descriptors, the listener pauses (repl__listen_pause()) instead of
 * being woken forever.  Loop thread only. */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "link_int.h"
#include "log.h"
#include "sys.h"
#include "util.h"

#define HANDSHAKES_MAX 32		/* accepted links not yet authenticated... */
#define HANDSHAKES_PER_SOURCE 4		/* ...and of those, from one address */
#define DROP_LOG_MS 1000		/* one "dropping" warning per second */

struct vol_listener {
	int fd;
	const struct repl_link_ops *ops;	/* for the links it accepts */
	struct peer_link *pending;	/* accepted, not yet identified; newest first */
	unsigned n_pending;
	struct repl_listen listen;	/* in the loop, or paused */
	uint64_t drop_log_ms;		/* when "dropping" was last logged */
	unsigned drops_unlogged;
};

void repl__link_unpend(struct peer_link *l)
{
	struct vol_listener *vl = l->vol->listener;

	for (struct peer_link **pp = vl ? &vl->pending : NULL; pp && *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			vl->n_pending--;
			return;
		}
}

/* Strangers may connect a thousand times a second: one line a second,
 * with a count of what it stands for. */
static void log_drop(struct vol_listener *vl, const char *vol, const char *why)
{
	uint64_t now = now_mono_ms();

	if (vl && vl->drop_log_ms && now - vl->drop_log_ms < DROP_LOG_MS) {
		vl->drops_unlogged++;
		return;
	}
	if (vl && vl->drops_unlogged)
		plog(LOG_WARNING, vol, "dropping an incoming replication connection: %s "
		     "(and %u more in the last %u ms)", why, vl->drops_unlogged,
		     (unsigned)(now - vl->drop_log_ms));
	else
		plog(LOG_WARNING, vol, "dropping an incoming replication connection: %s", why);
	if (vl) {
		vl->drop_log_ms = now;
		vl->drops_unlogged = 0;
	}
}

/* An accepted link that never had an owner goes: logged (at most once a
 * second) and off the pending list. */
void repl__link_refused(struct peer_link *l, const char *why)
{
	log_drop(l->vol->listener, l->vol->name, why);
	repl__link_unpend(l);
}

static bool same_source(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
	return true;
}

/* Room for one more handshake from src: over a limit, the oldest pending
 * link (of src, if src is at its own limit) goes. */
static void make_room(struct vol_listener *vl, const struct sockaddr_storage *src)
{
	struct peer_link *oldest = NULL, *oldest_src = NULL;
	unsigned from_src = 0;

	for (struct peer_link *l = vl->pending; l; l = l->next) {
		oldest = l;
		if (same_source(&l->src, src)) {
			oldest_src = l;
			from_src++;
		}
	}
	if (from_src >= HANDSHAKES_PER_SOURCE)
		oldest = oldest_src;
	else if (vl->n_pending < HANDSHAKES_MAX)
		return;
	snprintf(oldest->why, sizeof(oldest->why), "too many handshakes %s (limit %u), "
		 "the oldest goes", oldest == oldest_src ? "from its address" : "at once",
		 oldest == oldest_src ? HANDSHAKES_PER_SOURCE : HANDSHAKES_MAX);
	repl__link_fail(oldest, -EBUSY);
}

static void listener_accept(void *arg, int fd, unsigned revents);

static void listener_accept(void *arg, int fd, unsigned revents)
{
	struct repl_volume *vol = arg;
	struct vol_listener *vl = vol->listener;

	for (int i = 0; i < 16; i++) {
		struct sockaddr_storage src;
		int c = repl__sys->accept(fd, &src);
		struct peer_link *l;
		if (c < 0) {
			/* Out of descriptors (or memory): look again a little later. */
			if (repl__listen_pause(&vl->listen, errno))
				plog_errno(LOG_WARNING, vol->name, errno, "cannot accept a "
					   "replication connection, pausing for %u ms",
					   REPL_ACCEPT_PAUSE_MS);
			return;
		}
		make_room(vl, &src);
		l = repl__link_new(vol, c, NULL, NULL, vl->ops);
		if (!l) {
			repl__sys->close(c);
			continue;
		}
		l->src = src;
		l->next = vl->pending;
		vl->pending = l;
		vl->n_pending++;
		if (repl__link_start(l) < 0)
			repl__link_fail(l, -EPROTO);
	}
}

int repl__link_listen(struct repl_volume *vol, const char *host, const char *port,
		      const struct repl_link_ops *ops)
{
	struct vol_listener *vl;
	int fd, r = 0;

	fd = repl__sys->listen(host, port);
	if (fd < 0)
		return fd;
	vl = calloc(1, sizeof(*vl));
	if (r == 0 && !vl)
		r = -ENOMEM;
	if (r == 0)
		r = repl__listen_start(vol->eng, &vl->listen, fd, listener_accept, vol);
	if (r < 0) {
		free(vl);
		repl__sys->close(fd);
		return r;
	}
	vl->fd = fd;
	vl->ops = ops;
	vol->listener = vl;
	plog(LOG_INFO, vol->name, "replication listening on %s:%s", host && *host ? host : "*",
	     port);
	return 0;
}

void repl__link_listen_stop(struct repl_volume *vol)
{
	struct vol_listener *vl = vol->listener;

	if (!vl)
		return;
	while (vl->pending) {
		struct peer_link *l = vl->pending;
		vl->pending = l->next;
		repl__link_close(l);
	}
	repl__listen_stop(&vl->listen);
	repl__sys->close(vl->fd);
	free(vl);
	vol->listener = NULL;
}
