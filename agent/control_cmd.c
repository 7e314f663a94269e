/* control_cmd.c: the requests of the control socket (docs/control-
 * protocol.md): a table of handlers, each of which asks the engine (or
 * cluster mode, through struct control_ext) afresh and writes one whole
 * JSON object.  Not the socket and its clients (control.c). */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbt.h"
#include "clview.h"
#include "control.h"
#include "control_int.h"
#include "events.h"
#include "json.h"
#include "log.h"
#include "util.h"
#include "volfail.h"

#define WORDS_MAX 8

/* The cluster view as status shows it (mode static without an ext). */
static void cluster_view(const struct control *c, struct clview *out)
{
	if (c->ext.cluster_view) {
		c->ext.cluster_view(c->ext.arg, out);
		return;
	}
	memset(out, 0, sizeof(*out));
}

/* ---- answers --------------------------------------------------------------- */

void control__answer_error(struct json_writer *w, const char *fmt, ...)
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
	json_kv_str(w, "error", p->resync_error);
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
	st.meta_error[sizeof(st.meta_error) - 1] = '\0';
	json_kv_str(w, "meta_error", st.meta_error);
	json_kv_bool(w, "up", st.up);
	json_kv_bool(w, "auto_promote", st.auto_promote);
	json_kv_str(w, "window", st.window);
	if (st.bitmap_damaged_pages)
		json_kv_u64(w, "bitmap_damaged_pages", st.bitmap_damaged_pages);
	if (st.reads_from_peer)
		json_kv_u64(w, "reads_from_peer", st.reads_from_peer);
	if (st.crashed_primary)
		json_kv_bool(w, "crashed_primary", true);
	if (st.power_lost)
		json_kv_bool(w, "power_lost", true);
	if (st.partial)
		json_kv_bool(w, "partial", true);
	put_tuning(w, &st);
	if (st.verify_total) {
		json_key(w, "verify");
		json_obj_begin(w);
		json_kv_bool(w, "running", st.verify_running);
		json_kv_bool(w, "repair", st.verify_repair);
		json_kv_u64(w, "done_regions", st.verify_done);
		json_kv_u64(w, "total_regions", st.verify_total);
		json_kv_u64(w, "region_size", st.verify_region_size);
		json_kv_u64(w, "unreadable_regions", st.verify_unreadable);
		st.verify_read_error[sizeof(st.verify_read_error) - 1] = '\0';
		json_kv_str(w, "read_error", st.verify_read_error);
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

/* A volume this node should serve but could not open: listed, so that a
 * monitor sees it (disk Failed: critical, with the reason), and never
 * mistaken for a served one (up false, no peers). */
static void put_failed(struct json_writer *w, const char *name, const char *reason)
{
	json_obj_begin(w);
	json_kv_str(w, "name", name);
	json_kv_bool(w, "failed", true);
	json_kv_str(w, "reason", reason);
	json_kv_str(w, "role", "Secondary");
	json_kv_str(w, "disk", "Failed");
	json_kv_u64(w, "clients", 0);
	json_kv_bool(w, "io_frozen", false);
	json_kv_bool(w, "up", false);
	json_key(w, "peers");
	json_arr_begin(w);
	json_arr_end(w);
	json_obj_end(w);
}

/* ---- requests -------------------------------------------------------------- */

/* A command on a failed volume gets the reason it failed, not "no volume". */
static struct repl_volume *find_volume(struct control *c, const char *name,
				       struct json_writer *w)
{
	struct repl_volume *vol = repl_volume_find(c->eng, name);
	const char *failed = vol ? NULL : volfail_reason(c->failed, name);

	if (failed)
		control__answer_error(w, "volume \"%s\" failed to open on node %s: %s", name,
				      c->cfg->node, failed);
	else if (!vol)
		control__answer_error(w, "no volume \"%s\" on node %s", name, c->cfg->node);
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

/* The served volumes, then the failed ones; "status VOLUME" of a failed
 * volume lists it alone. */
static void cmd_status(struct control *c, char **args, unsigned n, struct json_writer *w)
{
	struct repl_volume *only = NULL;
	const char *failed = n == 1 && !repl_volume_find(c->eng, args[0]) ?
		volfail_reason(c->failed, args[0]) : NULL;

	if (n == 1 && !failed && !(only = find_volume(c, args[0], w)))
		return;
	json_obj_begin(w);
	json_kv_bool(w, "ok", true);
	json_kv_str(w, "node", c->cfg->node);
	json_key(w, "volumes");
	json_arr_begin(w);
	if (only)
		control_put_volume(w, only);
	else if (failed)
		put_failed(w, args[0], failed);
	for (struct repl_volume *v = n ? NULL : repl_volume_first(c->eng); v;
	     v = repl_volume_next(v))
		control_put_volume(w, v);
	for (size_t i = 0; !n && i < volfail_count(c->failed); i++) {
		const char *name = volfail_name(c->failed, i);
		put_failed(w, name, volfail_reason(c->failed, name));
	}
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
		control__answer_error(w, "events are not available");
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
	control__answer_error(w, "%s", *why ? why : strerror(-r));
}

static void cmd_promote(struct control *c, char **args, unsigned n, struct json_writer *w)
{
	struct repl_volume *vol;
	char why[256] = "";
	int r;

	if (n == 2 && strcmp(args[1], "--force")) {
		control__answer_error(w, "unknown option \"%s\" (usage: promote VOLUME [--force])",
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
		control__answer_error(w, "unknown option \"%s\" (usage: verify VOLUME [--repair])", args[1]);
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
		control__answer_error(w, "usage: resolve VOLUME --keep NODE");
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
			control__answer_error(w, "window timeout \"%s\": 1 to 3600 seconds", args[1]);
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
		control__answer_error(w, "this daemon has no NBD Unix socket (nbd-socket = none)");
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

/* checkpoint create|delete VOLUME NAME, checkpoint list VOLUME (cbt.c). */
static void cmd_checkpoint(struct control *c, char **args, unsigned n, struct json_writer *w)
{
	struct repl_checkpoint_info info[CBT_MAX];
	bool list = !strcmp(args[0], "list");
	struct repl_volume *vol;
	char why[256] = "";
	unsigned k;
	int r;

	if (list ? n != 2 : n != 3 || (strcmp(args[0], "create") && strcmp(args[0], "delete"))) {
		control__answer_error(w, "usage: checkpoint create|delete VOLUME NAME, "
				      "checkpoint list VOLUME");
		return;
	}
	if (!(vol = find_volume(c, args[1], w)))
		return;
	if (!list) {
		r = args[0][0] == 'c' ? repl_checkpoint_create(vol, args[2], why, sizeof(why))
				      : repl_checkpoint_delete(vol, args[2], why, sizeof(why));
		why[sizeof(why) - 1] = '\0';
		role_answer(w, args[0][0] == 'c' ? "checkpoint create" : "checkpoint delete",
			    args[1], r, why);
		return;
	}
	k = MIN(repl_checkpoint_list(vol, info, CBT_MAX), CBT_MAX);
	json_obj_begin(w);
	json_kv_bool(w, "ok", true);
	json_key(w, "checkpoints");
	json_arr_begin(w);
	for (unsigned i = 0; i < k; i++) {
		json_obj_begin(w);
		json_kv_str(w, "name", info[i].name);
		json_kv_bool(w, "complete", info[i].complete);
		json_kv_str(w, "why", info[i].why);
		json_kv_u64(w, "changed_bytes", info[i].changed);
		json_obj_end(w);
	}
	json_arr_end(w);
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
	{ "checkpoint", 2, 3, cmd_checkpoint, "checkpoint create|delete VOLUME NAME" },
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

void control__dispatch(struct control *c, char *line, struct json_writer *w)
{
	char *words[WORDS_MAX];
	unsigned n;

	if (split_words(line, words, &n) < 0 || n == 0) {
		control__answer_error(w, "malformed request (expected one line of words)");
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		const struct command *cmd = &commands[i];

		if (strcmp(words[0], cmd->name))
			continue;
		if (n - 1 < cmd->min_args || n - 1 > cmd->max_args)
			control__answer_error(w, "usage: %s", cmd->usage);
		else
			cmd->fn(c, words + 1, n - 1, w);
		return;
	}
	if (c->ext.command && c->ext.command(c->ext.arg, words, n, w))
		return;
	control__answer_error(w, "unknown command \"%.64s\" (known: status, events, promote, demote, "
		     "version%s)",
		     words[0], c->ext.command ? ", volume-create, volume-list, volume-delete, "
		     "disk-xml" : "");
}
