/* control.c: see control.h.  A client's life: accepted (refused beyond
 * CONTROL_CLIENTS_MAX or if its uid is neither root nor ours), read until
 * the first newline, answered with one JSON line written without blocking,
 * closed.  One timer per client bounds the whole exchange, so a client that
 * sends nothing or reads nothing costs a slot for CONTROL_TIMEOUT_MS at
 * most.  Request handlers are a table; each writes a whole JSON object. */
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
#include "events.h"
#include "json.h"
#include "log.h"
#include "util.h"

#define WORDS_MAX 8
#define ACCEPT_PAUSE_MS 200	/* after EMFILE and the like */
#define LISTEN_BACKLOG 64
#define STR_(x) #x
#define STR(x) STR_(x)

struct client {
	struct control *ctl;
	struct client *prev, *next;
	int fd;
	void *timer;
	char *out;		/* the answer, once there is one */
	size_t out_len, out_off;
	bool wants_events;	/* asked for events: hand it over */
	char events_vol[REPL_NAME_MAX + 1];
	size_t in_len;
	char in[CONTROL_REQUEST_MAX];
};

struct control {
	struct evloop *loop;
	struct repl_engine *eng;
	const struct cfg *cfg;
	char *path;
	dev_t dev;		/* of the socket we created, to unlink only it */
	ino_t ino;
	int fd;
	bool accepting;
	void *pause_timer;
	struct client *clients;
	unsigned n_clients;
	struct control_ext ext;
	struct events *events;
	struct client *current;	/* whose request is being answered */
};

void control_set_ext(struct control *c, const struct control_ext *ext)
{
	c->ext = *ext;
}

void control_set_events(struct control *c, struct events *ev)
{
	c->events = ev;
}

/* The cluster view as status shows it (mode static without an ext). */
static void cluster_view(const struct control *c, struct clview *out)
{
	if (c->ext.cluster_view) {
		c->ext.cluster_view(c->ext.arg, out);
		return;
	}
	memset(out, 0, sizeof(*out));
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

/* ---- answers --------------------------------------------------------------- */

static void answer_error(struct json_writer *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void answer_error(struct json_writer *w, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_obj_begin(w);
	json_kv_bool(w, "ok", false);
	json_kv_str(w, "error", msg);
	json_obj_end(w);
}

static void put_resync(struct json_writer *w, const struct repl_peer_status *p)
{
	json_key(w, "resync");
	json_obj_begin(w);
	json_kv_u64(w, "total_bytes", p->resync_total_bytes);
	json_kv_u64(w, "done_bytes", p->resync_done_bytes);
	json_kv_u64(w, "rate_bps", p->resync_rate_bps);
	json_key(w, "eta_s");
	if (p->resync_eta_s < 0)
		json_null(w);
	else
		json_i64(w, p->resync_eta_s);
	json_obj_end(w);
}

static void put_peer(struct json_writer *w, const struct repl_peer_status *p)
{
	json_obj_begin(w);
	json_kv_str(w, "node", p->node);
	json_kv_str(w, "link", p->link_name);
	json_kv_str(w, "peer_role", p->peer_role);
	json_kv_str(w, "peer_disk", p->peer_disk);
	json_kv_u64(w, "out_of_sync_bytes", p->out_of_sync_bytes);
	put_resync(w, p);
	json_kv_u64(w, "resync_sent_bytes", p->resync_sent_bytes);
	json_kv_str(w, "reason", p->reason);
	json_kv_u64(w, "verify_differing", p->verify_differing);
	json_kv_u64(w, "size", p->size);
	json_obj_end(w);
}

static void put_tuning(struct json_writer *w, const struct repl_volume_status *st)
{
	json_key(w, "tuning");
	json_obj_begin(w);
	json_kv_u64(w, "resync_rate_max", st->resync_rate_max);
	json_kv_u64(w, "outdate_timeout_ms", st->outdate_timeout_ms);
	json_kv_str(w, "after_sb_0pri", st->after_sb[0]);
	json_kv_str(w, "after_sb_1pri", st->after_sb[1]);
	json_kv_str(w, "after_sb_2pri", st->after_sb[2]);
	json_obj_end(w);
}

void control_put_volume(struct json_writer *w, const struct repl_volume *vol)
{
	struct repl_volume_status st;

	memset(&st, 0, sizeof(st));
	repl_volume_status(vol, &st);
	st.name[sizeof(st.name) - 1] = '\0';
	st.uuid[sizeof(st.uuid) - 1] = '\0';
	json_obj_begin(w);
	json_kv_str(w, "name", st.name);
	json_kv_str(w, "uuid", st.uuid);
	json_kv_u64(w, "size", st.size);
	json_kv_u64(w, "export_size", st.export_size);
	if (st.grow_to) {
		st.grow_error[sizeof(st.grow_error) - 1] = '\0';
		json_key(w, "grow");
		json_obj_begin(w);
		json_kv_u64(w, "to", st.grow_to);
		json_kv_str(w, "error", st.grow_error);
		json_obj_end(w);
	}
	json_kv_str(w, "role", st.role);
	json_kv_str(w, "disk", st.disk);
	json_kv_u64(w, "clients", st.clients);
	json_kv_bool(w, "io_frozen", st.io_frozen);
	json_kv_bool(w, "up", st.up);
	json_kv_bool(w, "auto_promote", st.auto_promote);
	json_kv_str(w, "window", st.window);
	put_tuning(w, &st);
	if (st.verify_total) {
		json_key(w, "verify");
		json_obj_begin(w);
		json_kv_bool(w, "running", st.verify_running);
		json_kv_bool(w, "repair", st.verify_repair);
		json_kv_u64(w, "done_regions", st.verify_done);
		json_kv_u64(w, "total_regions", st.verify_total);
		json_kv_u64(w, "region_size", st.verify_region_size);
		json_key(w, "differing_offsets");
		json_arr_begin(w);
		for (unsigned i = 0; i < MIN(st.verify_n_listed, 64u); i++)
			json_u64(w, st.verify_listed[i]);
		json_arr_end(w);
		json_obj_end(w);
	}
	json_key(w, "peers");
	json_arr_begin(w);
	for (unsigned i = 0; i < MIN(st.n_peers, (unsigned)REPL_MAX_PEERS); i++) {
		st.peers[i].node[sizeof(st.peers[i].node) - 1] = '\0';
		st.peers[i].reason[sizeof(st.peers[i].reason) - 1] = '\0';
		put_peer(w, &st.peers[i]);
	}
	json_arr_end(w);
	json_obj_end(w);
}

/* ---- requests -------------------------------------------------------------- */

static struct repl_volume *find_volume(struct control *c, const char *name,
				       struct json_writer *w)
{
	struct repl_volume *vol = repl_volume_find(c->eng, name);

	if (!vol)
		answer_error(w, "no volume \"%s\" on node %s", name, c->cfg->node);
	return vol;
}

static void put_cluster(struct control *c, struct json_writer *w)
{
	struct clview *v = malloc(sizeof(*v));

	json_key(w, "cluster");
	if (!v) {
		json_null(w);
		return;
	}
	cluster_view(c, v);
	clview_put(w, v);
	free(v);
}

static void cmd_status(struct control *c, char **args, unsigned n, struct json_writer *w)
{
	struct repl_volume *only = NULL;

	if (n == 1 && !(only = find_volume(c, args[0], w)))
		return;
	json_obj_begin(w);
	json_kv_bool(w, "ok", true);
	json_kv_str(w, "node", c->cfg->node);
	json_key(w, "volumes");
	json_arr_begin(w);
	if (only)
		control_put_volume(w, only);
	for (struct repl_volume *v = only ? NULL : repl_volume_first(c->eng); v;
	     v = repl_volume_next(v))
		control_put_volume(w, v);
	json_arr_end(w);
	put_cluster(c, w);
	json_obj_end(w);
}

/* Marks the client for events.c, which takes it once this returns
 * (answer()); the first line it gets is the snapshot, from there. */
static void cmd_events(struct control *c, char **args, unsigned n, struct json_writer *w)
{
	struct client *cl = c->current;

	if (n == 1 && !find_volume(c, args[0], w))
		return;
	if (!c->events || !cl) {
		answer_error(w, "events are not available");
		return;
	}
	cl->wants_events = true;
	snprintf(cl->events_vol, sizeof(cl->events_vol), "%s", n == 1 ? args[0] : "");
}

/* The outcome of a role change, logged (it changes the cluster) and sent. */
static void role_answer(struct json_writer *w, const char *what, const char *vol,
			int r, const char *why)
{
	if (r == 0) {
		log_notice("control: %s %s: done", what, vol);
		json_obj_begin(w);
		json_kv_bool(w, "ok", true);
		json_obj_end(w);
		return;
	}
	log_notice("control: %s %s refused: %s", what, vol, *why ? why : strerror(-r));
	answer_error(w, "%s", *why ? why : strerror(-r));
}

static void cmd_promote(struct control *c, char **args, unsigned n, struct json_writer *w)
{
	struct repl_volume *vol;
	char why[256] = "";
	int r;

	if (n == 2 && strcmp(args[1], "--force")) {
		answer_error(w, "unknown option \"%s\" (usage: promote VOLUME [--force])",
			     args[1]);
		return;
	}
	vol = find_volume(c, args[0], w);
	if (!vol)
		return;
	r = c->ext.promote_guard ? c->ext.promote_guard(c->ext.arg, vol, n == 2, why,
							sizeof(why)) : 0;
	if (r == 0)
		r = repl_volume_promote(vol, n == 2, why, sizeof(why));
	why[sizeof(why) - 1] = '\0';
	role_answer(w, n == 2 ? "promote --force" : "promote", args[0], r, why);
}

/* Would a promotion be accepted now (the libvirt hook, before it lets a
 * QEMU auto-promote a replica)?  The answer of promote, without doing it. */
static void cmd_can_promote(struct control *c, char **args, unsigned n, struct json_writer *w)
{
	struct repl_volume *vol = find_volume(c, args[0], w);
	char why[256] = "";
	int r;

	if (!vol)
		return;
	r = c->ext.promote_guard && repl_volume_role(vol) != REPL_PRIMARY ?
		c->ext.promote_guard(c->ext.arg, vol, false, why, sizeof(why)) : 0;
	if (r == 0)
		r = repl_volume_can_promote(vol, why, sizeof(why));
	why[sizeof(why) - 1] = '\0';
	if (r == 0) {
		json_obj_begin(w);
		json_kv_bool(w, "ok", true);
		json_obj_end(w);
		return;
	}
	json_obj_begin(w);
	json_kv_bool(w, "ok", false);
	json_kv_str(w, "error", *why ? why : strerror(-r));
	json_kv_bool(w, "retry", r == -EAGAIN);
	json_obj_end(w);
}

static void cmd_demote(struct control *c, char **args, unsigned n, struct json_writer *w)
{
	struct repl_volume *vol = find_volume(c, args[0], w);
	char why[256] = "";
	int r;

	if (!vol)
		return;
	r = repl_volume_demote(vol, why, sizeof(why));
	why[sizeof(why) - 1] = '\0';
	role_answer(w, "demote", args[0], r, why);
}

static void cmd_up_down(struct control *c, char **args, bool up, struct json_writer *w)
{
	struct repl_volume *vol = find_volume(c, args[0], w);
	int r;

	if (!vol)
		return;
	r = repl_volume_set_up(vol, up);
	role_answer(w, up ? "up" : "down", args[0], r,
		    r == -EBUSY ? "the volume is Primary or has NBD clients: demote it first" : "");
}

static void cmd_verify(struct control *c, char **args, unsigned n, struct json_writer *w)
{
	struct repl_volume *vol;
	char why[256] = "";
	int r;

	if (n == 2 && strcmp(args[1], "--repair")) {
		answer_error(w, "unknown option \"%s\" (usage: verify VOLUME [--repair])", args[1]);
		return;
	}
	vol = find_volume(c, args[0], w);
	if (!vol)
		return;
	r = repl_volume_verify(vol, n == 2, why, sizeof(why));
	why[sizeof(why) - 1] = '\0';
	role_answer(w, n == 2 ? "verify --repair" : "verify", args[0], r, why);
}

static void cmd_resolve(struct control *c, char **args, unsigned n, struct json_writer *w)
{
	struct repl_volume *vol;
	char why[256] = "";
	int r;

	if (strcmp(args[1], "--keep")) {
		answer_error(w, "usage: resolve VOLUME --keep NODE");
		return;
	}
	vol = find_volume(c, args[0], w);
	if (!vol)
		return;
	r = repl_volume_resolve(vol, args[2], why, sizeof(why));
	why[sizeof(why) - 1] = '\0';
	role_answer(w, "resolve", args[0], r, why);
}

/* The live-migration window on the destination (libvirt hook, migrate
 * begin): window-open VOLUME [SECONDS], window-close VOLUME. */
static void cmd_window_open(struct control *c, char **args, unsigned n, struct json_writer *w)
{
	struct repl_volume *vol;
	unsigned long secs = 0;
	char why[256] = "", *end;
	int r;

	if (n == 2) {
		errno = 0;
		secs = strtoul(args[1], &end, 10);
		if (errno || *end || !secs || secs > 3600) {
			answer_error(w, "window timeout \"%s\": 1 to 3600 seconds", args[1]);
			return;
		}
	}
	vol = find_volume(c, args[0], w);
	if (!vol)
		return;
	r = repl_volume_window_open(vol, (unsigned)secs, why, sizeof(why));
	why[sizeof(why) - 1] = '\0';
	role_answer(w, "window-open", args[0], r, why);
}

static void cmd_window_close(struct control *c, char **args, unsigned n, struct json_writer *w)
{
	struct repl_volume *vol = find_volume(c, args[0], w);
	char why[256] = "";
	int r;

	if (!vol)
		return;
	r = repl_volume_window_close(vol, why, sizeof(why));
	why[sizeof(why) - 1] = '\0';
	role_answer(w, "window-close", args[0], r, why);
}

static void cmd_up(struct control *c, char **args, unsigned n, struct json_writer *w)
{
	cmd_up_down(c, args, true, w);
}

static void cmd_down(struct control *c, char **args, unsigned n, struct json_writer *w)
{
	cmd_up_down(c, args, false, w);
}

static void cmd_version(struct control *c, char **args, unsigned n, struct json_writer *w)
{
	json_obj_begin(w);
	json_kv_bool(w, "ok", true);
	json_kv_str(w, "version", PACKAGE_VERSION);
	json_kv_str(w, "node", c->cfg->node);
	json_obj_end(w);
}

/* The libvirt <disk> element for a volume served here, so that nobody
 * writes the NBD source by hand. */
static void cmd_disk_xml(struct control *c, char **args, unsigned n, struct json_writer *w)
{
	char xml[1024], target[16] = "vda";
	struct repl_volume *vol = find_volume(c, args[0], w);

	if (!vol)
		return;
	if (!c->cfg->nbd_socket) {
		answer_error(w, "this daemon has no NBD Unix socket (nbd-socket = none)");
		return;
	}
	if (n == 2 && strlen(args[1]) < sizeof(target))
		snprintf(target, sizeof(target), "%s", args[1]);
	snprintf(xml, sizeof(xml),
		 "<disk type='network' device='disk'>\n"
		 "  <driver name='qemu' type='raw' cache='none' io='native' discard='unmap'/>\n"
		 "  <source protocol='nbd' name='%s'>\n"
		 "    <host transport='unix' socket='%s'/>\n"
		 "    <reconnect delay='10'/>\n"
		 "  </source>\n"
		 "  <target dev='%s' bus='virtio'/>\n"
		 "</disk>\n", repl_volume_name(vol), c->cfg->nbd_socket, target);
	json_obj_begin(w);
	json_kv_bool(w, "ok", true);
	json_kv_str(w, "xml", xml);
	json_obj_end(w);
}

static const struct command {
	const char *name;
	unsigned min_args, max_args;
	void (*fn)(struct control *c, char **args, unsigned n, struct json_writer *w);
	const char *usage;
} commands[] = {
	{ "status", 0, 1, cmd_status, "status [VOLUME]" },
	{ "promote", 1, 2, cmd_promote, "promote VOLUME [--force]" },
	{ "demote", 1, 1, cmd_demote, "demote VOLUME" },
	{ "can-promote", 1, 1, cmd_can_promote, "can-promote VOLUME" },
	{ "version", 0, 0, cmd_version, "version" },
	{ "disk-xml", 1, 2, cmd_disk_xml, "disk-xml VOLUME [TARGET-DEV]" },
	{ "up", 1, 1, cmd_up, "up VOLUME" },
	{ "verify", 1, 2, cmd_verify, "verify VOLUME [--repair]" },
	{ "resolve", 3, 3, cmd_resolve, "resolve VOLUME --keep NODE" },
	{ "down", 1, 1, cmd_down, "down VOLUME" },
	{ "window-open", 1, 2, cmd_window_open, "window-open VOLUME [SECONDS]" },
	{ "window-close", 1, 1, cmd_window_close, "window-close VOLUME" },
	{ "events", 0, 1, cmd_events, "events [VOLUME]" },
};

/* Splits line in place into words separated by spaces or tabs; -EINVAL
 * for control characters, -E2BIG for too many words. */
static int split_words(char *line, char **words, unsigned *n)
{
	char *p;

	*n = 0;
	for (p = line; *p; p++)
		if ((unsigned char)*p < 0x20 ? *p != '\t' : *p == 0x7f)
			return -EINVAL;
	for (p = strtok(line, " \t"); p; p = strtok(NULL, " \t")) {
		if (*n == WORDS_MAX)
			return -E2BIG;
		words[(*n)++] = p;
	}
	return 0;
}

static void dispatch(struct control *c, char *line, struct json_writer *w)
{
	char *words[WORDS_MAX];
	unsigned n;

	if (split_words(line, words, &n) < 0 || n == 0) {
		answer_error(w, "malformed request (expected one line of words)");
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		const struct command *cmd = &commands[i];

		if (strcmp(words[0], cmd->name))
			continue;
		if (n - 1 < cmd->min_args || n - 1 > cmd->max_args)
			answer_error(w, "usage: %s", cmd->usage);
		else
			cmd->fn(c, words + 1, n - 1, w);
		return;
	}
	if (c->ext.command && c->ext.command(c->ext.arg, words, n, w))
		return;
	answer_error(w, "unknown command \"%.64s\" (known: status, events, promote, demote, "
		     "version%s)",
		     words[0], c->ext.command ? ", volume-create, volume-list, volume-delete, "
		     "disk-xml" : "");
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
		dispatch(cl->ctl, line, &w);
	else
		answer_error(&w, "%s", err);
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
