/* evtext.c: see evtext.h.  A change reads "SUBJECT [peer P] WHAT": a table
 * says how each field's change is put, with a generic "FIELD FROM -> TO"
 * for fields this program does not know (a newer daemon). */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "evtext.h"
#include "json.h"
#include "util.h"

struct out {
	char *buf;
	size_t len;
	unsigned lines;
};

__attribute__((format(printf, 2, 3)))
static void put(struct out *o, const char *fmt, ...)
{
	size_t n = strlen(o->buf);
	va_list ap;

	if (n + 1 >= o->len)
		return;
	va_start(ap, fmt);
	vsnprintf(o->buf + n, o->len - n, fmt, ap);
	va_end(ap);
}

static const char *str(const struct json_value *v, const char *key)
{
	const char *s = json_get_str(v, key);

	return s ? s : "?";
}

/* The daemon's text for a terminal: control characters become '?'. */
static const char *clean(const char *s, char *buf, size_t len)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < len; i++)
		buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	buf[i] = '\0';
	return buf;
}

static void put_time(struct out *o, const struct json_value *ev)
{
	uint64_t ms;
	time_t t;
	struct tm tm;
	char date[48];

	if (json_get_u64(ev, "time_ms", &ms) < 0) {
		put(o, "%s ", str(ev, "time"));
		return;
	}
	t = (time_t)(ms / 1000);
	if (!localtime_r(&t, &tm) || !strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(date, sizeof(date), "%" PRIu64, ms / 1000);
	put(o, "%s.%03u ", date, (unsigned)(ms % 1000));
}

static void end_line(struct out *o)
{
	put(o, "\n");
	o->lines++;
}

/* ---- the cluster line ------------------------------------------------------ */

bool evtext_cluster(const struct json_value *c, char *buf, size_t len)
{
	const struct json_value *nodes = json_get(c, "nodes");
	const char *mode = json_get_str(c, "mode");
	struct out o = { buf, len, 0 };
	char name[80];
	int64_t id;

	if (len)
		buf[0] = '\0';
	if (!c || !mode || !strcmp(mode, "static") || !len)
		return false;
	if (strcmp(mode, "corosync")) {
		put(&o, "cluster: mode %s", clean(mode, name, sizeof(name)));
		return true;
	}
	put(&o, "cluster: ");
	if (!json_get_bool(c, "connected"))
		put(&o, "corosync unreachable, ");
	put(&o, "%s", json_get_bool(c, "quorate") ? "quorate" : "NOT quorate");
	if (!json_get_bool(c, "synced"))
		put(&o, ", exchanging state");
	if (json_get_bool(c, "mixed")) {
		const struct json_value *ot = json_get(c, "other_protocols");
		int64_t v = 0;
		put(&o, ", MIXED protocol versions (this node's");
		if (json_get_i64(c, "protocol", &v) == 0)
			put(&o, " %" PRId64, v);
		for (const struct json_value *x = ot ? ot->child : NULL; x; x = x->next)
			if (json_get_i64(x, "nodeid", &id) == 0 &&
			    json_get_i64(x, "protocol", &v) == 0)
				put(&o, ", nodeid %" PRId64 "'s %" PRId64, id, v);
		put(&o, ")");
	}
	put(&o, "; nodes");
	for (const struct json_value *n = nodes ? nodes->child : NULL; n; n = n->next) {
		const char *nm = json_get_str(n, "name");
		if (nm)
			clean(nm, name, sizeof(name));
		else if (json_get_i64(n, "nodeid", &id) == 0)
			snprintf(name, sizeof(name), "nodeid %" PRId64, id);
		else
			snprintf(name, sizeof(name), "?");
		put(&o, " %s (%s)", name, json_get_bool(n, "member") ? "member" : "gone");
	}
	return true;
}

/* ---- changes ------------------------------------------------------------------ */

/* A flag's words for true and false; state names are "FROM -> TO". */
static const struct field {
	const char *name;
	const char *label;	/* before the values ("" for the link: it is the peer's state) */
	const char *yes, *no;	/* flags only */
} fields[] = {
	{ "role", "role", NULL, NULL },
	{ "disk", "disk", NULL, NULL },
	{ "io_frozen", NULL, "I/O frozen", "I/O resumed" },
	{ "meta_failing", NULL, "metadata failing: writes fail", "metadata written again" },
	{ "crashed_primary", NULL, "went down as Primary: its activity log resyncs",
	  "resynced after going down as Primary" },
	{ "power_lost", NULL, "lost power: writes it acknowledged may be gone",
	  "whole again after a power loss" },
	{ "partial", NULL, "partial: Inconsistent only where its own writes failed",
	  "no longer partial" },
	{ "up", NULL, "up", "down" },
	{ "present", NULL, "added", "removed" },
	{ "window", "migration window", NULL, NULL },
	{ "link", "", NULL, NULL },
	{ "peer_role", "role", NULL, NULL },
	{ "peer_disk", "disk", NULL, NULL },
	{ "connected", NULL, "corosync connected", "corosync lost" },
	{ "quorate", NULL, "quorate", "quorum lost" },
	{ "synced", NULL, "state exchange done", "state exchange running" },
	{ "member", NULL, "joined", "left" },
	{ "address", "address", NULL, NULL },
};

static const struct field *field_named(const char *name)
{
	for (size_t i = 0; name && i < ARRAY_SIZE(fields); i++)
		if (!strcmp(fields[i].name, name))
			return &fields[i];
	return NULL;
}

static const char *value(const struct json_value *v, char *buf, size_t len)
{
	if (!v || v->type == JSON_NULL)
		return "none";
	if (v->type == JSON_BOOL)
		return v->b ? "true" : "false";
	if (v->type == JSON_STRING || v->type == JSON_NUMBER)
		return clean(v->str, buf, len);
	return "?";
}

static void put_change(struct out *o, const struct json_value *ev, const char *subject,
		       const struct json_value *ch)
{
	const char *fname = json_get_str(ch, "field");
	const struct field *f = field_named(fname);
	const struct json_value *to = json_get(ch, "to");
	char a[128], b[128], who[80];

	put_time(o, ev);
	put(o, "%s", subject);
	if (json_get_str(ch, "peer"))
		put(o, " peer %s", clean(json_get_str(ch, "peer"), who, sizeof(who)));
	else if (json_get_str(ch, "node"))
		put(o, " node %s", clean(json_get_str(ch, "node"), who, sizeof(who)));
	if (f && f->yes && to && to->type == JSON_BOOL)
		put(o, " %s", to->b ? f->yes : f->no);
	else if (f && f->label && !*f->label)
		put(o, " %s -> %s", value(json_get(ch, "from"), a, sizeof(a)),
		    value(to, b, sizeof(b)));
	else
		put(o, " %s %s -> %s", f && f->label ? f->label :
		    clean(fname ? fname : "?", who, sizeof(who)),
		    value(json_get(ch, "from"), a, sizeof(a)), value(to, b, sizeof(b)));
	end_line(o);
}

unsigned evtext_event(const struct json_value *ev, char *buf, size_t len)
{
	const char *kind = json_get_str(ev, "kind");
	const struct json_value *changes = json_get(ev, "changes");
	struct out o = { buf, len, 0 };
	char subject[80];

	if (!len)
		return 0;
	buf[0] = '\0';
	if (kind && !strcmp(kind, "volume"))
		clean(str(ev, "volume"), subject, sizeof(subject));
	else if (kind && !strcmp(kind, "cluster"))
		snprintf(subject, sizeof(subject), "cluster");
	else {
		put_time(&o, ev);
		put(&o, "event %s", clean(kind ? kind : "?", subject, sizeof(subject)));
		end_line(&o);
		return o.lines;
	}
	for (const struct json_value *c = changes ? changes->child : NULL; c; c = c->next)
		put_change(&o, ev, subject, c);
	return o.lines;
}

/* ---- the snapshot ------------------------------------------------------------- */

static void put_volume(struct out *o, const struct json_value *snap, const struct json_value *v)
{
	const struct json_value *peers = json_get(v, "peers");
	char name[80];

	put_time(o, snap);
	put(o, "%s %s %s", clean(str(v, "name"), name, sizeof(name)), str(v, "role"),
	    str(v, "disk"));
	if (json_get_bool(v, "io_frozen"))
		put(o, ", I/O frozen");
	for (const struct json_value *p = peers ? peers->child : NULL; p; p = p->next)
		put(o, "; peer %s %s %s %s", clean(str(p, "node"), name, sizeof(name)),
		    str(p, "link"), str(p, "peer_role"), str(p, "peer_disk"));
	end_line(o);
}

unsigned evtext_snapshot(const struct json_value *snap, char *buf, size_t len)
{
	const struct json_value *vols = json_get(snap, "volumes");
	struct out o = { buf, len, 0 };
	char line[2048], name[80];
	unsigned n = 0;

	if (!len)
		return 0;
	buf[0] = '\0';
	for (const struct json_value *v = vols ? vols->child : NULL; v; v = v->next)
		n++;
	put_time(&o, snap);
	put(&o, "node %s, %u volume(s)", clean(str(snap, "node"), name, sizeof(name)), n);
	end_line(&o);
	for (const struct json_value *v = vols ? vols->child : NULL; v; v = v->next)
		put_volume(&o, snap, v);
	if (evtext_cluster(json_get(snap, "cluster"), line, sizeof(line))) {
		put_time(&o, snap);
		put(&o, "%s", line);
		end_line(&o);
	}
	return o.lines;
}
