/* events.c: see events.h.  A subscriber's output is a queue of whole lines
 * in one buffer, sent as the socket takes it (POLLOUT while some is left).
 * The published states (one per volume, and the cluster view) exist only
 * while somebody subscribes; they are dropped by the poll timer once the
 * last subscriber is gone, never from inside a publication, which may be
 * what dropped it. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clview.h"
#include "control.h"
#include "evdiff.h"
#include "events.h"
#include "json.h"
#include "log.h"
#include "util.h"

struct sub {
	struct events *ev;
	struct sub *prev, *next;
	int fd;
	unsigned mask;		/* what the loop watches for */
	char vol[REPL_NAME_MAX + 1];	/* "": every volume */
	char *buf;		/* unsent output: [off, len) */
	size_t off, len, cap;
};

struct snap {			/* a volume's last published state */
	struct snap *next;
	bool seen;
	struct repl_volume_status st;
};

struct events {
	struct evloop *loop;
	struct repl_engine *eng;
	const struct cfg *cfg;
	void (*view)(void *arg, struct clview *out);
	void *view_arg;
	struct sub *subs;
	unsigned n_subs;
	bool tracking;		/* snaps and cluster hold what was published */
	struct snap *snaps;
	struct clview cluster;
	void *poll_timer;
	/* scratch space, too big for the stack */
	struct clview view_now;
	struct repl_volume_status st_now;
	struct evdiff_change changes[EVDIFF_MAX];
};

static uint64_t now_real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- subscribers ------------------------------------------------------------ */

static void sub_drop(struct sub *s)
{
	struct events *ev = s->ev;

	evloop_fd_del(ev->loop, s->fd);
	close(s->fd);
	if (s->prev)
		s->prev->next = s->next;
	else
		ev->subs = s->next;
	if (s->next)
		s->next->prev = s->prev;
	ev->n_subs--;
	free(s->buf);
	free(s);
}

static void sub_watch(struct sub *s, unsigned mask)
{
	if (s->mask != mask && evloop_fd_mod(s->ev->loop, s->fd, mask) == 0)
		s->mask = mask;
}

/* Sends what the socket takes.  0, or -1 if s was dropped (it left). */
static int sub_flush(struct sub *s)
{
	while (s->off < s->len) {
		ssize_t n = send(s->fd, s->buf + s->off, s->len - s->off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			sub_watch(s, (s->mask & POLLIN) | POLLOUT);
			return 0;
		}
		if (n <= 0) {
			log_debug("events: a subscriber went away");
			sub_drop(s);
			return -1;
		}
		s->off += (size_t)n;
	}
	s->off = s->len = 0;
	sub_watch(s, s->mask & POLLIN);
	return 0;
}

/* Queues one line (text and a newline) and sends what it can; a
 * subscriber that would hold more than EVENTS_PENDING_MAX unsent is
 * dropped instead.  A line is always taken when nothing waits: one big
 * snapshot (hundreds of volumes) does not drop a subscriber that reads. */
static void sub_queue(struct sub *s, const char *text, size_t len)
{
	size_t pending = s->len - s->off;

	if (pending && pending + len + 1 > EVENTS_PENDING_MAX) {
		log_warn("events: a subscriber does not read (%zu bytes unsent): dropped", pending);
		sub_drop(s);
		return;
	}
	if (s->off && s->len + len + 1 > s->cap) {
		memmove(s->buf, s->buf + s->off, pending);
		s->off = 0;
		s->len = pending;
	}
	if (s->len + len + 1 > s->cap) {
		size_t cap = MAX(MAX(MIN(s->cap * 2, (size_t)EVENTS_PENDING_MAX), 4096u),
				 s->len + len + 1);
		char *b = realloc(s->buf, cap);

		if (!b) {
			log_warn("events: out of memory for a subscriber: dropped");
			sub_drop(s);
			return;
		}
		s->buf = b;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, text, len);
	s->buf[s->len + len] = '\n';
	s->len += len + 1;
	sub_flush(s);
}

/* Input is not expected and thrown away; end of input is a client that
 * hung up, or one that only shut its sending side (it may still read). */
static void sub_read(struct sub *s, unsigned revents)
{
	char junk[512];
	ssize_t n = recv(s->fd, junk, sizeof(junk), MSG_DONTWAIT);

	if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)))
		return;
	if (n == 0 && !(revents & (POLLHUP | POLLERR))) {
		sub_watch(s, s->mask & POLLOUT);
		return;
	}
	log_debug("events: a subscriber left");
	sub_drop(s);
}

static void on_sub(void *arg, int fd, unsigned revents)
{
	struct sub *s = arg;

	if ((revents & POLLOUT) && sub_flush(s) < 0)
		return;
	if (revents & (POLLIN | POLLHUP | POLLERR))
		sub_read(s, revents);
}

/* One line to every subscriber that wants it (volume NULL: everyone). */
static void broadcast(struct events *ev, const char *volume, struct json_writer *w)
{
	const char *text;
	size_t len;

	if (json_writer_result(w, &text, &len) < 0) {
		log_warn("events: cannot build an event");
		return;
	}
	for (struct sub *s = ev->subs, *next; s; s = next) {
		next = s->next;
		if (!volume || !s->vol[0] || strcmp(s->vol, volume) == 0)
			sub_queue(s, text, len);
	}
}

/* ---- publishing -------------------------------------------------------------- */

static void begin_event(struct json_writer *w, const char *kind)
{
	json_writer_init(w);
	json_obj_begin(w);
	json_kv_str(w, "kind", kind);
	evdiff_put_time(w, now_real_ms());
}

static void publish_volume(struct events *ev, const char *name, const struct repl_volume *vol,
			   unsigned n)
{
	struct json_writer w;

	begin_event(&w, "volume");
	json_kv_str(&w, "volume", name);
	evdiff_put_changes(&w, ev->changes, MIN(n, (unsigned)EVDIFF_MAX));
	json_key(&w, "state");
	if (vol)
		control_put_volume(&w, vol);
	else
		json_null(&w);
	json_obj_end(&w);
	broadcast(ev, name, &w);
	json_writer_release(&w);
}

static struct snap *snap_find(struct events *ev, const char *name)
{
	for (struct snap *sn = ev->snaps; sn; sn = sn->next)
		if (strcmp(sn->st.name, name) == 0)
			return sn;
	return NULL;
}

static void check_volume(struct events *ev, struct repl_volume *vol)
{
	struct snap *sn = snap_find(ev, repl_volume_name(vol));
	unsigned n;

	repl_volume_status(vol, &ev->st_now);
	n = evdiff_volume(sn ? &sn->st : NULL, &ev->st_now, ev->changes, EVDIFF_MAX);
	if (!sn) {
		sn = calloc(1, sizeof(*sn));
		if (!sn)
			return;		/* it shows up as new next time */
		sn->next = ev->snaps;
		ev->snaps = sn;
	}
	sn->st = ev->st_now;
	sn->seen = true;
	if (n)
		publish_volume(ev, sn->st.name, vol, n);
}

static void check_cluster(struct events *ev)
{
	struct json_writer w;
	unsigned n;

	if (!ev->view)
		return;
	ev->view(ev->view_arg, &ev->view_now);
	n = evdiff_cluster(&ev->cluster, &ev->view_now, ev->changes, EVDIFF_MAX);
	ev->cluster = ev->view_now;
	if (!n)
		return;
	begin_event(&w, "cluster");
	evdiff_put_changes(&w, ev->changes, MIN(n, (unsigned)EVDIFF_MAX));
	json_key(&w, "state");
	clview_put(&w, &ev->cluster);
	json_obj_end(&w);
	broadcast(ev, NULL, &w);
	json_writer_release(&w);
}

/* Every volume and the cluster against what was published. */
static void check_all(struct events *ev)
{
	struct snap **pp, *sn;
	char name[REPL_NAME_MAX + 1];

	for (sn = ev->snaps; sn; sn = sn->next)
		sn->seen = false;
	for (struct repl_volume *v = repl_volume_first(ev->eng); v; v = repl_volume_next(v))
		check_volume(ev, v);
	for (pp = &ev->snaps; (sn = *pp);) {
		unsigned n;

		if (sn->seen) {
			pp = &sn->next;
			continue;
		}
		*pp = sn->next;
		n = evdiff_volume(&sn->st, NULL, ev->changes, EVDIFF_MAX);
		snprintf(name, sizeof(name), "%s", sn->st.name);
		free(sn);
		publish_volume(ev, name, NULL, n);
	}
	check_cluster(ev);
}

static void forget(struct events *ev)
{
	while (ev->snaps) {
		struct snap *sn = ev->snaps;
		ev->snaps = sn->next;
		free(sn);
	}
	ev->tracking = false;
}

/* The states as they are now, published or not: the first subscriber's
 * snapshot is the starting point. */
static void track(struct events *ev)
{
	forget(ev);
	for (struct repl_volume *v = repl_volume_first(ev->eng); v; v = repl_volume_next(v)) {
		struct snap *sn = calloc(1, sizeof(*sn));
		if (!sn)
			continue;
		repl_volume_status(v, &sn->st);
		sn->next = ev->snaps;
		ev->snaps = sn;
	}
	memset(&ev->cluster, 0, sizeof(ev->cluster));
	if (ev->view)
		ev->view(ev->view_arg, &ev->cluster);
	ev->tracking = true;
}

static void on_poll(void *arg)
{
	struct events *ev = arg;

	ev->poll_timer = NULL;	/* the loop frees fired timers */
	if (!ev->n_subs) {
		forget(ev);
		return;
	}
	check_all(ev);
	if (ev->n_subs &&
	    evloop_timer_add(ev->loop, EVENTS_POLL_MS, on_poll, ev, &ev->poll_timer) < 0)
		log_warn("events: cannot poll volume states; only hooked changes are sent");
}

void events_volume_changed(struct events *ev, struct repl_volume *vol)
{
	if (ev && ev->n_subs && ev->tracking)
		check_volume(ev, vol);
}

void events_cluster_changed(void *arg)
{
	struct events *ev = arg;

	if (ev && ev->n_subs && ev->tracking)
		check_cluster(ev);
}

/* ---- subscribing ------------------------------------------------------------- */

static void put_snapshot(struct events *ev, const char *volume, struct json_writer *w)
{
	json_writer_init(w);
	json_obj_begin(w);
	json_kv_bool(w, "ok", true);
	json_kv_str(w, "kind", "snapshot");
	evdiff_put_time(w, now_real_ms());
	json_kv_str(w, "node", ev->cfg->node);
	json_key(w, "volumes");
	json_arr_begin(w);
	for (struct repl_volume *v = repl_volume_first(ev->eng); v; v = repl_volume_next(v))
		if (!volume || strcmp(repl_volume_name(v), volume) == 0)
			control_put_volume(w, v);
	json_arr_end(w);
	json_key(w, "cluster");
	clview_put(w, &ev->cluster);
	json_obj_end(w);
}

/* One try at telling the client why, then close. */
static int refuse(int fd, const char *why, int err)
{
	char msg[160];
	int n = snprintf(msg, sizeof(msg), "{\"ok\":false,\"error\":\"%s\"}\n", why);

	if (send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		log_debug("events: refused subscriber did not take its answer");
	close(fd);
	return err;
}

/* A subscriber on fd, watched by the loop; NULL (fd untouched) if not. */
static struct sub *sub_new(struct events *ev, int fd, const char *volume)
{
	int sndbuf = EVENTS_SNDBUF;
	struct sub *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->ev = ev;
	s->fd = fd;
	s->mask = POLLIN;
	snprintf(s->vol, sizeof(s->vol), "%s", volume ? volume : "");
	if (evloop_fd_add(ev->loop, fd, POLLIN, on_sub, s) < 0) {
		free(s);
		return NULL;
	}
	/* The queue is the bound, not the kernel's buffer. */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)) < 0)
		log_debug("events: cannot set SO_SNDBUF: %s", strerror(errno));
	return s;
}

/* Before a subscriber joins: what changed since the last publication goes
 * to the others first, so that every subscriber's events start from its
 * own snapshot; the first one starts the tracking and the poll. */
static void prepare(struct events *ev)
{
	if (!ev->tracking || !ev->n_subs)
		track(ev);
	else
		check_all(ev);
	if (!ev->poll_timer &&
	    evloop_timer_add(ev->loop, EVENTS_POLL_MS, on_poll, ev, &ev->poll_timer) < 0)
		log_warn("events: cannot poll volume states; only hooked changes are sent");
}

int events_subscribe(struct events *ev, int fd, const char *volume)
{
	struct json_writer w;
	const char *text;
	size_t len;
	struct sub *s;

	if (ev->n_subs >= EVENTS_SUBSCRIBERS_MAX)
		return refuse(fd, "too many event subscribers, try again later", -EBUSY);
	s = sub_new(ev, fd, volume);
	if (!s)
		return refuse(fd, "out of memory", -ENOMEM);
	prepare(ev);
	s->next = ev->subs;
	if (ev->subs)
		ev->subs->prev = s;
	ev->subs = s;
	ev->n_subs++;
	log_info("events: a subscriber for %s (%u in all)", volume ? volume : "every volume",
		 ev->n_subs);
	put_snapshot(ev, volume, &w);
	if (json_writer_result(&w, &text, &len) == 0)
		sub_queue(s, text, len);
	else
		sub_drop(s);
	json_writer_release(&w);
	return 0;
}

/* ---- setup ---------------------------------------------------------------------- */

void events_set_cluster(struct events *ev, void (*view)(void *arg, struct clview *out),
			void *arg)
{
	ev->view = view;
	ev->view_arg = arg;
}

int events_new(struct evloop *loop, struct repl_engine *eng, const struct cfg *cfg,
	       struct events **out)
{
	struct events *ev = calloc(1, sizeof(*ev));

	if (!ev)
		return -ENOMEM;
	ev->loop = loop;
	ev->eng = eng;
	ev->cfg = cfg;
	*out = ev;
	return 0;
}

void events_free(struct events *ev)
{
	if (!ev)
		return;
	while (ev->subs)
		sub_drop(ev->subs);
	if (ev->poll_timer)
		evloop_timer_del(ev->loop, ev->poll_timer);
	forget(ev);
	free(ev);
}
