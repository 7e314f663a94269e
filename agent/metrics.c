/* metrics.c: see metrics.h.  Binds the socket itself (so that a wrong
 * address is a clear error at start, not a library message), hands it to
 * libmicrohttpd, and answers GET /metrics from snapshots of every volume
 * (metrics_text.c renders them).  Anything else is 404 or 405. */
#include "config.h"

#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "metrics.h"
#include "metrics_text.h"
#include "repl_stats.h"
#include "util.h"

#define METRICS_CONN_MAX 16
#define METRICS_CONN_TIMEOUT_S 10
#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct metrics {
	struct evloop *loop;
	struct repl_engine *eng;
	struct MHD_Daemon *mhd;
	int lfd;		/* ours until MHD_start_daemon took it */
	int efd;		/* libmicrohttpd's epoll fd, in the loop */
	void *timer;
};

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[256];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	log_info("metrics: %s", msg);
}

/* Every volume's snapshot, rendered: 0 or -ENOMEM. */
static int render(struct repl_engine *eng, char **text, size_t *len)
{
	struct metrics_vol *v = NULL, *nv;
	size_t n = 0, cap = 0;
	int r;

	for (struct repl_volume *vol = repl_volume_first(eng); vol; vol = repl_volume_next(vol)) {
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
		}
		repl_volume_status(vol, &v[n].st);
		repl_volume_stats(vol, &v[n].sx);
		n++;
	}
	r = metrics_render(v, n, text, len);
	free(v);
	return r;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned code, const char *text)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(text), (void *)text,
								    MHD_RESPMEM_PERSISTENT);
	enum MHD_Result r;

	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	r = MHD_queue_response(conn, code, resp);
	MHD_destroy_response(resp);
	return r;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct metrics *m = cls;
	struct MHD_Response *resp;
	enum MHD_Result r;
	char *text;
	size_t len;

	if (strcmp(url, "/metrics") != 0)
		return reply(conn, MHD_HTTP_NOT_FOUND, "not found: the metrics are at /metrics\n");
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
	if (render(m->eng, &text, &len) < 0)
		return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, CONTENT_TYPE);
	r = MHD_queue_response(conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return r;
}

static void on_timer(void *arg);

/* Runs what is ready, then arms the timer libmicrohttpd asks for (its
 * connection timeouts, or work it left for the next round). */
static void run(struct metrics *m)
{
	MHD_UNSIGNED_LONG_LONG ms;

	MHD_run(m->mhd);
	if (m->timer) {
		evloop_timer_del(m->loop, m->timer);
		m->timer = NULL;
	}
	if (MHD_get_timeout(m->mhd, &ms) == MHD_YES &&
	    evloop_timer_add(m->loop, MIN(ms, 1000), on_timer, m, &m->timer) < 0)
		m->timer = NULL;
}

static void on_timer(void *arg)
{
	struct metrics *m = arg;

	m->timer = NULL;
	run(m);
}

static void on_ready(void *arg, int fd, unsigned revents)
{
	run(arg);
}

static int bind_listen(const char *host, const char *port, int *out)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *res, *ai;
	int fd = -1, err = 0, one = 1, r;

	r = getaddrinfo(*host ? host : NULL, port, &hints, &res);
	if (r) {
		log_err("metrics-listen: cannot resolve \"%s\": %s", host, gai_strerror(r));
		return -EADDRNOTAVAIL;
	}
	for (ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			err = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 16) < 0) {
			err = errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	if (fd < 0) {
		log_err_errno(err, "metrics-listen: cannot listen on %s:%s", host, port);
		return -err;
	}
	*out = fd;
	return 0;
}

int metrics_open(struct evloop *loop, struct repl_engine *eng, const char *host,
		 const char *port, struct metrics **out)
{
	struct metrics *m = calloc(1, sizeof(*m));
	const union MHD_DaemonInfo *info;
	int r;

	if (!m)
		return -ENOMEM;
	m->loop = loop;
	m->eng = eng;
	m->efd = -1;
	r = bind_listen(host, port, &m->lfd);
	if (r < 0) {
		free(m);
		return r;
	}
	m->mhd = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, NULL, NULL,
				  on_request, m,
				  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				  MHD_OPTION_LISTEN_SOCKET, m->lfd,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)METRICS_CONN_MAX,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)METRICS_CONN_TIMEOUT_S,
				  MHD_OPTION_END);
	info = m->mhd ? MHD_get_daemon_info(m->mhd, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
	if (!info) {
		log_err("metrics-listen: libmicrohttpd did not start");
		r = -EIO;
		goto fail;
	}
	m->efd = info->epoll_fd;
	r = evloop_fd_add(loop, m->efd, POLLIN, on_ready, m);
	if (r < 0) {
		log_err_errno(-r, "metrics-listen: cannot watch libmicrohttpd's fd");
		m->efd = -1;
		goto fail;
	}
	log_info("metrics on http://%s%s%s:%s/metrics", strchr(host, ':') ? "[" : "",
		 *host ? host : "*", strchr(host, ':') ? "]" : "", port);
	*out = m;
	return 0;
fail:
	metrics_close(m);
	return r;
}

void metrics_close(struct metrics *m)
{
	if (!m)
		return;
	if (m->timer)
		evloop_timer_del(m->loop, m->timer);
	if (m->efd >= 0)
		evloop_fd_del(m->loop, m->efd);
	if (m->mhd)
		MHD_stop_daemon(m->mhd);	/* closes the listening socket too */
	else
		close(m->lfd);
	free(m);
}
