/* cli_status.c: "replagent status" (the health check: text or JSON, and
 * the exit code of health.c's rules), "show" (one key=value line for the
 * OCF agent and the libvirt hook) and "verify" (which waits for the
 * verify's end through status).  It prints what the daemon answered and
 * decides nothing about the volumes. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sysexits.h>
#include <unistd.h>

#include "cli.h"
#include "evtext.h"
#include "health.h"
#include "json.h"
#include "util.h"

/* ---- status ------------------------------------------------------------------- */

struct widths {
	int vol, role, disk;			/* volume lines */
	int node, link, peer_role, peer_disk;	/* peer lines */
};

static void widen(int *w, const char *s)
{
	*w = MAX(*w, (int)strlen(cli_or_unknown(s)));
}

static void measure(const struct json_value *vols, struct widths *w)
{
	for (const struct json_value *v = vols->child; v; v = v->next) {
		const struct json_value *peers = json_get(v, "peers");

		widen(&w->vol, json_get_str(v, "name"));
		widen(&w->role, json_get_str(v, "role"));
		widen(&w->disk, json_get_str(v, "disk"));
		for (const struct json_value *p = peers ? peers->child : NULL; p; p = p->next) {
			widen(&w->node, json_get_str(p, "node"));
			widen(&w->link, json_get_str(p, "link"));
			widen(&w->peer_role, json_get_str(p, "peer_role"));
			widen(&w->peer_disk, json_get_str(p, "peer_disk"));
		}
	}
}

/* Prints line without trailing blanks (padding of the last column). */
static void put_line(char *line)
{
	size_t n = strlen(line);

	while (n > 0 && line[n - 1] == ' ')
		line[--n] = '\0';
	puts(line);
}

static const char *format_eta(int64_t s, char *buf, size_t len)
{
	if (s < 60)
		snprintf(buf, len, "%" PRId64 "s", s);
	else if (s < 3600)
		snprintf(buf, len, "%" PRId64 "m%02" PRId64 "s", s / 60, s % 60);
	else
		snprintf(buf, len, "%" PRId64 "h%02" PRId64 "m", s / 3600, s % 3600 / 60);
	return buf;
}

static void append_resync(char *line, size_t size, const struct json_value *rs)
{
	uint64_t total = 0, done = 0, rate = 0;
	int64_t eta;
	const char *err;
	char part[256], sz[32], t[32], text[160];

	json_get_u64(rs, "total_bytes", &total);
	json_get_u64(rs, "done_bytes", &done);
	json_get_u64(rs, "rate_bps", &rate);
	if (!total) {
		/* A target: the total is known to the source only. */
		char d[32];

		snprintf(part, sizeof(part), "  resync received %s at %s/s",
			 format_size(done, d, sizeof(d)), format_size(rate, sz, sizeof(sz)));
		cli_append(line, size, part);
		return;
	}
	snprintf(part, sizeof(part), "  resync %u%% at %s/s",
		 total ? (unsigned)(MIN(done, total) * 100 / total) : 0u,
		 format_size(rate, sz, sizeof(sz)));
	cli_append(line, size, part);
	if (json_get_i64(rs, "eta_s", &eta) == 0 && eta >= 0) {
		snprintf(part, sizeof(part), ", ETA %s", format_eta(eta, t, sizeof(t)));
		cli_append(line, size, part);
	}
	err = json_get_str(rs, "error");
	if (err && *err) {
		snprintf(part, sizeof(part), ", waiting: %s", cli_clean(err, text, sizeof(text)));
		cli_append(line, size, part);
	}
}

static void print_peer(const struct json_value *p, const struct widths *w)
{
	const char *link = json_get_str(p, "link"), *reason = json_get_str(p, "reason");
	uint64_t oos = 0;
	char line[1024], part[256], sz[32], text[160];

	snprintf(line, sizeof(line), "  %-*s  %-*s  %-*s  %-*s",
		 w->node, cli_or_unknown(json_get_str(p, "node")), w->link, cli_or_unknown(link),
		 w->peer_role, cli_or_unknown(json_get_str(p, "peer_role")),
		 w->peer_disk, cli_or_unknown(json_get_str(p, "peer_disk")));
	if (json_get_u64(p, "out_of_sync_bytes", &oos) == 0 && oos > 0) {
		snprintf(part, sizeof(part), "  out of sync %s", format_size(oos, sz, sizeof(sz)));
		cli_append(line, sizeof(line), part);
	}
	if (link && (!strcmp(link, "SyncSource") || !strcmp(link, "SyncTarget")))
		append_resync(line, sizeof(line), json_get(p, "resync"));
	if (reason && *reason) {
		snprintf(part, sizeof(part), "  (%s)", cli_clean(reason, text, sizeof(text)));
		cli_append(line, sizeof(line), part);
	}
	put_line(line);
}

/* The size, and a grow going on or failed; on a Primary, the size its
 * new NBD clients get while some replica has not grown yet. */
static void append_size(char *line, size_t size, const struct json_value *v)
{
	const struct json_value *grow = json_get(v, "grow");
	const char *err = grow ? json_get_str(grow, "error") : NULL, *role;
	uint64_t bytes = 0, exp = 0, to = 0;
	char part[256], a[32], text[160];

	json_get_u64(v, "size", &bytes);
	snprintf(part, sizeof(part), "  %s", format_size(bytes, a, sizeof(a)));
	cli_append(line, size, part);
	role = json_get_str(v, "role");
	if (role && !strcmp(role, "Primary") && json_get_u64(v, "export_size", &exp) == 0 &&
	    exp < bytes) {
		snprintf(part, sizeof(part), "  (new NBD clients get %s until every replica "
			 "has grown)", format_size(exp, a, sizeof(a)));
		cli_append(line, size, part);
	}
	if (grow && json_get_u64(grow, "to", &to) == 0) {
		if (err && *err)
			snprintf(part, sizeof(part), "  cannot grow to %s: %s",
				 format_size(to, a, sizeof(a)), cli_clean(err, text, sizeof(text)));
		else
			snprintf(part, sizeof(part), "  growing to %s",
				 format_size(to, a, sizeof(a)));
		cli_append(line, size, part);
	}
}

static void print_volume(const struct json_value *v, const struct widths *w)
{
	const struct json_value *peers = json_get(v, "peers");
	const char *meta = json_get_str(v, "meta_error");
	uint64_t clients = 0, damaged = 0, peer_reads = 0;
	char line[1024], part[128], text[512];

	if (json_get_bool(v, "failed")) {
		snprintf(line, sizeof(line), "%-*s  %-*s  %-*s  failed: %s",
			 w->vol, cli_or_unknown(json_get_str(v, "name")),
			 w->role, cli_or_unknown(json_get_str(v, "role")),
			 w->disk, cli_or_unknown(json_get_str(v, "disk")),
			 cli_clean(cli_or_unknown(json_get_str(v, "reason")), text, sizeof(text)));
		put_line(line);
		return;
	}
	json_get_u64(v, "clients", &clients);
	snprintf(line, sizeof(line), "%-*s  %-*s  %-*s  clients %" PRIu64 "%s",
		 w->vol, cli_or_unknown(json_get_str(v, "name")),
		 w->role, cli_or_unknown(json_get_str(v, "role")),
		 w->disk, cli_or_unknown(json_get_str(v, "disk")), clients,
		 json_get_bool(v, "io_frozen") ? "  I/O frozen" : "");
	append_size(line, sizeof(line), v);
	if (json_get_u64(v, "bitmap_damaged_pages", &damaged) == 0 && damaged) {
		snprintf(part, sizeof(part), "  %" PRIu64 " damaged bitmap page(s) at start: "
			 "their ranges resync", damaged);
		cli_append(line, sizeof(line), part);
	}
	if (json_get_bool(v, "power_lost"))
		cli_append(line, sizeof(line), "  lost power: may lack writes it acknowledged "
			   "until a resync");
	else if (json_get_bool(v, "crashed_primary"))
		cli_append(line, sizeof(line), "  crashed as Primary: its activity log resyncs");
	if (json_get_bool(v, "partial"))
		cli_append(line, sizeof(line), "  partial: only where its own writes failed "
			   "(promotable if no UpToDate replica is)");
	put_line(line);
	if (json_get_u64(v, "reads_from_peer", &peer_reads) == 0 && peer_reads) {
		snprintf(line, sizeof(line), "  disk failing: %" PRIu64 " read(s) it failed "
			 "were read from a peer", peer_reads);
		put_line(line);
	}
	if (meta && *meta) {
		snprintf(line, sizeof(line), "  writes fail: %s", cli_clean(meta, text, sizeof(text)));
		put_line(line);
	}
	for (const struct json_value *p = peers ? peers->child : NULL; p; p = p->next)
		print_peer(p, w);
}

/* Health of one volume of the answer; why gets the worst problem. */
static enum health volume_health(const struct json_value *v, char *why, size_t whylen)
{
	const struct json_value *peers = json_get(v, "peers"), *p;
	struct health_peer hp[8];
	struct health_volume hv = {
		.name = json_get_str(v, "name"), .role = json_get_str(v, "role"),
		.disk = json_get_str(v, "disk"), .io_frozen = json_get_bool(v, "io_frozen"),
		.peers = hp,
	};
	const struct json_value *grow = json_get(v, "grow");

	hv.grow_error = grow ? json_get_str(grow, "error") : NULL;
	if (json_get_bool(v, "failed"))
		hv.failed = json_get_str(v, "reason") ? json_get_str(v, "reason") : "";
	hv.meta_error = json_get_str(v, "meta_error");

	if (!peers || peers->type != JSON_ARRAY) {
		snprintf(why, whylen, "%s: no peer list", cli_or_unknown(hv.name));
		return HEALTH_UNKNOWN;
	}
	for (p = peers->child; p && hv.n_peers < ARRAY_SIZE(hp); p = p->next)
		hp[hv.n_peers++] = (struct health_peer){
			.node = json_get_str(p, "node"), .link = json_get_str(p, "link"),
			.peer_disk = json_get_str(p, "peer_disk"),
			.resync_error = json_get(p, "resync") ?
				json_get_str(json_get(p, "resync"), "error") : NULL,
		};
	if (p) {
		snprintf(why, whylen, "%s: too many peers", cli_or_unknown(hv.name));
		return HEALTH_UNKNOWN;
	}
	return health_volume(&hv, why, whylen);
}

static enum health overall_health(const struct json_value *vols, char *why, size_t whylen)
{
	enum health worst = HEALTH_OK;
	char this[256];

	why[0] = '\0';
	for (const struct json_value *v = vols->child; v; v = v->next) {
		enum health h = volume_health(v, this, sizeof(this));

		if (health_worse(worst, h) != worst) {
			worst = h;
			snprintf(why, whylen, "%s", this);
		}
	}
	return worst;
}

/* -1 when the member is missing or no boolean. */
static int tristate(const struct json_value *v, const char *key)
{
	const struct json_value *b = json_get(v, key);

	return b && b->type == JSON_BOOL ? b->b : -1;
}

/* The cluster object's health (none, or static mode: OK). */
static enum health cluster_health(const struct json_value *c, char *why, size_t whylen)
{
	const struct json_value *nodes = json_get(c, "nodes"), *n;
	struct health_node hn[64];
	struct health_cluster hc = {
		.mode = json_get_str(c, "mode"), .connected = tristate(c, "connected"),
		.quorate = tristate(c, "quorate"), .synced = tristate(c, "synced"),
		.mixed = tristate(c, "mixed"), .nodes = hn,
	};

	if (c && !hc.mode) {
		snprintf(why, whylen, "cluster: no mode");
		return HEALTH_UNKNOWN;
	}
	for (n = nodes ? nodes->child : NULL; n && hc.n_nodes < ARRAY_SIZE(hn); n = n->next)
		hn[hc.n_nodes++] = (struct health_node){
			.name = json_get_str(n, "name"), .member = json_get_bool(n, "member"),
		};
	return health_cluster(&hc, why, whylen);
}

static void print_status(const struct json_value *ans, const struct json_value *vols)
{
	struct widths w = { 0 };
	char line[2048];

	printf("node %s\n", cli_or_unknown(json_get_str(ans, "node")));
	if (evtext_cluster(json_get(ans, "cluster"), line, sizeof(line)))
		printf("%s\n", line);
	if (!vols->child)
		printf("no volumes\n");
	measure(vols, &w);
	for (const struct json_value *v = vols->child; v; v = v->next)
		print_volume(v, &w);
}

/* status --json without an answer: still one JSON object on stdout, for
 * a monitor that parses it ({"ok":false,"state":"unknown","reason":...}).
 * The reason is the errno of the exchange (the stderr line says more). */
static void print_unknown_json(const struct cli *cli, int err)
{
	struct json_writer w;
	const char *text;
	char reason[512];
	size_t len;

	snprintf(reason, sizeof(reason), err == -EPROTO ?
		 "no usable answer from %s" : "cannot reach replagentd at %s: %s",
		 cli->socket, strerror(-err));
	json_writer_init(&w);
	json_obj_begin(&w);
	json_kv_bool(&w, "ok", false);
	json_kv_str(&w, "state", "unknown");
	json_kv_str(&w, "reason", reason);
	json_obj_end(&w);
	if (json_writer_result(&w, &text, &len) == 0)
		printf("%s\n", text);
	else
		printf("{\"ok\":false,\"state\":\"unknown\",\"reason\":null}\n");
	json_writer_release(&w);
}

int cli_cmd_status(struct cli *cli)
{
	struct json_value *ans;
	const struct json_value *vols;
	char req[256], *raw, why[256];
	enum health h;
	int r;

	snprintf(req, sizeof(req), "status%s%s\n", cli->n_args ? " " : "",
		 cli->n_args ? cli->args[0] : "");
	if ((r = cli_ask(cli, req, &ans, &raw)) < 0) {
		if (cli->flag)
			print_unknown_json(cli, r);
		return HEALTH_UNKNOWN;
	}
	if (cli->flag)
		printf("%s\n", raw);
	free(raw);
	vols = json_get(ans, "volumes");
	if (!json_get_bool(ans, "ok")) {
		cli_print_refusal("status", ans);
		h = HEALTH_UNKNOWN;
	} else if (!vols || vols->type != JSON_ARRAY) {
		fprintf(stderr, "replagent: unexpected answer from %s\n", cli->socket);
		h = HEALTH_UNKNOWN;
	} else {
		char cwhy[256];
		enum health ch = cluster_health(json_get(ans, "cluster"), cwhy, sizeof(cwhy));

		h = overall_health(vols, why, sizeof(why));
		if (health_worse(h, ch) != h) {
			h = ch;
			snprintf(why, sizeof(why), "%s", cwhy);
		}
		if (!cli->flag)
			print_status(ans, vols);
		if (!cli->flag && h != HEALTH_OK)
			printf("%s: %s\n", health_name(h), why);
	}
	json_value_free(ans);
	return h;
}

/* For shell scripts (the OCF agent, the libvirt hook): no JSON parsing. */
static void print_show(const struct json_value *ans)
{
	const struct json_value *vols = json_get(ans, "volumes");
	const struct json_value *v = vols ? vols->child : NULL;
	const struct json_value *peers = v ? json_get(v, "peers") : NULL;
	unsigned n = 0, connected = 0, uptodate = 0;
	const char *primary = "-";
	int64_t clients = 0;

	if (!v)
		return;
	json_get_i64(v, "clients", &clients);
	for (const struct json_value *p = peers ? peers->child : NULL; p; p = p->next) {
		const char *link = json_get_str(p, "link"), *disk = json_get_str(p, "peer_disk");
		n++;
		if (link && (!strcmp(link, "Connected") || !strncmp(link, "Sync", 4)))
			connected++;
		if (disk && !strcmp(disk, "UpToDate") && link && !strcmp(link, "Connected"))
			uptodate++;
		if (link && strcmp(link, "StandAlone") && strcmp(link, "Disconnected") &&
		    strcmp(link, "Connecting") && !strcmp(cli_or_unknown(json_get_str(p, "peer_role")),
							  "Primary"))
			primary = cli_or_unknown(json_get_str(p, "node"));
	}
	printf("role=%s disk=%s up=%s frozen=%s clients=%lld peers=%u connected=%u "
	       "uptodate_peers=%u window=%s auto_promote=%s peer_primary=%s partial=%s\n",
	       cli_or_unknown(json_get_str(v, "role")),
	       cli_or_unknown(json_get_str(v, "disk")), json_get_bool(v, "up") ? "yes" : "no",
	       json_get_bool(v, "io_frozen") ? "yes" : "no",
	       (long long)clients,
	       n, connected, uptodate, cli_or_unknown(json_get_str(v, "window")),
	       json_get_bool(v, "auto_promote") ? "yes" : "no", primary,
	       json_get_bool(v, "partial") ? "yes" : "no");
}

int cli_cmd_show(struct cli *cli)
{
	char req[256];

	snprintf(req, sizeof(req), "status %s\n", cli->args[0]);
	return cli_simple_request(cli, req, "show", print_show);
}

/* Polls status until the verify (and, with repair, the resync) is over. */
static int verify_wait(struct cli *cli, bool repair)
{
	char req[256];
	uint64_t deadline = now_mono_ms() + 24ull * 3600 * 1000;

	snprintf(req, sizeof(req), "status %s\n", cli->args[0]);
	while (now_mono_ms() < deadline) {
		struct json_value *ans;
		const struct json_value *vols, *v, *ver, *peers, *offs;
		int64_t rsz = 0, diffs = 0;
		bool running, syncing = false;

		if (cli_ask(cli, req, &ans, NULL) < 0)
			return EXIT_FAILED;
		vols = json_get(ans, "volumes");
		v = vols ? vols->child : NULL;
		ver = v ? json_get(v, "verify") : NULL;
		peers = v ? json_get(v, "peers") : NULL;
		running = ver && json_get_bool(ver, "running");
		for (const struct json_value *p = peers ? peers->child : NULL; p; p = p->next) {
			int64_t d = 0, oos = 0;
			json_get_i64(p, "verify_differing", &d);
			json_get_i64(p, "out_of_sync_bytes", &oos);
			diffs += d;
			syncing |= oos > 0;
		}
		if (!running && !(repair && diffs && syncing)) {
			int64_t unreadable = 0;
			const char *err = ver ? json_get_str(ver, "read_error") : NULL;
			char text[96];

			json_get_i64(ver, "region_size", &rsz);
			json_get_i64(ver, "unreadable_regions", &unreadable);
			offs = ver ? json_get(ver, "differing_offsets") : NULL;
			for (const struct json_value *o = offs ? offs->child : NULL; o; o = o->next)
				printf("differs: offset %s length %lld\n", o->str, (long long)rsz);
			printf("%s: %lld region(s) differ%s\n", cli->args[0], (long long)diffs,
			       diffs && repair ? ", repaired from this node" : "");
			if (unreadable)
				printf("%s: %lld region(s) could not be read here (%s): not compared\n",
				       cli->args[0], (long long)unreadable,
				       cli_clean(cli_or_unknown(err), text, sizeof(text)));
			json_value_free(ans);
			return (diffs && !repair) || unreadable ? EXIT_FAILED : EX_OK;
		}
		json_value_free(ans);
		usleep(200 * 1000);
	}
	return EXIT_FAILED;
}

int cli_cmd_verify(struct cli *cli)
{
	char req[256];
	int ex;

	snprintf(req, sizeof(req), "verify %s%s\n", cli->args[0], cli->flag ? " --repair" : "");
	ex = cli_simple_request(cli, req, "verify", NULL);
	return ex ? ex : verify_wait(cli, cli->flag);
}
