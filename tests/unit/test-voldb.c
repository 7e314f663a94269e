/* test-voldb.c: unit tests of agent/voldb.c: the merge rule as a table
 * (every row; with sizes for resizes), convergence in any arrival order,
 * making, resizing and deleting definitions (ports, versions, errors), the
 * file format, and persistence in a temporary directory: round trip, atomic
 * writes leave no temporary files, garbage files are skipped and reported,
 * not fatal. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "unit.h"
#include "util.h"
#include "voldb.h"

static struct voldef def(const char *name, uint64_t version, uint32_t origin, bool deleted)
{
	struct voldef v = { .size = 1 << 20, .n_nodes = 2, .port = 7789, .version = version,
			    .origin = origin, .deleted = deleted };

	strcpy(v.name, name);
	strcpy(v.nodes[0], "n1");
	strcpy(v.nodes[1], "n2");
	v.uuid[0] = 0x42;
	return v;
}

/* ---- the merge rule ------------------------------------------------------ */

enum { NONE, LIVE, TOMB };

static const struct merge_row {
	const char *what;
	int have;			/* NONE, LIVE or TOMB */
	uint64_t have_ver;
	uint32_t have_origin;
	int in;				/* LIVE or TOMB */
	uint64_t in_ver;
	uint32_t in_origin;
	int want;			/* enum voldb_merge */
} merge_rows[] = {
	{ "unknown volume", NONE, 0, 0, LIVE, 1, 1, VOLDB_NEW },
	{ "unknown tombstone is kept", NONE, 0, 0, TOMB, 5, 2, VOLDB_NEW },
	{ "same definition again", LIVE, 1, 1, LIVE, 1, 1, VOLDB_SAME },
	{ "higher version", LIVE, 1, 1, LIVE, 2, 1, VOLDB_UPDATED },
	{ "higher version, lower origin", LIVE, 1, 3, LIVE, 2, 1, VOLDB_UPDATED },
	{ "lower version", LIVE, 2, 1, LIVE, 1, 1, VOLDB_OLDER },
	{ "lower version, higher origin", LIVE, 2, 1, LIVE, 1, 3, VOLDB_OLDER },
	{ "equal version, higher origin", LIVE, 1, 1, LIVE, 1, 2, VOLDB_UPDATED },
	{ "equal version, lower origin", LIVE, 1, 2, LIVE, 1, 1, VOLDB_OLDER },
	{ "delete: tombstone, higher version", LIVE, 1, 1, TOMB, 2, 1, VOLDB_UPDATED },
	{ "delete from a lower nodeid", LIVE, 1, 3, TOMB, 2, 1, VOLDB_UPDATED },
	{ "resurrection by a node that was down", TOMB, 2, 1, LIVE, 1, 1, VOLDB_OLDER },
	{ "resurrection, higher origin", TOMB, 2, 1, LIVE, 1, 9, VOLDB_OLDER },
	{ "re-created after the delete", TOMB, 2, 1, LIVE, 3, 1, VOLDB_UPDATED },
	{ "same tombstone again", TOMB, 2, 1, TOMB, 2, 1, VOLDB_SAME },
	{ "older tombstone", TOMB, 4, 1, TOMB, 2, 1, VOLDB_OLDER },
	{ "stale tombstone after re-creation", LIVE, 3, 1, TOMB, 2, 1, VOLDB_OLDER },
	{ "equal version and origin: tombstone wins", LIVE, 2, 1, TOMB, 2, 1, VOLDB_UPDATED },
	{ "equal version and origin: live loses", TOMB, 2, 1, LIVE, 2, 1, VOLDB_OLDER },
};

static void test_merge_table(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(merge_rows); i++) {
		const struct merge_row *row = &merge_rows[i];
		struct voldb *db;
		struct voldef have = def("vol", row->have_ver, row->have_origin, row->have == TOMB);
		struct voldef in = def("vol", row->in_ver, row->in_origin, row->in == TOMB);
		const struct voldef *now;
		int r;

		CHECK(voldb_new(NULL, &db) == 0);
		if (row->have != NONE)
			CHECK(voldb_merge(db, &have) == VOLDB_NEW);
		r = voldb_merge(db, &in);
		CHECK_MSG(r == row->want, "%s: got %d, want %d", row->what, r, row->want);
		now = voldb_find(db, "vol");
		CHECK_MSG(now && !memcmp(now, r == VOLDB_OLDER ? &have : &in, sizeof(*now)),
			  "%s: stored the wrong definition", row->what);
		CHECK(voldb_count(db) == 1);
		/* voldef_cmp agrees, both ways round. */
		if (row->have != NONE) {
			int c = voldef_cmp(&in, &have), c2 = voldef_cmp(&have, &in);
			CHECK_MSG((c > 0) == (row->want == VOLDB_UPDATED) && (c == 0) == (row->want == VOLDB_SAME) &&
				  ((c > 0) - (c < 0)) == -((c2 > 0) - (c2 < 0)), "%s: voldef_cmp %d/%d",
				  row->what, c, c2);
		}
		voldb_free(db);
	}
}

static void test_merge_invalid(void)
{
	struct voldb *db;
	struct voldef v = def("vol", 1, 1, false);

	CHECK(voldb_new(NULL, &db) == 0);
	v.size = 1000;
	CHECK(voldb_merge(db, &v) == -EINVAL);
	v = def("a/b", 1, 1, false);
	CHECK(voldb_merge(db, &v) == -EINVAL);
	v = def("vol", 0, 1, false);
	CHECK(voldb_merge(db, &v) == -EINVAL);
	CHECK(voldb_count(db) == 0);
	voldb_free(db);
}

/* Conflicting definitions arrive in every order on different nodes; all
 * nodes end with the same set. */
static void test_convergence(void)
{
	struct voldef d[8];
	size_t n = 0;
	struct voldef first[4];
	static const int perms[][8] = {
		{ 0, 1, 2, 3, 4, 5, 6, 7 }, { 7, 6, 5, 4, 3, 2, 1, 0 },
		{ 3, 7, 0, 5, 1, 6, 2, 4 }, { 6, 2, 4, 0, 7, 1, 3, 5 },
		{ 1, 0, 3, 2, 5, 4, 7, 6 },
	};

	d[n++] = def("a", 1, 1, false);
	d[n++] = def("a", 1, 2, false);		/* concurrent creation on node 2 */
	d[n++] = def("a", 2, 1, true);		/* node 1 deletes its view */
	d[n++] = def("b", 1, 1, false);
	d[n++] = def("b", 1, 1, false);
	d[n - 1].uuid[0] = 0x99;		/* same version and origin, differs */
	d[n++] = def("b", 1, 1, false);
	d[n - 1].port = 7790;
	d[n++] = def("c", 4, 3, true);
	d[n++] = def("c", 3, 7, false);
	for (size_t p = 0; p < ARRAY_SIZE(perms); p++) {
		struct voldb *db;

		CHECK(voldb_new(NULL, &db) == 0);
		for (size_t i = 0; i < n; i++)
			CHECK(voldb_merge(db, &d[perms[p][i]]) >= 0);
		CHECK(voldb_count(db) == 3);
		for (size_t i = 0; i < 3 && i < voldb_count(db); i++) {
			if (p == 0)
				first[i] = *voldb_at(db, i);
			else
				CHECK_MSG(!memcmp(&first[i], voldb_at(db, i), sizeof(first[i])),
					  "order %zu: %s differs", p, first[i].name);
		}
		voldb_free(db);
	}
	CHECK(first[0].version == 2 && first[0].deleted);
	CHECK(first[2].version == 4 && first[2].deleted);
}

/* ---- resize ---------------------------------------------------------------- */

/* The merge rule with sizes: a resize is a new version of the same volume;
 * of two made at once (same version) the larger wins, whatever the origin;
 * a delete made at once wins over both. */
static const struct resize_row {
	const char *what;
	int have;
	uint64_t have_ver, have_size;
	uint32_t have_origin;
	int in;
	uint64_t in_ver, in_size;
	uint32_t in_origin;
	int want;
} resize_rows[] = {
	{ "resize: the next version", LIVE, 1, 1, 1, LIVE, 2, 2, 1, VOLDB_UPDATED },
	{ "resize from another node", LIVE, 1, 1, 3, LIVE, 2, 2, 1, VOLDB_UPDATED },
	{ "the old size again, late", LIVE, 2, 2, 1, LIVE, 1, 1, 3, VOLDB_OLDER },
	{ "two at once: the larger, lower origin", LIVE, 2, 2, 5, LIVE, 2, 3, 1, VOLDB_UPDATED },
	{ "two at once: the smaller, higher origin", LIVE, 2, 3, 1, LIVE, 2, 2, 5, VOLDB_OLDER },
	{ "two at once, same size: higher origin", LIVE, 2, 3, 1, LIVE, 2, 3, 5, VOLDB_UPDATED },
	{ "delete at once with a resize", LIVE, 2, 3, 9, TOMB, 2, 1, 1, VOLDB_UPDATED },
	{ "resize at once with a delete", TOMB, 2, 1, 1, LIVE, 2, 3, 9, VOLDB_OLDER },
	{ "a later version, smaller (partitions)", LIVE, 2, 3, 1, LIVE, 3, 2, 1, VOLDB_UPDATED },
};

static void test_resize_merge(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(resize_rows); i++) {
		const struct resize_row *row = &resize_rows[i];
		struct voldef have = def("vol", row->have_ver, row->have_origin, row->have == TOMB);
		struct voldef in = def("vol", row->in_ver, row->in_origin, row->in == TOMB);
		struct voldb *db;
		int r;

		have.size = row->have_size << 30;
		in.size = row->in_size << 30;
		CHECK(voldb_new(NULL, &db) == 0);
		CHECK(voldb_merge(db, &have) == VOLDB_NEW);
		r = voldb_merge(db, &in);
		CHECK_MSG(r == row->want, "%s: got %d, want %d", row->what, r, row->want);
		CHECK_MSG(!memcmp(voldb_find(db, "vol"), r == VOLDB_OLDER ? &have : &in,
				  sizeof(in)), "%s: stored the wrong definition", row->what);
		CHECK_MSG((voldef_cmp(&in, &have) > 0) == (row->want == VOLDB_UPDATED) &&
			  (voldef_cmp(&have, &in) > 0) == (row->want == VOLDB_OLDER),
			  "%s: voldef_cmp disagrees", row->what);
		voldb_free(db);
	}
}

/* Resizes made at once on three nodes arrive in every order: every node
 * ends with the largest. */
static void test_resize_convergence(void)
{
	struct voldef d[5];
	static const int perms[][5] = {
		{ 0, 1, 2, 3, 4 }, { 4, 3, 2, 1, 0 }, { 2, 0, 4, 1, 3 }, { 3, 4, 0, 2, 1 },
		{ 1, 3, 0, 4, 2 },
	};

	d[0] = def("v", 1, 1, false);
	d[1] = def("v", 2, 1, false);
	d[1].size = 4 << 20;
	d[2] = def("v", 2, 2, false);
	d[2].size = 3 << 20;
	d[3] = def("v", 2, 3, false);
	d[3].size = 2 << 20;
	d[4] = d[2];			/* the same message again */
	for (size_t p = 0; p < ARRAY_SIZE(perms); p++) {
		struct voldb *db;

		CHECK(voldb_new(NULL, &db) == 0);
		for (size_t i = 0; i < ARRAY_SIZE(d); i++)
			CHECK(voldb_merge(db, &d[perms[p][i]]) >= 0);
		CHECK_MSG(voldb_find(db, "v") && !memcmp(voldb_find(db, "v"), &d[1], sizeof(d[1])),
			  "order %zu: not the largest resize", p);
		voldb_free(db);
	}
}

static void test_resize_make(void)
{
	struct voldb *db;
	struct voldef v = def("vol", 3, 1, false), t, gone = def("old", 2, 1, true);
	const char *why = NULL;

	v.port = 7791;
	CHECK(voldb_new(NULL, &db) == 0);
	CHECK(voldb_merge(db, &v) == VOLDB_NEW && voldb_merge(db, &gone) == VOLDB_NEW);
	CHECK(voldb_resize(db, "vol", 3 << 20, 7, &t, &why) == 0);
	CHECK(t.size == 3 << 20 && t.version == 4 && t.origin == 7 && !t.deleted);
	CHECK(!memcmp(t.uuid, v.uuid, 16) && t.port == 7791 && t.n_nodes == 2 &&
	      !strcmp(t.nodes[1], "n2"));
	CHECK(voldb_merge(db, &t) == VOLDB_UPDATED);
	CHECK(voldb_resize(db, "vol", 3 << 20, 7, &t, &why) == -EALREADY && why);
	CHECK(voldb_resize(db, "vol", 2 << 20, 7, &t, &why) == -EINVAL && strstr(why, "only grows"));
	CHECK(voldb_resize(db, "vol", (4 << 20) + 100, 7, &t, &why) == -EINVAL);
	CHECK(voldb_resize(db, "vol", 0, 7, &t, &why) == -EINVAL);
	CHECK(voldb_resize(db, "vol", UINT64_MAX - 511, 7, &t, &why) == -EINVAL);
	CHECK(voldb_resize(db, "nope", 4 << 20, 7, &t, &why) == -ENOENT);
	CHECK(voldb_resize(db, "old", 4 << 20, 7, &t, NULL) == -ENOENT);
	voldb_free(db);
}

/* Creations sent back to back, before the first comes back through the
 * group: each gets its own port, a name cannot be made twice, and what
 * comes back (whichever definition wins) frees its entry. */
static void test_sent(void)
{
	static const char *const two[] = { "n1", "n2" };
	struct voldb *db;
	struct voldef a, b, c, t, other;
	const char *why = NULL;
	char name[16];

	CHECK(voldb_new(NULL, &db) == 0);
	CHECK(voldb_create(db, "a", 512, two, 2, 5, 7789, &a, &why) == 0 && a.port == 7789);
	CHECK(voldb_sent(db, &a) == 0);
	CHECK(voldb_sent(db, &a) == -EBUSY);
	CHECK(voldb_create(db, "b", 512, two, 2, 5, 7789, &b, &why) == 0 && b.port == 7790);
	CHECK(voldb_sent(db, &b) == 0);
	why = NULL;
	CHECK(voldb_create(db, "a", 512, two, 2, 5, 7789, &t, &why) == -EEXIST && why);
	/* b comes back first; a's port stays taken until a does. */
	CHECK(voldb_accept(db, &b) == VOLDB_NEW);
	CHECK(voldb_create(db, "c", 512, two, 2, 5, 7789, &c, &why) == 0 && c.port == 7791);
	CHECK(voldb_sent(db, &c) == 0);
	/* Another node's "a" won: ours is settled all the same (its port
	 * is the winner's now). */
	other = a;
	other.origin = 9;
	other.port = 7795;
	CHECK(voldb_accept(db, &other) == VOLDB_NEW);
	CHECK(voldb_accept(db, &a) == VOLDB_OLDER);
	CHECK(voldb_create(db, "d", 512, two, 2, 5, 7789, &t, &why) == 0 && t.port == 7789);
	/* c never comes back (the link to the group went). */
	voldb_sent_forget(db);
	CHECK(voldb_create(db, "c", 512, two, 2, 5, 7789, &t, &why) == 0 && t.port == 7789);
	/* At most VOLDB_SENT_MAX awaited at once. */
	for (unsigned i = 0; i < VOLDB_SENT_MAX; i++) {
		snprintf(name, sizeof(name), "m%u", i);
		CHECK(voldb_create(db, name, 512, two, 2, 5, 7789, &t, &why) == 0);
		CHECK(voldb_sent(db, &t) == 0);
	}
	why = NULL;
	CHECK(voldb_create(db, "z", 512, two, 2, 5, 7789, &t, &why) == -EBUSY && why);
	voldb_free(db);
}

/* ---- create and delete --------------------------------------------------- */

static void test_create_delete(void)
{
	static const char *const two[] = { "n1", "n2" }, *const three[] = { "n1", "n2", "n3" };
	static const char *const dup[] = { "n1", "n1" }, *const four[] = { "a", "b", "c", "d" };
	static const char *const bad[] = { "n1", "n 2" };
	struct voldb *db;
	struct voldef v, w, t;
	const char *why;

	CHECK(voldb_new(NULL, &db) == 0);
	CHECK(voldb_create(db, "vm1", 1 << 30, two, 2, 5, 7789, &v, &why) == 0);
	CHECK(v.version == 1 && v.origin == 5 && v.port == 7789 && !v.deleted && v.n_nodes == 2);
	CHECK(voldef_check(&v, NULL) == 0);
	CHECK(voldb_merge(db, &v) == VOLDB_NEW);
	CHECK(voldb_create(db, "vm2", 1 << 30, three, 3, 5, 7789, &w, &why) == 0);
	CHECK(w.port == 7790 && w.n_nodes == 3 && memcmp(w.uuid, v.uuid, 16));
	CHECK(voldb_merge(db, &w) == VOLDB_NEW);

	why = NULL;
	CHECK(voldb_create(db, "vm1", 1 << 30, two, 2, 5, 7789, &t, &why) == -EEXIST && why);
	CHECK(voldb_create(db, "x/y", 1 << 30, two, 2, 5, 7789, &t, &why) == -EINVAL);
	CHECK(voldb_create(db, "x", 1000, two, 2, 5, 7789, &t, &why) == -EINVAL);
	CHECK(voldb_create(db, "x", 0, two, 2, 5, 7789, &t, &why) == -EINVAL);
	CHECK(voldb_create(db, "x", 512, two, 1, 5, 7789, &t, &why) == -EINVAL);
	CHECK(voldb_create(db, "x", 512, four, 4, 5, 7789, &t, &why) == -EINVAL);
	CHECK(voldb_create(db, "x", 512, dup, 2, 5, 7789, &t, &why) == -EINVAL);
	CHECK(voldb_create(db, "x", 512, bad, 2, 5, 7789, &t, &why) == -EINVAL);
	CHECK(voldb_create(db, "x", 512, two, 2, 0, 7789, &t, &why) == -EINVAL);
	printf("example refusal: %s\n", why);
	/* No port left. */
	CHECK(voldb_create(db, "x", 512, two, 2, 5, 65535, &t, &why) == 0 && t.port == 65535);
	CHECK(voldb_merge(db, &t) == VOLDB_NEW);
	CHECK(voldb_create(db, "y", 512, two, 2, 5, 65535, &t, NULL) == -ENOSPC);

	/* Delete vm1: its port is free again, the name can be made anew. */
	CHECK(voldb_delete(db, "vm1", 3, &t) == 0);
	CHECK(t.deleted && t.version == 2 && t.origin == 3 && !memcmp(t.uuid, v.uuid, 16));
	CHECK(voldb_merge(db, &t) == VOLDB_UPDATED);
	CHECK(voldb_delete(db, "vm1", 3, &t) == -ENOENT);
	CHECK(voldb_delete(db, "nope", 3, &t) == -ENOENT);
	CHECK(voldb_create(db, "vm3", 512, two, 2, 5, 7789, &t, &why) == 0 && t.port == 7789);
	CHECK(voldb_create(db, "vm1", 512, two, 2, 1, 7789, &t, &why) == 0);
	CHECK(t.version == 3 && t.port == 7789 && !t.deleted);
	CHECK(voldb_merge(db, &t) == VOLDB_UPDATED);

	/* Port conflicts: the name that sorts first keeps the port. */
	w = def("aaa", 1, 1, false);
	w.port = 7790;			/* vm2's */
	CHECK(voldb_merge(db, &w) == VOLDB_NEW);
	CHECK(!voldb_port_conflict(db, voldb_find(db, "aaa")));
	CHECK(voldb_port_conflict(db, voldb_find(db, "vm2")));
	CHECK(!voldb_port_conflict(db, voldb_find(db, "vm1")));
	CHECK(strcmp(voldb_port_owner(db, 7790)->name, "aaa") == 0);
	CHECK(strcmp(voldb_port_owner(db, 7789)->name, "vm1") == 0);
	CHECK(voldb_port_owner(db, 7788) == NULL);

	/* The loser moves: the next version, same volume, a free port. */
	CHECK(voldb_move(db, "vm2", 7, 7789, &t) == 0);
	CHECK(t.version == 2 && t.origin == 7 && t.port == 7791);
	CHECK(!memcmp(t.uuid, voldb_find(db, "vm2")->uuid, 16) && t.size == 1 << 30);
	CHECK(voldb_sent(db, &t) == 0);
	CHECK(voldb_move(db, "vm2", 7, 7789, &v) == -EBUSY);	/* once */
	CHECK(voldb_create(db, "vm4", 512, two, 2, 5, 7789, &v, &why) == 0);
	CHECK(v.port == 7792);				/* 7791 is awaited */
	/* A copy of the old version (a member's state) does not settle it. */
	CHECK(voldb_merge(db, voldb_find(db, "vm2")) == VOLDB_SAME);
	CHECK(voldb_move(db, "vm2", 7, 7789, &v) == -EBUSY);
	CHECK(voldb_merge(db, &t) == VOLDB_UPDATED);
	CHECK(!voldb_port_conflict(db, voldb_find(db, "vm2")));
	CHECK(strcmp(voldb_port_owner(db, 7791)->name, "vm2") == 0);
	CHECK(voldb_move(db, "nope", 7, 7789, &v) == -ENOENT);
	CHECK(voldb_move(db, "vm2", 7, 65535, &v) == -ENOSPC);	/* x has it */
	voldb_free(db);
	voldb_free(NULL);
}

/* ---- the file format --------------------------------------------------------- */

static void test_format_parse(void)
{
	struct voldef v = def("vm1", 7, 3, true), back;
	char text[1024], err[128], bad[VOLDB_FILE_MAX + 1];
	int len;
	static const struct {
		const char *from, *to;
	} edits[] = {
		{ "format = 1", "format = 2" },
		{ "format = 1", "" },
		{ "size = 1048576", "size = 1048577" },
		{ "size = 1048576", "size = -1" },
		{ "size = 1048576", "size = 1M" },
		{ "port = 7789", "port = 65536" },
		{ "port = 7789", "port = 0" },
		{ "nodes = n1,n2", "nodes = n1" },
		{ "nodes = n1,n2", "nodes = n1,n1" },
		{ "nodes = n1,n2", "nodes = n1,,n2" },
		{ "nodes = n1,n2", "nodes = n1,n2," },
		{ "nodes = n1,n2", "nodes = a,b,c,d" },
		{ "deleted = yes", "deleted = maybe" },
		{ "origin = 3", "origin = 0" },
		{ "origin = 3", "origin = 4294967296" },
		{ "version = 7", "version = 0" },
		{ "name = vm1", "name = ../etc" },
		{ "name = vm1", "name = vm1\nname = vm1" },
		{ "uuid = 42", "uuid = zz" },
		{ "uuid = 42", "uuid = -42" },
		{ "version = 7", "version 7" },
		{ "version = 7", "colour = blue" },
	};

	v.n_nodes = 2;
	len = voldef_format(&v, text, sizeof(text));
	CHECK(len > 0 && (size_t)len == strlen(text));
	CHECK(voldef_parse(text, &back, err, sizeof(err)) == 0);
	CHECK(!memcmp(&v, &back, sizeof(v)));
	CHECK(voldef_format(&v, text, (size_t)len) == -ENOBUFS);
	len = voldef_format(&v, text, sizeof(text));
	/* Blank lines, comments and spaces are fine. */
	snprintf(bad, sizeof(bad), "\n# hello\n  \n%s\n\n", text);
	CHECK(voldef_parse(bad, &back, err, sizeof(err)) == 0);
	for (size_t i = 0; i < ARRAY_SIZE(edits); i++) {
		char *at = strstr(text, edits[i].from);
		size_t flen = strlen(edits[i].from);
		if (!at) {	/* the uuid: a prefix is enough */
			CHECK_MSG(false, "edit %zu: %s not in the text", i, edits[i].from);
			continue;
		}
		snprintf(bad, sizeof(bad), "%.*s%s%s", (int)(at - text), text, edits[i].to,
			 at + flen + (strncmp(edits[i].from, "uuid", 4) ? 0 : 34));
		err[0] = 0;
		CHECK_MSG(voldef_parse(bad, &back, err, sizeof(err)) == -EINVAL && err[0],
			  "edit %zu (%s) accepted", i, edits[i].to);
	}
	printf("example parse error: %s\n", err);
	CHECK(voldef_parse("", &back, err, sizeof(err)) == -EINVAL);
	memset(bad, 'x', sizeof(bad) - 1);
	bad[sizeof(bad) - 1] = 0;
	CHECK(voldef_parse(bad, &back, err, sizeof(err)) == -EINVAL);
}

/* ---- persistence ----------------------------------------------------------- */

static int write_str(const char *dir, const char *name, const char *s)
{
	char path[512];
	int fd, r;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -errno;
	r = full_write(fd, s, strlen(s));
	close(fd);
	return r;
}

/* Names in dir, space separated, sorted is not needed: counts. */
static void count_files(const char *dir, int *vol, int *tmp, int *other)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	*vol = *tmp = *other = 0;
	while (d && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (e->d_name[0] == '.' && (n <= 2 && strspn(e->d_name, ".") == n))
			continue;
		if (n > 4 && !strcmp(e->d_name + n - 4, ".tmp"))
			(*tmp)++;
		else if (n > 4 && !strcmp(e->d_name + n - 4, ".vol"))
			(*vol)++;
		else
			(*other)++;
	}
	if (d)
		closedir(d);
}

static void remove_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[512];

	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

static void test_persistence(void)
{
	char top[] = "/tmp/test-voldb.XXXXXX", dir[256], text[VOLDB_FILE_MAX];
	struct voldb *db, *db2;
	struct voldef a = def("alpha", 1, 1, false), b = def("beta", 3, 2, true);
	struct voldef a2 = def("alpha", 2, 1, false);
	int vol, tmp, other;

	CHECK(mkdtemp(top) != NULL);
	snprintf(dir, sizeof(dir), "%s/volumes", top);
	CHECK(voldb_new(dir, &db) == 0);	/* creates the directory */
	CHECK(voldb_load(db) == 0 && voldb_count(db) == 0);
	a.n_nodes = 3;
	strcpy(a.nodes[2], "n3");
	a2.port = 7800;
	b.port = 7790;
	CHECK(voldb_accept(db, &a) == VOLDB_NEW);
	CHECK(voldb_accept(db, &b) == VOLDB_NEW);
	CHECK(voldb_accept(db, &a2) == VOLDB_UPDATED);
	CHECK(voldb_accept(db, &a) == VOLDB_OLDER);
	CHECK(voldb_accept(db, &b) == VOLDB_SAME);
	count_files(dir, &vol, &tmp, &other);
	CHECK_MSG(vol == 2 && tmp == 0 && other == 0, "%d vol, %d tmp, %d other", vol, tmp, other);

	/* Garbage beside them: skipped, reported, not fatal. */
	CHECK(write_str(dir, "junk.vol", "this is not a definition\n") == 0);
	CHECK(voldef_format(&a, text, sizeof(text)) > 0);
	CHECK(write_str(dir, "other.vol", text) == 0);		/* says "alpha" */
	CHECK(write_str(dir, "empty.vol", "") == 0);
	CHECK(write_str(dir, "README", "hello\n") == 0);
	CHECK(write_str(dir, ".gamma.vol.tmp", "half a wri") == 0);	/* a crash mid-write */
	CHECK(mkdir(strcat(strcpy(text, dir), "/dir.vol"), 0700) == 0);

	CHECK(voldb_new(dir, &db2) == 0);
	CHECK_MSG(voldb_load(db2) == 5, "skipped count");
	CHECK(voldb_count(db2) == 2);
	CHECK(voldb_find(db2, "alpha") && !memcmp(voldb_find(db2, "alpha"), &a2, sizeof(a2)));
	CHECK(voldb_find(db2, "beta") && !memcmp(voldb_find(db2, "beta"), &b, sizeof(b)));
	CHECK(!voldb_find(db2, "other") && !voldb_find(db2, "junk"));
	count_files(dir, &vol, &tmp, &other);
	CHECK_MSG(tmp == 0, "the stale temporary file was not removed");
	/* Same content on both. */
	for (size_t i = 0; i < voldb_count(db); i++)
		CHECK(!memcmp(voldb_at(db, i), voldb_at(db2, i), sizeof(struct voldef)));
	CHECK(voldb_at(db2, 2) == NULL);
	voldb_free(db2);
	voldb_free(db);

	/* A write that cannot happen (NAME.vol is a directory: the rename
	 * fails, even for root) changes nothing and leaves no temporary file. */
	CHECK(voldb_new(dir, &db) == 0);
	CHECK(voldb_load(db) == 5);
	{
		struct voldef c = def("dir", 1, 1, false);
		int r = voldb_accept(db, &c);
		CHECK_MSG(r == -EISDIR, "accept over a directory: %d", r);
		CHECK(!voldb_find(db, "dir"));
		count_files(dir, &vol, &tmp, &other);
		CHECK(tmp == 0);
	}
	rmdir(strcat(strcpy(text, dir), "/dir.vol"));
	voldb_free(db);
	remove_tree(dir);
	rmdir(top);
}

static void quiet(int level, const char *msg, void *data)
{
	(void)level;
	(void)data;
	fprintf(stderr, "  (log) %s\n", msg);
}

int main(void)
{
	rlog_set_sink(quiet, NULL);
	test_merge_table();
	test_merge_invalid();
	test_convergence();
	test_resize_merge();
	test_resize_convergence();
	test_resize_make();
	test_create_delete();
	test_sent();
	test_format_parse();
	test_persistence();
	return unit_done("test-voldb");
}
