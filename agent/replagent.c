/* replagent.c: the command line for replagentd's control socket.
 *
 * "replagent [-s SOCKET] COMMAND ..." sends one request line to the daemon,
 * reads its one JSON answer and turns it into text and an exit code: status
 * (health as monitoring expects, 0..3, see health.h), promote, demote,
 * version.  Every exchange is bounded by IO_TIMEOUT_MS, so it never hangs
 * on a stuck daemon; "events" alone reads on for as long as the daemon
 * streams (its first line is bounded the same way).  It decides nothing itself: role changes are the
 * daemon's, and so are their refusals, which it passes on verbatim. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
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

#include "cfg.h"
#include "evtext.h"
#include "health.h"
#include "json.h"
#include "util.h"

#define IO_TIMEOUT_MS 5000
#define ANSWER_MAX (16u << 20)
#define EXIT_FAILED 1		/* refused, or the daemon unreachable */

struct cli {
	const char *socket;
	bool flag;		/* the command's flag: status --json, promote --force */
	const char *args[2];	/* positional arguments after the command */
	unsigned n_args;
};

struct command {
	const char *name;
	unsigned min_args, max_args;
	const char *flag;	/* the one flag it takes, or NULL */
	int (*fn)(struct cli *cli);
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: replagent [-s SOCKET] COMMAND [ARGS]\n"
		"Query and control replagentd through its control socket.\n\n"
		"Commands:\n"
		"  status [VOLUME] [--json]  roles, disk and link states, resync progress,\n"
		"                            the cluster's quorum and nodes\n"
		"  events [VOLUME] [--json]  state changes as they happen, until interrupted\n"
		"  promote VOLUME [--force]  make this node Primary (--force: even if its\n"
		"                            disk is not UpToDate)\n"
		"  demote VOLUME             make this node Secondary\n"
		"  can-promote VOLUME        would a promotion be accepted now? (exit 0,\n"
		"                            else 1 and the reason; 75 if it may be\n"
		"                            accepted in a moment: try again)\n"
		"  disk-xml VOLUME [DEV]     the libvirt <disk> element for VOLUME\n"
		"  up VOLUME                 take part in replication (a started resource)\n"
		"  down VOLUME               stop taking part (refused while Primary)\n"
		"  verify VOLUME [--repair]  compare every region with the peers (online);\n"
		"                            --repair (on the Primary) resyncs what differs\n"
		"                            (exit 1 if regions differ and were not repaired)\n"
		"  resolve VOLUME --keep NODE  end a split brain, keeping NODE's data; run\n"
		"                            it on both nodes (the other saves what it\n"
		"                            wrote to BACKING.discarded-TIME first)\n"
		"  show VOLUME               one line of key=value for scripts: role, disk,\n"
		"                            up, frozen, clients, peers, connected,\n"
		"                            uptodate_peers, window, auto_promote,\n"
		"                            peer_primary (a connected Primary, or -)\n"
		"  window open VOLUME [--timeout SEC]\n"
		"                            live migration, on the destination: let NBD\n"
		"                            clients attach to this Secondary; the Primary\n"
		"                            role moves here at their first write\n"
		"  window close VOLUME       close it (the migration failed): its clients\n"
		"                            are dropped\n"
		"  volume create NAME --size SIZE --nodes N1,N2[,N3]\n"
		"                            define a replicated volume (cluster mode)\n"
		"  volume list [--json]      the cluster's volumes\n"
		"  volume delete NAME        remove a volume that is not Primary\n"
		"  volume resize NAME --size SIZE\n"
		"                            grow a volume, online, on every replica\n"
		"  version                   versions of this program and of the daemon\n"
		"  help                      this text\n\n"
		"Options:\n"
		"  -s, --socket SOCKET  control socket (default $REPLAGENT_SOCKET, else\n"
		"                       " CFG_DEFAULT_CONTROL_SOCKET ")\n"
		"  -h, --help           this text\n"
		"  -V, --version        print this program's version only\n\n"
		"Exit status of status: 0 healthy, 1 degraded (peer not connected, resync\n"
		"running, peer disk not UpToDate, I/O frozen), 2 critical (split brain,\n"
		"failed or missing local disk, Primary not UpToDate, partition not quorate),\n"
		"3 unknown (daemon unreachable, error, unexpected answer); a cluster node\n"
		"gone is degraded.\n"
		"Exit status of events: 0 when interrupted (SIGINT, SIGTERM), 1 when the\n"
		"daemon refused or closed the stream, 3 when it cannot be reached.\n"
		"Other commands: 0 done, 1 refused by the daemon or daemon unreachable.\n"
		"All commands: 64 usage error.\n");
}

static int usage_error(const char *fmt, const char *arg)
{
	fputs("replagent: ", stderr);
	fprintf(stderr, "%s \"%s\"\n", fmt, arg);
	usage(stderr);
	return EX_USAGE;
}

/* ---- talking to the daemon ------------------------------------------------- */

static int wait_fd(int fd, short events, uint64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	uint64_t now = now_mono_ms();
	int n;

	if (now >= deadline)
		return -ETIMEDOUT;
	n = poll(&p, 1, (int)(deadline - now));
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	return n == 0 ? -ETIMEDOUT : 0;
}

/* Blocking connect, bounded by SO_SNDTIMEO; non-blocking afterwards. */
static int connect_to(const char *path, int *out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { IO_TIMEOUT_MS / 1000, 0 };
	int fd, r = 0;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		r = errno == EINPROGRESS ? -ETIMEDOUT : -errno;
	if (r == 0)
		r = fd_set_nonblock(fd);
	if (r < 0) {
		close(fd);
		return r;
	}
	*out = fd;
	return 0;
}

static int send_all(int fd, const char *buf, size_t len, uint64_t deadline)
{
	while (len > 0) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
		int r;

		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
		} else if ((r = wait_fd(fd, POLLOUT, deadline)) < 0) {
			return r;
		}
	}
	return 0;
}

static int grow(char **buf, size_t *cap)
{
	char *p;

	if (*cap >= ANSWER_MAX)
		return -EFBIG;
	p = realloc(*buf, *cap * 2);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap *= 2;
	return 0;
}

/* Reads up to the first newline (not stored); *out is NUL-terminated. */
static int recv_line(int fd, char **out, size_t *len, uint64_t deadline)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap), *nl;
	int r = buf ? 0 : -ENOMEM;

	while (r == 0) {
		ssize_t k = recv(fd, buf + n, cap - n - 1, 0);

		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
			r = wait_fd(fd, POLLIN, deadline);
			continue;
		}
		if (k <= 0) {
			r = k == 0 ? -EPROTO : -errno;
			break;
		}
		if ((nl = memchr(buf + n, '\n', (size_t)k))) {
			*nl = '\0';
			*out = buf;
			*len = (size_t)(nl - buf);
			return 0;
		}
		n += (size_t)k;
		if (n + 1 == cap)
			r = grow(&buf, &cap);
	}
	free(buf);
	return r;
}

/* One exchange: the request line out, the answer line in (*raw, to free). */
static int exchange(const char *sock, const char *req, char **raw, size_t *len)
{
	uint64_t deadline = now_mono_ms() + IO_TIMEOUT_MS;
	int fd = -1, r;

	r = connect_to(sock, &fd);
	if (r < 0) {
		fprintf(stderr, "replagent: cannot connect to %s: %s (is replagentd running?)\n",
			sock, strerror(-r));
		return r;
	}
	/* Even if the send fails, the daemon may have said why it hung up. */
	r = send_all(fd, req, strlen(req), deadline);
	if (r == 0 || r == -EPIPE || r == -ECONNRESET)
		r = recv_line(fd, raw, len, deadline);
	close(fd);
	if (r < 0)
		fprintf(stderr, "replagent: no answer from %s: %s\n", sock,
			r == -EPROTO ? "connection closed" : strerror(-r));
	return r;
}

/* Sends req and parses the answer; prints why on failure.  0 (answer in
 * *ans, raw text in *raw when raw is not NULL), -EPROTO for an answer that
 * is no JSON object with "ok", or another -errno. */
static int ask(const struct cli *cli, const char *req, struct json_value **ans, char **raw)
{
	char *text = NULL;
	size_t len = 0;
	int r;

	r = exchange(cli->socket, req, &text, &len);
	if (r < 0)
		return r;
	r = json_parse(text, len, ans);
	if (r == 0 && (!json_get(*ans, "ok") || json_get(*ans, "ok")->type != JSON_BOOL)) {
		json_value_free(*ans);
		r = -EPROTO;
	}
	if (r < 0) {
		fprintf(stderr, "replagent: unexpected answer from %s\n", cli->socket);
		free(text);
		return -EPROTO;
	}
	if (raw)
		*raw = text;
	else
		free(text);
	return 0;
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

static void print_refusal(const char *what, const struct json_value *ans)
{
	const char *err = json_get_str(ans, "error");
	char buf[512];

	fprintf(stderr, "replagent: %s: %s\n", what,
		err ? clean(err, buf, sizeof(buf)) : "refused (no reason given)");
}

/* ---- status ------------------------------------------------------------------- */

struct widths {
	int vol, role, disk;			/* volume lines */
	int node, link, peer_role, peer_disk;	/* peer lines */
};

static const char *or_unknown(const char *s)
{
	return s ? s : "?";
}

static void widen(int *w, const char *s)
{
	*w = MAX(*w, (int)strlen(or_unknown(s)));
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

static void append(char *line, size_t size, const char *s)
{
	size_t n = strlen(line);

	snprintf(line + n, size - n, "%s", s);
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
	char part[128], sz[32], t[32];

	json_get_u64(rs, "total_bytes", &total);
	json_get_u64(rs, "done_bytes", &done);
	json_get_u64(rs, "rate_bps", &rate);
	snprintf(part, sizeof(part), "  resync %u%% at %s/s",
		 total ? (unsigned)(MIN(done, total) * 100 / total) : 0u,
		 format_size(rate, sz, sizeof(sz)));
	append(line, size, part);
	if (json_get_i64(rs, "eta_s", &eta) == 0 && eta >= 0) {
		snprintf(part, sizeof(part), ", ETA %s", format_eta(eta, t, sizeof(t)));
		append(line, size, part);
	}
}

static void print_peer(const struct json_value *p, const struct widths *w)
{
	const char *link = json_get_str(p, "link"), *reason = json_get_str(p, "reason");
	uint64_t oos = 0;
	char line[1024], part[256], sz[32], text[160];

	snprintf(line, sizeof(line), "  %-*s  %-*s  %-*s  %-*s",
		 w->node, or_unknown(json_get_str(p, "node")), w->link, or_unknown(link),
		 w->peer_role, or_unknown(json_get_str(p, "peer_role")),
		 w->peer_disk, or_unknown(json_get_str(p, "peer_disk")));
	if (json_get_u64(p, "out_of_sync_bytes", &oos) == 0 && oos > 0) {
		snprintf(part, sizeof(part), "  out of sync %s", format_size(oos, sz, sizeof(sz)));
		append(line, sizeof(line), part);
	}
	if (link && (!strcmp(link, "SyncSource") || !strcmp(link, "SyncTarget")))
		append_resync(line, sizeof(line), json_get(p, "resync"));
	if (reason && *reason) {
		snprintf(part, sizeof(part), "  (%s)", clean(reason, text, sizeof(text)));
		append(line, sizeof(line), part);
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
	append(line, size, part);
	role = json_get_str(v, "role");
	if (role && !strcmp(role, "Primary") && json_get_u64(v, "export_size", &exp) == 0 &&
	    exp < bytes) {
		snprintf(part, sizeof(part), "  (new NBD clients get %s until every replica "
			 "has grown)", format_size(exp, a, sizeof(a)));
		append(line, size, part);
	}
	if (grow && json_get_u64(grow, "to", &to) == 0) {
		if (err && *err)
			snprintf(part, sizeof(part), "  cannot grow to %s: %s",
				 format_size(to, a, sizeof(a)), clean(err, text, sizeof(text)));
		else
			snprintf(part, sizeof(part), "  growing to %s",
				 format_size(to, a, sizeof(a)));
		append(line, size, part);
	}
}

static void print_volume(const struct json_value *v, const struct widths *w)
{
	const struct json_value *peers = json_get(v, "peers");
	uint64_t clients = 0;
	char line[1024];

	json_get_u64(v, "clients", &clients);
	snprintf(line, sizeof(line), "%-*s  %-*s  %-*s  clients %" PRIu64 "%s",
		 w->vol, or_unknown(json_get_str(v, "name")),
		 w->role, or_unknown(json_get_str(v, "role")),
		 w->disk, or_unknown(json_get_str(v, "disk")), clients,
		 json_get_bool(v, "io_frozen") ? "  I/O frozen" : "");
	append_size(line, sizeof(line), v);
	put_line(line);
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

	if (!peers || peers->type != JSON_ARRAY) {
		snprintf(why, whylen, "%s: no peer list", or_unknown(hv.name));
		return HEALTH_UNKNOWN;
	}
	for (p = peers->child; p && hv.n_peers < ARRAY_SIZE(hp); p = p->next)
		hp[hv.n_peers++] = (struct health_peer){
			.node = json_get_str(p, "node"), .link = json_get_str(p, "link"),
			.peer_disk = json_get_str(p, "peer_disk"),
		};
	if (p) {
		snprintf(why, whylen, "%s: too many peers", or_unknown(hv.name));
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
		.quorate = tristate(c, "quorate"), .synced = tristate(c, "synced"), .nodes = hn,
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

	printf("node %s\n", or_unknown(json_get_str(ans, "node")));
	if (evtext_cluster(json_get(ans, "cluster"), line, sizeof(line)))
		printf("%s\n", line);
	if (!vols->child)
		printf("no volumes\n");
	measure(vols, &w);
	for (const struct json_value *v = vols->child; v; v = v->next)
		print_volume(v, &w);
}

static int cmd_status(struct cli *cli)
{
	struct json_value *ans;
	const struct json_value *vols;
	char req[256], *raw, why[256];
	enum health h;

	snprintf(req, sizeof(req), "status%s%s\n", cli->n_args ? " " : "",
		 cli->n_args ? cli->args[0] : "");
	if (ask(cli, req, &ans, &raw) < 0)
		return HEALTH_UNKNOWN;
	if (cli->flag)
		printf("%s\n", raw);
	free(raw);
	vols = json_get(ans, "volumes");
	if (!json_get_bool(ans, "ok")) {
		print_refusal("status", ans);
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

/* ---- role changes, version ------------------------------------------------------ */

static int role_change(struct cli *cli, const char *what, bool force)
{
	struct json_value *ans;
	char req[256], msg[128];
	int ex = EX_OK;

	snprintf(req, sizeof(req), "%s %s%s\n", what, cli->args[0], force ? " --force" : "");
	if (ask(cli, req, &ans, NULL) < 0)
		return EXIT_FAILED;
	if (!json_get_bool(ans, "ok")) {
		snprintf(msg, sizeof(msg), "%s %s", what, cli->args[0]);
		print_refusal(msg, ans);
		ex = EXIT_FAILED;
	}
	json_value_free(ans);
	return ex;
}

static int cmd_promote(struct cli *cli) { return role_change(cli, "promote", cli->flag); }

static int cmd_can_promote(struct cli *cli)
{
	struct json_value *ans;
	char req[256], msg[128];
	int ex = EX_OK;

	snprintf(req, sizeof(req), "can-promote %s\n", cli->args[0]);
	if (ask(cli, req, &ans, NULL) < 0)
		return EXIT_FAILED;
	if (!json_get_bool(ans, "ok")) {
		snprintf(msg, sizeof(msg), "can-promote %s", cli->args[0]);
		print_refusal(msg, ans);
		ex = json_get_bool(ans, "retry") ? EX_TEMPFAIL : EXIT_FAILED;
	}
	json_value_free(ans);
	return ex;
}
static int cmd_demote(struct cli *cli) { return role_change(cli, "demote", false); }

static int cmd_version(struct cli *cli)
{
	struct json_value *ans;
	int ex = EX_OK;

	printf("replagent %s\n", PACKAGE_VERSION);
	fflush(stdout);
	if (ask(cli, "version\n", &ans, NULL) < 0)
		return EXIT_FAILED;
	if (json_get_bool(ans, "ok")) {
		printf("replagentd %s (node %s)\n", or_unknown(json_get_str(ans, "version")),
		       or_unknown(json_get_str(ans, "node")));
	} else {
		print_refusal("version", ans);
		ex = EXIT_FAILED;
	}
	json_value_free(ans);
	return ex;
}

/* Sends req; prints the refusal or runs ok(ans).  0 or EXIT_FAILED. */
static int simple_request(struct cli *cli, const char *req, const char *what,
			  void (*ok)(const struct json_value *ans))
{
	struct json_value *ans;
	int ex = EX_OK;

	if (ask(cli, req, &ans, NULL) < 0)
		return EXIT_FAILED;
	if (!json_get_bool(ans, "ok")) {
		print_refusal(what, ans);
		ex = EXIT_FAILED;
	} else if (ok) {
		ok(ans);
	}
	json_value_free(ans);
	return ex;
}

static void print_xml(const struct json_value *ans)
{
	fputs(or_unknown(json_get_str(ans, "xml")), stdout);
}

static int cmd_disk_xml(struct cli *cli)
{
	char req[256];

	snprintf(req, sizeof(req), "disk-xml %s%s%s\n", cli->args[0],
		 cli->n_args > 1 ? " " : "", cli->n_args > 1 ? cli->args[1] : "");
	return simple_request(cli, req, "disk-xml", print_xml);
}

static int cmd_up(struct cli *cli) { return role_change(cli, "up", false); }
static int cmd_down(struct cli *cli) { return role_change(cli, "down", false); }

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
		    strcmp(link, "Connecting") && !strcmp(or_unknown(json_get_str(p, "peer_role")),
							  "Primary"))
			primary = or_unknown(json_get_str(p, "node"));
	}
	printf("role=%s disk=%s up=%s frozen=%s clients=%lld peers=%u connected=%u "
	       "uptodate_peers=%u window=%s auto_promote=%s peer_primary=%s\n",
	       or_unknown(json_get_str(v, "role")),
	       or_unknown(json_get_str(v, "disk")), json_get_bool(v, "up") ? "yes" : "no",
	       json_get_bool(v, "io_frozen") ? "yes" : "no",
	       (long long)clients,
	       n, connected, uptodate, or_unknown(json_get_str(v, "window")),
	       json_get_bool(v, "auto_promote") ? "yes" : "no", primary);
}

static int cmd_show(struct cli *cli)
{
	char req[256];

	snprintf(req, sizeof(req), "status %s\n", cli->args[0]);
	return simple_request(cli, req, "show", print_show);
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

		if (ask(cli, req, &ans, NULL) < 0)
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
			json_get_i64(ver, "region_size", &rsz);
			offs = ver ? json_get(ver, "differing_offsets") : NULL;
			for (const struct json_value *o = offs ? offs->child : NULL; o; o = o->next)
				printf("differs: offset %s length %lld\n", o->str, (long long)rsz);
			printf("%s: %lld region(s) differ%s\n", cli->args[0], (long long)diffs,
			       diffs && repair ? ", repaired from this node" : "");
			json_value_free(ans);
			return diffs && !repair ? EXIT_FAILED : EX_OK;
		}
		json_value_free(ans);
		usleep(200 * 1000);
	}
	return EXIT_FAILED;
}

static int cmd_verify(struct cli *cli)
{
	char req[256];
	int ex;

	snprintf(req, sizeof(req), "verify %s%s\n", cli->args[0], cli->flag ? " --repair" : "");
	ex = simple_request(cli, req, "verify", NULL);
	return ex ? ex : verify_wait(cli, cli->flag);
}

/* ---- events -------------------------------------------------------------------- */

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int signo)
{
	stop_signal = signo;
}

/* Without SA_RESTART: a signal ends the poll() of next_line(). */
static void catch_stop_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* The stream's input, kept between lines. */
struct linebuf {
	char *buf;
	size_t len, cap;
	size_t used;		/* the line returned last, newline included */
};

/* The next line (NUL-terminated in place, no newline) into *line: 0, or
 * -EINTR (a stop signal), -ETIMEDOUT (deadline; 0: none), -EPROTO (the
 * daemon closed the stream), -EFBIG, -ENOMEM, -errno. */
static int next_line(struct linebuf *lb, int fd, uint64_t deadline, char **line)
{
	char *nl;

	memmove(lb->buf, lb->buf + lb->used, lb->len - lb->used);
	lb->len -= lb->used;
	lb->used = 0;
	while (!(nl = memchr(lb->buf, '\n', lb->len))) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t now = now_mono_ms();
		ssize_t k;
		int r;

		if (lb->len + 1 >= lb->cap && (r = grow(&lb->buf, &lb->cap)) < 0)
			return r;
		if (deadline && now >= deadline)
			return -ETIMEDOUT;
		r = poll(&p, 1, deadline ? (int)(deadline - now) : -1);
		if (stop_signal)
			return -EINTR;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r <= 0)
			continue;
		k = recv(fd, lb->buf + lb->len, lb->cap - lb->len - 1, MSG_DONTWAIT);
		if (k == 0)
			return -EPROTO;
		if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (k > 0)
			lb->len += (size_t)k;
	}
	*nl = '\0';
	lb->used = (size_t)(nl - lb->buf) + 1;
	*line = lb->buf;
	return 0;
}

/* One line of the stream, as is (--json) or as text; false if it is not
 * what the protocol promises (or, first, a refusal: said on stderr). */
static bool print_event(const struct cli *cli, const char *line, bool first)
{
	struct json_value *ev = NULL;
	char text[16384];

	if (json_parse(line, strlen(line), &ev) < 0 || ev->type != JSON_OBJECT) {
		if (first)
			fprintf(stderr, "replagent: unexpected answer from %s\n", cli->socket);
		json_value_free(ev);
		return false;
	}
	if (first && !json_get_bool(ev, "ok")) {
		print_refusal("events", ev);
		json_value_free(ev);
		return false;
	}
	if (cli->flag)
		printf("%s\n", line);
	else if (first && evtext_snapshot(ev, text, sizeof(text)))
		fputs(text, stdout);
	else if (!first && evtext_event(ev, text, sizeof(text)))
		fputs(text, stdout);
	fflush(stdout);
	json_value_free(ev);
	return true;
}

/* Prints the stream until a signal (0), the daemon's end of it (1). */
static int events_loop(const struct cli *cli, struct linebuf *lb, int fd)
{
	char *line;
	int r;

	while ((r = next_line(lb, fd, 0, &line)) == 0)
		if (!print_event(cli, line, false))
			fprintf(stderr, "replagent: unexpected line from %s\n", cli->socket);
	if (r == -EINTR)
		return EX_OK;
	fprintf(stderr, "replagent: %s: %s\n", cli->socket,
		r == -EPROTO ? "replagentd closed the event stream" : strerror(-r));
	return EXIT_FAILED;
}

static int cmd_events(struct cli *cli)
{
	struct linebuf lb = { .buf = malloc(4096), .cap = 4096 };
	char req[256], *line;
	int fd = -1, r, ex;

	snprintf(req, sizeof(req), "events%s%s\n", cli->n_args ? " " : "",
		 cli->n_args ? cli->args[0] : "");
	catch_stop_signals();
	r = lb.buf ? connect_to(cli->socket, &fd) : -ENOMEM;
	if (r < 0) {
		fprintf(stderr, "replagent: cannot connect to %s: %s (is replagentd running?)\n",
			cli->socket, strerror(-r));
		free(lb.buf);
		return HEALTH_UNKNOWN;
	}
	/* The snapshot comes at once; then events, for as long as it takes. */
	r = send_all(fd, req, strlen(req), now_mono_ms() + IO_TIMEOUT_MS);
	if (r == 0 || r == -EPIPE || r == -ECONNRESET)
		r = next_line(&lb, fd, now_mono_ms() + IO_TIMEOUT_MS, &line);
	if (r == -EINTR) {
		ex = EX_OK;
	} else if (r < 0) {
		fprintf(stderr, "replagent: no answer from %s: %s\n", cli->socket,
			r == -EPROTO ? "connection closed" : strerror(-r));
		ex = HEALTH_UNKNOWN;
	} else {
		ex = print_event(cli, line, true) ? events_loop(cli, &lb, fd) : EXIT_FAILED;
	}
	close(fd);
	free(lb.buf);
	return ex;
}

static int cmd_help(struct cli *cli)
{
	usage(stdout);
	return EX_OK;
}

static const struct command commands[] = {
	{ "status", 0, 1, "--json", cmd_status },
	{ "events", 0, 1, "--json", cmd_events },
	{ "promote", 1, 1, "--force", cmd_promote },
	{ "demote", 1, 1, NULL, cmd_demote },
	{ "can-promote", 1, 1, NULL, cmd_can_promote },
	{ "version", 0, 0, NULL, cmd_version },
	{ "disk-xml", 1, 2, NULL, cmd_disk_xml },
	{ "up", 1, 1, NULL, cmd_up },
	{ "down", 1, 1, NULL, cmd_down },
	{ "show", 1, 1, NULL, cmd_show },
	{ "verify", 1, 1, "--repair", cmd_verify },
	{ "help", 0, 0, NULL, cmd_help },
};

/* ---- arguments -------------------------------------------------------------------- */

/* A word the daemon's one-line protocol can carry: no blanks, no control
 * characters (the daemon checks the name itself). */
static bool word_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == 0x7f)
			return false;
	return true;
}

static int parse_command_args(const struct command *cmd, struct cli *cli, int argc,
			      char **argv)
{
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (a[0] == '-' && cmd->flag && !strcmp(a, cmd->flag)) {
			cli->flag = true;
		} else if (a[0] == '-' && a[1]) {
			return usage_error("unknown option", a);
		} else if (!word_ok(a)) {
			return usage_error("invalid volume name", a);
		} else if (cli->n_args == cmd->max_args) {
			return usage_error("unexpected argument", a);
		} else {
			cli->args[cli->n_args++] = a;
		}
	}
	if (cli->n_args < cmd->min_args)
		return usage_error("missing VOLUME for", cmd->name);
	return 0;
}

static int parse_global(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *env = getenv("REPLAGENT_SOCKET");
	int c;

	cli->socket = env && *env ? env : CFG_DEFAULT_CONTROL_SOCKET;
	while ((c = getopt_long(argc, argv, "+s:hV", opts, NULL)) != -1) {
		switch (c) {
		case 's': cli->socket = optarg; break;
		case 'h': usage(stdout); exit(EX_OK);
		case 'V': printf("replagent %s\n", PACKAGE_VERSION); exit(EX_OK);
		default: usage(stderr); return EX_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "replagent: no command given\n");
		usage(stderr);
		return EX_USAGE;
	}
	return 0;
}

/* ---- resolve ------------------------------------------------------------------ */

static int cmd_resolve(struct cli *cli, int argc, char **argv)
{
	char req[256];

	if (argc != 3 || strcmp(argv[1], "--keep") || !word_ok(argv[0]) || !word_ok(argv[2]))
		return usage_error("usage: resolve VOLUME --keep", "NODE");
	snprintf(req, sizeof(req), "resolve %s --keep %s\n", argv[0], argv[2]);
	return simple_request(cli, req, "resolve", NULL);
}

/* ---- window open | close -------------------------------------------------------- */

static int cmd_window(struct cli *cli, int argc, char **argv)
{
	const char *vol = NULL, *timeout = NULL;
	char req[256], what[128];
	bool open_it = argc >= 1 && !strcmp(argv[0], "open");

	if (argc < 1 || (!open_it && strcmp(argv[0], "close")))
		return usage_error("usage: window open|close VOLUME, got", argc ? argv[0] : "");
	for (int i = 1; i < argc; i++) {
		if (open_it && !strcmp(argv[i], "--timeout") && i + 1 < argc && word_ok(argv[i + 1]))
			timeout = argv[++i];
		else if (argv[i][0] == '-')
			return usage_error("unknown option", argv[i]);
		else if (!vol && word_ok(argv[i]))
			vol = argv[i];
		else
			return usage_error("unexpected argument", argv[i]);
	}
	if (!vol)
		return usage_error("missing VOLUME for window", argv[0]);
	snprintf(req, sizeof(req), "window-%s %s%s%s\n", argv[0], vol, timeout ? " " : "",
		 timeout ? timeout : "");
	snprintf(what, sizeof(what), "window %s %s", argv[0], vol);
	return simple_request(cli, req, what, NULL);
}

/* ---- volume create | list | delete | resize ---------------------------------- */

static void print_volume_list(const struct json_value *ans)
{
	const struct json_value *vols = json_get(ans, "volumes");

	printf("%-20s %10s  %-6s %-24s %s\n", "NAME", "SIZE", "PORT", "NODES", "PRIMARY");
	for (const struct json_value *v = vols ? vols->child : NULL; v; v = v->next) {
		const struct json_value *nodes = json_get(v, "nodes");
		char size[32], list[128] = "";
		int64_t bytes = 0, port = 0;
		json_get_i64(v, "size", &bytes);
		json_get_i64(v, "port", &port);
		for (const struct json_value *n = nodes ? nodes->child : NULL; n; n = n->next) {
			append(list, sizeof(list), n == nodes->child ? "" : ",");
			append(list, sizeof(list), n->type == JSON_STRING ? n->str : "?");
		}
		printf("%-20s %10s  %-6lld %-24s %s\n", or_unknown(json_get_str(v, "name")),
		       format_size((uint64_t)bytes, size, sizeof(size)), (long long)port, list,
		       or_unknown(json_get_str(v, "primary")));
	}
}

static int volume_create(struct cli *cli, int argc, char **argv)
{
	const char *name = NULL, *size = NULL, *nodes = NULL;
	char req[512];

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--size") && i + 1 < argc)
			size = argv[++i];
		else if (!strcmp(argv[i], "--nodes") && i + 1 < argc)
			nodes = argv[++i];
		else if (argv[i][0] == '-')
			return usage_error("unknown option", argv[i]);
		else if (!name && word_ok(argv[i]))
			name = argv[i];
		else
			return usage_error("unexpected argument", argv[i]);
	}
	if (!name || !size || !nodes || !word_ok(size) || !word_ok(nodes))
		return usage_error("usage: volume create NAME --size SIZE --nodes",
				   "N1,N2[,N3]");
	snprintf(req, sizeof(req), "volume-create %s %s %s\n", name, size, nodes);
	return simple_request(cli, req, "volume create", NULL);
}

/* volume resize NAME --size SIZE: a new version of the definition; each
 * node grows its replica when it gets it (status shows how it goes). */
static int volume_resize(struct cli *cli, int argc, char **argv)
{
	const char *name = NULL, *size = NULL;
	char req[512];
	int ex;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--size") && i + 1 < argc)
			size = argv[++i];
		else if (argv[i][0] == '-')
			return usage_error("unknown option", argv[i]);
		else if (!name && word_ok(argv[i]))
			name = argv[i];
		else
			return usage_error("unexpected argument", argv[i]);
	}
	if (!name || !size || !word_ok(size))
		return usage_error("usage: volume resize NAME --size", "SIZE");
	snprintf(req, sizeof(req), "volume-resize %s %s\n", name, size);
	ex = simple_request(cli, req, "volume resize", NULL);
	if (ex == EX_OK)
		printf("volume %s: the new size %s goes to every node; each replica grows "
		       "as it gets it (replagent status shows it)\n", name, size);
	return ex;
}

static int cmd_volume(struct cli *cli, int argc, char **argv)
{
	char req[256];
	bool json = argc == 2 && !strcmp(argv[1], "--json");

	if (argc >= 1 && !strcmp(argv[0], "create"))
		return volume_create(cli, argc - 1, argv + 1);
	if (argc >= 1 && !strcmp(argv[0], "resize"))
		return volume_resize(cli, argc - 1, argv + 1);
	if (argc >= 1 && !strcmp(argv[0], "list") && (argc == 1 || json)) {
		if (json) {
			char *raw = NULL;
			struct json_value *ans = NULL;
			int r = ask(cli, "volume-list\n", &ans, &raw);
			if (r == 0)
				fputs(raw, stdout);
			free(raw);
			json_value_free(ans);
			return r < 0 ? EXIT_FAILED : EX_OK;
		}
		return simple_request(cli, "volume-list\n", "volume list", print_volume_list);
	}
	if (argc == 2 && !strcmp(argv[0], "delete") && word_ok(argv[1])) {
		snprintf(req, sizeof(req), "volume-delete %s\n", argv[1]);
		return simple_request(cli, req, "volume delete", NULL);
	}
	return usage_error("usage: volume create|list|delete|resize, got", argc ? argv[0] : "");
}

int main(int argc, char **argv)
{
	struct cli cli = { 0 };
	int ex;

	ex = parse_global(&cli, argc, argv);
	if (ex)
		return ex;
	if (!strcmp(argv[optind], "volume"))
		return cmd_volume(&cli, argc - optind - 1, argv + optind + 1);
	if (!strcmp(argv[optind], "resolve"))
		return cmd_resolve(&cli, argc - optind - 1, argv + optind + 1);
	if (!strcmp(argv[optind], "window"))
		return cmd_window(&cli, argc - optind - 1, argv + optind + 1);
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		if (strcmp(argv[optind], commands[i].name))
			continue;
		ex = parse_command_args(&commands[i], &cli, argc - optind - 1, argv + optind + 1);
		return ex ? ex : commands[i].fn(&cli);
	}
	return usage_error("unknown command", argv[optind]);
}
