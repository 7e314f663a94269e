/* control.c: see control.h.  A client's life: accepted (refused beyond
 * CONTROL_CLIENTS_MAX or if its uid is neither root nor ours), read until
 * the first newline, answered with one JSON line written without blocking,
 * closed.  One timer per client bounds the whole exchange, so a client that
 * sends nothing or reads nothing costs a slot for CONTROL_TIMEOUT_MS at
 * most.  The request handlers are control_cmd.c's; this file is the
 * socket, its clients and their bytes. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "clview.h"
#include "control.h"
#include "control_int.h"
#include "events.h"
#include "json.h"
#include "log.h"
#include "util.h"

#define ACCEPT_PAUSE_MS 200	/* after EMFILE and the like */
#define LISTEN_BACKLOG 64
#define STR_(x) #x
#define STR(x) STR_(x)

void control_set_ext(struct control *c, const struct control_ext *ext)
{
	c->ext = *ext;
}

void control_set_events(struct control *c, struct events *ev)
{
	c->events = ev;
}

void control_set_failed(struct control *c, const struct volfail *vf)
{
	c->failed = vf;
}

/* ---- clients -------------------------------------------------------------- */

/* Forgets cl; its fd is closed unless it was handed over (fd -1). */
static void drop(struct client *cl)
{
	struct control *c = cl->ctl;

	if (cl->fd >= 0) {
		evloop_fd_del(c->loop, cl->fd);
		close(cl->fd);
	}
	if (cl->timer)
		evloop_timer_del(c->loop, cl->timer);
	if (cl->prev)
		cl->prev->next = cl->next;
	else
		c->clients = cl->next;
	if (cl->next)
		cl->next->prev = cl->prev;
	c->n_clients--;
	free(cl->out);
	free(cl);
}

static void on_timeout(void *arg)
{
	struct client *cl = arg;

	cl->timer = NULL;	/* the loop frees fired timers */
	log_debug("control: client timed out");
	drop(cl);
}

/* Writes what it can of the answer; drops the client when all is written
 * or the connection failed. */
static void flush_answer(struct client *cl)
{
	while (cl->out_off < cl->out_len) {
		ssize_t n = send(cl->fd, cl->out + cl->out_off, cl->out_len - cl->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (evloop_fd_mod(cl->ctl->loop, cl->fd, POLLOUT) == 0)
				return;
		}
		if (n <= 0) {
			log_debug("control: client went away before its answer");
			break;
		}
		cl->out_off += (size_t)n;
	}
	drop(cl);
}

/* From here on the connection is events.c's (which closes it if it
 * cannot take it). */
static void hand_over(struct client *cl)
{
	struct control *c = cl->ctl;
	char vol[sizeof(cl->events_vol)];
	int fd = cl->fd;

	memcpy(vol, cl->events_vol, sizeof(vol));
	evloop_fd_del(c->loop, fd);
	cl->fd = -1;
	drop(cl);
	events_subscribe(c->events, fd, vol[0] ? vol : NULL);
}

/* Builds the answer to line, or the error err if line is NULL, and
 * starts sending it. */
static void answer(struct client *cl, char *line, const char *err)
{
	struct json_writer w;
	const char *text;
	size_t len;

	json_writer_init(&w);
	cl->ctl->current = cl;
	if (line)
		control__dispatch(cl->ctl, line, &w);
	else
		control__answer_error(&w, "%s", err);
	cl->ctl->current = NULL;
	if (cl->wants_events) {
		json_writer_release(&w);
		hand_over(cl);
		return;
	}
	if (json_writer_result(&w, &text, &len) == 0 && (cl->out = malloc(len + 1))) {
		memcpy(cl->out, text, len);
		cl->out[len] = '\n';
		cl->out_len = len + 1;
	}
	json_writer_release(&w);
	if (!cl->out) {
		log_warn("control: cannot build an answer");
		drop(cl);
		return;
	}
	flush_answer(cl);
}

static void got_line(struct client *cl, char *nl)
{
	size_t len = (size_t)(nl - cl->in);

	if (memchr(cl->in, '\0', len)) {
		answer(cl, NULL, "malformed request (NUL byte)");
		return;
	}
	*nl = '\0';
	if (len > 0 && nl[-1] == '\r')
		nl[-1] = '\0';
	answer(cl, cl->in, NULL);
}

/* Reads what is there; answers once a whole line is in. */
static void read_request(struct client *cl)
{
	ssize_t n;
	char *nl;

	n = recv(cl->fd, cl->in + cl->in_len, sizeof(cl->in) - cl->in_len, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		log_debug("control: client left without a whole request");
		drop(cl);
		return;
	}
	nl = memchr(cl->in + cl->in_len, '\n', (size_t)n);
	cl->in_len += (size_t)n;
	if (nl)
		got_line(cl, nl);
	else if (cl->in_len == sizeof(cl->in))
		answer(cl, NULL, "request longer than " STR(CONTROL_REQUEST_MAX) " bytes");
}

static void on_client(void *arg, int fd, unsigned revents)
{
	struct client *cl = arg;

	if (cl->out)
		flush_answer(cl);
	else
		read_request(cl);
}

/* ---- accepting ---------------------------------------------------------------- */

/* root, or the user the daemon runs as (tests run it unprivileged). */
static bool peer_allowed(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return false;
	return cred.uid == 0 || cred.uid == geteuid();
}

/* Over the limit: one try at telling the client why, then close. */
static void refuse(int fd, const char *why)
{
	char msg[128];
	int n = snprintf(msg, sizeof(msg), "{\"ok\":false,\"error\":\"%s\"}\n", why);

	if (send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		log_debug("control: refused client did not take its answer");
	close(fd);
}

static int add_client(struct control *c, int fd)
{
	struct client *cl = calloc(1, sizeof(*cl));
	int r;

	if (!cl)
		return -ENOMEM;
	cl->ctl = c;
	cl->fd = fd;
	r = evloop_fd_add(c->loop, fd, POLLIN, on_client, cl);
	if (r == 0)
		r = evloop_timer_add(c->loop, CONTROL_TIMEOUT_MS, on_timeout, cl, &cl->timer);
	if (r < 0) {
		evloop_fd_del(c->loop, fd);
		free(cl);
		return r;
	}
	cl->next = c->clients;
	if (c->clients)
		c->clients->prev = cl;
	c->clients = cl;
	c->n_clients++;
	return 0;
}

static void on_listen(void *arg, int fd, unsigned revents);

static void resume_accept(void *arg)
{
	struct control *c = arg;

	c->pause_timer = NULL;
	if (evloop_fd_add(c->loop, c->fd, POLLIN, on_listen, c) == 0)
		c->accepting = true;
	else if (evloop_timer_add(c->loop, ACCEPT_PAUSE_MS, resume_accept, c,
				  &c->pause_timer) < 0)
		log_err("control: cannot accept clients any more");
}

/* Out of descriptors: the pending connection would wake us forever. */
static void pause_accept(struct control *c, int err)
{
	log_warn_errno(err, "control: cannot accept a client, pausing");
	evloop_fd_del(c->loop, c->fd);
	c->accepting = false;
	if (evloop_timer_add(c->loop, ACCEPT_PAUSE_MS, resume_accept, c, &c->pause_timer) < 0)
		log_err("control: cannot accept clients any more");
}

static void on_listen(void *arg, int fd, unsigned revents)
{
	struct control *c = arg;
	int cfd;

	while ((cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		if (!peer_allowed(cfd))
			refuse(cfd, "permission denied");
		else if (c->n_clients >= CONTROL_CLIENTS_MAX)
			refuse(cfd, "too many control clients, try again");
		else if (add_client(c, cfd) < 0)
			refuse(cfd, "out of memory");
	}
	if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
		pause_accept(c, errno);
}

/* ---- the socket ------------------------------------------------------------------ */

/* mkdir -p of path's directory, 0755 for what it creates. */
static int make_parent_dirs(const char *path)
{
	char *dir = strdup(path);
	int r = 0;

	if (!dir)
		return -ENOMEM;
	for (char *p = strchr(dir + 1, '/'); p && r == 0; p = strchr(p + 1, '/')) {
		*p = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			r = -errno;
		*p = '/';
	}
	free(dir);
	return r;
}

/* Removes a socket left by an earlier daemon; anything else stays. */
static int remove_stale(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}

/* Bound and chmod'ed before listen(): nobody can connect in between. */
static int bind_socket(struct control *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;

	if (strlen(c->path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, c->path);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -errno;
	if (bind(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	if (chmod(c->path, 0600) < 0 || stat(c->path, &st) < 0) {
		int r = -errno;

		unlink(c->path);
		return r;
	}
	c->dev = st.st_dev;
	c->ino = st.st_ino;
	return listen(c->fd, LISTEN_BACKLOG) < 0 ? -errno : 0;
}

static int setup(struct control *c)
{
	int r;

	r = make_parent_dirs(c->path);
	if (r == 0)
		r = remove_stale(c->path);
	if (r == 0)
		r = bind_socket(c);
	if (r == 0)
		r = evloop_fd_add(c->loop, c->fd, POLLIN, on_listen, c);
	c->accepting = r == 0;
	return r;
}

int control_open(struct evloop *loop, struct repl_engine *eng, const struct cfg *cfg,
		 struct control **out)
{
	struct control *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	c->loop = loop;
	c->eng = eng;
	c->cfg = cfg;
	c->fd = -1;
	c->path = strdup(cfg->control_socket ? cfg->control_socket : "");
	r = !c->path ? -ENOMEM : !*c->path ? -EINVAL : setup(c);
	if (r < 0) {
		control_close(c);
		return r;
	}
	*out = c;
	return 0;
}

/* Unlinks the socket unless another daemon has replaced it meanwhile. */
static void unlink_ours(struct control *c)
{
	struct stat st;

	if (c->ino && lstat(c->path, &st) == 0 && st.st_dev == c->dev &&
	    st.st_ino == c->ino)
		unlink(c->path);
}

void control_close(struct control *c)
{
	if (!c)
		return;
	while (c->clients)
		drop(c->clients);
	if (c->pause_timer)
		evloop_timer_del(c->loop, c->pause_timer);
	if (c->accepting)
		evloop_fd_del(c->loop, c->fd);
	if (c->fd >= 0)
		close(c->fd);
	unlink_ours(c);
	free(c->path);
	free(c);
}
