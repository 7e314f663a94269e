/* log.h: one logging macro family for the engine, the daemon and tests.
 *
 * Levels are syslog's.  Messages go to a sink the program chooses (stderr by
 * default; replagentd routes them into libqb).  A prefix names the object the
 * message is about ("[vol0] ").  Debug arguments are not evaluated unless
 * debug logging is on.  This is not a log file writer: the sink is. */
#ifndef REPL_COMMON_LOG_H
#define REPL_COMMON_LOG_H

#include <syslog.h>

typedef void (*rlog_sink_fn)(int level, const char *msg, void *data);

extern int rlog_level;

void rlog_set_level(int level);
void rlog_set_sink(rlog_sink_fn fn, void *data);
void rlog_set_ident(const char *ident);

void rlog(int level, const char *prefix, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Like rlog, with ": strerror(err)" appended; err is a positive errno. */
void rlog_errno(int level, const char *prefix, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define log_enabled(lvl) ((lvl) <= rlog_level)

#define plog(lvl, pfx, ...) \
	do { if (log_enabled(lvl)) rlog((lvl), (pfx), __VA_ARGS__); } while (0)
#define plog_errno(lvl, pfx, err, ...) \
	do { if (log_enabled(lvl)) rlog_errno((lvl), (pfx), (err), __VA_ARGS__); } while (0)

#define log_err(...)      plog(LOG_ERR, NULL, __VA_ARGS__)
#define log_warn(...)     plog(LOG_WARNING, NULL, __VA_ARGS__)
#define log_notice(...)   plog(LOG_NOTICE, NULL, __VA_ARGS__)
#define log_info(...)     plog(LOG_INFO, NULL, __VA_ARGS__)
#define log_debug(...)    plog(LOG_DEBUG, NULL, __VA_ARGS__)
#define log_err_errno(err, ...)  plog_errno(LOG_ERR, NULL, (err), __VA_ARGS__)
#define log_warn_errno(err, ...) plog_errno(LOG_WARNING, NULL, (err), __VA_ARGS__)

#endif
