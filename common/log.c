/* log.c: formatting and dispatch for log.h.  Thread safe: each message is
 * formatted into a local buffer and handed to the sink in one call. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

int rlog_level = LOG_INFO;

static rlog_sink_fn sink;
static void *sink_data;
static const char *ident = "replagent";

static const char *const level_names[] = {
	"emerg", "alert", "crit", "error", "warning", "notice", "info", "debug",
};

void rlog_set_level(int level) { rlog_level = level; }
void rlog_set_ident(const char *name) { ident = name; }

void rlog_set_sink(rlog_sink_fn fn, void *data)
{
	sink = fn;
	sink_data = data;
}

static void stderr_sink(int level, const char *msg)
{
	struct timespec ts;
	struct tm tm;
	char when[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	fprintf(stderr, "%s.%03ld %s[%d] %s: %s\n", when, ts.tv_nsec / 1000000,
		ident, (int)getpid(), level_names[level & 7], msg);
}

static void vlog_emit(int level, const char *prefix, int err, const char *fmt,
		      va_list ap) __attribute__((format(printf, 4, 0)));

static void vlog_emit(int level, const char *prefix, int err, const char *fmt,
		      va_list ap)
{
	char msg[1024];
	size_t len = 0;
	int n;

	if (prefix) {
		n = snprintf(msg, sizeof(msg), "[%s] ", prefix);
		len = n > 0 ? (size_t)n : 0;
	}
	if (len < sizeof(msg)) {
		n = vsnprintf(msg + len, sizeof(msg) - len, fmt, ap);
		if (n > 0)
			len += (size_t)n;
	}
	if (err && len < sizeof(msg))
		snprintf(msg + len, sizeof(msg) - len, ": %s", strerror(err));
	if (sink)
		sink(level, msg, sink_data);
	else
		stderr_sink(level, msg);
}

void rlog(int level, const char *prefix, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog_emit(level, prefix, 0, fmt, ap);
	va_end(ap);
}

void rlog_errno(int level, const char *prefix, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog_emit(level, prefix, err, fmt, ap);
	va_end(ap);
}
