/* replagentd.c: the node daemon.  In static mode it serves the volumes that
 * its configuration file declares, over NBD, on an epoll loop; main() reads
 * as the list of steps, with one teardown at the end.  It owns the engine's
 * hooks and hands them to cluster mode and to the event subscribers, and
 * it rereads the configuration on SIGHUP (cfgreload.c decides what that
 * changes).  Exit codes are sysexits(3): 64 usage, 78 configuration, 73
 * cannot create a socket, 75 already running; a volume that cannot be
 * opened is listed failed in status, and the others are served. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "cfg.h"
#include "cfgreload.h"
#include "clusterd.h"
#include "clview.h"
#include "control.h"
#include "events.h"
#include "evloop.h"
#include "log.h"
#include "metrics.h"
#include "qblog.h"
#include "repl.h"
#include "util.h"
#include "volfail.h"
#include "wire.h"

#define DEFAULT_CONFIG "/etc/replagent/replagent.conf"
#define STOP_GRACE_MS 10000
#define STOP_CHECK_MS 20

struct daemon {
	const char *config_path;
	const char *node;
	bool foreground;
	bool check_only;
	bool debug;
	struct cfg *cfg;
	struct evloop *loop;
	struct repl_engine *eng;
	struct control *control;
	struct clusterd *clusterd;
	struct events *events;
	struct metrics *metrics;	/* NULL: metrics-listen is off */
	struct volfail *failed;		/* volumes that could not be opened */
	int pidfd;
	uint8_t key[WIRE_KEY_MAX];
	size_t key_len;
	bool stop;
	uint64_t stop_deadline;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: replagentd [-f] [-c FILE] [-n NODE] [-v]\n"
		"       replagentd -c FILE --check-config\n"
		"Serve replicated block volumes over NBD.\n\n"
		"  -c, --config FILE   configuration (default " DEFAULT_CONFIG ")\n"
		"  -f, --foreground    stay in the foreground, log to stderr\n"
		"  -n, --node NAME     this node's name (overrides the configuration)\n"
		"  -v, --verbose       debug logging\n"
		"      --check-config  parse the configuration and exit\n"
		"  -h, --help          this text\n"
		"  -V, --version       print the version\n");
}

static int parse_args(struct daemon *d, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "node", required_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "check-config", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	d->config_path = DEFAULT_CONFIG;
	while ((c = getopt_long(argc, argv, "c:fn:vhV", opts, NULL)) != -1) {
		switch (c) {
		case 'c': d->config_path = optarg; break;
		case 'f': d->foreground = true; break;
		case 'n': d->node = optarg; break;
		case 'v': d->debug = true; break;
		case 'C': d->check_only = true; break;
		case 'h': usage(stdout); exit(EX_OK);
		case 'V': printf("replagentd %s\n", PACKAGE_VERSION); exit(EX_OK);
		default: usage(stderr); return EX_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "replagentd: unexpected argument \"%s\"\n", argv[optind]);
		usage(stderr);
		return EX_USAGE;
	}
	return 0;
}

static int load_config(struct daemon *d)
{
	char err[512];

	if (cfg_load(d->config_path, &d->cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "replagentd: %s\n", err);
		return EX_CONFIG;
	}
	if (d->node && cfg_set_node(d->cfg, d->node) < 0) {
		fprintf(stderr, "replagentd: invalid node name \"%s\"\n", d->node);
		return EX_USAGE;
	}
	return 0;
}

/* mkdir -p with the given mode for the directories it creates. */
static int mkdir_p(const char *path, mode_t mode)
{
	char buf[4096];
	size_t len = strlen(path);

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int mkdir_parent(const char *path, mode_t mode)
{
	char buf[4096];
	char *slash;

	if (strlen(path) >= sizeof(buf))
		return -ENAMETOOLONG;
	strcpy(buf, path);
	slash = strrchr(buf, '/');
	if (!slash || slash == buf)
		return 0;
	*slash = '\0';
	return mkdir_p(buf, mode);
}

/* Holds an exclusive lock on the pidfile for the daemon's life. */
static int pidfile_take(struct daemon *d)
{
	const char *path = d->cfg->pidfile;
	char buf[32];
	int fd, n;

	if (!path || !*path)
		return 0;
	mkdir_parent(path, 0755);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		log_err_errno(errno, "cannot open pidfile %s", path);
		return EX_CANTCREAT;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		n = (int)read(fd, buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = '\0';
		log_err("another replagentd holds %s (pid %s)", path,
			n > 0 ? strtok(buf, "\n") : "?");
		close(fd);
		return EX_TEMPFAIL;
	}
	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n)
		log_warn_errno(errno, "cannot write pidfile %s", path);
	d->pidfd = fd;
	return 0;
}

static void pidfile_release(struct daemon *d)
{
	if (d->pidfd < 0)
		return;
	unlink(d->cfg->pidfile);
	close(d->pidfd);
	d->pidfd = -1;
}

/* While stopping: leaves the loop once the engine has stopped or the grace
 * period is over, else looks again in STOP_CHECK_MS. */
static void stop_check(void *arg)
{
	struct daemon *d = arg;

	if (repl_engine_stopped(d->eng) || now_mono_ms() >= d->stop_deadline ||
	    evloop_timer_add(d->loop, STOP_CHECK_MS, stop_check, d, NULL) < 0)
		evloop_stop(d->loop);
}

static void on_stop_signal(void *arg, int signo)
{
	struct daemon *d = arg;

	if (d->stop) {
		log_notice("second signal %d: stopping now", signo);
		d->stop_deadline = 0;
		evloop_stop(d->loop);
		return;
	}
	log_notice("signal %d: stopping", signo);
	d->stop = true;
	d->stop_deadline = now_mono_ms() + STOP_GRACE_MS;
	repl_engine_stop(d->eng);
	stop_check(d);
}

static void reload(struct daemon *d);

static void on_hup(void *arg, int signo)
{
	reload(arg);
}

static int setup_loop(struct daemon *d)
{
	struct repl_loop rl;
	int r;

	r = evloop_new(&d->loop);
	if (r == 0) {
		evloop_as_repl(d->loop, &rl);
		r = repl_engine_new(&rl, &d->eng);
	}
	if (r == 0)
		r = evloop_signal_add(d->loop, SIGTERM, on_stop_signal, d);
	if (r == 0)
		r = evloop_signal_add(d->loop, SIGINT, on_stop_signal, d);
	if (r == 0)
		r = evloop_signal_add(d->loop, SIGHUP, on_hup, d);
	if (r < 0) {
		log_err_errno(-r, "cannot set up the main loop");
		return EX_OSERR;
	}
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

/* Fills the replication part of vc from the volume's replica lines: our
 * own line is where we listen, the others are the peers. */
static void replication_config(const struct cfg *cfg, const struct cfg_volume *cv,
			       struct repl_volume_config *vc)
{
	for (unsigned i = 0; i < cv->n_replicas; i++) {
		const struct cfg_replica *r = &cv->replicas[i];
		if (strcmp(r->node, cfg->node) == 0) {
			vc->listen_host = r->host;
			vc->listen_port = r->port;
		} else if (vc->n_peers < REPL_MAX_PEERS) {
			vc->peers[vc->n_peers++] = (struct repl_peer_config){
				r->node, r->host, r->port };
		}
	}
	vc->node = cfg->node;
	cfg_repl_tuning(cfg, vc);
}

/* The shared key, needed once any volume is replicated. */
static int load_key(struct daemon *d)
{
	const char *why = NULL;
	ssize_t n;

	n = wire_key_load(d->cfg->key_file, d->key, sizeof(d->key), &why);
	if (n < 0) {
		log_err("cannot use key file %s: %s", d->cfg->key_file,
			why ? why : strerror((int)-n));
		return EX_CONFIG;
	}
	d->key_len = (size_t)n;
	return 0;
}

/* Serves cv (of the running configuration, or of the one a reload read)
 * with the running configuration's node, state directory and tuning.  0
 * or an exit code: EX_CANTCREAT when the volume cannot be opened (the
 * reason is in d->failed, and the other volumes go on), another when
 * nothing can be served (the key). */
static int add_volume(struct daemon *d, const struct cfg_volume *cv, struct repl_volume **out)
{
	const struct cfg *cfg = d->cfg;
	char meta[4096], marker[4096], error[512] = "";
	struct repl_volume_config vc = {
		.name = cv->name, .backing = cv->backing, .size = cv->size,
		.io_threads = cv->io_threads, .no_inline_writes = cv->io_inline_off,
		.meta = cv->meta, .al_extents = cv->al_extents,
		.error = error, .error_len = sizeof(error),
	};
	int r;

	if (!vc.meta) {
		snprintf(meta, sizeof(meta), "%s/%s.meta", cfg->state_dir, cv->name);
		vc.meta = meta;
	}
	if (cv->n_replicas)
		vc.loss_marker = cfg_loss_marker(cfg, cv->name, marker, sizeof(marker));
	cfg_repl_tuning(cfg, &vc);	/* also shown, and reloaded, for a local one */
	if (cv->n_replicas) {
		if (!d->key_len && (r = load_key(d)))
			return r;
		replication_config(cfg, cv, &vc);
		vc.key = d->key;
		vc.key_len = d->key_len;
	}
	r = repl_volume_add(d->eng, &vc, out);
	if (r < 0) {
		log_err("%s:%d: volume %s failed: %s; it is not served, the other volumes are",
			cfg->path, cv->line, cv->name, error[0] ? error : strerror(-r));
		volfail_set(d->failed, cv->name, error[0] ? error : strerror(-r));
		return EX_CANTCREAT;
	}
	volfail_clear(d->failed, cv->name);
	return 0;
}

/* One volume that cannot be opened does not stop the others (nor makes
 * a restart loop of the service): it is listed failed in status. */
static int add_volumes(struct daemon *d)
{
	const struct cfg *cfg = d->cfg;
	unsigned served = 0;
	int r;

	if (volfail_new(&d->failed) < 0) {
		log_err("out of memory");
		return EX_OSERR;
	}
	r = mkdir_p(cfg->state_dir, 0700);
	if (r < 0) {
		log_err_errno(-r, "cannot create state directory %s", cfg->state_dir);
		return EX_CANTCREAT;
	}
	for (unsigned i = 0; i < cfg->n_volumes; i++) {
		const struct cfg_volume *cv = &cfg->volumes[i];
		if (!cfg_volume_here(cfg, cv)) {
			log_info("volume %s has no replica on node %s: not served here",
				 cv->name, cfg->node);
			continue;
		}
		r = add_volume(d, cv, NULL);
		if (r == EX_CANTCREAT)
			continue;
		if (r)
			return r;
		served++;
	}
	log_info("node %s: %u volume(s)%s", cfg->node, served,
		 volfail_count(d->failed) ? ", some failed (see status)" : "");
	return 0;
}

/* The NBD socket must be reachable by the user QEMU runs as (libvirt's
 * qemu runs as libvirt-qemu:kvm on Debian): group nbd-socket-group (kvm by
 * default), mode 0660, in a world-traversable directory.  Without that
 * group it is 0600, the daemon's user only, and the log says so: NBD has
 * no authentication, so a socket open to everyone would let any local
 * user read and write every volume.  A group named in the configuration
 * that does not exist is an error. */
static int listen_nbd(struct daemon *d)
{
	const struct cfg *cfg = d->cfg;
	const char *gname = cfg->nbd_socket_group ? cfg->nbd_socket_group : "kvm";
	struct group *g = *gname ? getgrnam(gname) : NULL;
	int r;

	repl_nbd_set_clients_max(d->eng, cfg->nbd_clients_max);
	if (cfg->nbd_socket) {
		if (!g && *gname && cfg->nbd_socket_group) {
			log_err("nbd-socket-group: there is no group \"%s\" on this node", gname);
			return EX_CONFIG;
		}
		mkdir_parent(cfg->nbd_socket, 0755);
		r = repl_nbd_listen_unix(d->eng, cfg->nbd_socket, g ? 0660 : 0600,
					 g ? g->gr_gid : (gid_t)-1);
		if (r < 0) {
			log_err_errno(-r, "cannot listen on %s", cfg->nbd_socket);
			return EX_CANTCREAT;
		}
		if (g)
			log_info("NBD socket %s: group %s, mode 0660", cfg->nbd_socket, gname);
		else
			log_warn("NBD socket %s: mode 0600, only its owner may connect (%s)",
				 cfg->nbd_socket, *gname ? "there is no group kvm on this node; "
				 "set nbd-socket-group" : "nbd-socket-group = none");
	}
	if (cfg->nbd_host && cfg->nbd_tls != 0) {
		const char *dir = cfg->nbd_tls_dir ? cfg->nbd_tls_dir : CFG_DEFAULT_NBD_TLS_DIR;
		r = repl_nbd_tls_set(d->eng, dir, (const char *const *)cfg->nbd_tls_allow, true);
		if (r < 0) {
			log_err_errno(-r, "NBD over TCP needs TLS certificates (nbd-tls = require%s): "
				      "set nbd-tls-cert-dir to a directory with ca-cert.pem, "
				      "server-cert.pem and server-key.pem, or nbd-tls = off",
				      cfg->nbd_tls < 0 ? ", the default with nbd-listen" : "");
			return EX_CONFIG;
		}
	} else if (cfg->nbd_host) {
		log_warn("NBD over TCP without TLS (nbd-tls = off): anyone who reaches %s:%s "
			 "can read and write every volume", *cfg->nbd_host ? cfg->nbd_host : "*",
			 cfg->nbd_port);
	}
	if (cfg->nbd_host) {
		r = repl_nbd_listen_tcp(d->eng, cfg->nbd_host, cfg->nbd_port);
		if (r < 0) {
			log_err_errno(-r, "cannot listen on TCP %s:%s", cfg->nbd_host,
				      cfg->nbd_port);
			return EX_CANTCREAT;
		}
	}
	return 0;
}

/* metrics-listen: /metrics over HTTP, on this loop (metrics.h). */
static int open_metrics(struct daemon *d)
{
	if (!d->cfg->metrics_host)
		return 0;
	if (metrics_open(d->loop, d->eng, d->cfg->metrics_host, d->cfg->metrics_port,
			 &d->metrics) < 0)
		return EX_CANTCREAT;
	return 0;
}

static int open_control(struct daemon *d)
{
	int r = control_open(d->loop, d->eng, d->cfg, &d->control);

	if (r < 0) {
		log_err_errno(-r, "cannot open the control socket %s", d->cfg->control_socket);
		return EX_CANTCREAT;
	}
	control_set_failed(d->control, d->failed);
	return 0;
}

/* Cluster mode: volumes, quorum and node names come from corosync. */
static int open_cluster(struct daemon *d)
{
	int r;

	if (!d->cfg->cluster)
		return 0;
	if (!d->key_len && (r = load_key(d)))
		return r;
	r = clusterd_open(d->loop, d->eng, d->cfg, d->key, d->key_len, d->failed,
			  &d->clusterd);
	if (r < 0) {
		log_err_errno(-r, "cannot join the cluster");
		return EX_UNAVAILABLE;
	}
	clusterd_attach_control(d->clusterd, d->control);
	return 0;
}

/* ---- the engine's hooks: cluster mode's, and the events' ---------------------- */

static int hook_outdate(void *arg, struct repl_volume *vol, const char *node, uint64_t token)
{
	struct daemon *d = arg;

	return d->clusterd ? clusterd_hook_outdate(d->clusterd, vol, node, token) : -ENOTSUP;
}

static void hook_changed(void *arg, struct repl_volume *vol)
{
	struct daemon *d = arg;

	if (d->clusterd)
		clusterd_hook_changed(d->clusterd, vol);
	events_volume_changed(d->events, vol);
}

static int hook_may_promote(void *arg, struct repl_volume *vol, bool takeover, char *why,
			    size_t len)
{
	struct daemon *d = arg;

	return d->clusterd ? clusterd_hook_may_promote(d->clusterd, vol, takeover, why, len) : 0;
}

static void cluster_view(void *arg, struct clview *out)
{
	clusterd_view(arg, out);
}

/* "replagent events" subscribers, and the hooks that feed them.  Only
 * cluster mode installs an outdate hook: with one, the engine waits for
 * the group to record a lost peer, not for the other peers (repl.h). */
static int open_events(struct daemon *d)
{
	struct repl_hooks hooks = { d, d->clusterd ? hook_outdate : NULL, hook_changed,
				    hook_may_promote };
	int r = events_new(d->loop, d->eng, d->cfg, &d->events);

	if (r < 0) {
		log_err_errno(-r, "cannot set up events");
		return EX_OSERR;
	}
	control_set_events(d->control, d->events);
	if (d->clusterd) {
		events_set_cluster(d->events, cluster_view, d->clusterd);
		clusterd_set_notify(d->clusterd, events_cluster_changed, d->events);
	}
	repl_engine_set_hooks(d->eng, &hooks);
	return 0;
}

/* ---- SIGHUP: reload ------------------------------------------------------------- */

static void apply_tuning(struct daemon *d)
{
	for (struct repl_volume *v = repl_volume_first(d->eng); v; v = repl_volume_next(v)) {
		struct repl_volume_config vc = { 0 };
		int r;

		cfg_repl_tuning(d->cfg, &vc);
		r = repl_volume_set_tuning(v, &vc);
		if (r < 0)
			log_err_errno(-r, "reload: cannot apply the tuning to volume %s",
				      repl_volume_name(v));
	}
}

/* Serves next->volumes[i] and moves it into the running configuration. */
static int reload_add(struct daemon *d, struct cfg *next, unsigned i)
{
	const struct cfg_volume *cv = &next->volumes[i];
	struct repl_volume *vol = NULL;

	if (add_volume(d, cv, &vol))
		return -1;
	log_notice("reload: volume %s added (%s)", cv->name, cv->backing);
	if (cfgreload_take_volume(d->cfg, next, i) < 0)
		log_warn("reload: out of memory: volume %s is served but a later reload "
			 "will try to add it again", next->volumes[i].name);
	hook_changed(d, vol);	/* subscribers learn it at once */
	return 0;
}

/* The running configuration's volumes that failed to open, tried again:
 * a person who fixed the file or the disk reloads. */
static void retry_failed(struct daemon *d)
{
	for (unsigned i = 0; i < d->cfg->n_volumes; i++) {
		const struct cfg_volume *cv = &d->cfg->volumes[i];
		struct repl_volume *vol = NULL;

		if (!volfail_reason(d->failed, cv->name) || !cfg_volume_here(d->cfg, cv) ||
		    add_volume(d, cv, &vol))
			continue;
		log_notice("reload: volume %s served now (%s)", cv->name, cv->backing);
		hook_changed(d, vol);
	}
}

/* A file that does not parse changes nothing; otherwise what can change at
 * run time does, what cannot is named, and failed volumes are tried
 * again. */
static void reload(struct daemon *d)
{
	bool failed[CFGRELOAD_ITEMS_MAX] = { false }, any_failed = false;
	char err[512], summary[2048];
	struct cfgreload plan;
	struct cfg *next;

	log_notice("SIGHUP: reading %s", d->config_path);
	if (cfg_load(d->config_path, &next, err, sizeof(err)) < 0) {
		log_err("reload: %s; the running configuration stays", err);
		return;
	}
	/* What overrides the file stays: -n NODE, or corosync's name. */
	if (d->node || d->cfg->cluster)
		snprintf(next->node, sizeof(next->node), "%s", d->cfg->node);
	cfgreload_plan(d->cfg, next, &plan);
	cfgreload_take_settings(d->cfg, next);
	if (plan.log_level && !d->debug)
		qblog_set_level(d->cfg->log_level);
	if (plan.tuning)
		apply_tuning(d);
	retry_failed(d);
	for (unsigned k = 0; k < plan.n_added; k++)
		any_failed |= failed[k] = reload_add(d, next, plan.added[k]) < 0;
	cfgreload_summary(&plan, next, failed, summary, sizeof(summary));
	plog(plan.n_restart || any_failed ? LOG_WARNING : LOG_NOTICE, NULL, "reload of %s: %s",
	     d->config_path, summary);
	cfg_free(next);
}

static int daemonize(struct daemon *d)
{
	if (d->foreground)
		return 0;
	if (daemon(0, 0) < 0) {
		log_err_errno(errno, "cannot become a daemon");
		return EX_OSERR;
	}
	return 0;
}

/* Runs until a stop signal's stop_check() ends the loop. */
static int run(struct daemon *d)
{
	int r = evloop_run(d->loop);

	if (r < 0) {
		log_err_errno(-r, "main loop");
		return EX_OSERR;
	}
	if (!repl_engine_stopped(d->eng))
		log_warn("clients did not finish within %d ms: closing them", STOP_GRACE_MS);
	return 0;
}

int main(int argc, char **argv)
{
	struct daemon d = { .pidfd = -1 };
	char blackbox[4096];
	int ex;

	rlog_set_ident("replagentd");
	ex = parse_args(&d, argc, argv);
	if (!ex)
		ex = load_config(&d);
	if (!ex && d.check_only) {
		printf("%s: configuration OK (%u volume(s))\n", d.config_path, d.cfg->n_volumes);
		cfg_free(d.cfg);
		return EX_OK;
	}
	if (ex)
		goto out;
	/* syslog, stderr in the foreground, and a blackbox that a fatal signal
	 * writes to the state directory (read it with qb-blackbox). */
	snprintf(blackbox, sizeof(blackbox), "%s/replagentd.blackbox", d.cfg->state_dir);
	qblog_init("replagentd", d.foreground, d.debug ? LOG_DEBUG : d.cfg->log_level, blackbox);
	ex = daemonize(&d);
	if (!ex)
		ex = pidfile_take(&d);
	if (!ex)
		ex = setup_loop(&d);
	if (!ex)
		ex = add_volumes(&d);
	if (!ex)
		ex = open_control(&d);
	if (!ex)
		ex = open_cluster(&d);
	if (!ex)
		ex = open_events(&d);
	if (!ex)
		ex = listen_nbd(&d);
	if (!ex)
		ex = open_metrics(&d);
	if (!ex) {
		log_notice("replagentd %s started (%s mode)", PACKAGE_VERSION,
			   d.cfg->cluster ? "cluster" : "static");
		ex = run(&d);
	}
out:
	/* Each is NULL once gone: the engine's hooks may still run while it
	 * frees its volumes. */
	clusterd_close(d.clusterd);
	d.clusterd = NULL;
	control_close(d.control);
	metrics_close(d.metrics);
	events_free(d.events);
	d.events = NULL;
	repl_engine_free(d.eng);
	volfail_free(d.failed);
	evloop_free(d.loop);
	pidfile_release(&d);
	if (d.cfg && !ex)
		log_notice("stopped");
	cfg_free(d.cfg);
	memset(d.key, 0, sizeof(d.key));
	qblog_fini();
	return ex;
}
