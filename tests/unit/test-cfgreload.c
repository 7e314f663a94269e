/* test-cfgreload.c: what a SIGHUP reload applies, adds or names for a
 * restart (agent/cfgreload.c), one case per key of the configuration file,
 * as the summary line the daemon logs; and the moves into the running
 * configuration. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include "cfgreload.h"
#include "unit.h"
#include "util.h"

#define GLOBAL \
	"[global]\nnode = n1\ncontrol-socket = /run/r/c.sock\nstate-dir = /var/lib/r\n"
#define VOL0 \
	"[volume vol0]\nbacking = /d/vol0.img\nsize = 1G\n" \
	"replica = n1 10.0.0.1:7789\nreplica = n2 10.0.0.2:7789\n"
#define LOCAL "[volume scratch]\nbacking = /d/s.img\n"

static const char base[] = GLOBAL VOL0 LOCAL;

static const struct {
	const char *text;
	const char *want;	/* the summary */
	bool log_level, tuning;
} cases[] = {
	{ base, "nothing changed", false, false },
	{ "# a comment\n" GLOBAL "\n" VOL0 "\n" LOCAL, "nothing changed", false, false },
	/* applied at run time */
	{ GLOBAL "log-level = debug\n" VOL0 LOCAL, "applied log-level", true, false },
	{ GLOBAL "resync-rate-max = 50M/s\n" VOL0 LOCAL, "applied resync-rate-max", false, true },
	{ GLOBAL "outdate-timeout = 30\n" VOL0 LOCAL, "applied outdate-timeout", false, true },
	{ GLOBAL "after-sb-0pri = disconnect\n" VOL0 LOCAL, "applied after-sb-0pri", false, true },
	{ GLOBAL "after-sb-1pri = disconnect\n" VOL0 LOCAL, "applied after-sb-1pri", false, true },
	/* the defaults written out are no change */
	{ GLOBAL "after-sb-0pri = discard-zero-changes\nafter-sb-1pri = consensus\n"
	  "after-sb-2pri = disconnect\noutdate-timeout = 10\nlog-level = info\n"
	  "resync-rate-max = 0\n" VOL0 LOCAL, "nothing changed", false, false },
	{ GLOBAL "log-level = err\nresync-rate-max = 1G\n" VOL0 LOCAL,
	  "applied log-level, resync-rate-max", true, true },
	/* a restart */
	{ "[global]\nnode = n9\ncontrol-socket = /run/r/c.sock\nstate-dir = /var/lib/r\n"
	  VOL0 LOCAL, "restart needed for node, [volume vol0] removed", false, false },
	{ GLOBAL "nbd-socket = /run/other.sock\n" VOL0 LOCAL, "restart needed for nbd-socket" },
	{ GLOBAL "nbd-socket = none\n" VOL0 LOCAL, "restart needed for nbd-socket" },
	{ GLOBAL "nbd-listen = :10809\n" VOL0 LOCAL, "restart needed for nbd-listen" },
	{ "[global]\nnode = n1\ncontrol-socket = /run/r/d.sock\nstate-dir = /var/lib/r\n"
	  VOL0 LOCAL, "restart needed for control-socket" },
	{ "[global]\nnode = n1\ncontrol-socket = /run/r/c.sock\nstate-dir = /var/lib/q\n"
	  VOL0 LOCAL, "restart needed for state-dir, [volume vol0] meta, [volume scratch] meta" },
	{ GLOBAL "pidfile = /run/x.pid\n" VOL0 LOCAL, "restart needed for pidfile" },
	{ GLOBAL "key-file = /etc/k\n" VOL0 LOCAL, "restart needed for key-file" },
	{ GLOBAL "cluster = corosync\n" VOL0 LOCAL, "restart needed for cluster" },
	{ GLOBAL "replication-address = 10.1.1.1\n" VOL0 LOCAL,
	  "restart needed for replication-address" },
	{ GLOBAL "data-dir = /data\n" VOL0 LOCAL, "restart needed for data-dir" },
	{ GLOBAL "metrics-listen = 127.0.0.1:9942\n" VOL0 LOCAL,
	  "restart needed for metrics-listen" },
	/* volumes */
	{ GLOBAL LOCAL, "restart needed for [volume vol0] removed" },
	{ GLOBAL "[volume vol0]\nbacking = /d/other.img\nsize = 1G\n"
	  "replica = n1 10.0.0.1:7789\nreplica = n2 10.0.0.2:7789\n" LOCAL,
	  "restart needed for [volume vol0] backing" },
	{ GLOBAL "[volume vol0]\nbacking = /d/vol0.img\nsize = 2G\n"
	  "replica = n1 10.0.0.1:7789\nreplica = n2 10.0.0.2:7789\n" LOCAL,
	  "restart needed for [volume vol0] size" },
	{ GLOBAL "[volume vol0]\nbacking = /d/vol0.img\nsize = 1G\nmeta = /m/vol0\n"
	  "replica = n1 10.0.0.1:7789\nreplica = n2 10.0.0.2:7789\n" LOCAL,
	  "restart needed for [volume vol0] meta" },
	{ GLOBAL "[volume vol0]\nbacking = /d/vol0.img\nsize = 1G\nio-threads = 2\n"
	  "replica = n1 10.0.0.1:7789\nreplica = n2 10.0.0.2:7789\n" LOCAL,
	  "restart needed for [volume vol0] io-threads" },
	{ GLOBAL "[volume vol0]\nbacking = /d/vol0.img\nsize = 1G\n"
	  "replica = n1 10.0.0.1:7789\nreplica = n2 10.0.0.2:7790\n" LOCAL,
	  "restart needed for [volume vol0] replica" },
	{ GLOBAL "[volume vol0]\nbacking = /d/vol0.img\nsize = 1G\n"
	  "replica = n2 10.0.0.2:7789\nreplica = n1 10.0.0.1:7789\n" LOCAL,
	  "restart needed for [volume vol0] replica" },
	{ GLOBAL "[volume vol0]\nbacking = /d/vol0.img\nsize = 1G\n"
	  "replica = n1 10.0.0.1:7789\nreplica = n2 10.0.0.2:7789\n"
	  "replica = n3 10.0.0.3:7789\n" LOCAL, "restart needed for [volume vol0] replica" },
	/* the replica line that took this node out: removed */
	{ GLOBAL "[volume vol0]\nbacking = /d/vol0.img\nsize = 1G\n"
	  "replica = n3 10.0.0.3:7789\nreplica = n2 10.0.0.2:7789\n" LOCAL,
	  "restart needed for [volume vol0] removed" },
	{ GLOBAL VOL0 LOCAL "[volume vol1]\nbacking = /d/vol1.img\nsize = 1G\n",
	  "added volume vol1" },
	{ GLOBAL VOL0 "[volume vol1]\nbacking = /d/vol1.img\nsize = 1G\n" LOCAL
	  "[volume vol2]\nbacking = /d/vol2.img\nsize = 1G\n"
	  "replica = n1 10.0.0.1:7790\nreplica = n2 10.0.0.2:7790\n",
	  "added volume vol1, vol2" },
	/* not served here: nothing to do */
	{ GLOBAL VOL0 LOCAL "[volume far]\nbacking = /d/far.img\nsize = 1G\n"
	  "replica = n2 10.0.0.2:7790\nreplica = n3 10.0.0.3:7790\n", "nothing changed" },
	/* all at once, in that order */
	{ GLOBAL "log-level = debug\noutdate-timeout = 5\npidfile = /x.pid\n"
	  "[volume vol0]\nbacking = /d/vol0.img\nsize = 1G\nio-threads = 3\n"
	  "replica = n1 10.0.0.1:7789\nreplica = n2 10.0.0.2:7789\n"
	  "[volume vol1]\nbacking = /d/vol1.img\nsize = 1G\n",
	  "applied log-level, outdate-timeout; added volume vol1; restart needed for pidfile, "
	  "[volume vol0] io-threads, [volume scratch] removed", true, true },
};

static struct cfg *parse(const char *text)
{
	char err[256];
	struct cfg *c = NULL;

	if (cfg_parse_string("test.conf", text, &c, err, sizeof(err)) < 0)
		fprintf(stderr, "parse: %s\n", err);
	return c;
}

static void test_plan(void)
{
	struct cfg *run = parse(base);

	CHECK(run != NULL);
	for (size_t i = 0; run && i < ARRAY_SIZE(cases); i++) {
		struct cfg *next = parse(cases[i].text);
		struct cfgreload r;
		char sum[1024];

		CHECK_MSG(next != NULL, "case %zu does not parse", i);
		if (!next)
			continue;
		cfgreload_plan(run, next, &r);
		cfgreload_summary(&r, next, NULL, sum, sizeof(sum));
		CHECK_MSG(!strcmp(sum, cases[i].want), "case %zu: \"%s\", want \"%s\"", i, sum,
			  cases[i].want);
		CHECK_MSG(r.log_level == cases[i].log_level && r.tuning == cases[i].tuning,
			  "case %zu: log_level %d tuning %d", i, r.log_level, r.tuning);
		cfg_free(next);
	}
	cfg_free(run);
}

static void test_cluster_mode(void)
{
	struct cfg *run = parse(GLOBAL "cluster = corosync\n" VOL0);
	struct cfg *next = parse(GLOBAL "cluster = corosync\nresync-rate-max = 1M\n" VOL0
				 "[volume vol1]\nbacking = /d/vol1.img\nsize = 1G\n");
	struct cfgreload r;
	char sum[512];

	CHECK(run && next);
	if (!run || !next)
		return;
	cfgreload_plan(run, next, &r);
	cfgreload_summary(&r, next, NULL, sum, sizeof(sum));
	CHECK_MSG(!strcmp(sum, "applied resync-rate-max; restart needed for [volume vol1] new "
			  "(in cluster mode)"), "cluster mode: %s", sum);
	CHECK(r.n_added == 0);
	cfg_free(run);
	cfg_free(next);
}

static void test_take(void)
{
	struct cfg *run = parse(base);
	struct cfg *next = parse(GLOBAL "log-level = debug\nresync-rate-max = 7M\n"
				 "after-sb-2pri = disconnect\n" VOL0 LOCAL
				 "[volume vol1]\nbacking = /d/vol1.img\nsize = 1G\n"
				 "[volume vol2]\nbacking = /d/vol2.img\nsize = 1G\n");
	struct cfgreload r, again;
	bool failed[2] = { false, true };
	char sum[512];

	CHECK(run && next);
	if (!run || !next)
		return;
	cfgreload_plan(run, next, &r);
	CHECK(r.n_added == 2);
	cfgreload_summary(&r, next, failed, sum, sizeof(sum));
	CHECK_MSG(!strcmp(sum, "applied log-level, resync-rate-max; added volume vol1; "
			  "could not add volume vol2"), "with a failure: %s", sum);
	cfgreload_take_settings(run, next);
	CHECK(run->log_level == LOG_DEBUG && run->resync_rate_max == 7u << 20);
	CHECK(run->after_sb_set[2] && !run->after_sb_set[0]);
	CHECK(cfgreload_take_volume(run, next, r.added[0]) == 0);
	CHECK(run->n_volumes == 3 && !strcmp(run->volumes[2].name, "vol1"));
	CHECK(!strcmp(run->volumes[2].backing, "/d/vol1.img"));
	CHECK(next->volumes[r.added[0]].backing == NULL);
	/* Taken: the next reload of the same file adds only what failed. */
	cfg_free(next);
	next = parse(GLOBAL "log-level = debug\nresync-rate-max = 7M\n"
		     "after-sb-2pri = disconnect\n" VOL0 LOCAL
		     "[volume vol1]\nbacking = /d/vol1.img\nsize = 1G\n"
		     "[volume vol2]\nbacking = /d/vol2.img\nsize = 1G\n");
	cfgreload_plan(run, next, &again);
	cfgreload_summary(&again, next, NULL, sum, sizeof(sum));
	CHECK_MSG(!strcmp(sum, "added volume vol2"), "second reload: %s", sum);
	cfg_free(next);
	cfg_free(run);
}

static void test_many(void)
{
	char text[16384] = GLOBAL;
	struct cfg *run = parse(GLOBAL), *next;
	struct cfgreload r;
	char sum[4096];

	for (int i = 0; i < 40; i++) {
		size_t n = strlen(text);
		snprintf(text + n, sizeof(text) - n, "[volume v%d]\nbacking = /d/v%d\n", i, i);
	}
	next = parse(text);
	CHECK(run && next);
	if (!run || !next)
		return;
	cfgreload_plan(run, next, &r);
	CHECK(r.n_added == CFGRELOAD_ITEMS_MAX && r.n_restart == 40 - CFGRELOAD_ITEMS_MAX);
	cfgreload_summary(&r, next, NULL, sum, 64);
	CHECK(strlen(sum) < 64);
	cfg_free(next);
	cfg_free(run);
}

int main(void)
{
	test_plan();
	test_cluster_mode();
	test_take();
	test_many();
	return unit_done("test-cfgreload");
}
