/* qblog.h: replagentd's logging through libqb.  common/log.h messages are
 * handed to qb_log (rlog_set_sink) and go to syslog (facility daemon), to
 * stderr when asked (the foreground), and to the blackbox: a 1 MiB ring
 * buffer in memory that keeps every message down to debug and is written
 * to a file when the daemon dies of SIGSEGV, SIGBUS, SIGFPE, SIGILL or
 * SIGABRT.  Read that file with "qb-blackbox FILE" (package libqb-tools). */
#ifndef REPL_AGENT_QBLOG_H
#define REPL_AGENT_QBLOG_H

#include <stdbool.h>

/* level (a syslog level) filters syslog and stderr; the blackbox gets
 * everything, so this sets rlog's own level to LOG_DEBUG.  blackbox_path
 * (may be NULL: no dump) is where a fatal signal writes the blackbox, e.g.
 * STATE_DIR "/replagentd.blackbox"; its directory should exist by the time
 * it is needed.  Call it once, before starting threads.  0, or -errno if
 * the blackbox could not be set up (logging to syslog and stderr works
 * anyway). */
int qblog_init(const char *ident, bool to_stderr, int level, const char *blackbox_path);
/* Changes the level that filters syslog and stderr (a reload); the
 * blackbox keeps everything. */
void qblog_set_level(int level);
/* Puts back the fatal signal handlers and rlog's stderr output, and closes
 * libqb's logging.  Call it when no other thread logs any more. */
void qblog_fini(void);

#endif
