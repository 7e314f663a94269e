/* metrics_text.c: see metrics_text.h.  Each metric family is written once
 * (HELP, TYPE, then its series for every volume and peer), as the format
 * asks; the tables below list the families, so that adding one is a line.
 * Not the HTTP server (metrics.c). */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics_text.h"
#include "util.h"

struct out {
	char *p;
	size_t len, cap;
	bool oom;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		size_t room = o->cap - o->len;

		if (o->oom)
			return;
		va_start(ap, fmt);
		n = vsnprintf(o->p ? o->p + o->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			o->oom = true;
			return;
		}
		if ((size_t)n < room) {
			o->len += (size_t)n;
			return;
		}
		size_t cap = MAX(o->cap * 2, o->len + (size_t)n + 4096);
		char *p = realloc(o->p, cap);

		if (!p) {
			o->oom = true;
			return;
		}
		o->p = p;
		o->cap = cap;
	}
}

/* A label value: volume and node names are [A-Za-z0-9_.-] (cfg.h), but
 * the format's escapes cost nothing. */
static void put_label(struct out *o, const char *name, const char *val)
{
	put(o, "%s=\"", name);
	for (const char *s = val; *s; s++) {
		if (*s == '\\' || *s == '"')
			put(o, "\\%c", *s);
		else if (*s == '\n')
			put(o, "\\n");
		else
			put(o, "%c", *s);
	}
	put(o, "\"");
}

static void family(struct out *o, const char *name, const char *type, const char *help)
{
	put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{volume="V"[,peer="P"][,key="val"]} */
static void series(struct out *o, const char *name, const char *suffix,
		   const struct metrics_vol *v, const struct repl_peer_status *p,
		   const char *key, const char *val)
{
	put(o, "%s%s{", name, suffix);
	put_label(o, "volume", v->st.name);
	if (p) {
		put(o, ",");
		put_label(o, "peer", p->node);
	}
	if (key) {
		put(o, ",");
		put_label(o, key, val);
	}
}

static void put_seconds_ns(struct out *o, uint64_t ns)
{
	put(o, "%llu.%09llu", (unsigned long long)(ns / 1000000000),
	    (unsigned long long)(ns % 1000000000));
}

/* "0.00005", "2.5", "10": the bound without trailing zeros. */
static void put_le(struct out *o, uint64_t ns)
{
	char buf[32];
	size_t n;

	snprintf(buf, sizeof(buf), "%llu.%09llu", (unsigned long long)(ns / 1000000000),
		 (unsigned long long)(ns % 1000000000));
	n = strlen(buf);
	while (buf[n - 1] == '0')
		buf[--n] = '\0';
	if (buf[n - 1] == '.')
		buf[--n] = '\0';
	put(o, "%s", buf);
}

static void histogram(struct out *o, const char *name, const struct metrics_vol *v,
		      const struct repl_peer_status *p, const char *key, const char *val,
		      const struct repl_hist_snap *h)
{
	uint64_t cum = 0;

	for (unsigned i = 0; i <= REPL_HIST_BOUNDS; i++) {
		cum += h->bucket[i];
		series(o, name, "_bucket", v, p, key, val);
		put(o, ",le=\"");
		if (i < REPL_HIST_BOUNDS)
			put_le(o, repl_hist_bounds_ns[i]);
		else
			put(o, "+Inf");
		put(o, "\"} %llu\n", (unsigned long long)cum);
	}
	series(o, name, "_sum", v, p, key, val);
	put(o, "} ");
	put_seconds_ns(o, h->sum_ns);
	put(o, "\n");
	series(o, name, "_count", v, p, key, val);
	put(o, "} %llu\n", (unsigned long long)cum);
}

/* ---- volume families ------------------------------------------------------ */

static const char *const op_names[REPL_STAT_OPS] = { "read", "write", "flush", "discard" };
static const char *const roles[] = { "Primary", "Secondary" };
static const char *const disks[] = { "UpToDate", "Outdated", "Inconsistent", "Consistent",
				     "Diskless", "DUnknown" };
static const char *const links[] = { "StandAlone", "Disconnected", "Connecting", "Connected",
				     "SyncSource", "SyncTarget" };

static void state_set(struct out *o, const char *name, const struct metrics_vol *v,
		      const struct repl_peer_status *p, const char *const *names, size_t n,
		      const char *now)
{
	for (size_t i = 0; i < n; i++) {
		series(o, name, "", v, p, "state", names[i]);
		put(o, "} %d\n", now && !strcmp(now, names[i]));
	}
}

typedef uint64_t (*vol_get)(const struct metrics_vol *v);

static uint64_t g_up(const struct metrics_vol *v) { return v->st.up; }
static uint64_t g_size(const struct metrics_vol *v) { return v->st.size; }
static uint64_t g_clients(const struct metrics_vol *v) { return v->st.clients; }
static uint64_t g_frozen(const struct metrics_vol *v) { return v->st.io_frozen; }
static uint64_t g_quorate(const struct metrics_vol *v) { return v->sx.quorate; }
static uint64_t g_meta_failing(const struct metrics_vol *v) { return v->st.meta_error[0] != 0; }
static uint64_t g_crashed_primary(const struct metrics_vol *v) { return v->st.crashed_primary; }
static uint64_t g_power_lost(const struct metrics_vol *v) { return v->st.power_lost; }
static uint64_t g_partial(const struct metrics_vol *v) { return v->st.partial; }
static uint64_t g_primary(const struct metrics_vol *v) { return !strcmp(v->st.role, "Primary"); }
static uint64_t g_read_bytes(const struct metrics_vol *v) { return v->sx.bytes[REPL_STAT_READ]; }
static uint64_t g_written_bytes(const struct metrics_vol *v) { return v->sx.bytes[REPL_STAT_WRITE]; }
static uint64_t g_discarded_bytes(const struct metrics_vol *v) { return v->sx.bytes[REPL_STAT_DISCARD]; }
static uint64_t g_al(const struct metrics_vol *v) { return v->sx.al_transactions; }
static uint64_t g_bitmap(const struct metrics_vol *v) { return v->sx.bitmap_writes; }
static uint64_t g_peer_reads(const struct metrics_vol *v) { return v->sx.peer_reads; }

static const struct vol_family {
	const char *name, *type, *help;
	vol_get get;
} vol_families[] = {
	{ "replagent_volume_up", "gauge", "1 if the replica takes part, 0 if it is down (a stopped resource).", g_up },
	{ "replagent_volume_size_bytes", "gauge", "Size of this replica.", g_size },
	{ "replagent_volume_primary", "gauge", "1 if this replica is Primary.", g_primary },
	{ "replagent_volume_clients", "gauge", "NBD clients attached.", g_clients },
	{ "replagent_volume_io_frozen", "gauge", "1 while writes wait (a lost peer's outdate, or no quorum on a Primary).", g_frozen },
	{ "replagent_volume_quorate", "gauge", "1 if the volume may acknowledge writes as far as quorum goes.", g_quorate },
	{ "replagent_volume_metadata_failing", "gauge", "1 if the activity log or a bitmap cannot be written (writes fail).", g_meta_failing },
	{ "replagent_volume_crashed_primary", "gauge", "1 from a restart after going down as Primary until a resync makes it whole.", g_crashed_primary },
	{ "replagent_volume_power_lost", "gauge", "1 from a restart after a power loss (writes it acknowledged may be gone) until a resync or a promotion.", g_power_lost },
	{ "replagent_volume_partial", "gauge", "1 while Inconsistent only where writes of its Primary's failed (it holds every other acknowledged write).", g_partial },
	{ "replagent_read_bytes_total", "counter", "Bytes read by NBD clients.", g_read_bytes },
	{ "replagent_written_bytes_total", "counter", "Bytes written by NBD clients.", g_written_bytes },
	{ "replagent_discarded_bytes_total", "counter", "Bytes trimmed or zeroed by NBD clients.", g_discarded_bytes },
	{ "replagent_activity_log_transactions_total", "counter", "Activity-log transactions: writes that brought 4 MiB extents into the set and waited for them to be recorded.", g_al },
	{ "replagent_bitmap_writes_total", "counter", "Bitmap write jobs (changed pages written and synced).", g_bitmap },
	{ "replagent_reads_from_peer_total", "counter", "Client reads this replica's disk failed that a peer answered instead.", g_peer_reads },
};

static void volume_families(struct out *o, const struct metrics_vol *v, size_t n)
{
	for (size_t f = 0; f < ARRAY_SIZE(vol_families); f++) {
		const struct vol_family *vf = &vol_families[f];

		family(o, vf->name, vf->type, vf->help);
		for (size_t i = 0; i < n; i++) {
			series(o, vf->name, "", &v[i], NULL, NULL, NULL);
			put(o, "} %llu\n", (unsigned long long)vf->get(&v[i]));
		}
	}
	family(o, "replagent_volume_role", "gauge", "Role of this replica: 1 for the one it has.");
	for (size_t i = 0; i < n; i++)
		for (size_t r = 0; r < ARRAY_SIZE(roles); r++) {
			series(o, "replagent_volume_role", "", &v[i], NULL, "role", roles[r]);
			put(o, "} %d\n", !strcmp(v[i].st.role, roles[r]));
		}
	family(o, "replagent_volume_disk_state", "gauge", "Disk state of this replica: 1 for the one it has.");
	for (size_t i = 0; i < n; i++)
		state_set(o, "replagent_volume_disk_state", &v[i], NULL, disks,
			  ARRAY_SIZE(disks), v[i].st.disk);
}

static void request_families(struct out *o, const struct metrics_vol *v, size_t n)
{
	family(o, "replagent_requests_total", "counter", "NBD requests completed, by operation.");
	for (size_t i = 0; i < n; i++)
		for (unsigned k = 0; k < REPL_STAT_OPS; k++) {
			series(o, "replagent_requests_total", "", &v[i], NULL, "op", op_names[k]);
			put(o, "} %llu\n", (unsigned long long)v[i].sx.requests[k]);
		}
	family(o, "replagent_request_errors_total", "counter", "NBD requests that failed, by operation.");
	for (size_t i = 0; i < n; i++)
		for (unsigned k = 0; k < REPL_STAT_OPS; k++) {
			series(o, "replagent_request_errors_total", "", &v[i], NULL, "op", op_names[k]);
			put(o, "} %llu\n", (unsigned long long)v[i].sx.errors[k]);
		}
	family(o, "replagent_request_duration_seconds", "histogram",
	       "Latency of NBD requests from submission to completion, by operation.");
	for (size_t i = 0; i < n; i++)
		for (unsigned k = 0; k < REPL_STAT_OPS; k++)
			histogram(o, "replagent_request_duration_seconds", &v[i], NULL, "op",
				  op_names[k], &v[i].sx.latency[k]);
}

/* ---- peer families -------------------------------------------------------- */

typedef uint64_t (*peer_get)(const struct metrics_vol *v, unsigned i);

static const struct repl_peer_status *ps(const struct metrics_vol *v, unsigned i)
{
	return &v->st.peers[i];
}

static bool connected(enum repl_link_state l)
{
	return l == REPL_LINK_CONNECTED || l == REPL_LINK_SYNC_SOURCE ||
	       l == REPL_LINK_SYNC_TARGET;
}

static uint64_t p_connected(const struct metrics_vol *v, unsigned i) { return connected(ps(v, i)->link); }
static uint64_t p_in_sync(const struct metrics_vol *v, unsigned i) { return ps(v, i)->in_sync; }
static uint64_t p_outdated(const struct metrics_vol *v, unsigned i) { return ps(v, i)->recorded_outdated; }
static uint64_t p_split_brain(const struct metrics_vol *v, unsigned i)
{
	return ps(v, i)->link == REPL_LINK_STANDALONE &&
	       !strncmp(ps(v, i)->reason, "split brain", 11);
}
static uint64_t p_oos(const struct metrics_vol *v, unsigned i) { return ps(v, i)->out_of_sync_bytes; }
static uint64_t p_rs_total(const struct metrics_vol *v, unsigned i) { return ps(v, i)->resync_total_bytes; }
static uint64_t p_rs_done(const struct metrics_vol *v, unsigned i) { return ps(v, i)->resync_done_bytes; }
static uint64_t p_rs_rate(const struct metrics_vol *v, unsigned i) { return ps(v, i)->resync_rate_bps; }
static uint64_t p_rs_active(const struct metrics_vol *v, unsigned i)
{
	return ps(v, i)->link == REPL_LINK_SYNC_SOURCE || ps(v, i)->link == REPL_LINK_SYNC_TARGET;
}
static uint64_t p_rs_sent(const struct metrics_vol *v, unsigned i) { return ps(v, i)->resync_sent_bytes; }
static uint64_t p_inflight(const struct metrics_vol *v, unsigned i) { return v->sx.peers[i].inflight; }

static const struct peer_family {
	const char *name, *type, *help;
	peer_get get;
} peer_families[] = {
	{ "replagent_peer_connected", "gauge", "1 if the replication link is up (Connected, SyncSource or SyncTarget).", p_connected },
	{ "replagent_peer_in_sync", "gauge", "1 if the peer is connected, UpToDate and receives every write.", p_in_sync },
	{ "replagent_peer_outdated", "gauge", "1 if our metadata records that the peer missed writes.", p_outdated },
	{ "replagent_peer_split_brain", "gauge", "1 if the link is StandAlone because of a split brain.", p_split_brain },
	{ "replagent_peer_out_of_sync_bytes", "gauge", "Bytes the peer misses (its dirty bitmap).", p_oos },
	{ "replagent_peer_resync_active", "gauge", "1 while a resync with the peer runs.", p_rs_active },
	{ "replagent_peer_resync_size_bytes", "gauge", "Bytes the running (or last) resync has to copy.", p_rs_total },
	{ "replagent_peer_resync_done_bytes", "gauge", "Bytes the running (or last) resync has copied.", p_rs_done },
	{ "replagent_peer_resync_rate_bytes_per_second", "gauge", "Recent resync rate.", p_rs_rate },
	{ "replagent_peer_resync_sent_bytes_total", "counter", "Data sent to the peer by resyncs.", p_rs_sent },
	{ "replagent_peer_inflight_requests", "gauge", "Writes sent to the peer and not yet acknowledged.", p_inflight },
};

static void peer_families_out(struct out *o, const struct metrics_vol *v, size_t n)
{
	for (size_t f = 0; f < ARRAY_SIZE(peer_families); f++) {
		const struct peer_family *pf = &peer_families[f];

		family(o, pf->name, pf->type, pf->help);
		for (size_t i = 0; i < n; i++)
			for (unsigned j = 0; j < v[i].st.n_peers; j++) {
				series(o, pf->name, "", &v[i], ps(&v[i], j), NULL, NULL);
				put(o, "} %llu\n", (unsigned long long)pf->get(&v[i], j));
			}
	}
	family(o, "replagent_peer_link_state", "gauge", "Replication link state: 1 for the one it is in.");
	for (size_t i = 0; i < n; i++)
		for (unsigned j = 0; j < v[i].st.n_peers; j++)
			state_set(o, "replagent_peer_link_state", &v[i], ps(&v[i], j), links,
				  ARRAY_SIZE(links), ps(&v[i], j)->link_name);
	family(o, "replagent_peer_disk_state", "gauge", "Disk state of the peer's replica as it said: 1 for the one it has.");
	for (size_t i = 0; i < n; i++)
		for (unsigned j = 0; j < v[i].st.n_peers; j++)
			state_set(o, "replagent_peer_disk_state", &v[i], ps(&v[i], j), disks,
				  ARRAY_SIZE(disks), ps(&v[i], j)->peer_disk);
	family(o, "replagent_peer_ack_duration_seconds", "histogram",
	       "Latency of replicated writes from sending to the peer's acknowledgement.");
	for (size_t i = 0; i < n; i++)
		for (unsigned j = 0; j < v[i].sx.n_peers && j < v[i].st.n_peers; j++)
			histogram(o, "replagent_peer_ack_duration_seconds", &v[i], ps(&v[i], j),
				  NULL, NULL, &v[i].sx.peers[j].ack);
}

int metrics_render(const struct metrics_vol *v, size_t n, char **text, size_t *len)
{
	struct out o = { 0 };

	family(&o, "replagent_build_info", "gauge", "The replagentd version, as a label.");
	put(&o, "replagent_build_info{version=\"%s\"} 1\n", PACKAGE_VERSION);
	volume_families(&o, v, n);
	request_families(&o, v, n);
	peer_families_out(&o, v, n);
	if (o.oom || !o.p) {
		free(o.p);
		return -ENOMEM;
	}
	*text = o.p;
	*len = o.len;
	return 0;
}
