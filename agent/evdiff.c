/* evdiff.c: see evdiff.h.  Each comparison appends at most one change; the
 * list keeps the order of the fields in status (volume before peers, the
 * cluster before its nodes), so that the text of an event reads in the
 * same order as "replagent status". */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "evdiff.h"
#include "json.h"

struct list {
	struct evdiff_change *out;
	unsigned max, n;
};

static struct evdiff_change *next(struct list *l, const char *field, const char *about,
				  const char *who)
{
	struct evdiff_change *c = l->n < l->max ? &l->out[l->n] : NULL;

	l->n++;
	if (!c)
		return NULL;
	memset(c, 0, sizeof(*c));
	c->field = field;
	c->about = about;
	snprintf(c->who, sizeof(c->who), "%s", who ? who : "");
	return c;
}

static void set_str(struct evdiff_val *v, const char *s)
{
	v->null = !s;
	snprintf(v->s, sizeof(v->s), "%s", s ? s : "");
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static void cmp_str(struct list *l, const char *field, const char *about, const char *who,
		    const char *from, const char *to)
{
	struct evdiff_change *c;

	if (same_str(from, to) || !(c = next(l, field, about, who)))
		return;
	set_str(&c->from, from);
	set_str(&c->to, to);
}

static struct evdiff_change *cmp_bool(struct list *l, const char *field, const char *about,
				      const char *who, bool from, bool to)
{
	struct evdiff_change *c;

	if (from == to || !(c = next(l, field, about, who)))
		return NULL;
	c->is_bool = true;
	c->from.b = from;
	c->to.b = to;
	return c;
}

/* A number (the size in bytes), as a decimal string. */
static void cmp_u64(struct list *l, const char *field, uint64_t from, uint64_t to)
{
	struct evdiff_change *c;

	if (from == to || !(c = next(l, field, NULL, NULL)))
		return;
	snprintf(c->from.s, sizeof(c->from.s), "%" PRIu64, from);
	snprintf(c->to.s, sizeof(c->to.s), "%" PRIu64, to);
}

/* ---- volumes ---------------------------------------------------------------- */

static const struct repl_peer_status *peer_named(const struct repl_volume_status *st,
						 const char *node)
{
	for (unsigned i = 0; i < st->n_peers && i < REPL_MAX_PEERS; i++)
		if (strcmp(st->peers[i].node, node) == 0)
			return &st->peers[i];
	return NULL;
}

static void cmp_peer(struct list *l, const struct repl_peer_status *a,
		     const struct repl_peer_status *b)
{
	const char *who = b ? b->node : a->node;

	cmp_str(l, "link", "peer", who, a ? a->link_name : NULL, b ? b->link_name : NULL);
	cmp_str(l, "peer_role", "peer", who, a ? a->peer_role : NULL, b ? b->peer_role : NULL);
	cmp_str(l, "peer_disk", "peer", who, a ? a->peer_disk : NULL, b ? b->peer_disk : NULL);
}

unsigned evdiff_volume(const struct repl_volume_status *old,
		       const struct repl_volume_status *new_st,
		       struct evdiff_change *out, unsigned max)
{
	struct list l = { out, max, 0 };

	if (!old || !new_st) {
		if (old || new_st)
			cmp_bool(&l, "present", NULL, NULL, old != NULL, new_st != NULL);
		return l.n;
	}
	cmp_str(&l, "role", NULL, NULL, old->role, new_st->role);
	cmp_str(&l, "disk", NULL, NULL, old->disk, new_st->disk);
	cmp_bool(&l, "io_frozen", NULL, NULL, old->io_frozen, new_st->io_frozen);
	cmp_bool(&l, "meta_failing", NULL, NULL, old->meta_error[0] != '\0',
		 new_st->meta_error[0] != '\0');
	cmp_bool(&l, "crashed_primary", NULL, NULL, old->crashed_primary,
		 new_st->crashed_primary);
	cmp_bool(&l, "power_lost", NULL, NULL, old->power_lost, new_st->power_lost);
	cmp_bool(&l, "partial", NULL, NULL, old->partial, new_st->partial);
	cmp_bool(&l, "up", NULL, NULL, old->up, new_st->up);
	cmp_str(&l, "window", NULL, NULL, old->window, new_st->window);
	cmp_u64(&l, "size", old->size, new_st->size);
	for (unsigned i = 0; i < new_st->n_peers && i < REPL_MAX_PEERS; i++)
		cmp_peer(&l, peer_named(old, new_st->peers[i].node), &new_st->peers[i]);
	for (unsigned i = 0; i < old->n_peers && i < REPL_MAX_PEERS; i++)
		if (!peer_named(new_st, old->peers[i].node))
			cmp_peer(&l, &old->peers[i], NULL);
	return l.n;
}

/* ---- the cluster -------------------------------------------------------------- */

static const struct clview_node *node_id(const struct clview *v, uint32_t nodeid)
{
	for (unsigned i = 0; i < v->n_nodes && i < CLVIEW_NODES_MAX; i++)
		if (v->nodes[i].nodeid == nodeid)
			return &v->nodes[i];
	return NULL;
}

static void cmp_node(struct list *l, const struct clview_node *a, const struct clview_node *b)
{
	struct evdiff_change *c;
	const char *who = b->name[0] ? b->name : a ? a->name : "";

	/* A node seen for the first time counts as joining if it is a member. */
	c = cmp_bool(l, "member", "node", who, a && a->member, b->member);
	if (c)
		c->nodeid = b->nodeid;
	if (a && strcmp(a->addr, b->addr) != 0) {
		c = next(l, "address", "node", who);
		if (c) {
			c->nodeid = b->nodeid;
			set_str(&c->from, a->addr[0] ? a->addr : NULL);
			set_str(&c->to, b->addr[0] ? b->addr : NULL);
		}
	}
}

unsigned evdiff_cluster(const struct clview *old, const struct clview *new_v,
			struct evdiff_change *out, unsigned max)
{
	static const struct clview none;
	struct list l = { out, max, 0 };

	if (!old)
		old = &none;
	if (!new_v)
		new_v = &none;
	if (!new_v->cluster)
		return 0;	/* static mode: no cluster events */
	cmp_bool(&l, "connected", NULL, NULL, old->connected, new_v->connected);
	cmp_bool(&l, "quorate", NULL, NULL, old->quorate, new_v->quorate);
	cmp_bool(&l, "synced", NULL, NULL, old->synced, new_v->synced);
	for (unsigned i = 0; i < new_v->n_nodes && i < CLVIEW_NODES_MAX; i++)
		cmp_node(&l, node_id(old, new_v->nodes[i].nodeid), &new_v->nodes[i]);
	return l.n;
}

/* ---- JSON ------------------------------------------------------------------------ */

static void put_val(struct json_writer *w, const char *key, const struct evdiff_change *c,
		    const struct evdiff_val *v)
{
	json_key(w, key);
	if (c->is_bool)
		json_bool(w, v->b);
	else
		json_str(w, v->null ? NULL : v->s);
}

void evdiff_put_changes(struct json_writer *w, const struct evdiff_change *c, unsigned n)
{
	json_key(w, "changes");
	json_arr_begin(w);
	for (unsigned i = 0; i < n; i++) {
		json_obj_begin(w);
		json_kv_str(w, "field", c[i].field);
		if (c[i].about) {
			json_kv_str(w, c[i].about, c[i].who[0] ? c[i].who : NULL);
			if (strcmp(c[i].about, "node") == 0)
				json_kv_u64(w, "nodeid", c[i].nodeid);
		}
		put_val(w, "from", &c[i], &c[i].from);
		put_val(w, "to", &c[i], &c[i].to);
		json_obj_end(w);
	}
	json_arr_end(w);
}

void evdiff_put_time(struct json_writer *w, uint64_t unix_ms)
{
	time_t t = (time_t)(unix_ms / 1000);
	struct tm tm;
	char buf[64], date[48];

	if (!gmtime_r(&t, &tm) || !strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm))
		snprintf(date, sizeof(date), "1970-01-01T00:00:00");
	snprintf(buf, sizeof(buf), "%s.%03uZ", date, (unsigned)(unix_ms % 1000));
	json_kv_str(w, "time", buf);
	json_kv_u64(w, "time_ms", unix_ms);
}
