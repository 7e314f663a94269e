/* test-metrics-text.c: the Prometheus text that /metrics serves
 * (agent/metrics_text.c) from snapshots made up here, and the latency
 * buckets the engine's counters put a duration in (replication/stats.c). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "metrics_text.h"
#include "stats.h"
#include "unit.h"
#include "util.h"

static unsigned count(const char *text, const char *s)
{
	unsigned n = 0;

	for (const char *p = text; (p = strstr(p, s)); p += strlen(s))
		n++;
	return n;
}

#define HAS(text, line) CHECK_MSG(strstr((text), line "\n"), "missing: %s", line)

static void fill(struct metrics_vol *v, const char *name)
{
	memset(v, 0, sizeof(*v));
	snprintf(v->st.name, sizeof(v->st.name), "%s", name);
	v->st.role = "Primary";
	v->st.disk = "UpToDate";
	v->st.up = true;
	v->st.size = 64 << 20;
	v->st.n_peers = 1;
	snprintf(v->st.peers[0].node, sizeof(v->st.peers[0].node), "n2");
	v->st.peers[0].link = REPL_LINK_STANDALONE;
	v->st.peers[0].link_name = "StandAlone";
	v->st.peers[0].peer_disk = "DUnknown";
	snprintf(v->st.peers[0].reason, sizeof(v->st.peers[0].reason), "split brain: resolve");
	v->st.peers[0].out_of_sync_bytes = 65536;
	v->sx.quorate = true;
	v->sx.n_peers = 1;
	v->sx.peers[0].inflight = 3;
	v->sx.requests[REPL_STAT_WRITE] = 7;
	v->sx.bytes[REPL_STAT_WRITE] = 7 * 4096;
	/* 1 in (0, 50us], 2 in (100us, 250us], 4 beyond 10 s */
	v->sx.latency[REPL_STAT_WRITE].bucket[0] = 1;
	v->sx.latency[REPL_STAT_WRITE].bucket[2] = 2;
	v->sx.latency[REPL_STAT_WRITE].bucket[REPL_HIST_BOUNDS] = 4;
	v->sx.latency[REPL_STAT_WRITE].count = 7;
	v->sx.latency[REPL_STAT_WRITE].sum_ns = 40001500000;
}

static void test_render(void)
{
	struct metrics_vol v[2];
	char *t = NULL;
	size_t len = 0;

	fill(&v[0], "vol0");
	fill(&v[1], "vol1");
	v[1].st.role = "Secondary";
	v[1].st.power_lost = true;
	v[1].st.partial = true;
	CHECK(metrics_render(v, 2, &t, &len) == 0);
	if (!t)
		return;
	CHECK(strlen(t) == len);
	CHECK(len > 0 && t[len - 1] == '\n');
	/* one HELP and TYPE per family, whatever the number of volumes */
	CHECK(count(t, "# TYPE replagent_requests_total counter\n") == 1);
	CHECK(count(t, "# TYPE replagent_request_duration_seconds histogram\n") == 1);
	CHECK(count(t, "# TYPE replagent_peer_ack_duration_seconds histogram\n") == 1);
	HAS(t, "replagent_volume_role{volume=\"vol0\",role=\"Primary\"} 1");
	HAS(t, "replagent_volume_role{volume=\"vol1\",role=\"Primary\"} 0");
	HAS(t, "replagent_volume_role{volume=\"vol1\",role=\"Secondary\"} 1");
	HAS(t, "replagent_volume_disk_state{volume=\"vol0\",state=\"UpToDate\"} 1");
	HAS(t, "replagent_volume_disk_state{volume=\"vol0\",state=\"Outdated\"} 0");
	HAS(t, "replagent_volume_size_bytes{volume=\"vol0\"} 67108864");
	HAS(t, "replagent_volume_quorate{volume=\"vol0\"} 1");
	HAS(t, "replagent_volume_power_lost{volume=\"vol0\"} 0");
	HAS(t, "replagent_volume_power_lost{volume=\"vol1\"} 1");
	HAS(t, "replagent_volume_partial{volume=\"vol0\"} 0");
	HAS(t, "replagent_volume_partial{volume=\"vol1\"} 1");
	HAS(t, "replagent_volume_crashed_primary{volume=\"vol1\"} 0");
	HAS(t, "replagent_requests_total{volume=\"vol0\",op=\"write\"} 7");
	HAS(t, "replagent_written_bytes_total{volume=\"vol0\"} 28672");
	/* cumulative buckets, bounds in seconds without trailing zeros */
	HAS(t, "replagent_request_duration_seconds_bucket{volume=\"vol0\",op=\"write\",le=\"0.00005\"} 1");
	HAS(t, "replagent_request_duration_seconds_bucket{volume=\"vol0\",op=\"write\",le=\"0.0001\"} 1");
	HAS(t, "replagent_request_duration_seconds_bucket{volume=\"vol0\",op=\"write\",le=\"0.00025\"} 3");
	HAS(t, "replagent_request_duration_seconds_bucket{volume=\"vol0\",op=\"write\",le=\"2.5\"} 3");
	HAS(t, "replagent_request_duration_seconds_bucket{volume=\"vol0\",op=\"write\",le=\"10\"} 3");
	HAS(t, "replagent_request_duration_seconds_bucket{volume=\"vol0\",op=\"write\",le=\"+Inf\"} 7");
	HAS(t, "replagent_request_duration_seconds_sum{volume=\"vol0\",op=\"write\"} 40.001500000");
	HAS(t, "replagent_request_duration_seconds_count{volume=\"vol0\",op=\"write\"} 7");
	HAS(t, "replagent_request_duration_seconds_count{volume=\"vol0\",op=\"read\"} 0");
	/* peers */
	HAS(t, "replagent_peer_link_state{volume=\"vol0\",peer=\"n2\",state=\"StandAlone\"} 1");
	HAS(t, "replagent_peer_link_state{volume=\"vol0\",peer=\"n2\",state=\"Connected\"} 0");
	HAS(t, "replagent_peer_connected{volume=\"vol0\",peer=\"n2\"} 0");
	HAS(t, "replagent_peer_split_brain{volume=\"vol0\",peer=\"n2\"} 1");
	HAS(t, "replagent_peer_disk_state{volume=\"vol0\",peer=\"n2\",state=\"DUnknown\"} 1");
	HAS(t, "replagent_peer_out_of_sync_bytes{volume=\"vol0\",peer=\"n2\"} 65536");
	HAS(t, "replagent_peer_inflight_requests{volume=\"vol0\",peer=\"n2\"} 3");
	HAS(t, "replagent_peer_ack_duration_seconds_count{volume=\"vol0\",peer=\"n2\"} 0");
	free(t);

	/* label values are escaped; no volumes is still a valid page */
	fill(&v[0], "a\"b\\c");
	v[0].st.peers[0].link = REPL_LINK_STANDALONE;
	snprintf(v[0].st.peers[0].reason, sizeof(v[0].st.peers[0].reason), "wrong peer");
	CHECK(metrics_render(v, 1, &t, &len) == 0);
	HAS(t, "replagent_volume_size_bytes{volume=\"a\\\"b\\\\c\"} 67108864");
	HAS(t, "replagent_peer_split_brain{volume=\"a\\\"b\\\\c\",peer=\"n2\"} 0");
	free(t);
	CHECK(metrics_render(NULL, 0, &t, &len) == 0);
	HAS(t, "replagent_build_info{version=\"" PACKAGE_VERSION "\"} 1");
	CHECK(!strstr(t, "volume="));
	free(t);
}

/* A duration goes into the first bucket whose bound it does not exceed
 * (Prometheus' le). */
static void test_buckets(void)
{
	static const struct { uint64_t ns; unsigned bucket; } cases[] = {
		{ 0, 0 }, { 50000, 0 }, { 50001, 1 }, { 100000, 1 }, { 999999, 4 },
		{ 1000000, 4 }, { 1000001, 5 }, { 10000000000, 16 }, { 10000000001, 17 },
		{ UINT64_MAX / 2, 17 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct repl__hist h;

		memset(&h, 0, sizeof(h));
		repl__hist_add(&h, cases[i].ns);
		CHECK_MSG(atomic_load(&h.bucket[cases[i].bucket]) == 1, "%llu ns: not in bucket %u",
			  (unsigned long long)cases[i].ns, cases[i].bucket);
		CHECK(atomic_load(&h.sum_ns) == cases[i].ns);
	}
	for (unsigned i = 1; i < REPL_HIST_BOUNDS; i++)
		CHECK(repl_hist_bounds_ns[i] > repl_hist_bounds_ns[i - 1]);
}

int main(void)
{
	test_render();
	test_buckets();
	return unit_done("test-metrics-text");
}
