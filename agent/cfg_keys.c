/* cfg_keys.c: the keys of the configuration file, one table, and the
 * parser of each key's value (paths, sockets, sizes, host:port, policies,
 * replica lines), which checks the value on its own and stores it.  Not
 * the lines and sections around them (cfg.c). */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <syslog.h>

#include "cfg.h"
#include "cfg_int.h"
#include "al.h"
#include "gen.h"
#include "repl.h"
#include "util.h"

/* ---- host:port ----------------------------------------------------------- */

static bool hostname_valid(const char *h, size_t n)
{
	bool numeric = true;
	char tmp[16];
	struct in_addr a4;

	if (n == 0 || n > 253 || h[0] == '.' || h[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!cfg__is_alnum(h[i]) && !strchr("_.-", h[i]))
			return false;
		if (h[i] == '.' && i + 1 < n && h[i + 1] == '.')
			return false;
		if (!(h[i] >= '0' && h[i] <= '9') && h[i] != '.')
			numeric = false;
	}
	if (!numeric)
		return true;
	/* All digits and dots: must be a real IPv4 address, not "10.0.0.256". */
	if (n >= sizeof(tmp))
		return false;
	memcpy(tmp, h, n);
	tmp[n] = '\0';
	return inet_pton(AF_INET, tmp, &a4) == 1;
}

static bool ipv6_valid(const char *h, size_t n)
{
	char tmp[INET6_ADDRSTRLEN + IF_NAMESIZE + 2];
	struct in6_addr a6;
	char *zone;

	if (n == 0 || n >= sizeof(tmp))
		return false;
	memcpy(tmp, h, n);
	tmp[n] = '\0';
	zone = strchr(tmp, '%');
	if (zone) {
		*zone++ = '\0';
		if (!*zone || strlen(zone) >= IF_NAMESIZE)
			return false;
		for (const char *z = zone; *z; z++)
			if (!cfg__is_alnum(*z) && !strchr("_.-", *z))
				return false;
	}
	return inet_pton(AF_INET6, tmp, &a6) == 1;
}

/* Splits "HOST:PORT", "[IPV6]:PORT" or (empty_host_ok) ":PORT".  Returns
 * NULL, or why s is no good. */
static const char *parse_hostport(const char *s, bool empty_host_ok,
				  char host[256], char port[16])
{
	const char *h = s, *colon;
	size_t hl;
	uint64_t pn;

	if (*s == '[') {
		const char *close = strchr(s, ']');

		if (!close)
			return "missing ']' after the IPv6 address";
		h = s + 1;
		hl = (size_t)(close - h);
		if (close[1] != ':')
			return "missing port: expected [IPV6]:PORT";
		if (!ipv6_valid(h, hl))
			return "invalid IPv6 address";
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return "missing port: expected HOST:PORT";
		hl = (size_t)(colon - s);
		if (memchr(s, ':', hl))
			return "an IPv6 address must be in brackets, e.g. [::1]:10809";
		if (hl == 0 && !empty_host_ok)
			return "missing host: expected HOST:PORT";
		if (hl && !hostname_valid(s, hl))
			return "invalid host name or address";
	}
	if (hl >= 256)
		return "host name too long";
	if (parse_uint(colon + 1, 1, 65535, &pn))
		return "port must be a number from 1 to 65535";
	memcpy(host, h, hl);
	host[hl] = '\0';
	snprintf(port, 16, "%u", (unsigned)pn);
	return NULL;
}

/* ---- setters ----------------------------------------------------------- */

struct cfg_volume *cfg__cur_vol(struct parser *p)
{
	return &p->cfg->volumes[p->cfg->n_volumes - 1];
}

static char **str_field(struct parser *p, const struct key_def *kd)
{
	char *base = kd->sec == SEC_GLOBAL ? (char *)p->cfg : (char *)cfg__cur_vol(p);

	return (void *)(base + kd->off);
}

static int set_path(struct parser *p, const struct key_def *kd, char *val)
{
	if (val[0] != '/')
		return cfg__bad_value(p, kd, val);
	return cfg__replace_str(p, str_field(p, kd), val);
}

static int set_socket(struct parser *p, const struct key_def *kd, char *val)
{
	size_t max = sizeof(((struct sockaddr_un *)NULL)->sun_path) - 1;

	if (kd->empty_ok && (!*val || !strcmp(val, "none"))) {
		free(*str_field(p, kd));
		*str_field(p, kd) = NULL;
		return 0;
	}
	if (val[0] != '/')
		return cfg__bad_value(p, kd, val);
	if (strlen(val) > max)
		return cfg__perr(p, "%s \"%s\" is too long: a unix socket path may have at most %zu bytes",
			    kd->name, val, max);
	return cfg__replace_str(p, str_field(p, kd), val);
}

static int set_state_dir(struct parser *p, const struct key_def *kd, char *val)
{
	size_t n = strlen(val);

	while (n > 1 && val[n - 1] == '/')
		val[--n] = '\0';
	return set_path(p, kd, val);
}

static int set_node(struct parser *p, const struct key_def *kd, char *val)
{
	if (!cfg_name_valid(val))
		return cfg__bad_value(p, kd, val);
	strcpy(p->cfg->node, val);
	return 0;
}

static int set_listen(struct parser *p, const struct key_def *kd, char *val)
{
	struct cfg *cfg = p->cfg;
	char host[256], port[16];
	const char *why;

	free(cfg->nbd_host);
	free(cfg->nbd_port);
	cfg->nbd_host = cfg->nbd_port = NULL;
	if (!*val || !strcmp(val, "none"))
		return 0;
	why = parse_hostport(val, true, host, port);
	if (why)
		return cfg__perr(p, "invalid %s \"%s\": %s", kd->name, val, why);
	cfg->nbd_host = strdup(host);
	cfg->nbd_port = strdup(port);
	if (!cfg->nbd_host || !cfg->nbd_port)
		return cfg__oom(p);
	return 0;
}

/* metrics-listen: like nbd-listen, into the metrics fields. */
static int set_metrics_listen(struct parser *p, const struct key_def *kd, char *val)
{
	struct cfg *cfg = p->cfg;
	char host[256], port[16];
	const char *why;

	free(cfg->metrics_host);
	free(cfg->metrics_port);
	cfg->metrics_host = cfg->metrics_port = NULL;
	if (!*val || !strcmp(val, "none"))
		return 0;
	why = parse_hostport(val, true, host, port);
	if (why)
		return cfg__perr(p, "invalid %s \"%s\": %s", kd->name, val, why);
	cfg->metrics_host = strdup(host);
	cfg->metrics_port = strdup(port);
	if (!cfg->metrics_host || !cfg->metrics_port)
		return cfg__oom(p);
	return 0;
}

/* A group name as useradd(8) takes it, or none / "" (owner only). */
static int set_group(struct parser *p, const struct key_def *kd, char *val)
{
	size_t n = strlen(val);

	if (!strcmp(val, "none"))
		val[0] = '\0';
	else if (n > 32 || val[0] == '-')
		return cfg__bad_value(p, kd, val);
	for (size_t i = 0; i < n; i++)
		if (!cfg__is_alnum(val[i]) && !strchr("_.-", val[i]))
			return cfg__bad_value(p, kd, val);
	return cfg__replace_str(p, str_field(p, kd), val);
}

static int set_clients_max(struct parser *p, const struct key_def *kd, char *val)
{
	uint64_t v;

	if (parse_uint(val, 1, 4096, &v))
		return cfg__bad_value(p, kd, val);
	p->cfg->nbd_clients_max = (unsigned)v;
	return 0;
}

static int set_nbd_tls(struct parser *p, const struct key_def *kd, char *val)
{
	if (!strcmp(val, "require"))
		p->cfg->nbd_tls = 1;
	else if (!strcmp(val, "off"))
		p->cfg->nbd_tls = 0;
	else
		return cfg__bad_value(p, kd, val);
	return 0;
}

/* One DN pattern a line (a DN has commas), as libvirt's tls_allowed_dn_list. */
static int set_tls_allow(struct parser *p, const struct key_def *kd, char *val)
{
	struct cfg *cfg = p->cfg;

	if (!*val)
		return cfg__bad_value(p, kd, val);
	if (cfg->n_nbd_tls_allow == CFG_TLS_ALLOW_MAX)
		return cfg__perr(p, "more than %d %s lines", CFG_TLS_ALLOW_MAX, kd->name);
	if (!(cfg->nbd_tls_allow[cfg->n_nbd_tls_allow] = strdup(val)))
		return cfg__oom(p);
	cfg->n_nbd_tls_allow++;
	return 0;
}

static int set_log_level(struct parser *p, const struct key_def *kd, char *val)
{
	static const struct { const char *name; int level; } levels[] = {
		{ "err", LOG_ERR }, { "error", LOG_ERR },
		{ "warning", LOG_WARNING }, { "warn", LOG_WARNING },
		{ "notice", LOG_NOTICE }, { "info", LOG_INFO },
		{ "debug", LOG_DEBUG },
	};

	for (size_t i = 0; i < ARRAY_SIZE(levels); i++) {
		if (!strcmp(val, levels[i].name)) {
			p->cfg->log_level = levels[i].level;
			return 0;
		}
	}
	return cfg__bad_value(p, kd, val);
}

static int set_outdate_timeout(struct parser *p, const struct key_def *kd, char *val)
{
	uint64_t v;

	if (parse_uint(val, 1, 3600, &v))
		return cfg__bad_value(p, kd, val);
	p->cfg->outdate_timeout_s = (unsigned)v;
	return 0;
}

static int set_cluster(struct parser *p, const struct key_def *kd, char *val)
{
	if (!strcmp(val, "corosync"))
		p->cfg->cluster = true;
	else if (!strcmp(val, "none"))
		p->cfg->cluster = false;
	else
		return cfg__bad_value(p, kd, val);
	return 0;
}

static int set_auto_promote(struct parser *p, const struct key_def *kd, char *val)
{
	if (!strcmp(val, "yes"))
		p->cfg->auto_promote = true;
	else if (!strcmp(val, "no"))
		p->cfg->auto_promote = false;
	else
		return cfg__bad_value(p, kd, val);
	return 0;
}

static int set_link_security(struct parser *p, const struct key_def *kd, char *val)
{
	if (!strcmp(val, "aead"))
		p->cfg->link_plain = false;
	else if (!strcmp(val, "none"))
		p->cfg->link_plain = true;
	else
		return cfg__bad_value(p, kd, val);
	return 0;
}

static int set_rate(struct parser *p, const struct key_def *kd, char *val)
{
	uint64_t v;
	size_t n = strlen(val);

	if (n > 2 && strcmp(val + n - 2, "/s") == 0)
		val[n - 2] = '\0';
	if (parse_size(val, &v))
		return cfg__bad_value(p, kd, val);
	p->cfg->resync_rate_max = v;
	return 0;
}

/* Only the policies that never discard data a side wrote: the others
 * would need a resync of both sides' changes. */
static int set_after_sb(struct parser *p, const struct key_def *kd, char *val)
{
	static const char *const ok[3][2] = {
		{ "disconnect", "discard-zero-changes" },
		{ "disconnect", "consensus" },
		{ "disconnect", NULL },
	};
	unsigned which = (unsigned)(kd->name[9] - '0');	/* after-sb-Npri */

	for (unsigned i = 0; i < 2; i++) {
		if (ok[which][i] && strcmp(val, ok[which][i]) == 0) {
			p->cfg->after_sb[which] = (char)i;
			p->cfg->after_sb_set[which] = true;
			return 0;
		}
	}
	return cfg__bad_value(p, kd, val);
}

static int set_host(struct parser *p, const struct key_def *kd, char *val)
{
	if (strlen(val) > 255 || strpbrk(val, " \t/[]"))
		return cfg__bad_value(p, kd, val);
	return cfg__replace_str(p, str_field(p, kd), val);
}

static int set_size(struct parser *p, const struct key_def *kd, char *val)
{
	uint64_t v;
	int ret = parse_size(val, &v);

	if (ret == -ERANGE || (!ret && v > INT64_MAX))
		return cfg__perr(p, "size \"%s\" is too large", val);
	if (ret)
		return cfg__bad_value(p, kd, val);
	if (v == 0)
		return cfg__perr(p, "size must be greater than 0");
	if (v % 512)
		return cfg__perr(p, "size \"%s\" (%llu bytes) is not a multiple of 512",
			    val, (unsigned long long)v);
	cfg__cur_vol(p)->size = v;
	return 0;
}

static int set_io_threads(struct parser *p, const struct key_def *kd, char *val)
{
	uint64_t v;

	if (parse_uint(val, 1, 64, &v))
		return cfg__bad_value(p, kd, val);
	cfg__cur_vol(p)->io_threads = (unsigned)v;
	return 0;
}

static int set_io_inline(struct parser *p, const struct key_def *kd, char *val)
{
	if (!strcmp(val, "yes"))
		cfg__cur_vol(p)->io_inline_off = false;
	else if (!strcmp(val, "no"))
		cfg__cur_vol(p)->io_inline_off = true;
	else
		return cfg__bad_value(p, kd, val);
	return 0;
}

static int set_replica(struct parser *p, const struct key_def *kd, char *val)
{
	struct cfg_volume *vol = cfg__cur_vol(p);
	struct cfg_replica *r;
	char *node = val, *addr, *end;
	const char *why;

	addr = node + strcspn(node, " \t");
	if (!*addr)
		return cfg__bad_value(p, kd, val);
	*addr++ = '\0';
	addr = cfg__skip_blank(addr);
	end = addr + strcspn(addr, " \t");
	if (*cfg__skip_blank(end))
		return cfg__perr(p, "unexpected text after \"%.*s\" in replica: expected %s",
			    (int)(end - addr), addr, kd->expect);
	*end = '\0';

	if (vol->n_replicas == CFG_REPLICAS_MAX)
		return cfg__perr(p, "more than %d replica lines in [volume %s]",
			    CFG_REPLICAS_MAX, vol->name);
	if (!cfg_name_valid(node))
		return cfg__perr(p, "invalid replica node name \"%s\": expected 1..%d characters of [A-Za-z0-9_.-], not starting with '.' or '-'",
			    node, CFG_NAME_MAX);
	r = &vol->replicas[vol->n_replicas];
	why = parse_hostport(addr, false, r->host, r->port);
	if (why)
		return cfg__perr(p, "invalid replica address \"%s\": %s", addr, why);
	for (unsigned i = 0; i < vol->n_replicas; i++) {
		const struct cfg_replica *o = &vol->replicas[i];

		if (!strcmp(o->node, node))
			return cfg__perr(p, "duplicate replica node \"%s\" in [volume %s] (first at line %d)",
				    node, vol->name, o->line);
		if (!strcmp(o->host, r->host) && !strcmp(o->port, r->port))
			return cfg__perr(p, "replica address \"%s\" is already used by node \"%s\" (line %d)",
				    addr, o->node, o->line);
	}
	strcpy(r->node, node);
	r->line = p->line;
	vol->n_replicas++;
	return 0;
}

static int set_al_extents(struct parser *p, const struct key_def *kd, char *val)
{
	uint64_t v;

	if (parse_uint(val, AL_EXTENTS_MIN, AL_EXTENTS_MAX, &v))
		return cfg__bad_value(p, kd, val);
	cfg__cur_vol(p)->al_extents = (unsigned)v;
	return 0;
}

#define G(name, fn, field, empty, expect) \
	{ name, SEC_GLOBAL, false, empty, offsetof(struct cfg, field), fn, expect }
#define V(name, fn, field, rep, expect) \
	{ name, SEC_VOLUME, rep, false, offsetof(struct cfg_volume, field), fn, expect }

static const struct key_def keys[] = {
	G("node", set_node, node, false, "a node name of " NAME_RULE),
	G("nbd-socket", set_socket, nbd_socket, true,
	  "an absolute path, \"\" or none"),
	G("nbd-listen", set_listen, nbd_host, true,
	  "HOST:PORT, [IPV6]:PORT, :PORT, \"\" or none"),
	G("nbd-socket-group", set_group, nbd_socket_group, true,
	  "a group name, \"\" or none"),
	G("nbd-clients-max", set_clients_max, nbd_clients_max, false,
	  "a number from 1 to 4096"),
	G("control-socket", set_socket, control_socket, false, "an absolute path"),
	G("nbd-tls", set_nbd_tls, nbd_tls, false, "require or off"),
	G("nbd-tls-cert-dir", set_path, nbd_tls_dir, false,
	  "an absolute path to a directory with ca-cert.pem, server-cert.pem and server-key.pem"),
	{ "nbd-tls-allow", SEC_GLOBAL, true, false, offsetof(struct cfg, nbd_tls_allow),
	  set_tls_allow, "a certificate DN pattern, e.g. \"C=GB,O=Example,CN=*\"" },
	G("state-dir", set_state_dir, state_dir, false, "an absolute path"),
	G("pidfile", set_path, pidfile, false, "an absolute path"),
	G("key-file", set_path, key_file, false, "an absolute path"),
	G("log-level", set_log_level, log_level, false,
	  "err, warning, notice, info or debug"),
	G("outdate-timeout", set_outdate_timeout, outdate_timeout_s, false,
	  "a number of seconds from 1 to 3600"),
	G("cluster", set_cluster, cluster, false, "corosync or none"),
	G("replication-address", set_host, repl_address, false,
	  "this node's IP address or host name for replication"),
	G("data-dir", set_path, data_dir, false, "an absolute path"),
	G("resync-rate-max", set_rate, resync_rate_max, false,
	  "bytes per second with an optional K, M or G suffix (0: no limit)"),
	G("after-sb-0pri", set_after_sb, after_sb, false,
	  "disconnect or discard-zero-changes"),
	G("after-sb-1pri", set_after_sb, after_sb, false, "disconnect or consensus"),
	G("after-sb-2pri", set_after_sb, after_sb, false, "disconnect"),
	G("auto-promote", set_auto_promote, auto_promote, false, "yes or no"),
	G("link-security", set_link_security, link_plain, false, "aead or none"),
	G("metrics-listen", set_metrics_listen, metrics_host, true,
	  "HOST:PORT, [IPV6]:PORT, :PORT, \"\" or none, e.g. 127.0.0.1:9942"),
	V("backing", set_path, backing, false,
	  "an absolute path to a file or block device"),
	V("size", set_size, size, false,
	  "a number of bytes with an optional K, M, G or T suffix, e.g. 10G"),
	V("meta", set_path, meta, false, "an absolute path"),
	V("io-threads", set_io_threads, io_threads, false, "a number from 1 to 64"),
	V("io-inline", set_io_inline, io_inline_off, false, "yes or no"),
	V("al-extents", set_al_extents, al_extents, false, "a number from 16 to 65534"),
	V("replica", set_replica, replicas, true,
	  "NODE HOST:PORT, e.g. \"replica = n1 10.0.0.1:7789\""),
};

_Static_assert(ARRAY_SIZE(keys) <= ARRAY_SIZE(((struct parser *)NULL)->seen_line),
	       "seen_line too small");

const struct key_def *cfg__key_find(const char *name, enum section sec)
{
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		if (keys[i].sec == sec && !strcmp(keys[i].name, name))
			return &keys[i];
	return NULL;
}

size_t cfg__key_index(const struct key_def *kd)
{
	return (size_t)(kd - keys);
}
