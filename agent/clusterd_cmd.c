/* clusterd_cmd.c: cluster mode's side of the control socket: the
 * promotion rules (quorum, the state exchange, no other Primary) that
 * promote, can-promote, auto-promote and a migration window go by, the
 * volume commands (create, delete, resize, list: each a new definition
 * multicast to the group), and the cluster view that status shows.  The
 * group itself is clusterd.c's. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "clmsg.h"
#include "clusterd.h"
#include "clusterd_int.h"
#include "clusterd_nodes.h"
#include "clusterd_send.h"
#include "clview.h"
#include "control.h"
#include "json.h"
#include "log.h"
#include "util.h"
#include "voldb.h"

/* ---- control: the quorum rule and volume commands ------------------------------------- */

/* The cluster's promotion rules.  A takeover (live migration) gets the
 * role from the Primary itself, so that Primary does not count. */
static int promotion_rules(struct clusterd *cd, struct repl_volume *vol, bool takeover,
			   char *why, size_t len)
{
	struct primary_rec *pr = clusterd__primary_of(cd, repl_volume_name(vol));

	if (!cd->quorate) {
		snprintf(why, len, "this node's partition has no quorum");
		return -EPERM;
	}
	if (!cd->synced) {
		snprintf(why, len, "the members are still exchanging their state: try again");
		return -EAGAIN;
	}
	if (!takeover && pr && pr->nodeid != cd->nodeid && clusterd__is_member(cd, pr->nodeid)) {
		snprintf(why, len, "%s is Primary: demote it first", pr->node);
		return -EBUSY;
	}
	return 0;
}

/* A replica the group recorded Outdated, or any in a mixed cluster
 * (clusterd.c, other_version()): only a person who says so promotes. */
static int promote_guard(void *arg, struct repl_volume *vol, bool force, char *why,
			 size_t len)
{
	int r = promotion_rules(arg, vol, false, why, len);

	if (r < 0 || force)
		return r;
	r = clusterd__record_rule(arg, repl_volume_name(vol), why, len);
	return r == 0 ? clusterd__mixed_rule(arg, why, len) : r;
}

int clusterd_hook_may_promote(void *arg, struct repl_volume *vol, bool takeover, char *why,
			      size_t len)
{
	int r = promotion_rules(arg, vol, takeover, why, len);

	if (r == 0)
		r = clusterd__record_rule(arg, repl_volume_name(vol), why, len);
	return r == 0 ? clusterd__mixed_rule(arg, why, len) : r;
}

static void answer_ok(struct json_writer *w)
{
	json_obj_begin(w);
	json_kv_bool(w, "ok", true);
	json_obj_end(w);
}

static void answer_err(struct json_writer *w, const char *msg)
{
	json_obj_begin(w);
	json_kv_bool(w, "ok", false);
	json_kv_str(w, "error", msg);
	json_obj_end(w);
}

static int split_nodes(char *list, const char **nodes, size_t max)
{
	size_t n = 0;

	for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
		if (n == max)
			return -E2BIG;
		nodes[n++] = t;
	}
	return (int)n;
}

static void cmd_create(struct clusterd *cd, char **w, unsigned n, struct json_writer *jw)
{
	const char *nodes[CLMSG_NODES_MAX + 1], *why = NULL;
	struct clmsg m = { .type = CLMSG_VOLDEF };
	uint64_t size;
	int nn, r;

	if (n != 4) {
		answer_err(jw, "usage: volume-create NAME SIZE NODE,NODE[,NODE]");
		return;
	}
	if (parse_size(w[2], &size) < 0) {
		answer_err(jw, "invalid size (expected e.g. 10G)");
		return;
	}
	if (size > REPL_VOLUME_SIZE_MAX) {
		answer_err(jw, "the size is beyond the largest a volume can be (128 TiB)");
		return;
	}
	nn = split_nodes(w[3], nodes, CLMSG_NODES_MAX);
	if (!cd->quorate) {
		answer_err(jw, "this node's partition has no quorum");
		return;
	}
	r = nn < 0 ? -EINVAL : voldb_create(cd->db, w[1], size, nodes, (size_t)nn,
					    cd->nodeid, BASE_PORT, &m.u.voldef, &why);
	if (r < 0) {
		answer_err(jw, why ? why : "2 or 3 node names, separated by commas");
		return;
	}
	if (clusterd__send_msg(cd, &m) < 0) {
		answer_err(jw, "cannot send the definition to the group (see the log)");
		return;
	}
	/* Its port and name are taken until it comes back: the next
	 * creation, maybe before that, gets another port. */
	voldb_sent(cd->db, &m.u.voldef);
	log_notice("control: volume-create %s: sent to the group (port %u)", w[1],
		   m.u.voldef.port);
	answer_ok(jw);
}

static void cmd_delete(struct clusterd *cd, char **w, unsigned n, struct json_writer *jw)
{
	struct clmsg m = { .type = CLMSG_VOLDEF };
	struct repl_volume *vol;
	struct primary_rec *pr;

	if (n != 2) {
		answer_err(jw, "usage: volume-delete NAME");
		return;
	}
	vol = repl_volume_find(cd->eng, w[1]);
	pr = clusterd__primary_of(cd, w[1]);
	if ((vol && (repl_volume_role(vol) == REPL_PRIMARY || repl_volume_clients(vol))) ||
	    (pr && clusterd__is_member(cd, pr->nodeid))) {
		answer_err(jw, "the volume is Primary or in use: demote it first");
		return;
	}
	if (voldb_delete(cd->db, w[1], cd->nodeid, &m.u.voldef) < 0) {
		answer_err(jw, "no such volume");
		return;
	}
	clusterd__send_msg(cd, &m);
	answer_ok(jw);
}

/* A larger size for a volume: a new version of its definition, which every
 * node applies to its replica (apply_def), now or when it comes back. */
static void cmd_resize(struct clusterd *cd, char **w, unsigned n, struct json_writer *jw)
{
	struct clmsg m = { .type = CLMSG_VOLDEF };
	const char *why = NULL;
	uint64_t size;
	char a[32];

	if (n != 3) {
		answer_err(jw, "usage: volume-resize NAME SIZE");
		return;
	}
	if (parse_size(w[2], &size) < 0) {
		answer_err(jw, "invalid size (expected e.g. 10G)");
		return;
	}
	if (size > REPL_VOLUME_SIZE_MAX) {
		answer_err(jw, "the size is beyond the largest a volume can be (128 TiB)");
		return;
	}
	if (!cd->quorate) {
		answer_err(jw, "this node's partition has no quorum");
		return;
	}
	/* Built on what this node knows: it must know the latest version. */
	if (!cd->synced) {
		answer_err(jw, "the members are still exchanging their state: try again");
		return;
	}
	if (voldb_resize(cd->db, w[1], size, cd->nodeid, &m.u.voldef, &why) < 0) {
		answer_err(jw, why);
		return;
	}
	clusterd__send_msg(cd, &m);
	log_notice("control: volume-resize %s to %s (%" PRIu64 " bytes, version %" PRIu64
		   "): sent to the group", w[1], format_size(size, a, sizeof(a)), size,
		   m.u.voldef.version);
	answer_ok(jw);
}

static void cmd_list(struct clusterd *cd, struct json_writer *jw)
{
	json_obj_begin(jw);
	json_kv_bool(jw, "ok", true);
	json_key(jw, "volumes");
	json_arr_begin(jw);
	for (size_t i = 0; i < voldb_count(cd->db); i++) {
		const struct voldef *d = voldb_at(cd->db, i);
		struct primary_rec *pr = clusterd__primary_of(cd, d->name);
		struct repl_volume *vol = repl_volume_find(cd->eng, d->name);
		if (d->deleted)
			continue;
		json_obj_begin(jw);
		json_kv_str(jw, "name", d->name);
		json_kv_u64(jw, "size", d->size);
		json_kv_u64(jw, "port", d->port);
		json_key(jw, "nodes");
		json_arr_begin(jw);
		for (unsigned k = 0; k < d->n_nodes; k++)
			json_str(jw, d->nodes[k]);
		json_arr_end(jw);
		json_kv_str(jw, "primary", vol && repl_volume_role(vol) == REPL_PRIMARY ?
			    cd->cfg->node : pr ? pr->node : "");
		json_obj_end(jw);
	}
	json_arr_end(jw);
	json_obj_end(jw);
}

static bool command(void *arg, char **w, unsigned n, struct json_writer *jw)
{
	struct clusterd *cd = arg;

	if (strcmp(w[0], "volume-create") == 0)
		cmd_create(cd, w, n, jw);
	else if (strcmp(w[0], "volume-delete") == 0)
		cmd_delete(cd, w, n, jw);
	else if (strcmp(w[0], "volume-resize") == 0)
		cmd_resize(cd, w, n, jw);
	else if (strcmp(w[0], "volume-list") == 0)
		cmd_list(cd, jw);
	else
		return false;
	return true;
}

/* ---- setup ------------------------------------------------------------------------------ */

static void view(void *arg, struct clview *out)
{
	clusterd_view(arg, out);
}

void clusterd_attach_control(struct clusterd *cd, struct control *ctl)
{
	struct control_ext ext = {
		.arg = cd, .promote_guard = promote_guard, .command = command,
		.cluster_view = view,
	};

	control_set_ext(ctl, &ext);
}

/* ---- the view ------------------------------------------------------------------------- */

static struct clview_node *view_node(struct clview *v, uint32_t nodeid, const char *name)
{
	struct clview_node *n;

	for (unsigned i = 0; i < v->n_nodes; i++)
		if (v->nodes[i].nodeid == nodeid)
			return &v->nodes[i];
	if (v->n_nodes == CLVIEW_NODES_MAX)
		return NULL;
	n = &v->nodes[v->n_nodes++];
	memset(n, 0, sizeof(*n));
	n->nodeid = nodeid;
	clusterd__copy_str(n->name, sizeof(n->name), name);
	return n;
}

static int by_nodeid(const void *a, const void *b)
{
	const struct clview_node *x = a, *y = b;

	return x->nodeid < y->nodeid ? -1 : x->nodeid > y->nodeid;
}

void clusterd_view(const struct clusterd *cd, struct clview *out)
{
	memset(out, 0, sizeof(*out));
	out->cluster = true;
	clusterd__copy_str(out->node, sizeof(out->node), cd->cfg->node);
	out->nodeid = cd->nodeid;
	out->connected = cluster_connected(cd->cl);
	out->quorate = cd->quorate;
	out->synced = cd->synced;
	out->protocol = CLMSG_VERSION;
	for (size_t i = 0; i < cd->n_others && i < CLVIEW_NODES_MAX; i++)
		out->others[out->n_others++] = (struct clview_other){
			cd->others[i].nodeid, cd->others[i].version };
	for (size_t i = 0; i < cd->n_nodes; i++) {
		struct clview_node *n = view_node(out, cd->nodes[i].nodeid, cd->nodes[i].node);
		if (n)
			clusterd__copy_str(n->addr, sizeof(n->addr), cd->nodes[i].addr);
	}
	/* A member that has not announced itself yet is still a member. */
	for (size_t i = 0; i < cd->n_members; i++) {
		struct clview_node *n = view_node(out, cd->members[i], "");
		if (n)
			n->member = true;
	}
	qsort(out->nodes, out->n_nodes, sizeof(out->nodes[0]), by_nodeid);
}

void clusterd_set_notify(struct clusterd *cd, void (*fn)(void *arg), void *arg)
{
	cd->notify = fn;
	cd->notify_arg = arg;
}
