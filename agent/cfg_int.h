/* cfg_int.h: what the two halves of the configuration parser share
 * (cfg.c: lines, sections, the whole file; cfg_keys.c: the table of keys
 * and their value parsers), and nobody else. */
#ifndef REPL_AGENT_CFG_INT_H
#define REPL_AGENT_CFG_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "cfg.h"

#define NAME_RULE "1..64 characters of [A-Za-z0-9_.-], not starting with '.' or '-'"

enum section { SEC_NONE, SEC_GLOBAL, SEC_VOLUME };

struct parser;
struct key_def;
typedef int (*setter_fn)(struct parser *p, const struct key_def *kd, char *val);

struct key_def {
	const char *name;
	enum section sec;
	bool repeatable;
	bool empty_ok;		/* a quoted "" is meaningful (disables something) */
	size_t off;		/* char * field, for set_path and friends */
	setter_fn set;
	const char *expect;	/* for "expected ..." in messages */
};

struct parser {
	const char *name;
	int line;
	struct cfg *cfg;
	enum section sec;
	int global_line;	/* 0 = no [global] seen yet */
	int seen_line[32];	/* per keys[] entry: line it was set on, 0 = not */
	unsigned vol_cap;
	char *err;
	size_t errlen;
};

/* ---- cfg.c: messages (they return -EINVAL, or -ENOMEM) and strings ---- */
int cfg__perr(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int cfg__oom(struct parser *p);
int cfg__bad_value(struct parser *p, const struct key_def *kd, const char *val);
bool cfg__is_alnum(char c);
char *cfg__skip_blank(char *s);
/* *field = a copy of val (the old one freed): 0 or cfg__oom(). */
int cfg__replace_str(struct parser *p, char **field, const char *val);

/* ---- cfg_keys.c ---- */
/* The [volume] section being read. */
struct cfg_volume *cfg__cur_vol(struct parser *p);
/* The key of that name in section sec, or NULL. */
const struct key_def *cfg__key_find(const char *name, enum section sec);
/* Its place in the table (for seen_line). */
size_t cfg__key_index(const struct key_def *kd);

#endif
