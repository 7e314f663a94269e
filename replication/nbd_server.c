/* nbd_server.c: the NBD listening sockets (Unix and TCP) and accepting
 * clients.  What a client says after connecting is nbd_conn.c's business.
 * A Unix socket path is unlinked when its listener closes, so a stopped
 * daemon leaves no socket behind.  Out of descriptors (or memory), a
 * listener pauses (repl__listen_pause()): the connection waiting in its
 * backlog would otherwise wake the loop on every turn. */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "repl_int.h"
#include "util.h"


struct nbd_listener {
	struct repl_engine *eng;
	struct nbd_listener *next;
	int fd;
	bool tcp;
	struct repl_listen listen;	/* in the loop, or paused */
	char *unix_path;	/* unlinked on close */
};

static void source_of(int fd, const struct sockaddr_storage *ss, bool tcp,
		      struct nbd_source *src)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	memset(src, 0, sizeof(*src));
	if (!tcp) {
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
			src->b[0] = 'u';
			memcpy(src->b + 1, &cred.pid, sizeof(cred.pid));
		}
	} else if (ss->ss_family == AF_INET) {
		src->b[0] = '4';
		memcpy(src->b + 1, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		src->b[0] = '6';
		memcpy(src->b + 1, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	}
}

static void listener_accept(void *arg, int fd, unsigned revents);

static void listener_accept(void *arg, int fd, unsigned revents)
{
	struct nbd_listener *l = arg;
	int one = 1;

	for (int i = 0; i < 16; i++) {
		struct sockaddr_storage ss;
		socklen_t sslen = sizeof(ss);
		struct nbd_source src;
		int c = accept4(fd, (struct sockaddr *)&ss, &sslen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (c < 0) {
			if (repl__listen_pause(&l->listen, errno))
				log_warn_errno(errno, "cannot accept an NBD client, pausing "
					       "for %u ms", REPL_ACCEPT_PAUSE_MS);
			else if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				log_warn_errno(errno, "accept");
			return;
		}
		if (l->tcp)
			setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		source_of(c, &ss, l->tcp, &src);
		if (repl__nbd_conn_new(l->eng, c, &src) < 0)
			close(c);
	}
}

static int listener_add(struct repl_engine *eng, int fd, bool tcp, const char *path)
{
	struct nbd_listener *l;
	int r;

	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->eng = eng;
	l->fd = fd;
	l->tcp = tcp;
	if (path && !(l->unix_path = strdup(path))) {
		free(l);
		return -ENOMEM;
	}
	r = repl__listen_start(eng, &l->listen, fd, listener_accept, l);
	if (r < 0) {
		free(l->unix_path);
		free(l);
		return r;
	}
	l->next = eng->listeners;
	eng->listeners = l;
	return 0;
}

int repl_nbd_listen_unix(struct repl_engine *eng, const char *path, mode_t mode, gid_t gid)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd, r;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A socket left by a daemon that crashed would make bind fail; one
	 * that a live daemon answers on is refused first by the caller's
	 * pidfile lock. */
	if (unlink(path) < 0 && errno != ENOENT) {
		r = -errno;
		goto fail;
	}
	/* Group and mode before listen(): nobody connects in between. */
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    (gid != (gid_t)-1 && chown(path, (uid_t)-1, gid) < 0) ||
	    chmod(path, mode) < 0 || listen(fd, 128) < 0) {
		r = -errno;
		goto fail;
	}
	r = listener_add(eng, fd, false, path);
	if (r < 0)
		goto fail;
	log_info("NBD listening on %s", path);
	return 0;
fail:
	close(fd);
	return r;
}

static int tcp_listen_one(const struct addrinfo *ai)
{
	int fd, one = 1;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    ai->ai_protocol);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ai->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 128) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

int repl_nbd_listen_tcp(struct repl_engine *eng, const char *host, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *res, *ai;
	int fd, r, n = 0, last = -EADDRNOTAVAIL;

	r = getaddrinfo(host && *host ? host : NULL, port, &hints, &res);
	if (r)
		return r == EAI_SYSTEM ? -errno : -EADDRNOTAVAIL;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = tcp_listen_one(ai);
		if (fd < 0) {
			last = fd;
			continue;
		}
		r = listener_add(eng, fd, true, NULL);
		if (r < 0) {
			close(fd);
			last = r;
			continue;
		}
		n++;
	}
	freeaddrinfo(res);
	if (n == 0)
		return last;
	log_info("NBD listening on TCP %s:%s", host && *host ? host : "*", port);
	return 0;
}

void repl__nbd_listeners_close(struct repl_engine *eng)
{
	struct nbd_listener *l;

	while ((l = eng->listeners)) {
		eng->listeners = l->next;
		repl__listen_stop(&l->listen);
		close(l->fd);
		if (l->unix_path)
			unlink(l->unix_path);
		free(l->unix_path);
		free(l);
	}
}
