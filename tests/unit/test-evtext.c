/* test-evtext.c: the text "replagent events" and "replagent status" print
 * for events, snapshots and the cluster view (agent/evtext.c), from JSON
 * lines as the daemon sends them. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "evtext.h"
#include "json.h"
#include "unit.h"
#include "util.h"

#define T "\"time\":\"2024-05-01T12:00:00.123Z\",\"time_ms\":1714564800123"
#define TT "2024-05-01 12:00:00.123 "

static const struct {
	const char *json;
	const char *want;
} events[] = {
	{ "{\"kind\":\"volume\"," T ",\"volume\":\"vol0\",\"changes\":["
	  "{\"field\":\"role\",\"from\":\"Secondary\",\"to\":\"Primary\"}]}",
	  TT "vol0 role Secondary -> Primary\n" },
	{ "{\"kind\":\"volume\"," T ",\"volume\":\"vol0\",\"changes\":["
	  "{\"field\":\"link\",\"peer\":\"n2\",\"from\":\"Connected\",\"to\":\"Disconnected\"},"
	  "{\"field\":\"peer_disk\",\"peer\":\"n2\",\"from\":\"UpToDate\",\"to\":\"DUnknown\"},"
	  "{\"field\":\"peer_role\",\"peer\":\"n2\",\"from\":\"Secondary\",\"to\":\"Unknown\"}]}",
	  TT "vol0 peer n2 Connected -> Disconnected\n"
	  TT "vol0 peer n2 disk UpToDate -> DUnknown\n"
	  TT "vol0 peer n2 role Secondary -> Unknown\n" },
	{ "{\"kind\":\"volume\"," T ",\"volume\":\"vol0\",\"changes\":["
	  "{\"field\":\"io_frozen\",\"from\":false,\"to\":true},"
	  "{\"field\":\"disk\",\"from\":\"UpToDate\",\"to\":\"Outdated\"},"
	  "{\"field\":\"up\",\"from\":true,\"to\":false}]}",
	  TT "vol0 I/O frozen\n" TT "vol0 disk UpToDate -> Outdated\n" TT "vol0 down\n" },
	{ "{\"kind\":\"volume\"," T ",\"volume\":\"vol0\",\"changes\":["
	  "{\"field\":\"power_lost\",\"from\":false,\"to\":true},"
	  "{\"field\":\"crashed_primary\",\"from\":true,\"to\":false}]}",
	  TT "vol0 lost power: writes it acknowledged may be gone\n"
	  TT "vol0 resynced after going down as Primary\n" },
	{ "{\"kind\":\"volume\"," T ",\"volume\":\"vol1\",\"changes\":["
	  "{\"field\":\"present\",\"from\":false,\"to\":true}],\"state\":{}}",
	  TT "vol1 added\n" },
	{ "{\"kind\":\"volume\"," T ",\"volume\":\"vol1\",\"changes\":["
	  "{\"field\":\"present\",\"from\":true,\"to\":false}],\"state\":null}",
	  TT "vol1 removed\n" },
	{ "{\"kind\":\"cluster\"," T ",\"changes\":["
	  "{\"field\":\"quorate\",\"from\":true,\"to\":false},"
	  "{\"field\":\"member\",\"node\":\"n3\",\"nodeid\":3,\"from\":true,\"to\":false}]}",
	  TT "cluster quorum lost\n" TT "cluster node n3 left\n" },
	{ "{\"kind\":\"cluster\"," T ",\"changes\":["
	  "{\"field\":\"quorate\",\"from\":false,\"to\":true},"
	  "{\"field\":\"synced\",\"from\":true,\"to\":false},"
	  "{\"field\":\"connected\",\"from\":false,\"to\":true},"
	  "{\"field\":\"member\",\"node\":\"n3\",\"nodeid\":3,\"from\":false,\"to\":true},"
	  "{\"field\":\"address\",\"node\":\"n3\",\"nodeid\":3,\"from\":null,\"to\":\"10.0.0.3\"}]}",
	  TT "cluster quorate\n" TT "cluster state exchange running\n"
	  TT "cluster corosync connected\n" TT "cluster node n3 joined\n"
	  TT "cluster node n3 address none -> 10.0.0.3\n" },
	/* what a newer daemon may send */
	{ "{\"kind\":\"volume\"," T ",\"volume\":\"vol0\",\"changes\":["
	  "{\"field\":\"colour\",\"from\":\"red\",\"to\":\"blue\"}]}",
	  TT "vol0 colour red -> blue\n" },
	{ "{\"kind\":\"migration\"," T "}", TT "event migration\n" },
	{ "{\"kind\":\"volume\",\"time\":\"later\",\"volume\":\"v\\u0007x\",\"changes\":["
	  "{\"field\":\"role\",\"from\":\"A\",\"to\":\"B\\nC\"}]}",
	  "later v?x role A -> B?C\n" },
	{ "{\"kind\":\"volume\"," T ",\"volume\":\"vol0\",\"changes\":[]}", "" },
};

static void test_events(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(events); i++) {
		struct json_value *v = NULL;
		char buf[4096];
		unsigned n, lines = 0;

		CHECK_MSG(json_parse(events[i].json, strlen(events[i].json), &v) == 0,
			  "event %zu does not parse", i);
		if (!v)
			continue;
		n = evtext_event(v, buf, sizeof(buf));
		for (const char *p = events[i].want; (p = strchr(p, '\n')); p++)
			lines++;
		CHECK_MSG(!strcmp(buf, events[i].want), "event %zu:\n%s---- want:\n%s", i, buf,
			  events[i].want);
		CHECK_MSG(n == lines, "event %zu: %u lines, want %u", i, n, lines);
		json_value_free(v);
	}
}

static const struct {
	const char *json;
	const char *want;	/* NULL: no line */
} clusters[] = {
	{ "{\"mode\":\"static\"}", NULL },
	{ "{\"mode\":\"corosync\",\"node\":\"n1\",\"nodeid\":1,\"connected\":true,"
	  "\"quorate\":true,\"synced\":true,\"nodes\":["
	  "{\"name\":\"n1\",\"nodeid\":1,\"address\":\"a\",\"member\":true},"
	  "{\"name\":\"n2\",\"nodeid\":2,\"address\":\"b\",\"member\":true},"
	  "{\"name\":\"n3\",\"nodeid\":3,\"address\":\"c\",\"member\":false}]}",
	  "cluster: quorate; nodes n1 (member) n2 (member) n3 (gone)" },
	{ "{\"mode\":\"corosync\",\"connected\":true,\"quorate\":false,\"synced\":false,"
	  "\"nodes\":[{\"name\":null,\"nodeid\":7,\"member\":true}]}",
	  "cluster: NOT quorate, exchanging state; nodes nodeid 7 (member)" },
	{ "{\"mode\":\"corosync\",\"connected\":false,\"quorate\":false,\"synced\":true,"
	  "\"nodes\":[]}", "cluster: corosync unreachable, NOT quorate; nodes" },
	{ "{\"mode\":\"raft\"}", "cluster: mode raft" },
};

static void test_cluster(void)
{
	char buf[1024];

	for (size_t i = 0; i < ARRAY_SIZE(clusters); i++) {
		struct json_value *v = NULL;
		bool shown;

		CHECK(json_parse(clusters[i].json, strlen(clusters[i].json), &v) == 0);
		shown = evtext_cluster(v, buf, sizeof(buf));
		CHECK_MSG(shown == (clusters[i].want != NULL), "cluster %zu: shown %d", i, shown);
		if (clusters[i].want)
			CHECK_MSG(!strcmp(buf, clusters[i].want), "cluster %zu: \"%s\"", i, buf);
		else
			CHECK(buf[0] == '\0');
		json_value_free(v);
	}
	CHECK(!evtext_cluster(NULL, buf, sizeof(buf)));
}

static void test_snapshot(void)
{
	static const char json[] =
		"{\"ok\":true,\"kind\":\"snapshot\"," T ",\"node\":\"n1\",\"volumes\":["
		"{\"name\":\"vol0\",\"role\":\"Primary\",\"disk\":\"UpToDate\",\"io_frozen\":true,"
		"\"peers\":[{\"node\":\"n2\",\"link\":\"Connected\",\"peer_role\":\"Secondary\","
		"\"peer_disk\":\"UpToDate\"}]},"
		"{\"name\":\"vol1\",\"role\":\"Secondary\",\"disk\":\"Outdated\",\"peers\":[]}],"
		"\"cluster\":{\"mode\":\"corosync\",\"connected\":true,\"quorate\":true,"
		"\"synced\":true,\"nodes\":[{\"name\":\"n1\",\"nodeid\":1,\"member\":true}]}}";
	struct json_value *v = NULL;
	char buf[4096];

	CHECK(json_parse(json, strlen(json), &v) == 0);
	CHECK(evtext_snapshot(v, buf, sizeof(buf)) == 4);
	CHECK_MSG(!strcmp(buf, TT "node n1, 2 volume(s)\n"
			  TT "vol0 Primary UpToDate, I/O frozen; peer n2 Connected Secondary UpToDate\n"
			  TT "vol1 Secondary Outdated\n"
			  TT "cluster: quorate; nodes n1 (member)\n"), "snapshot:\n%s", buf);
	json_value_free(v);
	/* a short buffer: cut, still a string */
	CHECK(json_parse(json, strlen(json), &v) == 0);
	evtext_snapshot(v, buf, 10);
	CHECK(strlen(buf) < 10);
	json_value_free(v);
}

int main(void)
{
	setenv("TZ", "UTC", 1);
	tzset();
	test_events();
	test_cluster();
	test_snapshot();
	return unit_done("test-evtext");
}
