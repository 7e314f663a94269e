/* json.c: see json.h.  The writer escapes every string it writes (quotes,
 * backslashes, control characters, and invalid UTF-8 as U+FFFD), so that
 * its output is always valid JSON whatever the engine puts in a name or a
 * reason.  The parser is a recursive descent over RFC 8259, depth-bounded. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* ---- writer ------------------------------------------------------------ */

void json_writer_init(struct json_writer *w)
{
	memset(w, 0, sizeof(*w));
}

void json_writer_release(struct json_writer *w)
{
	free(w->buf);
	json_writer_init(w);
}

int json_writer_result(const struct json_writer *w, const char **text, size_t *len)
{
	if (w->err)
		return w->err;
	if (w->depth || w->after_key)
		return -EINVAL;
	*text = w->buf ? w->buf : "";
	*len = w->len;
	return 0;
}

static int grow(struct json_writer *w, size_t need)
{
	size_t cap = w->cap ? w->cap : 256;
	char *p;

	while (cap < need)
		cap *= 2;
	p = realloc(w->buf, cap);
	if (!p)
		return -ENOMEM;
	w->buf = p;
	w->cap = cap;
	return 0;
}

static void put(struct json_writer *w, const char *s, size_t n)
{
	if (w->err)
		return;
	if (w->len + n + 1 > w->cap && (w->err = grow(w, w->len + n + 1)))
		return;
	memcpy(w->buf + w->len, s, n);
	w->len += n;
	w->buf[w->len] = '\0';
}

static void puts_(struct json_writer *w, const char *s)
{
	put(w, s, strlen(s));
}

/* The comma (or nothing) that goes before a value or a key. */
static void sep(struct json_writer *w)
{
	if (w->after_key) {
		w->after_key = false;
		return;
	}
	if (w->need_comma[w->depth])
		put(w, ",", 1);
	w->need_comma[w->depth] = true;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if none. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

static void put_escaped_char(struct json_writer *w, unsigned char c)
{
	char esc[8];

	switch (c) {
	case '"': puts_(w, "\\\""); break;
	case '\\': puts_(w, "\\\\"); break;
	case '\n': puts_(w, "\\n"); break;
	case '\r': puts_(w, "\\r"); break;
	case '\t': puts_(w, "\\t"); break;
	case '\b': puts_(w, "\\b"); break;
	case '\f': puts_(w, "\\f"); break;
	default:
		snprintf(esc, sizeof(esc), "\\u%04x", c);
		puts_(w, esc);
	}
}

static void put_string(struct json_writer *w, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), k;

	put(w, "\"", 1);
	while (n > 0) {
		if (*p < 0x20 || *p == '"' || *p == '\\' || *p == 0x7f) {
			put_escaped_char(w, *p);
			k = 1;
		} else if ((k = utf8_seq(p, n)) > 0) {
			put(w, (const char *)p, k);
		} else {
			puts_(w, "\\ufffd");
			k = 1;
		}
		p += k;
		n -= k;
	}
	put(w, "\"", 1);
}

static void open_(struct json_writer *w, const char *bracket)
{
	sep(w);
	put(w, bracket, 1);
	if (w->depth >= JSON_DEPTH_MAX) {
		w->err = w->err ? w->err : -EINVAL;
		return;
	}
	w->need_comma[++w->depth] = false;
}

static void close_(struct json_writer *w, const char *bracket)
{
	if (w->depth == 0 || w->after_key) {
		w->err = w->err ? w->err : -EINVAL;
		return;
	}
	w->depth--;
	put(w, bracket, 1);
}

void json_obj_begin(struct json_writer *w) { open_(w, "{"); }
void json_obj_end(struct json_writer *w) { close_(w, "}"); }
void json_arr_begin(struct json_writer *w) { open_(w, "["); }
void json_arr_end(struct json_writer *w) { close_(w, "]"); }

void json_key(struct json_writer *w, const char *key)
{
	sep(w);
	put_string(w, key);
	put(w, ":", 1);
	w->after_key = true;
}

void json_str(struct json_writer *w, const char *s)
{
	if (!s) {
		json_null(w);
		return;
	}
	sep(w);
	put_string(w, s);
}

void json_u64(struct json_writer *w, uint64_t v)
{
	char num[24];

	sep(w);
	snprintf(num, sizeof(num), "%" PRIu64, v);
	puts_(w, num);
}

void json_i64(struct json_writer *w, int64_t v)
{
	char num[24];

	sep(w);
	snprintf(num, sizeof(num), "%" PRId64, v);
	puts_(w, num);
}

void json_bool(struct json_writer *w, bool v)
{
	sep(w);
	puts_(w, v ? "true" : "false");
}

void json_null(struct json_writer *w)
{
	sep(w);
	puts_(w, "null");
}

void json_kv_str(struct json_writer *w, const char *key, const char *s)
{
	json_key(w, key);
	json_str(w, s);
}

void json_kv_u64(struct json_writer *w, const char *key, uint64_t v)
{
	json_key(w, key);
	json_u64(w, v);
}

void json_kv_bool(struct json_writer *w, const char *key, bool v)
{
	json_key(w, key);
	json_bool(w, v);
}

/* ---- parser ------------------------------------------------------------ */

struct parser {
	const char *p, *end;
	unsigned depth;
};

/* A growing string for the parser (NUL-terminated when done). */
struct sbuf {
	char *s;
	size_t len, cap;
};

static int sbuf_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 32;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->s, cap);
		if (!p)
			return -ENOMEM;
		b->s = p;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}

static int parse_value(struct parser *ps, struct json_value **out);

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end &&
	       (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static bool eat(struct parser *ps, char c)
{
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == c) {
		ps->p++;
		return true;
	}
	return false;
}

static int hex4(struct parser *ps, uint32_t *out)
{
	uint32_t v = 0;

	if (ps->end - ps->p < 4)
		return -EINVAL;
	for (int i = 0; i < 4; i++) {
		char c = *ps->p++;
		unsigned d;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			d = (unsigned)((c | 0x20) - 'a' + 10);
		else
			return -EINVAL;
		v = (v << 4) | d;
	}
	*out = v;
	return 0;
}

static size_t utf8_encode(uint32_t cp, char out[4])
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* \uXXXX (after the "\u"), with surrogate pairs; NUL is refused. */
static int parse_uescape(struct parser *ps, struct sbuf *b)
{
	uint32_t cp, lo;
	char enc[4];

	if (hex4(ps, &cp) < 0 || cp == 0 || (cp >= 0xdc00 && cp <= 0xdfff))
		return -EINVAL;
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u')
			return -EINVAL;
		ps->p += 2;
		if (hex4(ps, &lo) < 0 || lo < 0xdc00 || lo > 0xdfff)
			return -EINVAL;
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	return sbuf_add(b, enc, utf8_encode(cp, enc));
}

static int parse_escape(struct parser *ps, struct sbuf *b)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *e;

	if (ps->p >= ps->end)
		return -EINVAL;
	if (*ps->p == 'u') {
		ps->p++;
		return parse_uescape(ps, b);
	}
	e = strchr(from, *ps->p);
	if (!e || !*ps->p)
		return -EINVAL;
	ps->p++;
	return sbuf_add(b, &to[e - from], 1);
}

/* A string, the opening quote already seen. */
static int parse_chars(struct parser *ps, char **out)
{
	struct sbuf b = { 0 };
	int r = sbuf_add(&b, "", 0);

	while (r == 0) {
		if (ps->p >= ps->end || (unsigned char)*ps->p < 0x20) {
			r = -EINVAL;
		} else if (*ps->p == '"') {
			ps->p++;
			*out = b.s;
			return 0;
		} else if (*ps->p == '\\') {
			ps->p++;
			r = parse_escape(ps, &b);
		} else {
			/* A run of plain characters in one go: a status of 200
			 * volumes has some 30,000 strings (issue 16). */
			const char *run = ps->p;

			while (ps->p < ps->end && *ps->p != '"' && *ps->p != '\\' &&
			       (unsigned char)*ps->p >= 0x20)
				ps->p++;
			r = sbuf_add(&b, run, (size_t)(ps->p - run));
		}
	}
	free(b.s);
	return r;
}

static size_t digits(struct parser *ps)
{
	const char *start = ps->p;

	while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
		ps->p++;
	return (size_t)(ps->p - start);
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, kept as text. */
static int parse_number(struct parser *ps, char **out)
{
	const char *start = ps->p;
	size_t n;

	if (ps->p < ps->end && *ps->p == '-')
		ps->p++;
	n = digits(ps);
	if (n == 0 || (n > 1 && ps->p[-(ptrdiff_t)n] == '0'))
		return -EINVAL;
	if (ps->p < ps->end && *ps->p == '.') {
		ps->p++;
		if (!digits(ps))
			return -EINVAL;
	}
	if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
		ps->p++;
		if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
			ps->p++;
		if (!digits(ps))
			return -EINVAL;
	}
	*out = strndup(start, (size_t)(ps->p - start));
	return *out ? 0 : -ENOMEM;
}

static int parse_literal(struct parser *ps, struct json_value *v)
{
	static const struct {
		const char *word;
		enum json_type type;
		bool b;
	} lits[] = {
		{ "true", JSON_BOOL, true },
		{ "false", JSON_BOOL, false },
		{ "null", JSON_NULL, false },
	};

	for (size_t i = 0; i < sizeof(lits) / sizeof(lits[0]); i++) {
		size_t n = strlen(lits[i].word);

		if ((size_t)(ps->end - ps->p) >= n && !memcmp(ps->p, lits[i].word, n)) {
			ps->p += n;
			v->type = lits[i].type;
			v->b = lits[i].b;
			return 0;
		}
	}
	return -EINVAL;
}

/* Elements (or members, with keys) up to the closing bracket; the opening
 * one already seen. */
static int parse_items(struct parser *ps, struct json_value *v, char close, bool keys)
{
	struct json_value **tail = &v->child;
	char *key = NULL;
	int r;

	if (eat(ps, close))
		return 0;
	do {
		if (keys && (!eat(ps, '"') || (r = parse_chars(ps, &key)) < 0))
			return -EINVAL;
		if (keys && !eat(ps, ':')) {
			free(key);
			return -EINVAL;
		}
		r = parse_value(ps, tail);
		if (r < 0) {
			free(key);
			return r;
		}
		(*tail)->key = key;
		key = NULL;
		tail = &(*tail)->next;
	} while (eat(ps, ','));
	return eat(ps, close) ? 0 : -EINVAL;
}

static int parse_container(struct parser *ps, struct json_value *v, char open)
{
	int r;

	if (++ps->depth > JSON_DEPTH_MAX)
		return -EINVAL;
	v->type = open == '{' ? JSON_OBJECT : JSON_ARRAY;
	r = parse_items(ps, v, open == '{' ? '}' : ']', open == '{');
	ps->depth--;
	return r;
}

static int parse_value(struct parser *ps, struct json_value **out)
{
	struct json_value *v;
	char c;
	int r;

	skip_ws(ps);
	if (ps->p >= ps->end)
		return -EINVAL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	c = *ps->p;
	if (c == '{' || c == '[') {
		ps->p++;
		r = parse_container(ps, v, c);
	} else if (c == '"') {
		ps->p++;
		v->type = JSON_STRING;
		r = parse_chars(ps, &v->str);
	} else if (c == '-' || (c >= '0' && c <= '9')) {
		v->type = JSON_NUMBER;
		r = parse_number(ps, &v->str);
	} else {
		r = parse_literal(ps, v);
	}
	if (r < 0) {
		json_value_free(v);
		return r;
	}
	*out = v;
	return 0;
}

int json_parse(const char *text, size_t len, struct json_value **out)
{
	struct parser ps = { .p = text, .end = text + len };
	struct json_value *v;
	int r;

	r = parse_value(&ps, &v);
	if (r < 0)
		return r;
	skip_ws(&ps);
	if (ps.p != ps.end) {
		json_value_free(v);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

void json_value_free(struct json_value *v)
{
	while (v) {
		struct json_value *next = v->next;

		json_value_free(v->child);
		free(v->key);
		free(v->str);
		free(v);
		v = next;
	}
}

/* ---- lookups ----------------------------------------------------------- */

const struct json_value *json_get(const struct json_value *v, const char *key)
{
	if (!v || v->type != JSON_OBJECT)
		return NULL;
	for (const struct json_value *m = v->child; m; m = m->next)
		if (!strcmp(m->key, key))
			return m;
	return NULL;
}

const char *json_get_str(const struct json_value *v, const char *key)
{
	const struct json_value *m = json_get(v, key);

	return m && m->type == JSON_STRING ? m->str : NULL;
}

bool json_get_bool(const struct json_value *v, const char *key)
{
	const struct json_value *m = json_get(v, key);

	return m && m->type == JSON_BOOL && m->b;
}

/* A number without fraction or exponent. */
static const char *whole_number(const struct json_value *v, const char *key)
{
	const struct json_value *m = json_get(v, key);

	if (!m || m->type != JSON_NUMBER || strpbrk(m->str, ".eE"))
		return NULL;
	return m->str;
}

int json_get_i64(const struct json_value *v, const char *key, int64_t *out)
{
	const char *s = whole_number(v, key);
	long long n;

	if (!s)
		return -ENOENT;
	errno = 0;
	n = strtoll(s, NULL, 10);
	if (errno)
		return -ERANGE;
	*out = n;
	return 0;
}

int json_get_u64(const struct json_value *v, const char *key, uint64_t *out)
{
	const char *s = whole_number(v, key);
	unsigned long long n;

	if (!s)
		return -ENOENT;
	if (*s == '-')
		return -ERANGE;
	errno = 0;
	n = strtoull(s, NULL, 10);
	if (errno)
		return -ERANGE;
	*out = n;
	return 0;
}
