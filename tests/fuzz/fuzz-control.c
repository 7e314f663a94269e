/* fuzz-control.c: the control socket's request parser and command table
 * (agent/control_cmd.c), on any line a local client sends, as control.c
 * hands it over (one line, no NUL, a trailing CR dropped).  The engine
 * has no volumes, so every command runs up to its volume lookup.  Every
 * request must get one answer, and the answer must be valid UTF-8 (json.h:
 * the writer replaces invalid sequences) that the CLI's own parser reads
 * back as JSON. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "cfg.h"
#include "control_int.h"
#include "fuzz.h"
#include "json.h"
#include "repl.h"

static int fd_add(void *loop, int fd, unsigned events, repl_fd_fn fn, void *arg)
{
	return 0;
}

static int fd_mod(void *loop, int fd, unsigned events)
{
	return 0;
}

static void fd_del(void *loop, int fd)
{
}

static int timer_add(void *loop, uint64_t after_ms, repl_timer_fn fn, void *arg, void **handle)
{
	*handle = NULL;
	return 0;
}

static void timer_del(void *loop, void *handle)
{
}

static const struct repl_loop_ops ops = { fd_add, fd_mod, fd_del, timer_add, timer_del };

/* Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, at most
 * U+10FFFF). */
static bool utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned char c = s[i];
		size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 :
			     (c & 0xf8) == 0xf0 ? 4 : 0;
		uint32_t cp;

		if (!len || len > n - i)
			return false;
		cp = len == 1 ? c : c & (0x7f >> len);
		for (size_t k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
		    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += len;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct repl_engine *eng;
	static char nbd_socket[] = "/run/replagent/nbd.sock";
	static struct cfg cfg = { .node = "alpha", .nbd_socket = nbd_socket };
	struct repl_loop loop = { &ops, NULL };
	struct client cl = { .fd = -1 };
	struct control c = { .cfg = &cfg, .fd = -1 };
	struct json_writer w;
	struct json_value *v = NULL;
	const char *text;
	const uint8_t *nl;
	char *line;
	size_t len;

	fuzz_quiet();
	if (!eng && repl_engine_new(&loop, &eng) < 0)
		abort();
	/* control.c: a line is what comes before the first newline, at most
	 * CONTROL_REQUEST_MAX - 1 bytes, and one with a NUL is refused there. */
	nl = memchr(data, '\n', size);
	len = nl ? (size_t)(nl - data) : size;
	if (len >= CONTROL_REQUEST_MAX || memchr(data, '\0', len))
		return 0;
	line = malloc(len + 1);
	if (!line)
		return 0;
	memcpy(line, data, len);
	line[len] = '\0';
	if (len > 0 && line[len - 1] == '\r')
		line[len - 1] = '\0';
	c.eng = eng;
	c.current = &cl;
	cl.ctl = &c;
	json_writer_init(&w);
	control__dispatch(&c, line, &w);
	if (!cl.wants_events) {
		FUZZ_ASSERT(json_writer_result(&w, &text, &len) == 0);
		FUZZ_ASSERT(utf8_valid((const unsigned char *)text, len));
		FUZZ_ASSERT(json_parse(text, len, &v) == 0);
		FUZZ_ASSERT(v->type == JSON_OBJECT && json_get(v, "ok"));
		json_value_free(v);
	}
	json_writer_release(&w);
	free(line);
	return 0;
}
