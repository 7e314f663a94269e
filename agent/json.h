/* json.h: the little JSON that the control socket speaks.
 *
 * A writer that appends to a growing buffer (replagentd builds its answers
 * with it; commas and string escaping are its business, not the caller's),
 * and a strict parser into a small tree (the replagent command line reads
 * the answers with it).  It is not a general JSON library: numbers are
 * kept as text and read back as whole numbers only, strings may not contain
 * NUL (\u0000 is refused), nesting is limited to JSON_DEPTH_MAX, and neither
 * side does any I/O. */
#ifndef REPL_AGENT_JSON_H
#define REPL_AGENT_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_DEPTH_MAX 32

/* ---- writer ------------------------------------------------------------ */

struct json_writer {
	char *buf;		/* NUL-terminated while err == 0 */
	size_t len, cap;
	int err;		/* first error (-ENOMEM, -EINVAL), sticky */
	unsigned depth;
	bool need_comma[JSON_DEPTH_MAX + 1];
	bool after_key;
};

void json_writer_init(struct json_writer *w);
void json_writer_release(struct json_writer *w);
/* The text written so far: 0 and *text / *len, or the first error. */
int json_writer_result(const struct json_writer *w, const char **text, size_t *len);

void json_obj_begin(struct json_writer *w);
void json_obj_end(struct json_writer *w);
void json_arr_begin(struct json_writer *w);
void json_arr_end(struct json_writer *w);
/* Inside an object: the name of the next value. */
void json_key(struct json_writer *w, const char *key);
void json_str(struct json_writer *w, const char *s);	/* NULL writes null */
void json_u64(struct json_writer *w, uint64_t v);
void json_i64(struct json_writer *w, int64_t v);
void json_bool(struct json_writer *w, bool v);
void json_null(struct json_writer *w);

/* key + value in one call */
void json_kv_str(struct json_writer *w, const char *key, const char *s);
void json_kv_u64(struct json_writer *w, const char *key, uint64_t v);
void json_kv_bool(struct json_writer *w, const char *key, bool v);

/* ---- parser ------------------------------------------------------------ */

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

struct json_value {
	enum json_type type;
	char *key;		/* member name, when inside an object */
	char *str;		/* JSON_STRING: the text; JSON_NUMBER: as written */
	bool b;
	struct json_value *child;	/* first element or member */
	struct json_value *next;	/* next sibling */
};

/* Parses exactly one value (surrounding white space allowed) from text.
 * 0, -EINVAL for malformed or too deeply nested input, -ENOMEM. */
int json_parse(const char *text, size_t len, struct json_value **out);
void json_value_free(struct json_value *v);	/* NULL ok */

/* Member lookup in an object (NULL if v is no object or lacks key). */
const struct json_value *json_get(const struct json_value *v, const char *key);
/* Typed lookups: NULL / false / -ENOENT when absent or of another type. */
const char *json_get_str(const struct json_value *v, const char *key);
bool json_get_bool(const struct json_value *v, const char *key);
int json_get_i64(const struct json_value *v, const char *key, int64_t *out);
/* Whole non-negative numbers only, up to UINT64_MAX. */
int json_get_u64(const struct json_value *v, const char *key, uint64_t *out);

#endif
