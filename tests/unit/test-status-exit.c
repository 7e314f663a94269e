/* test-status-exit.c: the exit code of "replagent status" (agent/health.c)
 * from tables of volume states and of cluster views, and the problem it
 * names. */
#include "config.h"

#include <string.h>

#include "health.h"
#include "unit.h"
#include "util.h"

#define P(node, link, disk) { node, link, disk }
#define NONE 0, { { 0 } }

static const struct {
	const char *role, *disk;
	bool frozen;
	unsigned n_peers;
	struct health_peer peers[2];
	enum health want;
	const char *why;	/* substring of the explanation, or NULL */
} cases[] = {
	/* healthy */
	{ "Primary", "UpToDate", false, NONE, HEALTH_OK, NULL },
	{ "Secondary", "UpToDate", false, NONE, HEALTH_OK, NULL },
	{ "Primary", "UpToDate", false, 2,
	  { P("n2", "Connected", "UpToDate"), P("n3", "Connected", "UpToDate") },
	  HEALTH_OK, NULL },
	{ "Secondary", "UpToDate", false, 1, { P("n1", "Connected", "UpToDate") },
	  HEALTH_OK, NULL },
	/* degraded */
	{ "Primary", "UpToDate", false, 2,
	  { P("n2", "Connected", "UpToDate"), P("n3", "Disconnected", "DUnknown") },
	  HEALTH_DEGRADED, "peer n3 Disconnected" },
	{ "Primary", "UpToDate", false, 1, { P("n2", "Connecting", "DUnknown") },
	  HEALTH_DEGRADED, "not connected" },
	{ "Primary", "UpToDate", false, 1, { P("n2", "SyncSource", "Inconsistent") },
	  HEALTH_DEGRADED, "resync running" },
	{ "Secondary", "Inconsistent", false, 1, { P("n1", "SyncTarget", "UpToDate") },
	  HEALTH_DEGRADED, NULL },
	{ "Primary", "UpToDate", false, 1, { P("n2", "Connected", "Outdated") },
	  HEALTH_DEGRADED, "disk Outdated" },
	{ "Primary", "UpToDate", false, 1, { P("n2", "Connected", "Inconsistent") },
	  HEALTH_DEGRADED, "peer n2 disk Inconsistent" },
	{ "Secondary", "Outdated", false, 1, { P("n1", "Connected", "UpToDate") },
	  HEALTH_DEGRADED, "disk Outdated" },
	{ "Primary", "UpToDate", true, 1, { P("n2", "Disconnected", "DUnknown") },
	  HEALTH_DEGRADED, NULL },
	{ "Primary", "UpToDate", true, NONE, HEALTH_DEGRADED, "I/O frozen" },
	/* critical */
	{ "Primary", "UpToDate", false, 2,
	  { P("n2", "StandAlone", "DUnknown"), P("n3", "Connected", "UpToDate") },
	  HEALTH_CRITICAL, "peer n2 StandAlone (split brain" },
	{ "Secondary", "UpToDate", false, 1, { P("n1", "StandAlone", "DUnknown") },
	  HEALTH_CRITICAL, "StandAlone" },
	{ "Primary", "Inconsistent", false, 1, { P("n2", "SyncTarget", "UpToDate") },
	  HEALTH_CRITICAL, "Primary with disk Inconsistent" },
	{ "Primary", "Outdated", false, NONE, HEALTH_CRITICAL, "Primary with disk Outdated" },
	{ "Secondary", "Failed", false, 1, { P("n1", "Connected", "UpToDate") },
	  HEALTH_CRITICAL, "local disk failed" },
	{ "Secondary", "Diskless", false, 1, { P("n1", "Connected", "UpToDate") },
	  HEALTH_CRITICAL, "no local disk" },
	{ "Primary", "Failed", true, 1, { P("n2", "Disconnected", "DUnknown") },
	  HEALTH_CRITICAL, "failed" },
	/* critical beats unknown, unknown beats degraded */
	{ "Primary", "UpToDate", false, 2,
	  { P("n2", "Bogus", "UpToDate"), P("n3", "StandAlone", "DUnknown") },
	  HEALTH_CRITICAL, "n3" },
	{ "Primary", "UpToDate", false, 2,
	  { P("n2", "Disconnected", "DUnknown"), P("n3", "Bogus", "UpToDate") },
	  HEALTH_UNKNOWN, "unknown link state Bogus" },
	/* unknown */
	{ "Primary", "Weird", false, NONE, HEALTH_UNKNOWN, "unknown disk state" },
	{ "Leader", "UpToDate", false, NONE, HEALTH_UNKNOWN, "unknown role Leader" },
	{ NULL, "UpToDate", false, NONE, HEALTH_UNKNOWN, NULL },
	{ "Primary", NULL, false, NONE, HEALTH_UNKNOWN, NULL },
	{ "Primary", "UpToDate", false, 1, { P("n2", NULL, "UpToDate") }, HEALTH_UNKNOWN, NULL },
	{ "Primary", "UpToDate", false, 1, { P("n2", "Connected", NULL) }, HEALTH_UNKNOWN, NULL },
	{ "Primary", "UpToDate", false, 1, { P("n2", "Connected", "Sideways") },
	  HEALTH_UNKNOWN, "unknown disk state Sideways" },
};

static void test_table(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct health_volume v = {
			.name = "vol0", .role = cases[i].role, .disk = cases[i].disk,
			.io_frozen = cases[i].frozen, .n_peers = cases[i].n_peers,
			.peers = cases[i].peers,
		};
		char why[256];
		enum health h = health_volume(&v, why, sizeof(why));

		CHECK_MSG(h == cases[i].want, "case %zu: got %s, want %s (%s)", i,
			  health_name(h), health_name(cases[i].want), why);
		CHECK_MSG((h == HEALTH_OK) == (why[0] == '\0'), "case %zu: why \"%s\"", i, why);
		if (cases[i].why)
			CHECK_MSG(strstr(why, cases[i].why), "case %zu: why \"%s\" lacks \"%s\"",
				  i, why, cases[i].why);
	}
}

/* The cluster's part: tri-states are 1 yes, 0 no, -1 missing. */
static const struct health_node three_up[] = { { "n1", true }, { "n2", true }, { "n3", true } };
static const struct health_node n3_gone[] = { { "n1", true }, { "n2", true }, { "n3", false } };
static const struct health_node alone[] = { { "n1", true }, { "n2", false }, { "n3", false } };
static const struct health_node unnamed[] = { { "n1", true }, { NULL, true }, { NULL, false } };

static const struct {
	struct health_cluster c;
	enum health want;
	const char *why;
} cluster_cases[] = {
	/* nothing to judge */
	{ { NULL, -1, -1, -1, -1, 0, NULL }, HEALTH_OK, NULL },
	{ { "static", -1, -1, -1, -1, 0, NULL }, HEALTH_OK, NULL },
	/* healthy */
	{ { "corosync", 1, 1, 1, 0, 3, three_up }, HEALTH_OK, NULL },
	{ { "corosync", 1, 1, 1, 0, 0, NULL }, HEALTH_OK, NULL },
	{ { "corosync", 1, 1, 1, 0, 3, unnamed }, HEALTH_OK, NULL },
	/* degraded */
	{ { "corosync", 1, 1, 1, 0, 3, n3_gone }, HEALTH_DEGRADED, "node n3 gone" },
	{ { "corosync", 1, 1, 0, 0, 3, three_up }, HEALTH_DEGRADED, "state exchange running" },
	{ { "corosync", 1, 1, 0, 0, 3, n3_gone }, HEALTH_DEGRADED, "state exchange" },
	/* a member of another protocol version; an older daemon does not say */
	{ { "corosync", 1, 1, 1, 1, 3, three_up }, HEALTH_DEGRADED, "mixed protocol versions" },
	{ { "corosync", 1, 1, 1, -1, 3, three_up }, HEALTH_OK, NULL },
	{ { "corosync", 1, 1, 1, 1, 3, n3_gone }, HEALTH_DEGRADED, NULL },
	{ { "corosync", 1, 0, 1, 1, 3, alone }, HEALTH_CRITICAL, "not quorate" },
	/* critical */
	{ { "corosync", 1, 0, 1, 0, 3, alone }, HEALTH_CRITICAL, "partition not quorate" },
	{ { "corosync", 1, 0, 0, 0, 3, alone }, HEALTH_CRITICAL, "not quorate" },
	{ { "corosync", 0, 0, 0, 0, 3, alone }, HEALTH_CRITICAL, "corosync not connected" },
	{ { "corosync", 1, 0, -1, 0, 3, three_up }, HEALTH_CRITICAL, "not quorate" },
	/* unknown */
	{ { "raft", 1, 1, 1, 0, 3, three_up }, HEALTH_UNKNOWN, "unknown mode raft" },
	{ { "corosync", 1, -1, 1, 0, 3, three_up }, HEALTH_UNKNOWN, "quorate" },
	{ { "corosync", -1, 1, 1, 0, 3, three_up }, HEALTH_UNKNOWN, "connected" },
	{ { "corosync", 1, 1, -1, 0, 3, n3_gone }, HEALTH_UNKNOWN, "synced" },
};

static void test_cluster(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(cluster_cases); i++) {
		char why[256];
		enum health h = health_cluster(&cluster_cases[i].c, why, sizeof(why));

		CHECK_MSG(h == cluster_cases[i].want, "cluster case %zu: got %s, want %s (%s)", i,
			  health_name(h), health_name(cluster_cases[i].want), why);
		CHECK_MSG((h == HEALTH_OK) == (why[0] == '\0'), "cluster case %zu: why \"%s\"",
			  i, why);
		if (cluster_cases[i].why)
			CHECK_MSG(strstr(why, cluster_cases[i].why),
				  "cluster case %zu: why \"%s\" lacks \"%s\"", i, why,
				  cluster_cases[i].why);
	}
	CHECK(health_cluster(&cluster_cases[12].c, NULL, 0) == HEALTH_CRITICAL);
}

static void test_worse(void)
{
	static const enum health order[] = {
		HEALTH_OK, HEALTH_DEGRADED, HEALTH_UNKNOWN, HEALTH_CRITICAL,
	};

	for (size_t i = 0; i < ARRAY_SIZE(order); i++)
		for (size_t j = 0; j < ARRAY_SIZE(order); j++)
			CHECK(health_worse(order[i], order[j]) == order[MAX(i, j)]);
	CHECK(!strcmp(health_name(HEALTH_CRITICAL), "CRITICAL"));
	CHECK(HEALTH_OK == 0 && HEALTH_DEGRADED == 1 && HEALTH_CRITICAL == 2 &&
	      HEALTH_UNKNOWN == 3);
}

/* A replica that cannot grow: degraded, and the reason is shown; worse
 * problems still win. */
static void test_grow(void)
{
	static const struct health_peer up[] = { P("n2", "Connected", "UpToDate") };
	static const struct health_peer sa[] = { P("n2", "StandAlone", "DUnknown") };
	struct health_volume v = {
		.name = "vol0", .role = "Secondary", .disk = "UpToDate",
		.grow_error = "device /dev/sdb has 64.0 MiB, the volume needs 96.0 MiB",
		.n_peers = 1, .peers = up,
	};
	char why[256];

	CHECK(health_volume(&v, why, sizeof(why)) == HEALTH_DEGRADED);
	CHECK_MSG(strstr(why, "vol0: cannot grow (device /dev/sdb"), "why \"%s\"", why);
	v.grow_error = "";
	CHECK(health_volume(&v, why, sizeof(why)) == HEALTH_OK);
	v.grow_error = "no space left on device";
	v.peers = sa;
	CHECK(health_volume(&v, why, sizeof(why)) == HEALTH_CRITICAL);
	CHECK_MSG(strstr(why, "StandAlone"), "why \"%s\"", why);
}

/* A resync that waits (a region failed: a full disk) is degraded, as any
 * resync, and says why. */
static void test_resync_waiting(void)
{
	static const struct health_peer rs[] = {
		{ "n2", "SyncSource", "Inconsistent", "n2's disk failed a write: No space left on device" },
	};
	static const struct health_peer plain[] = { { "n2", "SyncSource", "Inconsistent", "" } };
	struct health_volume v = {
		.name = "vol0", .role = "Primary", .disk = "UpToDate", .n_peers = 1, .peers = rs,
	};
	char why[256];

	CHECK(health_volume(&v, why, sizeof(why)) == HEALTH_DEGRADED);
	CHECK_MSG(!strcmp(why, "vol0: peer n2 SyncSource (resync waiting: n2's disk failed a "
			  "write: No space left on device)"), "why \"%s\"", why);
	v.peers = plain;
	CHECK(health_volume(&v, why, sizeof(why)) == HEALTH_DEGRADED);
	CHECK_MSG(!strcmp(why, "vol0: peer n2 SyncSource (resync running)"), "why \"%s\"", why);
}

/* A volume that could not be opened: critical with its reason, whatever
 * else it says (and even with unknown states beside it). */
static void test_failed(void)
{
	struct health_volume v = {
		.name = "bad1", .role = "Secondary", .disk = "Failed",
		.failed = "metadata /s/bad1.meta is damaged",
	};
	char why[256];

	CHECK(health_volume(&v, why, sizeof(why)) == HEALTH_CRITICAL);
	CHECK_MSG(!strcmp(why, "bad1: failed (metadata /s/bad1.meta is damaged)"),
		  "why \"%s\"", why);
	v.role = "Bogus";
	v.disk = NULL;
	CHECK(health_volume(&v, why, sizeof(why)) == HEALTH_CRITICAL);
	CHECK_MSG(strstr(why, "bad1: failed (metadata"), "why \"%s\"", why);
	v.failed = "";
	CHECK(health_volume(&v, why, sizeof(why)) == HEALTH_CRITICAL);
	CHECK_MSG(strstr(why, "could not be opened"), "why \"%s\"", why);
}

/* Writes failing for want of metadata: critical, with the reason, even
 * with every peer in sync; none ("" or NULL): no effect. */
static void test_meta(void)
{
	static const struct health_peer up[] = { P("n2", "Connected", "UpToDate") };
	struct health_volume v = {
		.name = "vol0", .role = "Primary", .disk = "UpToDate",
		.meta_error = "metadata failing (Input/output error)",
		.n_peers = 1, .peers = up,
	};
	char why[256];

	CHECK(health_volume(&v, why, sizeof(why)) == HEALTH_CRITICAL);
	CHECK_MSG(strstr(why, "vol0: writes fail (metadata failing"), "why \"%s\"", why);
	v.meta_error = "";
	CHECK(health_volume(&v, why, sizeof(why)) == HEALTH_OK);
	v.meta_error = NULL;
	CHECK(health_volume(&v, why, sizeof(why)) == HEALTH_OK);
}

static void test_no_why(void)
{
	struct health_volume v = { .name = "v", .role = "Primary", .disk = "Failed" };
	char tiny[4];

	CHECK(health_volume(&v, NULL, 0) == HEALTH_CRITICAL);
	CHECK(health_volume(&v, tiny, sizeof(tiny)) == HEALTH_CRITICAL);
	CHECK(strlen(tiny) == 3);
}

int main(void)
{
	test_table();
	test_cluster();
	test_worse();
	test_grow();
	test_resync_waiting();
	test_failed();
	test_meta();
	test_no_why();
	return unit_done("test-status-exit");
}
