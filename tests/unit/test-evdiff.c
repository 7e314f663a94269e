/* test-evdiff.c: what "replagent events" says changed (agent/evdiff.c),
 * from tables of old and new volume states and cluster views, written as
 * compact strings; and the JSON of the changes and of the time. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "evdiff.h"
#include "json.h"
#include "unit.h"
#include "util.h"

/* ---- volumes ------------------------------------------------------------------ */

/* "Primary UpToDate" + flags (f: io_frozen, d: down, w: a migration window
 * open, g: grown from 64 to 96 MiB, c: crashed_primary, p: power_lost,
 * i: partial) +
 * peers
 * "n2:Connected:Secondary:UpToDate" (NULL: the volume does not exist). */
struct vol_spec {
	const char *role, *disk, *flags;
	const char *peers[2];
};

#define VOL(role, disk, flags, ...) { role, disk, flags, { __VA_ARGS__ } }

static const char *intern(const char *s, size_t n)
{
	static char pool[64][32];
	static unsigned next;
	char *p = pool[next++ % 64];

	snprintf(p, sizeof(pool[0]), "%.*s", (int)n, s);
	return p;
}

/* Link, role and disk names point into a static pool, as the engine's
 * point to its static tables. */
static void make_vol(const struct vol_spec *spec, struct repl_volume_status *st)
{
	memset(st, 0, sizeof(*st));
	snprintf(st->name, sizeof(st->name), "vol0");
	st->role = spec->role;
	st->disk = spec->disk;
	st->io_frozen = spec->flags && strchr(spec->flags, 'f');
	st->crashed_primary = spec->flags && strchr(spec->flags, 'c');
	st->power_lost = spec->flags && strchr(spec->flags, 'p');
	st->partial = spec->flags && strchr(spec->flags, 'i');
	st->up = !(spec->flags && strchr(spec->flags, 'd'));
	st->window = spec->flags && strchr(spec->flags, 'w') ? "open" : "none";
	st->size = spec->flags && strchr(spec->flags, 'g') ? 96 << 20 : 64 << 20;
	for (unsigned i = 0; i < 2 && spec->peers[i]; i++) {
		struct repl_peer_status *p = &st->peers[st->n_peers++];
		const char *s = spec->peers[i], *c1 = strchr(s, ':'), *c2 = strchr(c1 + 1, ':'),
			   *c3 = strchr(c2 + 1, ':');
		snprintf(p->node, sizeof(p->node), "%.*s", (int)(c1 - s), s);
		p->link_name = intern(c1 + 1, (size_t)(c2 - c1 - 1));
		p->peer_role = intern(c2 + 1, (size_t)(c3 - c2 - 1));
		p->peer_disk = intern(c3 + 1, strlen(c3 + 1));
	}
}

/* "field[@who] from>to" per change, ";"-separated. */
static void describe(const struct evdiff_change *c, unsigned n, char *buf, size_t len)
{
	buf[0] = '\0';
	for (unsigned i = 0; i < n; i++) {
		size_t k = strlen(buf);
		char from[300], to[300];

		if (c[i].is_bool) {
			snprintf(from, sizeof(from), "%d", c[i].from.b);
			snprintf(to, sizeof(to), "%d", c[i].to.b);
		} else {
			snprintf(from, sizeof(from), "%s", c[i].from.null ? "null" : c[i].from.s);
			snprintf(to, sizeof(to), "%s", c[i].to.null ? "null" : c[i].to.s);
		}
		snprintf(buf + k, len - k, "%s%s%s%s %s>%s", k ? ";" : "", c[i].field,
			 c[i].about ? "@" : "", c[i].about ? c[i].who : "", from, to);
	}
}

static const struct vol_spec P2 = VOL("Primary", "UpToDate", "", "n2:Connected:Secondary:UpToDate");

static const struct {
	const struct vol_spec *old;	/* NULL: absent */
	struct vol_spec new_v;
	bool new_absent;
	const char *want;
} vol_cases[] = {
	/* nothing */
	{ &P2, VOL("Primary", "UpToDate", "", "n2:Connected:Secondary:UpToDate"), false, "" },
	/* the volume itself */
	{ &P2, VOL("Secondary", "UpToDate", "", "n2:Connected:Secondary:UpToDate"), false,
	  "role Primary>Secondary" },
	{ &P2, VOL("Primary", "Outdated", "", "n2:Connected:Secondary:UpToDate"), false,
	  "disk UpToDate>Outdated" },
	{ &P2, VOL("Primary", "UpToDate", "f", "n2:Connected:Secondary:UpToDate"), false,
	  "io_frozen 0>1" },
	{ &P2, VOL("Primary", "UpToDate", "d", "n2:Connected:Secondary:UpToDate"), false,
	  "up 1>0" },
	{ &P2, VOL("Primary", "UpToDate", "c", "n2:Connected:Secondary:UpToDate"), false,
	  "crashed_primary 0>1" },
	{ &P2, VOL("Primary", "UpToDate", "fp", "n2:Connected:Secondary:UpToDate"), false,
	  "io_frozen 0>1;power_lost 0>1" },
	{ &P2, VOL("Primary", "Inconsistent", "i", "n2:Connected:Secondary:UpToDate"), false,
	  "disk UpToDate>Inconsistent;partial 0>1" },
	{ &P2, VOL("Primary", "UpToDate", "w", "n2:Connected:Secondary:UpToDate"), false,
	  "window none>open" },
	{ &P2, VOL("Primary", "UpToDate", "g", "n2:Connected:Secondary:UpToDate"), false,
	  "size 67108864>100663296" },
	/* a peer */
	{ &P2, VOL("Primary", "UpToDate", "", "n2:Disconnected:Unknown:DUnknown"), false,
	  "link@n2 Connected>Disconnected;peer_role@n2 Secondary>Unknown;"
	  "peer_disk@n2 UpToDate>DUnknown" },
	{ &P2, VOL("Primary", "UpToDate", "", "n2:SyncSource:Secondary:Inconsistent"), false,
	  "link@n2 Connected>SyncSource;peer_disk@n2 UpToDate>Inconsistent" },
	/* in the order of status: the volume, then its peers */
	{ &P2, VOL("Primary", "UpToDate", "f", "n2:Disconnected:Secondary:UpToDate"), false,
	  "io_frozen 0>1;link@n2 Connected>Disconnected" },
	/* a peer that appears or goes (not from the engine, but well defined) */
	{ &P2, VOL("Primary", "UpToDate", "", "n2:Connected:Secondary:UpToDate",
		   "n3:Connecting:Unknown:DUnknown"), false,
	  "link@n3 null>Connecting;peer_role@n3 null>Unknown;peer_disk@n3 null>DUnknown" },
	{ &P2, VOL("Primary", "UpToDate", ""), false,
	  "link@n2 Connected>null;peer_role@n2 Secondary>null;peer_disk@n2 UpToDate>null" },
	/* the volume appears, goes */
	{ NULL, VOL("Secondary", "Inconsistent", ""), false, "present 0>1" },
	{ &P2, VOL(NULL, NULL, NULL), true, "present 1>0" },
	{ NULL, VOL(NULL, NULL, NULL), true, "" },
};

static void test_volumes(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(vol_cases); i++) {
		struct repl_volume_status a, b;
		struct evdiff_change ch[EVDIFF_MAX];
		char got[2048];
		unsigned n;

		if (vol_cases[i].old)
			make_vol(vol_cases[i].old, &a);
		if (!vol_cases[i].new_absent)
			make_vol(&vol_cases[i].new_v, &b);
		n = evdiff_volume(vol_cases[i].old ? &a : NULL, vol_cases[i].new_absent ? NULL : &b,
				  ch, EVDIFF_MAX);
		describe(ch, n, got, sizeof(got));
		CHECK_MSG(!strcmp(got, vol_cases[i].want), "volume case %zu: got \"%s\", want \"%s\"",
			  i, got, vol_cases[i].want);
	}
}

static void test_max(void)
{
	struct repl_volume_status a, b;
	struct evdiff_change ch[2];
	struct vol_spec to = VOL("Secondary", "Outdated", "fd", "n2:Disconnected:Unknown:DUnknown");

	make_vol(&P2, &a);
	make_vol(&to, &b);
	CHECK(evdiff_volume(&a, &b, ch, 2) == 7);	/* counted, 2 kept */
	CHECK(!strcmp(ch[0].field, "role") && !strcmp(ch[1].field, "disk"));
	CHECK(evdiff_volume(&a, &b, NULL, 0) == 7);
}

/* ---- the cluster ------------------------------------------------------------------ */

/* "cqs" = connected, quorate, synced (a letter per flag that is true),
 * nodes "1:n1:10.0.0.1:m" (m: member, -: not). */
struct cl_spec {
	const char *flags;
	const char *nodes[4];
};

static void make_cl(const struct cl_spec *spec, struct clview *v)
{
	memset(v, 0, sizeof(*v));
	v->cluster = true;
	snprintf(v->node, sizeof(v->node), "n1");
	v->nodeid = 1;
	v->connected = strchr(spec->flags, 'c') != NULL;
	v->quorate = strchr(spec->flags, 'q') != NULL;
	v->synced = strchr(spec->flags, 's') != NULL;
	for (unsigned i = 0; i < 4 && spec->nodes[i]; i++) {
		struct clview_node *n = &v->nodes[v->n_nodes++];
		char name[65], addr[256], m;
		unsigned id;

		CHECK(sscanf(spec->nodes[i], "%u:%64[^:]:%255[^:]:%c", &id, name, addr, &m) == 4);
		n->nodeid = id;
		snprintf(n->name, sizeof(n->name), "%s", strcmp(name, "_") ? name : "");
		snprintf(n->addr, sizeof(n->addr), "%s", strcmp(addr, "_") ? addr : "");
		n->member = m == 'm';
	}
}

static const struct cl_spec UP3 = { "cqs", { "1:n1:10.0.0.1:m", "2:n2:10.0.0.2:m",
					     "3:n3:10.0.0.3:m" } };

static const struct {
	struct cl_spec new_v;
	const char *want;
} cl_cases[] = {
	{ { "cqs", { "1:n1:10.0.0.1:m", "2:n2:10.0.0.2:m", "3:n3:10.0.0.3:m" } }, "" },
	/* a node goes: membership first, then quorum and the exchange */
	{ { "cqs", { "1:n1:10.0.0.1:m", "2:n2:10.0.0.2:m", "3:n3:10.0.0.3:-" } },
	  "member@n3 1>0" },
	{ { "cs", { "1:n1:10.0.0.1:m", "2:n2:10.0.0.2:-", "3:n3:10.0.0.3:-" } },
	  "quorate 1>0;member@n2 1>0;member@n3 1>0" },
	{ { "cq", { "1:n1:10.0.0.1:m", "2:n2:10.0.0.2:m", "3:n3:10.0.0.3:m" } },
	  "synced 1>0" },
	{ { "", { "1:n1:10.0.0.1:m", "2:n2:10.0.0.2:m", "3:n3:10.0.0.3:m" } },
	  "connected 1>0;quorate 1>0;synced 1>0" },
	/* a node moves, one joins (without announcing itself yet, then with) */
	{ { "cqs", { "1:n1:10.0.0.1:m", "2:n2:10.0.9.2:m", "3:n3:10.0.0.3:m" } },
	  "address@n2 10.0.0.2>10.0.9.2" },
	{ { "cqs", { "1:n1:10.0.0.1:m", "2:n2:10.0.0.2:m", "3:n3:10.0.0.3:m",
		     "4:_:_:m" } }, "member@ 0>1" },
	{ { "cqs", { "1:n1:10.0.0.1:m", "2:n2:10.0.0.2:m", "3:n3:10.0.0.3:m",
		     "4:n4:10.0.0.4:-" } }, "" },
};

static void test_cluster(void)
{
	struct clview a, b, st = { 0 };
	struct evdiff_change ch[EVDIFF_MAX];
	char got[2048];
	unsigned n;

	make_cl(&UP3, &a);
	for (size_t i = 0; i < ARRAY_SIZE(cl_cases); i++) {
		make_cl(&cl_cases[i].new_v, &b);
		n = evdiff_cluster(&a, &b, ch, EVDIFF_MAX);
		describe(ch, n, got, sizeof(got));
		CHECK_MSG(!strcmp(got, cl_cases[i].want), "cluster case %zu: got \"%s\", want \"%s\"",
			  i, got, cl_cases[i].want);
	}
	/* The node that announces itself after joining: only its address. */
	{
		struct cl_spec s4a = { "cqs", { "1:n1:10.0.0.1:m", "4:_:_:m" } };
		struct cl_spec s4b = { "cqs", { "1:n1:10.0.0.1:m", "4:n4:10.0.0.4:m" } };
		make_cl(&s4a, &a);
		make_cl(&s4b, &b);
		n = evdiff_cluster(&a, &b, ch, EVDIFF_MAX);
		describe(ch, n, got, sizeof(got));
		CHECK_MSG(!strcmp(got, "address@n4 null>10.0.0.4"), "announce: got \"%s\"", got);
		CHECK(ch[0].nodeid == 4);
	}
	/* static mode: never a cluster event */
	CHECK(evdiff_cluster(&st, &st, ch, EVDIFF_MAX) == 0);
	CHECK(evdiff_cluster(&a, &st, ch, EVDIFF_MAX) == 0);
}

/* ---- JSON ------------------------------------------------------------------------------ */

static void test_json(void)
{
	struct repl_volume_status a, b;
	struct clview ca, cb;
	struct evdiff_change ch[EVDIFF_MAX];
	struct vol_spec to = VOL("Primary", "UpToDate", "f", "n2:Disconnected:Unknown:DUnknown");
	struct cl_spec down = { "cqs", { "1:n1:10.0.0.1:m", "2:n2:10.0.0.2:m", "3:n3:10.0.0.3:-" } };
	struct json_writer w;
	const char *text;
	size_t len;
	unsigned n;

	make_vol(&P2, &a);
	make_vol(&to, &b);
	n = evdiff_volume(&a, &b, ch, EVDIFF_MAX);
	json_writer_init(&w);
	json_obj_begin(&w);
	evdiff_put_changes(&w, ch, n);
	json_obj_end(&w);
	CHECK(json_writer_result(&w, &text, &len) == 0);
	CHECK_MSG(!strcmp(text, "{\"changes\":["
			  "{\"field\":\"io_frozen\",\"from\":false,\"to\":true},"
			  "{\"field\":\"link\",\"peer\":\"n2\",\"from\":\"Connected\",\"to\":\"Disconnected\"},"
			  "{\"field\":\"peer_role\",\"peer\":\"n2\",\"from\":\"Secondary\",\"to\":\"Unknown\"},"
			  "{\"field\":\"peer_disk\",\"peer\":\"n2\",\"from\":\"UpToDate\",\"to\":\"DUnknown\"}]}"),
		  "volume changes: %s", text);
	json_writer_release(&w);

	make_cl(&UP3, &ca);
	make_cl(&down, &cb);
	n = evdiff_cluster(&ca, &cb, ch, EVDIFF_MAX);
	json_writer_init(&w);
	json_obj_begin(&w);
	evdiff_put_changes(&w, ch, n);
	evdiff_put_time(&w, 1714564800123ull);	/* 2024-05-01 12:00:00.123 UTC */
	json_obj_end(&w);
	CHECK(json_writer_result(&w, &text, &len) == 0);
	CHECK_MSG(!strcmp(text, "{\"changes\":[{\"field\":\"member\",\"node\":\"n3\",\"nodeid\":3,"
			  "\"from\":true,\"to\":false}],\"time\":\"2024-05-01T12:00:00.123Z\","
			  "\"time_ms\":1714564800123}"), "cluster changes: %s", text);
	json_writer_release(&w);

	/* the cluster object itself */
	json_writer_init(&w);
	clview_put(&w, &cb);
	CHECK(json_writer_result(&w, &text, &len) == 0);
	CHECK_MSG(strstr(text, "\"mode\":\"corosync\",\"node\":\"n1\",\"nodeid\":1,"
			 "\"connected\":true,\"quorate\":true,\"synced\":true,\"nodes\":[") &&
		  strstr(text, "{\"name\":\"n3\",\"nodeid\":3,\"address\":\"10.0.0.3\","
			 "\"member\":false}"), "clview: %s", text);
	json_writer_release(&w);
	memset(&cb, 0, sizeof(cb));
	json_writer_init(&w);
	clview_put(&w, &cb);
	CHECK(json_writer_result(&w, &text, &len) == 0 && !strcmp(text, "{\"mode\":\"static\"}"));
	json_writer_release(&w);
}

int main(void)
{
	test_volumes();
	test_max();
	test_cluster();
	test_json();
	return unit_done("test-evdiff");
}
