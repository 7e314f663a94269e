/* test-config.c: unit test of the configuration parser (agent/cfg.c).
 *
 * A table of config texts, each with the expected outcome: parsed (and then
 * a function checking the fields), or an error whose message must start with
 * "test.conf:LINE: " and contain a given phrase.  A few cases that need a
 * real file (NUL bytes, open errors, the shipped template) go through
 * cfg_load.  It does not run the daemon: tests/config-errors.sh does. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <syslog.h>
#include <unistd.h>

#include "cfg.h"
#include "unit.h"
#include "util.h"

#define NAME "test.conf"

struct tcase {
	int src_line;		/* of this entry, for failure messages */
	const char *text;
	int err_line;		/* 0 = must parse */
	const char *err_sub;
	void (*check)(const struct cfg *cfg);
};

#define OK(text, fn) { __LINE__, text, 0, NULL, fn }
#define ERR(line, sub, text) { __LINE__, text, line, sub, NULL }

/* ---- checks for configurations that parse -------------------------------- */

static void check_defaults(const struct cfg *c)
{
	struct utsname u;

	CHECK(uname(&u) == 0);
	if (cfg_name_valid(u.nodename))
		CHECK(!strcmp(c->node, u.nodename));
	else
		CHECK(c->node[0] == '\0');
	CHECK(!strcmp(c->nbd_socket, "/run/replagent/nbd.sock"));
	CHECK(c->nbd_host == NULL);
	CHECK(c->nbd_port == NULL);
	CHECK(!strcmp(c->control_socket, "/run/replagent/control.sock"));
	CHECK(!strcmp(c->state_dir, "/var/lib/replagent"));
	CHECK(!strcmp(c->pidfile, "/run/replagent/replagentd.pid"));
	CHECK(!strcmp(c->key_file, "/etc/replagent/cluster.key"));
	CHECK(c->log_level == LOG_INFO);
	CHECK(c->outdate_timeout_s == 10);
	CHECK(c->n_volumes == 0);
	CHECK(!strcmp(c->path, NAME));
}

static void check_full(const struct cfg *c)
{
	const struct cfg_volume *v;

	CHECK(!strcmp(c->node, "n1"));
	CHECK(!strcmp(c->nbd_socket, "/run/r/nbd.sock"));
	CHECK(c->nbd_host && !strcmp(c->nbd_host, "127.0.0.1"));
	CHECK(c->nbd_port && !strcmp(c->nbd_port, "10809"));
	CHECK(!strcmp(c->control_socket, "/run/r/control.sock"));
	CHECK(!strcmp(c->state_dir, "/srv/state"));
	CHECK(!strcmp(c->pidfile, "/run/r/d.pid"));
	CHECK(!strcmp(c->key_file, "/etc/r/k"));
	CHECK(c->log_level == LOG_DEBUG);
	CHECK(c->outdate_timeout_s == 30);
	CHECK(c->n_volumes == 2);
	if (c->n_volumes != 2)
		return;

	v = cfg_volume_find(c, "vm1");
	CHECK(v == &c->volumes[0]);
	CHECK(v && v->line == 11);
	CHECK(v && !strcmp(v->backing, "/var/lib/replagent/vm1.img"));
	CHECK(v && v->size == 10ull << 30);
	CHECK(v && !strcmp(v->meta, "/m/vm1.meta"));
	CHECK(v && v->io_threads == 8);
	CHECK(v && v->n_replicas == 2);
	if (v && v->n_replicas == 2) {
		CHECK(!strcmp(v->replicas[0].node, "n1"));
		CHECK(!strcmp(v->replicas[0].host, "10.0.0.1"));
		CHECK(!strcmp(v->replicas[0].port, "7789"));
		CHECK(v->replicas[0].line == 16);
		CHECK(!strcmp(v->replicas[1].node, "n2"));
		CHECK(!strcmp(v->replicas[1].host, "10.0.0.2"));
		CHECK(v->replicas[1].line == 17);
	}
	CHECK(v && cfg_volume_here(c, v));

	v = cfg_volume_find(c, "local-disk_2.x");
	CHECK(v == &c->volumes[1]);
	CHECK(v && v->line == 19);
	CHECK(v && !strcmp(v->backing, "/dev/vg0/lv2"));
	CHECK(v && v->size == 0);
	CHECK(v && v->io_threads == 0);
	CHECK(v && v->n_replicas == 0);
	CHECK(v && !strcmp(v->meta, "/srv/state/local-disk_2.x.meta"));
	CHECK(v && cfg_volume_here(c, v));
	CHECK(cfg_volume_find(c, "vm2") == NULL);
	CHECK(cfg_volume_find(c, "VM1") == NULL);
}

static void check_no_volumes(const struct cfg *c)
{
	CHECK(c->n_volumes == 0);
}

static void check_socket_none(const struct cfg *c)
{
	CHECK(c->nbd_socket == NULL);
	CHECK(c->nbd_host == NULL && c->nbd_port == NULL);
}

static void check_nbd_limits(const struct cfg *c)
{
	CHECK(c->nbd_socket_group && !strcmp(c->nbd_socket_group, "libvirt-qemu"));
	CHECK(c->nbd_clients_max == 4096);
}

static void check_group_none(const struct cfg *c)
{
	CHECK(c->nbd_socket_group && !strcmp(c->nbd_socket_group, ""));
	CHECK(c->nbd_clients_max == 0);
}

static void check_listen_none(const struct cfg *c)
{
	CHECK(c->nbd_socket && !strcmp(c->nbd_socket, "/run/replagent/nbd.sock"));
	CHECK(c->nbd_host == NULL && c->nbd_port == NULL);
}

static void check_listen_all(const struct cfg *c)
{
	CHECK(c->nbd_host && !strcmp(c->nbd_host, ""));
	CHECK(c->nbd_port && !strcmp(c->nbd_port, "10809"));
}

static void check_listen_v6(const struct cfg *c)
{
	CHECK(c->nbd_host && !strcmp(c->nbd_host, "::1"));
	CHECK(c->nbd_port && !strcmp(c->nbd_port, "10809"));
}

static void check_listen_name(const struct cfg *c)
{
	CHECK(c->nbd_host && !strcmp(c->nbd_host, "storage.example.com"));
	CHECK(c->nbd_port && !strcmp(c->nbd_port, "80"));	/* "080" normalised */
}

static void check_metrics_off(const struct cfg *c)
{
	CHECK(c->metrics_host == NULL && c->metrics_port == NULL);
}

static void check_metrics_loopback(const struct cfg *c)
{
	CHECK(c->metrics_host && !strcmp(c->metrics_host, "127.0.0.1"));
	CHECK(c->metrics_port && !strcmp(c->metrics_port, "9942"));
}

static void check_metrics_v6(const struct cfg *c)
{
	CHECK(c->metrics_host && !strcmp(c->metrics_host, "::1"));
	CHECK(c->metrics_port && !strcmp(c->metrics_port, "9942"));
}

static void check_tls_default(const struct cfg *c)
{
	CHECK(c->nbd_tls == -1 && c->nbd_tls_dir == NULL && c->n_nbd_tls_allow == 0);
}

static void check_tls_set(const struct cfg *c)
{
	CHECK(c->nbd_tls == 1);
	CHECK(c->nbd_tls_dir && !strcmp(c->nbd_tls_dir, "/etc/pki/replagent"));
	CHECK(c->n_nbd_tls_allow == 2);
	CHECK(c->nbd_tls_allow[0] && !strcmp(c->nbd_tls_allow[0], "C=GB,O=Example,CN=*"));
	CHECK(c->nbd_tls_allow[1] && !strcmp(c->nbd_tls_allow[1], "CN=host1"));
	CHECK(c->nbd_tls_allow[2] == NULL);
}

static void check_tls_off(const struct cfg *c)
{
	CHECK(c->nbd_tls == 0);
}

static void check_node_n3(const struct cfg *c)
{
	CHECK(!strcmp(c->node, "n3"));
}

static void check_log_err(const struct cfg *c) { CHECK(c->log_level == LOG_ERR); }
static void check_log_warning(const struct cfg *c) { CHECK(c->log_level == LOG_WARNING); }
static void check_log_notice(const struct cfg *c) { CHECK(c->log_level == LOG_NOTICE); }
static void check_log_info(const struct cfg *c) { CHECK(c->log_level == LOG_INFO); }

static void check_timeout_bounds(const struct cfg *c)
{
	CHECK(c->outdate_timeout_s == 3600);
}

static void check_timeout_1(const struct cfg *c)
{
	CHECK(c->outdate_timeout_s == 1);
}

static const struct cfg_volume *only_volume(const struct cfg *c)
{
	CHECK(c->n_volumes == 1);
	return c->n_volumes == 1 ? &c->volumes[0] : NULL;
}

static void check_vol_defaults(const struct cfg *c)
{
	const struct cfg_volume *v = only_volume(c);

	CHECK(v && !strcmp(v->name, "vm1"));
	CHECK(v && !strcmp(v->backing, "/b"));
	CHECK(v && !strcmp(v->meta, "/var/lib/replagent/vm1.meta"));
	CHECK(v && v->size == 0 && v->io_threads == 0 && v->n_replicas == 0);
	CHECK(v && cfg_volume_here(c, v));
}

/* [global] after the volume: meta still follows state-dir, trailing '/' gone */
static void check_meta_late_state_dir(const struct cfg *c)
{
	const struct cfg_volume *v = only_volume(c);

	CHECK(!strcmp(c->state_dir, "/srv/st"));
	CHECK(v && !strcmp(v->meta, "/srv/st/vm1.meta"));
}

static void check_meta_root_state_dir(const struct cfg *c)
{
	const struct cfg_volume *v = only_volume(c);

	CHECK(!strcmp(c->state_dir, "/"));
	CHECK(v && !strcmp(v->meta, "/vm1.meta"));
}

#define SIZE_CHECK(fn, bytes) \
	static void fn(const struct cfg *c) \
	{ \
		const struct cfg_volume *v = only_volume(c); \
		CHECK_MSG(v && v->size == (bytes), "size %llu", \
			  v ? (unsigned long long)v->size : 0ull); \
	}
SIZE_CHECK(check_size_512, 512)
SIZE_CHECK(check_size_1k, 1024)
SIZE_CHECK(check_size_4m, 4ull << 20)
SIZE_CHECK(check_size_10g, 10ull << 30)
SIZE_CHECK(check_size_2t, 2ull << 40)
SIZE_CHECK(check_size_max, 9223372036854775296ull)

static void check_io_threads_1(const struct cfg *c)
{
	const struct cfg_volume *v = only_volume(c);

	CHECK(v && v->io_threads == 1);
}

static void check_io_inline_no(const struct cfg *c)
{
	const struct cfg_volume *v = only_volume(c);

	CHECK(v && v->io_inline_off);
}

static void check_io_inline_yes(const struct cfg *c)
{
	const struct cfg_volume *v = only_volume(c);

	CHECK(v && !v->io_inline_off);
}

static void check_al_extents(const struct cfg *c)
{
	const struct cfg_volume *v = only_volume(c);

	CHECK(v && v->al_extents == 16);
}

static void check_io_threads_64(const struct cfg *c)
{
	const struct cfg_volume *v = only_volume(c);

	CHECK(v && v->io_threads == 64);
}

static void check_three_replicas(const struct cfg *c)
{
	const struct cfg_volume *v = only_volume(c);

	CHECK(v && v->n_replicas == 3);
	if (!v || v->n_replicas != 3)
		return;
	CHECK(!strcmp(v->replicas[0].host, "fe80::1%eth0"));
	CHECK(!strcmp(v->replicas[0].port, "7789"));
	CHECK(!strcmp(v->replicas[1].host, "node-b.example"));
	CHECK(!strcmp(v->replicas[1].port, "1"));
	CHECK(!strcmp(v->replicas[2].node, "n3"));
	CHECK(!strcmp(v->replicas[2].host, "2001:db8::3"));
	CHECK(!strcmp(v->replicas[2].port, "65535"));
	/* node is "n9": not among the replicas, so not served here */
	CHECK(!cfg_volume_here(c, v));
}

static void check_same_host_other_port(const struct cfg *c)
{
	const struct cfg_volume *v = only_volume(c);

	CHECK(v && v->n_replicas == 2);
}

static void check_quoted(const struct cfg *c)
{
	const struct cfg_volume *v = only_volume(c);

	CHECK(v && !strcmp(v->backing, "/dir # with hash/x.img"));
	CHECK(v && !strcmp(v->meta, "/a#b"));
}

static void check_tabs_crlf(const struct cfg *c)
{
	const struct cfg_volume *v = only_volume(c);

	CHECK(!strcmp(c->node, "n2"));
	CHECK(v && !strcmp(v->backing, "/b"));
	CHECK(v && v->size == 1 << 20);
}

/* ---- the table ----------------------------------------------------------- */

#define VOL "[volume vm1]\nbacking = /b\n"	/* lines 1-2 */
#define V64 "v123456789012345678901234567890123456789012345678901234567890123"
#define V65 V64 "4"

static const struct tcase cases[] = {
	/* defaults and successful parses */
	OK("", check_defaults),
	OK("\n\n   \n\t\n# only comments\n   # indented comment\n", check_defaults),
	OK("[global]\n", check_defaults),
	OK("\xef\xbb\xbf# file with a byte order mark\n[global]\n", check_defaults),
	OK("# caf\xc3\xa9 \xe2\x82\xac: UTF-8 in comments is fine\n", check_no_volumes),
	OK("[global]\n"						/* 1 */
	   "node = n1                # this node\n"		/* 2 */
	   "nbd-socket = /run/r/nbd.sock\n"			/* 3 */
	   "nbd-listen = 127.0.0.1:10809\n"			/* 4 */
	   "control-socket=/run/r/control.sock\n"		/* 5 */
	   "state-dir = /srv/state\n"				/* 6 */
	   "pidfile =/run/r/d.pid\n"				/* 7 */
	   "key-file= /etc/r/k\n"				/* 8 */
	   "log-level = debug\n"				/* 9 */
	   "outdate-timeout = 30\n"				/* 10 */
	   "[volume vm1]                      # a comment\n"	/* 11 */
	   "backing = /var/lib/replagent/vm1.img\n"		/* 12 */
	   "size = 10G\n"					/* 13 */
	   "meta = /m/vm1.meta\n"				/* 14 */
	   "io-threads = 8\n"					/* 15 */
	   "replica = n1 10.0.0.1:7789\n"			/* 16 */
	   "replica = n2   10.0.0.2:7789   # peer\n"		/* 17 */
	   "\n"							/* 18 */
	   "[ volume   local-disk_2.x ]\n"			/* 19 */
	   "backing = /dev/vg0/lv2", check_full),		/* 20, no newline */
	OK("[global]\nnbd-socket = \"\"\n", check_socket_none),
	OK("[global]\nnbd-socket = none\nnbd-listen = none\n", check_socket_none),
	OK("[global]\nnbd-listen = \"\"\n", check_listen_none),
	OK("[global]\nnbd-socket-group = libvirt-qemu\nnbd-clients-max = 4096\n",
	   check_nbd_limits),
	OK("[global]\nnbd-socket-group = none\n", check_group_none),
	OK("[global]\nnbd-socket-group = \"\"\n", check_group_none),
	OK("[global]\nnbd-listen = :10809\n", check_listen_all),
	OK("[global]\nnbd-listen = [::1]:10809\n", check_listen_v6),
	OK("[global]\nnbd-listen = storage.example.com:080\n", check_listen_name),
	OK("[global]\nnbd-listen = :10809\n", check_tls_default),
	OK("[global]\nnbd-tls = require\nnbd-tls-cert-dir = /etc/pki/replagent\n"
	   "nbd-tls-allow = C=GB,O=Example,CN=*\nnbd-tls-allow = CN=host1\n", check_tls_set),
	OK("[global]\nnbd-tls = off\n", check_tls_off),
	OK("[global]\nnode = n3\n", check_node_n3),
	OK("[global]\nnode = n3\n", check_metrics_off),
	OK("[global]\nmetrics-listen = none\n", check_metrics_off),
	OK("[global]\nmetrics-listen = 127.0.0.1:9942\n", check_metrics_loopback),
	OK("[global]\nmetrics-listen = [::1]:9942\n", check_metrics_v6),
	OK("[global]\nlog-level = err\n", check_log_err),
	OK("[global]\nlog-level = warning\n", check_log_warning),
	OK("[global]\nlog-level = notice\n", check_log_notice),
	OK("[global]\nlog-level = info\n", check_log_info),
	OK("[global]\noutdate-timeout = 3600\n", check_timeout_bounds),
	OK("[global]\noutdate-timeout = 1\n", check_timeout_1),
	OK(VOL, check_vol_defaults),
	OK(VOL "[global]\nstate-dir = /srv/st//\n", check_meta_late_state_dir),
	OK("[global]\nstate-dir = /\n" VOL, check_meta_root_state_dir),
	OK(VOL "size = 512\n", check_size_512),
	OK(VOL "size = 1K\n", check_size_1k),
	OK(VOL "size = 4m\n", check_size_4m),
	OK(VOL "size = 10G\n", check_size_10g),
	OK(VOL "size = 10GiB\n", check_size_10g),
	OK(VOL "size = 2T\n", check_size_2t),
	OK(VOL "size = 9223372036854775296\n", check_size_max),
	OK(VOL "io-threads = 1\n", check_io_threads_1),
	OK(VOL "io-threads = 64\n", check_io_threads_64),
	OK(VOL "al-extents = 16\n", check_al_extents),
	OK(VOL "io-inline = no\n", check_io_inline_no),
	OK(VOL "io-inline = yes\n", check_io_inline_yes),
	OK("[global]\nnode = n9\n" VOL
	   "replica = n1 [fe80::1%eth0]:7789\n"
	   "replica = n2 node-b.example:1\n"
	   "replica = n3 [2001:db8::3]:65535\n", check_three_replicas),
	OK(VOL "replica = a 127.0.0.1:7789\nreplica = b 127.0.0.1:7790\n",
	   check_same_host_other_port),
	OK("[volume vm1]\nbacking = \"/dir # with hash/x.img\"   # comment\nmeta = /a#b\n",
	   check_quoted),
	OK("[global]\r\n\tnode\t=\tn2\t\r\n[volume\tvm1]\r\nbacking=/b\r\nsize=1M\r\n",
	   check_tabs_crlf),
	OK("[volume " V64 "]\nbacking = /b\n", NULL),
	OK("[global]\nnode = " V64 "\n", NULL),

	/* syntax */
	ERR(2, "missing '='", "[global]\nnode n1\n"),
	ERR(2, "missing '='", "[global]\nnode # = n1\n"),
	ERR(2, "missing key", "[global]\n= n1\n"),
	ERR(1, "outside a section", "node = n1\n"),
	ERR(3, "outside a section", "# comment\n\nbacking = /b\n"),
	ERR(1, "unknown section \"[globals]\"", "[globals]\n"),
	ERR(1, "unknown section \"[Global]\"", "[Global]\n"),
	ERR(1, "unknown section \"[volumes vm1]\"", "[volumes vm1]\n"),
	ERR(1, "unknown section \"[]\"", "[]\n"),
	ERR(1, "missing ']'", "[global\n"),
	ERR(1, "unexpected text after ']'", "[global] node = n1\n"),
	ERR(1, "unexpected text after ']'", "[global]# comment needs a blank\n"),
	ERR(2, "missing closing '\"'", "[global]\npidfile = \"/x\n"),
	ERR(2, "unexpected text after closing '\"'", "[global]\npidfile = \"/x\"y\n"),
	ERR(2, "unknown key \"foo\" in [global]", "[global]\nfoo = 1\n"),
	ERR(3, "unknown key \"foo\" in [volume vm1]", VOL "foo = 1\n"),
	ERR(3, "unknown key \"Size\" in [volume vm1]", VOL "Size = 1G\n"),
	ERR(2, "unknown key \"backing\" in [global] (it belongs in a [volume NAME]",
	    "[global]\nbacking = /b\n"),
	ERR(3, "unknown key \"node\" in [volume vm1] (it belongs in [global])",
	    VOL "node = n1\n"),

	/* empty values */
	ERR(2, "empty value for \"node\": expected", "[global]\nnode =\n"),
	ERR(2, "empty value for \"node\"", "[global]\nnode =   # nothing\n"),
	ERR(2, "empty value for \"pidfile\": expected an absolute path",
	    "[global]\npidfile = \"\"\n"),
	ERR(2, "empty value for \"backing\"", "[volume vm1]\nbacking = \n"),
	ERR(3, "empty value for \"size\"", VOL "size=\n"),
	ERR(3, "empty value for \"replica\": expected NODE HOST:PORT", VOL "replica =\n"),
	ERR(2, "empty value for \"nbd-listen\": expected", "[global]\nnbd-listen =\n"),
	ERR(2, "empty value for \"nbd-socket\": expected an absolute path, \"\" or none",
	    "[global]\nnbd-socket = # disabled?\n"),

	/* duplicates */
	ERR(3, "duplicate key \"node\" in [global] (first set at line 2)",
	    "[global]\nnode = a\nnode = b\n"),
	ERR(4, "duplicate key \"size\" in [volume vm1] (first set at line 3)",
	    VOL "size = 1G\nsize = 1G\n"),
	ERR(4, "duplicate key \"backing\"", "[volume vm1]\nbacking = /b\nsize = 1G\nbacking = /c\n"),
	ERR(4, "duplicate [global] section (first at line 1)",
	    "[global]\nnode = a\n\n[global]\n"),
	ERR(4, "duplicate [global]", "[global]\n" VOL "[global]\n"),
	ERR(5, "duplicate volume \"vm1\" (first defined at line 1)",
	    VOL "size = 1G\n\n[volume vm1]\n"),

	/* global values */
	ERR(2, "invalid node \"-n1\"", "[global]\nnode = -n1\n"),
	ERR(2, "invalid node \".n1\"", "[global]\nnode = .n1\n"),
	ERR(2, "invalid node \"n 1\"", "[global]\nnode = n 1\n"),
	ERR(2, "invalid node \"n1#x\"", "[global]\nnode = n1#x\n"),
	ERR(2, "invalid node \"" V65 "\"", "[global]\nnode = " V65 "\n"),
	ERR(2, "invalid nbd-socket \"run/nbd.sock\": expected an absolute path",
	    "[global]\nnbd-socket = run/nbd.sock\n"),
	ERR(2, "is too long: a unix socket path may have at most 107 bytes",
	    "[global]\nnbd-socket = /" V64 V64 "\n"),
	ERR(2, "invalid control-socket \"none\": expected an absolute path",
	    "[global]\ncontrol-socket = none\n"),
	ERR(2, "is too long", "[global]\ncontrol-socket = /" V64 V64 "\n"),
	ERR(2, "invalid state-dir \"var\"", "[global]\nstate-dir = var\n"),
	ERR(2, "invalid pidfile \"x.pid\"", "[global]\npidfile = x.pid\n"),
	ERR(2, "invalid key-file \"~/k\"", "[global]\nkey-file = ~/k\n"),
	ERR(2, "invalid log-level \"verbose\": expected err, warning, notice, info or debug",
	    "[global]\nlog-level = verbose\n"),
	ERR(2, "invalid log-level \"INFO\"", "[global]\nlog-level = INFO\n"),
	ERR(2, "invalid outdate-timeout \"0\": expected a number of seconds from 1 to 3600",
	    "[global]\noutdate-timeout = 0\n"),
	ERR(2, "invalid outdate-timeout \"3601\"", "[global]\noutdate-timeout = 3601\n"),
	ERR(2, "invalid nbd-clients-max \"0\": expected a number from 1 to 4096",
	    "[global]\nnbd-clients-max = 0\n"),
	ERR(2, "invalid nbd-clients-max \"4097\"", "[global]\nnbd-clients-max = 4097\n"),
	ERR(2, "invalid nbd-socket-group \"kvm users\": expected a group name",
	    "[global]\nnbd-socket-group = kvm users\n"),
	ERR(2, "invalid nbd-socket-group \"-g\"", "[global]\nnbd-socket-group = -g\n"),
	ERR(2, "invalid outdate-timeout \"-1\"", "[global]\noutdate-timeout = -1\n"),
	ERR(2, "invalid outdate-timeout \"10s\"", "[global]\noutdate-timeout = 10s\n"),
	ERR(2, "invalid outdate-timeout \"99999999999999999999999\"",
	    "[global]\noutdate-timeout = 99999999999999999999999\n"),

	/* metrics-listen host:port */
	ERR(2, "invalid metrics-listen \"127.0.0.1\": missing port", "[global]\nmetrics-listen = 127.0.0.1\n"),
	ERR(2, "invalid metrics-listen \"localhost:99999\": port must be", "[global]\nmetrics-listen = localhost:99999\n"),
	ERR(2, "unknown key \"metrics-listen\"", "[volume v]\nmetrics-listen = :9942\n"),
	/* nbd-listen host:port */
	ERR(2, "invalid nbd-listen \"127.0.0.1\": missing port", "[global]\nnbd-listen = 127.0.0.1\n"),
	ERR(2, "invalid nbd-listen \"[::1]\": missing port", "[global]\nnbd-listen = [::1]\n"),
	ERR(2, "must be in brackets", "[global]\nnbd-listen = ::1:10809\n"),
	ERR(2, "missing ']'", "[global]\nnbd-listen = [::1:10809\n"),
	ERR(2, "expected require or off", "[global]\nnbd-tls = yes\n"),
	ERR(2, "nbd-tls-cert-dir", "[global]\nnbd-tls-cert-dir = pki\n"),
	ERR(2, "invalid IPv6 address", "[global]\nnbd-listen = [1.2.3.4]:10809\n"),
	ERR(2, "invalid IPv6 address", "[global]\nnbd-listen = []:10809\n"),
	ERR(2, "port must be a number from 1 to 65535", "[global]\nnbd-listen = :0\n"),
	ERR(2, "port must be a number from 1 to 65535", "[global]\nnbd-listen = :65536\n"),
	ERR(2, "port must be a number from 1 to 65535", "[global]\nnbd-listen = :nbd\n"),
	ERR(2, "port must be a number from 1 to 65535", "[global]\nnbd-listen = localhost:\n"),
	ERR(2, "invalid host name or address", "[global]\nnbd-listen = 10.0.0.256:1\n"),
	ERR(2, "invalid host name or address", "[global]\nnbd-listen = bad!host:1\n"),
	ERR(2, "invalid host name or address", "[global]\nnbd-listen = a..b:1\n"),

	/* volume names */
	ERR(1, "missing volume name", "[volume]\n"),
	ERR(1, "missing volume name", "[volume   ]\n"),
	ERR(1, "invalid volume name \".vm\"", "[volume .vm]\n"),
	ERR(1, "invalid volume name \"-vm\"", "[volume -vm]\n"),
	ERR(1, "invalid volume name \"v m\"", "[volume v m]\n"),
	ERR(1, "invalid volume name \"v/m\"", "[volume v/m]\n"),
	ERR(1, "invalid volume name \"" V65 "\": expected 1..64 characters", "[volume " V65 "]\n"),
	ERR(1, "unknown section \"[volumevm1]\"", "[volumevm1]\n"),

	/* volume values */
	ERR(2, "invalid backing \"vm1.img\": expected an absolute path", "[volume vm1]\nbacking = vm1.img\n"),
	ERR(3, "invalid meta \"m\"", VOL "meta = m\n"),
	ERR(3, "invalid size \"10X\": expected a number of bytes with an optional K, M, G or T suffix",
	    VOL "size = 10X\n"),
	ERR(3, "invalid size \"1.5G\"", VOL "size = 1.5G\n"),
	ERR(3, "invalid size \"-1G\"", VOL "size = -1G\n"),
	ERR(3, "invalid size \"G\"", VOL "size = G\n"),
	ERR(3, "invalid size \"10 G\"", VOL "size = 10 G\n"),
	ERR(3, "size must be greater than 0", VOL "size = 0\n"),
	ERR(3, "size must be greater than 0", VOL "size = 0G\n"),
	ERR(3, "size \"1000\" (1000 bytes) is not a multiple of 512", VOL "size = 1000\n"),
	ERR(3, "is not a multiple of 512", VOL "size = 513\n"),
	ERR(3, "size \"99999999999T\" is too large", VOL "size = 99999999999T\n"),
	ERR(3, "is too large", VOL "size = 9223372036854775808\n"),
	ERR(3, "is too large", VOL "size = 99999999999999999999999\n"),
	ERR(3, "invalid io-threads \"0\": expected a number from 1 to 64", VOL "io-threads = 0\n"),
	ERR(3, "invalid io-threads \"65\"", VOL "io-threads = 65\n"),
	ERR(3, "invalid io-threads \"four\"", VOL "io-threads = four\n"),
	ERR(3, "invalid al-extents \"15\": expected a number from 16 to 65534", VOL "al-extents = 15\n"),
	ERR(3, "invalid io-inline \"maybe\": expected yes or no", VOL "io-inline = maybe\n"),
	ERR(3, "invalid al-extents \"65535\"", VOL "al-extents = 65535\n"),
	ERR(3, "invalid al-extents \"-1\"", VOL "al-extents = -1\n"),

	/* replicas */
	ERR(3, "invalid replica \"n1\": expected NODE HOST:PORT", VOL "replica = n1\n"),
	ERR(3, "unexpected text after \"10.0.0.1:1\"", VOL "replica = n1 10.0.0.1:1 x\n"),
	ERR(3, "invalid replica node name \"-n1\"", VOL "replica = -n1 10.0.0.1:1\n"),
	ERR(3, "invalid replica address \"10.0.0.1\": missing port", VOL "replica = n1 10.0.0.1\n"),
	ERR(3, "missing host", VOL "replica = n1 :7789\n"),
	ERR(3, "must be in brackets", VOL "replica = n1 ::1:7789\n"),
	ERR(3, "invalid IPv6 address", VOL "replica = n1 [::g]:7789\n"),
	ERR(3, "invalid IPv6 address", VOL "replica = n1 [::1%]:7789\n"),
	ERR(3, "port must be a number", VOL "replica = n1 10.0.0.1:0\n"),
	ERR(3, "port must be a number", VOL "replica = n1 10.0.0.1:-1\n"),
	ERR(3, "[volume vm1] has only one replica line", VOL "replica = n1 10.0.0.1:7789\n"),
	ERR(3, "[volume vm1] has only one replica line",
	    VOL "replica = n1 10.0.0.1:7789\n[volume vm2]\nbacking = /c\n"),
	ERR(6, "more than 3 replica lines in [volume vm1]",
	    VOL "replica = a h1:1\nreplica = b h2:1\nreplica = c h3:1\nreplica = d h4:1\n"),
	ERR(4, "duplicate replica node \"n1\" in [volume vm1] (first at line 3)",
	    VOL "replica = n1 10.0.0.1:7789\nreplica = n1 10.0.0.2:7789\n"),
	ERR(4, "replica address \"10.0.0.1:7789\" is already used by node \"n1\" (line 3)",
	    VOL "replica = n1 10.0.0.1:7789\nreplica = n2 10.0.0.1:7789\n"),

	/* missing backing: reported at the [volume] line */
	ERR(1, "[volume vm1] has no \"backing = PATH\" line", "[volume vm1]\nsize = 1G\n"),
	ERR(2, "[volume vm1] has no \"backing", "[global]\n[volume vm1]\n[volume vm2]\nbacking = /b\n"),
	ERR(3, "[volume vm2] has no \"backing", VOL "[volume vm2]\n\n# end\n"),
	ERR(3, "[volume vm2] has no \"backing", VOL "[volume vm2]\n[global]\n"),

	/* garbage */
	ERR(2, "control character 0x01", "[global]\nnode = n\x01\n"),
	ERR(1, "control character 0x1b", "\x1b[31m\n"),
	ERR(2, "control character 0x7f", "# ok\n\x7f\n"),
	ERR(1, "control character 0x0d", "[global]\rnode = n1\n"),
	ERR(3, "invalid UTF-8", "[global]\n# ok\n# \xff\xfe\n"),
	ERR(1, "invalid UTF-8", "# \xc3\n"),		/* truncated sequence */
	ERR(1, "invalid UTF-8", "# \xc0\xaf\n"),	/* overlong */
	ERR(1, "invalid UTF-8", "# \xed\xa0\x80\n"),	/* surrogate */
};

static void run_case(size_t i, const struct tcase *t)
{
	static struct cfg sentinel;
	struct cfg *cfg = &sentinel;	/* must be reset to NULL on error */
	char err[512] = "untouched", prefix[64];
	int ret = cfg_parse_string(NAME, t->text, &cfg, err, sizeof(err));

	if (!t->err_line) {
		CHECK_MSG(ret == 0 && cfg, "case %zu (line %d): %d: %s", i, t->src_line, ret, err);
		CHECK_MSG(err[0] == '\0', "case %zu (line %d): err not cleared", i, t->src_line);
		if (ret == 0 && cfg && t->check)
			t->check(cfg);
		cfg_free(cfg);
		return;
	}
	snprintf(prefix, sizeof(prefix), NAME ":%d: ", t->err_line);
	CHECK_MSG(ret == -EINVAL, "case %zu (line %d): returned %d", i, t->src_line, ret);
	CHECK_MSG(cfg == NULL, "case %zu (line %d): *out not NULL on error", i, t->src_line);
	CHECK_MSG(!strncmp(err, prefix, strlen(prefix)) && strstr(err, t->err_sub),
		  "case %zu (line %d): want \"%s...%s\", got \"%s\"",
		  i, t->src_line, prefix, t->err_sub, err);
	if (ret == 0)
		cfg_free(cfg);
}

/* ---- cases the table cannot hold ----------------------------------------- */

static void test_long_lines(void)
{
	char *text = malloc(8200);
	struct cfg *cfg;
	char err[256];
	int ret;

	CHECK(text);
	if (!text)
		return;
	/* 4095 bytes plus CRLF is fine */
	strcpy(text, "[global]\n#");
	memset(text + 10, 'x', 4094);
	strcpy(text + 10 + 4094, "\r\nnode = n1\n");
	ret = cfg_parse_string(NAME, text, &cfg, err, sizeof(err));
	CHECK_MSG(ret == 0, "%s", err);
	cfg_free(cfg);

	/* 4096 is not, also as the last line without a newline */
	strcpy(text, "[global]\n#");
	memset(text + 10, 'x', 4095);
	strcpy(text + 10 + 4095, "\nnode = n1\n");
	ret = cfg_parse_string(NAME, text, &cfg, err, sizeof(err));
	CHECK(ret == -EINVAL && cfg == NULL);
	CHECK_MSG(!strcmp(err, NAME ":2: line is longer than 4095 bytes"), "%s", err);
	text[10 + 4095] = '\0';
	ret = cfg_parse_string(NAME, text, &cfg, err, sizeof(err));
	CHECK_MSG(ret == -EINVAL && strstr(err, NAME ":2: line is longer"), "%s", err);

	/* a long value in a message is cut to the buffer, NUL-terminated */
	strcpy(text, "[global]\nnode = ");
	memset(text + 16, 'y', 4000);
	strcpy(text + 16 + 4000, "!\n");
	ret = cfg_parse_string(NAME, text, &cfg, err, sizeof(err));
	CHECK(ret == -EINVAL && strlen(err) == sizeof(err) - 1);
	CHECK(!strncmp(err, NAME ":2: invalid node \"yyy", 24));
	free(text);
}

static void test_err_buffers(void)
{
	struct cfg *cfg;
	char small[12];

	CHECK(cfg_parse_string(NAME, "junk\n", &cfg, NULL, 0) == -EINVAL && !cfg);
	CHECK(cfg_parse_string(NAME, "junk\n", &cfg, small, 0) == -EINVAL && !cfg);
	CHECK(cfg_parse_string(NAME, "junk\n", &cfg, small, sizeof(small)) == -EINVAL);
	CHECK(!strcmp(small, "test.conf:1"));
	CHECK(cfg_parse_string("a-much-longer-name.conf", "junk\n", &cfg, small,
			       sizeof(small)) == -EINVAL);
	CHECK(strlen(small) == sizeof(small) - 1);
}

static void test_node_api(void)
{
	struct cfg *cfg;
	char err[256];

	CHECK(cfg_parse_string(NAME, "[global]\nnode = n1\n"
			       "[volume a]\nbacking = /a\nreplica = n1 h1:1\nreplica = n2 h2:1\n"
			       "[volume b]\nbacking = /b\nreplica = n2 h2:2\nreplica = n3 h3:2\n"
			       "[volume c]\nbacking = /c\n",
			       &cfg, err, sizeof(err)) == 0);
	if (!cfg)
		return;
	CHECK(cfg_volume_here(cfg, cfg_volume_find(cfg, "a")));
	CHECK(!cfg_volume_here(cfg, cfg_volume_find(cfg, "b")));
	CHECK(cfg_volume_here(cfg, cfg_volume_find(cfg, "c")));
	CHECK(cfg_set_node(cfg, "n3") == 0 && !strcmp(cfg->node, "n3"));
	CHECK(!cfg_volume_here(cfg, cfg_volume_find(cfg, "a")));
	CHECK(cfg_volume_here(cfg, cfg_volume_find(cfg, "b")));
	CHECK(cfg_volume_here(cfg, cfg_volume_find(cfg, "c")));
	CHECK(cfg_set_node(cfg, "") == -EINVAL);
	CHECK(cfg_set_node(cfg, "-x") == -EINVAL);
	CHECK(cfg_set_node(cfg, "a b") == -EINVAL);
	CHECK(cfg_set_node(cfg, V65) == -EINVAL);
	CHECK(!strcmp(cfg->node, "n3"));
	CHECK(cfg_set_node(cfg, V64) == 0 && !strcmp(cfg->node, V64));
	cfg_free(cfg);
	cfg_free(NULL);

	CHECK(cfg_name_valid("a"));
	CHECK(cfg_name_valid("A.b_c-9"));
	CHECK(!cfg_name_valid(""));
	CHECK(!cfg_name_valid(NULL));
	CHECK(!cfg_name_valid("a:b"));
	CHECK(!cfg_name_valid("\xc3\xa9"));
}

/* Writes len bytes to a new file in dir; returns its path (static buffer). */
static const char *write_file(const char *dir, const char *name, const char *data, size_t len)
{
	static char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	CHECK(f);
	if (f) {
		CHECK(fwrite(data, 1, len, f) == len);
		CHECK(fclose(f) == 0);
	}
	return path;
}

static void test_load(void)
{
	char dir[] = "/tmp/test-config.XXXXXX", err[PATH_MAX + 256], want[PATH_MAX + 64];
	static const char good[] = "[global]\nnode = n1\n[volume v]\nbacking = /v\n";
	static const char nul[] = "[global]\nnode = n1\0garbage\n";
	const char *path;
	struct cfg *cfg;
	int ret;

	CHECK(mkdtemp(dir));

	path = write_file(dir, "good.conf", good, sizeof(good) - 1);
	ret = cfg_load(path, &cfg, err, sizeof(err));
	CHECK_MSG(ret == 0, "%s", err);
	if (ret == 0) {
		CHECK(!strcmp(cfg->path, path));
		CHECK(!strcmp(cfg->node, "n1") && cfg->n_volumes == 1);
		cfg_free(cfg);
	}
	unlink(path);

	path = write_file(dir, "nul.conf", nul, sizeof(nul) - 1);
	ret = cfg_load(path, &cfg, err, sizeof(err));
	snprintf(want, sizeof(want), "%s:2: NUL byte", path);
	CHECK(ret == -EINVAL && cfg == NULL);
	CHECK_MSG(!strncmp(err, want, strlen(want)), "%s", err);
	unlink(path);

	path = write_file(dir, "bad.conf", "[global]\n\n[volume x]\n",
			  strlen("[global]\n\n[volume x]\n"));
	ret = cfg_load(path, &cfg, err, sizeof(err));
	snprintf(want, sizeof(want), "%s:3: [volume x] has no", path);
	CHECK_MSG(ret == -EINVAL && !strncmp(err, want, strlen(want)), "%s", err);
	unlink(path);

	path = write_file(dir, "empty.conf", "", 0);
	ret = cfg_load(path, &cfg, err, sizeof(err));
	CHECK(ret == 0 && cfg && cfg->n_volumes == 0);
	cfg_free(cfg);
	unlink(path);

	snprintf(want, sizeof(want), "%s/missing.conf", dir);
	ret = cfg_load(want, &cfg, err, sizeof(err));
	CHECK(ret == -ENOENT && cfg == NULL);
	CHECK_MSG(strstr(err, "/missing.conf: cannot open: No such file or directory") &&
		  !strncmp(err, dir, strlen(dir)), "%s", err);

	ret = cfg_load(dir, &cfg, err, sizeof(err));
	CHECK(ret == -EISDIR && cfg == NULL);
	CHECK_MSG(strstr(err, ": cannot read: Is a directory"), "%s", err);

	CHECK(rmdir(dir) == 0);
}

static void test_template(void)
{
	const char *srcdir = getenv("top_srcdir");
	char path[PATH_MAX], err[PATH_MAX + 256];
	struct cfg *cfg;
	int ret;

	snprintf(path, sizeof(path), "%s/templates/replagent.conf", srcdir ? srcdir : ".");
	if (access(path, R_OK) != 0) {
		printf("test-config: %s not found, template not checked\n", path);
		return;
	}
	ret = cfg_load(path, &cfg, err, sizeof(err));
	CHECK_MSG(ret == 0, "%s", err);
	if (ret == 0) {
		CHECK(cfg->n_volumes >= 1);
		cfg_free(cfg);
	}
}

int main(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		run_case(i, &cases[i]);
	test_long_lines();
	test_err_buffers();
	test_node_api();
	test_load();
	test_template();
	return unit_done("test-config");
}
