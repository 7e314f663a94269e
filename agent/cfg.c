/* cfg.c: the configuration file parser declared in cfg.h.
 *
 * A line-at-a-time parser.  Each line is checked for binary garbage and
 * length, then read as a blank line, a comment, a [section] header or a
 * "key = value" line whose value goes to the key's setter from one table.
 * Checks that need a whole section (backing present, replica count) run when
 * the section ends; defaults that depend on other keys (meta) are filled in
 * at the end.  Parsing stops at the first error.  The keys and their
 * value parsers are cfg_keys.c's.  Nothing here logs, exits,
 * opens anything but the config file itself, or resolves host names. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <syslog.h>
#include <unistd.h>

#include "cfg.h"
#include "cfg_int.h"
#include "gen.h"
#include "repl.h"
#include "util.h"

#define CFG_FILE_MAX (16u << 20)

/* ---- messages ------------------------------------------------------------ */

__attribute__((format(printf, 3, 0)))
static int verr(struct parser *p, int line, const char *fmt, va_list ap)
{
	int n;

	if (!p->err || !p->errlen)
		return -EINVAL;
	if (line > 0)
		n = snprintf(p->err, p->errlen, "%s:%d: ", p->name, line);
	else
		n = snprintf(p->err, p->errlen, "%s: ", p->name);
	if (n >= 0 && (size_t)n < p->errlen)
		vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
	return -EINVAL;
}

__attribute__((format(printf, 3, 4)))
static int perr_at(struct parser *p, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verr(p, line, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

__attribute__((format(printf, 2, 3)))
int cfg__perr(struct parser *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verr(p, p->line, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int cfg__oom(struct parser *p)
{
	perr_at(p, 0, "out of memory");
	return -ENOMEM;
}

int cfg__bad_value(struct parser *p, const struct key_def *kd, const char *val)
{
	return cfg__perr(p, "invalid %s \"%s\": expected %s", kd->name, val, kd->expect);
}

/* ---- small string helpers ------------------------------------------------ */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

bool cfg__is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9');
}

char *cfg__skip_blank(char *s)
{
	while (is_blank(*s))
		s++;
	return s;
}

static char *trim(char *s)
{
	size_t n;

	s = cfg__skip_blank(s);
	n = strlen(s);
	while (n && is_blank(s[n - 1]))
		s[--n] = '\0';
	return s;
}

/* The first '#' at or after from that follows a blank: a trailing comment. */
static char *find_comment(const char *line, char *from)
{
	for (char *c = from; *c; c++)
		if (*c == '#' && c > line && is_blank(c[-1]))
			return c;
	return NULL;
}

int cfg__replace_str(struct parser *p, char **field, const char *val)
{
	char *s = strdup(val);

	if (!s)
		return cfg__oom(p);
	free(*field);
	*field = s;
	return 0;
}

bool cfg_name_valid(const char *name)
{
	size_t n = 0;

	if (!name || name[0] == '.' || name[0] == '-')
		return false;
	for (; name[n]; n++)
		if (!cfg__is_alnum(name[n]) && !strchr("_.-", name[n]))
			return false;
	return n >= 1 && n <= CFG_NAME_MAX;
}

/* ---- lines --------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (which starts >= 0x80), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp;

	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

static int check_text(struct parser *p, const char *line, size_t n)
{
	const unsigned char *s = (const unsigned char *)line;

	for (size_t i = 0; i < n; ) {
		if (s[i] == 0)
			return cfg__perr(p, "NUL byte in line (is this a binary file?)");
		if ((s[i] < 0x20 && s[i] != '\t') || s[i] == 0x7f)
			return cfg__perr(p, "control character 0x%02x in line (is this a binary file?)",
				    s[i]);
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		size_t len = utf8_seq(s + i, n - i);

		if (!len)
			return cfg__perr(p, "invalid UTF-8 in line (is this a binary file?)");
		i += len;
	}
	return 0;
}

static const char *section_label(struct parser *p, char *buf, size_t len)
{
	if (p->sec == SEC_GLOBAL)
		return "[global]";
	snprintf(buf, len, "[volume %s]", cfg__cur_vol(p)->name);
	return buf;
}

/* Checks a volume section once all its lines are in. */
static int end_section(struct parser *p)
{
	struct cfg_volume *vol;

	if (p->sec != SEC_VOLUME)
		return 0;
	vol = cfg__cur_vol(p);
	if (!vol->backing)
		return perr_at(p, vol->line, "[volume %s] has no \"backing = PATH\" line",
			       vol->name);
	if (vol->n_replicas == 1)
		return perr_at(p, vol->replicas[0].line,
			       "[volume %s] has only one replica line: a replicated volume needs 2 or %d, a local one none",
			       vol->name, CFG_REPLICAS_MAX);
	return 0;
}

static int start_volume(struct parser *p, const char *name)
{
	struct cfg *cfg = p->cfg;
	const struct cfg_volume *old;

	if (!*name)
		return cfg__perr(p, "missing volume name: expected [volume NAME]");
	if (!cfg_name_valid(name))
		return cfg__perr(p, "invalid volume name \"%s\": expected " NAME_RULE, name);
	old = cfg_volume_find(cfg, name);
	if (old)
		return cfg__perr(p, "duplicate volume \"%s\" (first defined at line %d)",
			    name, old->line);
	if (cfg->n_volumes == p->vol_cap) {
		unsigned cap = p->vol_cap ? p->vol_cap * 2 : 8;
		struct cfg_volume *v = realloc(cfg->volumes, cap * sizeof(*v));

		if (!v)
			return cfg__oom(p);
		cfg->volumes = v;
		p->vol_cap = cap;
	}
	memset(&cfg->volumes[cfg->n_volumes], 0, sizeof(cfg->volumes[0]));
	strcpy(cfg->volumes[cfg->n_volumes].name, name);
	cfg->volumes[cfg->n_volumes].line = p->line;
	cfg->n_volumes++;
	p->sec = SEC_VOLUME;
	return 0;
}

static int parse_header(struct parser *p, char *s)
{
	char *close = strchr(s, ']'), *inner;
	int ret;

	if (!close)
		return cfg__perr(p, "missing ']' in section header");
	if (close[1] && !(is_blank(close[1]) && *cfg__skip_blank(close + 1) == '#'))
		return cfg__perr(p, "unexpected text after ']' in section header");
	*close = '\0';
	inner = trim(s + 1);

	ret = end_section(p);
	if (ret)
		return ret;
	memset(p->seen_line, 0, sizeof(p->seen_line));
	if (!strcmp(inner, "global")) {
		if (p->global_line)
			return cfg__perr(p, "duplicate [global] section (first at line %d)",
				    p->global_line);
		p->global_line = p->line;
		p->sec = SEC_GLOBAL;
		return 0;
	}
	if (!strncmp(inner, "volume", 6) && (!inner[6] || is_blank(inner[6])))
		return start_volume(p, cfg__skip_blank(inner + 6));
	return cfg__perr(p, "unknown section \"[%s]\": expected [global] or [volume NAME]", inner);
}

/* Finds the value after '=': quoted ("..." taken literally) or bare (up to
 * a trailing comment).  Returns NULL after writing an error. */
static char *parse_value(struct parser *p, const char *line, char *s, bool *quoted)
{
	char *v = cfg__skip_blank(s), *c;

	*quoted = *v == '"';
	if (*quoted) {
		char *q = strchr(v + 1, '"');

		if (!q) {
			cfg__perr(p, "missing closing '\"'");
			return NULL;
		}
		if (q[1] && !(is_blank(q[1]) && *cfg__skip_blank(q + 1) == '#')) {
			cfg__perr(p, "unexpected text after closing '\"'");
			return NULL;
		}
		*q = '\0';
		return v + 1;
	}
	c = find_comment(line, v);
	if (c)
		*c = '\0';
	return trim(v);
}

static int parse_assignment(struct parser *p, char *line, char *s)
{
	char *eq = strchr(s, '='), *c = find_comment(line, s), *key, *val;
	const struct key_def *kd;
	char label[CFG_NAME_MAX + 16];
	bool quoted;
	size_t idx;

	if (!eq || (c && c < eq))
		return cfg__perr(p, "missing '=': expected \"key = value\", [global] or [volume NAME]");
	*eq = '\0';
	key = trim(s);
	if (!*key)
		return cfg__perr(p, "missing key before '='");
	if (p->sec == SEC_NONE)
		return cfg__perr(p, "key \"%s\" outside a section: put it under [global] or [volume NAME]",
			    key);
	kd = cfg__key_find(key, p->sec);
	if (!kd) {
		const char *hint = "";

		if (cfg__key_find(key, SEC_GLOBAL))
			hint = " (it belongs in [global])";
		else if (cfg__key_find(key, SEC_VOLUME))
			hint = " (it belongs in a [volume NAME] section)";
		return cfg__perr(p, "unknown key \"%s\" in %s%s", key,
			    section_label(p, label, sizeof(label)), hint);
	}
	idx = cfg__key_index(kd);
	if (!kd->repeatable && p->seen_line[idx])
		return cfg__perr(p, "duplicate key \"%s\" in %s (first set at line %d)", key,
			    section_label(p, label, sizeof(label)), p->seen_line[idx]);
	val = parse_value(p, line, eq + 1, &quoted);
	if (!val)
		return -EINVAL;
	if (!*val && !(quoted && kd->empty_ok))
		return cfg__perr(p, "empty value for \"%s\": expected %s", key, kd->expect);
	p->seen_line[idx] = p->line;
	return kd->set(p, kd, val);
}

static int parse_line(struct parser *p, char *line)
{
	char *s = trim(line);

	if (!*s || *s == '#')
		return 0;
	if (*s == '[')
		return parse_header(p, s);
	return parse_assignment(p, line, s);
}

/* ---- whole configuration ------------------------------------------------- */

static struct cfg *cfg_new(const char *name)
{
	struct cfg *cfg = calloc(1, sizeof(*cfg));
	struct utsname u;

	if (!cfg)
		return NULL;
	if (uname(&u) == 0 && cfg_name_valid(u.nodename))
		strcpy(cfg->node, u.nodename);
	cfg->path = strdup(name);
	cfg->nbd_socket = strdup(CFG_DEFAULT_NBD_SOCKET);
	cfg->control_socket = strdup(CFG_DEFAULT_CONTROL_SOCKET);
	cfg->state_dir = strdup(CFG_DEFAULT_STATE_DIR);
	cfg->pidfile = strdup(CFG_DEFAULT_PIDFILE);
	cfg->key_file = strdup(CFG_DEFAULT_KEY_FILE);
	cfg->log_level = LOG_INFO;
	cfg->nbd_tls = -1;
	cfg->outdate_timeout_s = CFG_DEFAULT_OUTDATE_TIMEOUT_S;
	if (!cfg->path || !cfg->nbd_socket || !cfg->control_socket ||
	    !cfg->state_dir || !cfg->pidfile || !cfg->key_file) {
		cfg_free(cfg);
		return NULL;
	}
	return cfg;
}

static int finish(struct parser *p)
{
	struct cfg *cfg = p->cfg;
	size_t n = strlen(cfg->state_dir);
	const char *sep = n && cfg->state_dir[n - 1] == '/' ? "" : "/";

	for (unsigned i = 0; i < cfg->n_volumes; i++) {
		struct cfg_volume *vol = &cfg->volumes[i];

		if (vol->meta)
			continue;
		if (asprintf(&vol->meta, "%s%s%s.meta", cfg->state_dir, sep, vol->name) < 0) {
			vol->meta = NULL;
			return cfg__oom(p);
		}
	}
	return 0;
}

static int parse_text(struct parser *p, const char *text, size_t len)
{
	const char *pos = text, *end = text + len;
	char line[CFG_LINE_MAX + 1];
	int ret;

	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		pos += 3;	/* UTF-8 byte order mark */
	while (pos < end) {
		const char *nl = memchr(pos, '\n', (size_t)(end - pos));
		size_t n = (size_t)((nl ? nl : end) - pos);

		p->line++;
		if (n && pos[n - 1] == '\r')
			n--;	/* CRLF line ends */
		ret = check_text(p, pos, n);
		if (ret)
			return ret;
		if (n > CFG_LINE_MAX)
			return cfg__perr(p, "line is longer than %d bytes", CFG_LINE_MAX);
		memcpy(line, pos, n);
		line[n] = '\0';
		pos = nl ? nl + 1 : end;
		ret = parse_line(p, line);
		if (ret)
			return ret;
	}
	ret = end_section(p);
	if (ret)
		return ret;
	return finish(p);
}

static int parse_buf(const char *name, const char *text, size_t len,
		     struct cfg **out, char *err, size_t errlen)
{
	struct parser p = { .name = name, .err = err, .errlen = errlen };
	int ret;

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	p.cfg = cfg_new(name);
	if (!p.cfg)
		return cfg__oom(&p);
	ret = parse_text(&p, text, len);
	if (ret) {
		cfg_free(p.cfg);
		return ret;
	}
	*out = p.cfg;
	return 0;
}

int cfg_parse_string(const char *name, const char *text, struct cfg **out,
		     char *err, size_t errlen)
{
	return parse_buf(name, text, strlen(text), out, err, errlen);
}

static int read_all(int fd, char **bufp, size_t *lenp)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap), *nb;
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (len == cap) {
			if (cap >= CFG_FILE_MAX) {
				free(buf);
				return -EFBIG;
			}
			cap *= 2;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int ret = -errno;

			free(buf);
			return ret;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	*bufp = buf;
	*lenp = len;
	return 0;
}

int cfg_load(const char *path, struct cfg **out, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	int fd, ret;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		ret = -errno;
		if (err && errlen)
			snprintf(err, errlen, "%s: cannot open: %s", path, strerror(-ret));
		return ret;
	}
	ret = read_all(fd, &buf, &len);
	close(fd);
	if (ret) {
		if (err && errlen)
			snprintf(err, errlen, "%s: cannot read: %s", path,
				 ret == -EFBIG ? "file is larger than 16 MiB" : strerror(-ret));
		return ret;
	}
	ret = parse_buf(path, buf, len, out, err, errlen);
	free(buf);
	return ret;
}

void cfg_free(struct cfg *cfg)
{
	if (!cfg)
		return;
	for (unsigned i = 0; i < cfg->n_volumes; i++) {
		free(cfg->volumes[i].backing);
		free(cfg->volumes[i].meta);
	}
	free(cfg->volumes);
	free(cfg->path);
	free(cfg->nbd_socket);
	free(cfg->nbd_host);
	free(cfg->nbd_port);
	free(cfg->nbd_socket_group);
	free(cfg->nbd_tls_dir);
	for (unsigned i = 0; i < cfg->n_nbd_tls_allow; i++)
		free(cfg->nbd_tls_allow[i]);
	free(cfg->control_socket);
	free(cfg->state_dir);
	free(cfg->pidfile);
	free(cfg->key_file);
	free(cfg->repl_address);
	free(cfg->data_dir);
	free(cfg->metrics_host);
	free(cfg->metrics_port);
	free(cfg);
}

const struct cfg_volume *cfg_volume_find(const struct cfg *cfg, const char *name)
{
	for (unsigned i = 0; i < cfg->n_volumes; i++)
		if (!strcmp(cfg->volumes[i].name, name))
			return &cfg->volumes[i];
	return NULL;
}

bool cfg_volume_here(const struct cfg *cfg, const struct cfg_volume *vol)
{
	if (vol->n_replicas == 0)
		return true;
	for (unsigned i = 0; i < vol->n_replicas; i++)
		if (!strcmp(vol->replicas[i].node, cfg->node))
			return true;
	return false;
}

int cfg_set_node(struct cfg *cfg, const char *node)
{
	if (!cfg_name_valid(node))
		return -EINVAL;
	strcpy(cfg->node, node);
	return 0;
}

const char *cfg_loss_marker(const struct cfg *cfg, const char *name, char *buf, size_t len)
{
	const char *slash = cfg->pidfile ? strrchr(cfg->pidfile, '/') : NULL;
	int n;

	if (!slash)
		return NULL;
	n = snprintf(buf, len, "%.*s/%s.disk-lost", (int)(slash - cfg->pidfile), cfg->pidfile,
		     name);
	return n > 0 && (size_t)n < len ? buf : NULL;
}

void cfg_repl_tuning(const struct cfg *cfg, struct repl_volume_config *vc)
{
	static const uint8_t policy[3][2] = {
		{ SB_DISCONNECT, SB_DISCARD_ZERO_CHANGES },
		{ SB_DISCONNECT, SB_CONSENSUS },
		{ SB_DISCONNECT, SB_DISCONNECT },
	};
	struct sb_config d = SB_CONFIG_DEFAULT;

	vc->resync_rate_max = cfg->resync_rate_max;
	vc->auto_promote = cfg->auto_promote;
	vc->link_plain = cfg->link_plain;
	vc->outdate_timeout_ms = cfg->outdate_timeout_s * 1000;
	vc->sb_policy_set = true;
	vc->after_sb[0] = cfg->after_sb_set[0] ? policy[0][(int)cfg->after_sb[0]]
					       : (uint8_t)d.after_sb_0pri;
	vc->after_sb[1] = cfg->after_sb_set[1] ? policy[1][(int)cfg->after_sb[1]]
					       : (uint8_t)d.after_sb_1pri;
	vc->after_sb[2] = cfg->after_sb_set[2] ? policy[2][(int)cfg->after_sb[2]]
					       : (uint8_t)d.after_sb_2pri;
}
