/* cfg.h: the replagentd configuration file, parsed into a struct cfg.
 *
 * One INI-like file ([global] and [volume NAME] sections of "key = value"
 * lines; templates/replagent.conf documents every key) that may be copied
 * unchanged to every node.  The parser checks syntax and each value on its
 * own, fills in defaults, and reports the first problem as "PATH:LINE: what
 * is wrong".  It does not touch the files and sockets the values name, does
 * not resolve host names, and does not decide whether a backing file must be
 * created: that is the daemon's job, which also owns logging and exit codes. */
#ifndef REPL_AGENT_CFG_H
#define REPL_AGENT_CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CFG_NAME_MAX 64
#define CFG_LINE_MAX 4095	/* bytes per line, newline not counted */
#define CFG_REPLICAS_MAX 3

#define CFG_DEFAULT_NBD_SOCKET "/run/replagent/nbd.sock"
/* QEMU's and libvirt's default x509 dir: one set of certificates for all. */
#define CFG_DEFAULT_NBD_TLS_DIR "/etc/pki/qemu"
#define CFG_TLS_ALLOW_MAX 16
#define CFG_DEFAULT_CONTROL_SOCKET "/run/replagent/control.sock"
#define CFG_DEFAULT_STATE_DIR "/var/lib/replagent"
#define CFG_DEFAULT_PIDFILE "/run/replagent/replagentd.pid"
#define CFG_DEFAULT_KEY_FILE "/etc/replagent/cluster.key"
#define CFG_DEFAULT_OUTDATE_TIMEOUT_S 10

struct cfg_replica {
	char node[CFG_NAME_MAX + 1];
	char host[256];		/* host name, IPv4 or IPv6 address (no brackets) */
	char port[16];		/* decimal 1..65535 */
	int line;
};

struct cfg_volume {
	char name[CFG_NAME_MAX + 1];
	char *backing;
	char *meta;		/* always set: default STATE_DIR/NAME.meta */
	uint64_t size;		/* 0 = not given */
	unsigned io_threads;	/* 0 = engine default */
	unsigned al_extents;	/* 0 = engine default */
	bool io_inline_off;	/* io-inline = no */
	struct cfg_replica replicas[CFG_REPLICAS_MAX];
	unsigned n_replicas;	/* 0 (local volume) or 2..3 */
	int line;		/* line of its [volume] header */
};

struct cfg {
	char *path;
	char node[CFG_NAME_MAX + 1];	/* "" if uname's nodename is no valid name */
	char *nbd_socket;	/* NULL = disabled */
	char *nbd_host;		/* NULL = no TCP; "" = all addresses */
	char *nbd_port;		/* NULL iff nbd_host is NULL */
	/* Group of the NBD socket (mode 0660); NULL: kvm if there is one;
	 * "": none (mode 0600, owner only). */
	char *nbd_socket_group;
	unsigned nbd_clients_max;	/* 0: the engine's default */
	int nbd_tls;		/* -1: require with nbd-listen (default), 0: off, 1: require */
	char *nbd_tls_dir;	/* NULL: CFG_DEFAULT_NBD_TLS_DIR */
	/* DN patterns a TLS client must match; NULL-terminated, none: any. */
	char *nbd_tls_allow[CFG_TLS_ALLOW_MAX + 1];
	unsigned n_nbd_tls_allow;
	char *control_socket;
	char *state_dir;
	char *pidfile;
	char *key_file;
	int log_level;		/* syslog LOG_* */
	unsigned outdate_timeout_s;
	bool cluster;		/* cluster = corosync: volumes come from the group */
	char *repl_address;	/* NULL: corosync's address of this node */
	char *data_dir;		/* backing files of cluster volumes; NULL: state-dir */
	uint64_t resync_rate_max;	/* bytes/s, 0: no limit */
	char after_sb[3];	/* 0: disconnect, 1: the safe automatic policy */
	bool after_sb_set[3];
	bool auto_promote;
	bool link_plain;	/* link-security = none */	/* promote for the first NBD client, demote after the last */
	char *metrics_host;	/* /metrics over HTTP: NULL = off; "" = all addresses */
	char *metrics_port;	/* NULL iff metrics_host is NULL */
	struct cfg_volume *volumes;
	unsigned n_volumes;
};

/* Parses path.  On error returns a negative errno (-EINVAL for a bad file,
 * -ENOENT etc. when it cannot be read) and writes "PATH:LINE: what is wrong",
 * or "PATH: what is wrong" when no line is to blame, into err. */
int cfg_load(const char *path, struct cfg **out, char *err, size_t errlen);
/* The same from a NUL-terminated string; name stands for the path. */
int cfg_parse_string(const char *name, const char *text, struct cfg **out,
		     char *err, size_t errlen);
void cfg_free(struct cfg *cfg);	/* NULL ok */

const struct cfg_volume *cfg_volume_find(const struct cfg *cfg, const char *name);
/* True if cfg->node serves vol: it has no replica lines, or one names it. */
bool cfg_volume_here(const struct cfg *cfg, const struct cfg_volume *vol);
/* Sets cfg->node (daemon -n): 0, or -EINVAL if node is no valid name. */
int cfg_set_node(struct cfg *cfg, const char *node);
/* Volume and node names: 1..CFG_NAME_MAX of [A-Za-z0-9_.-], not starting
 * with '.' or '-'. */
bool cfg_name_valid(const char *name);

struct repl_volume_config;
/* Resync rate, split-brain policies and outdate timeout into vc. */
void cfg_repl_tuning(const struct cfg *cfg, struct repl_volume_config *vc);
/* The file beside the pidfile, in the run directory (a tmpfs), that keeps
 * a loss of volume name's data its metadata could not record, for a
 * restart on the same boot: buf, or NULL (no pidfile, or too long). */
const char *cfg_loss_marker(const struct cfg *cfg, const char *name, char *buf, size_t len);

#endif
