/* qblog.c: see qblog.h.
 *
 * libqb's logger is not safe to enter from two threads at once (it guards
 * itself with a plain static flag and drops a message that comes in while
 * another is being written), and the engine logs from its I/O threads too,
 * so the sink takes a mutex around qb_log. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <qb/qbdefs.h>
#include <qb/qblog.h>

#include "log.h"
#include "qblog.h"
#include "util.h"

#define BLACKBOX_SIZE (1024 * 1024)

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static bool inited;
static bool stderr_on;
static char blackbox_path[PATH_MAX];

static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
static struct sigaction fatal_old[ARRAY_SIZE(fatal_signals)];
static bool fatal_installed;
static atomic_flag fatal_once = ATOMIC_FLAG_INIT;
/* The handler runs here, so that it still can after a stack overflow. */
static char altstack[64 * 1024];

static void sink(int level, const char *msg, void *data)
{
	if (level < LOG_EMERG)
		level = LOG_EMERG;
	if (level > LOG_DEBUG)
		level = LOG_DEBUG;
	pthread_mutex_lock(&log_lock);
	qb_log_from_external_source("replagentd", "replagent", "%s", (uint8_t)level, 1, 0, msg);
	pthread_mutex_unlock(&log_lock);
}

static void say(const char *s)
{
	ssize_t n = write(STDERR_FILENO, s, strlen(s));
	(void)n;
}

/* Writes the blackbox, then lets the signal do what it would have done:
 * the handler that was there before us (or the default) gets it again. */
static void on_fatal(int signo, siginfo_t *si, void *ctx)
{
	int saved = errno;

	if (!atomic_flag_test_and_set(&fatal_once) && blackbox_path[0]) {
		say("replagentd: fatal signal, writing the blackbox to ");
		say(blackbox_path);
		say("\n");
		qb_log_blackbox_write_to_file(blackbox_path);
	}
	for (size_t i = 0; i < ARRAY_SIZE(fatal_signals); i++) {
		if (fatal_signals[i] != signo)
			continue;
		if (!(fatal_old[i].sa_flags & SA_SIGINFO) &&
		    fatal_old[i].sa_handler == SIG_IGN) {
			struct sigaction dfl = { .sa_handler = SIG_DFL };
			sigaction(signo, &dfl, NULL);
		} else {
			sigaction(signo, &fatal_old[i], NULL);
		}
	}
	errno = saved;
	/* A fault (si_code > 0, from the kernel) happens again when we return;
	 * a signal that was sent (kill, raise, abort) has to be sent again. */
	if (si->si_code <= 0 || signo == SIGABRT)
		raise(signo);
}

/* The blackbox is a ring buffer in two files in /dev/shm that libqb
 * removes only in qb_log_fini: a daemon killed with SIGKILL (or dying of a
 * signal) would leave 1 MiB of shared memory behind each time.  Nothing
 * opens them again (the dump is written from the mapping), so they go at
 * once.  libqb 2.0 names them qb-IDENT-PID-blackbox-{header,data}. */
static void unlink_shm_files(const char *ident)
{
	static const char *const part[] = { "header", "data" };
	char path[PATH_MAX];

	for (size_t i = 0; i < ARRAY_SIZE(part); i++) {
		int n = snprintf(path, sizeof(path), "/dev/shm/qb-%s-%d-blackbox-%s", ident,
				 (int)getpid(), part[i]);
		if (n > 0 && (size_t)n < sizeof(path))
			unlink(path);
	}
}

static void fatal_install(void)
{
	struct sigaction sa = { .sa_sigaction = on_fatal };
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };

	if (sigaltstack(&ss, NULL) == 0)
		sa.sa_flags |= SA_ONSTACK;
	sa.sa_flags |= SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ARRAY_SIZE(fatal_signals); i++)
		sigaction(fatal_signals[i], &sa, &fatal_old[i]);
	fatal_installed = true;
}

static void fatal_uninstall(void)
{
	if (!fatal_installed)
		return;
	for (size_t i = 0; i < ARRAY_SIZE(fatal_signals); i++)
		sigaction(fatal_signals[i], &fatal_old[i], NULL);
	fatal_installed = false;
}

int qblog_init(const char *ident, bool to_stderr, int level, const char *bb_path)
{
	int r;

	if (inited)
		return -EALREADY;
	if (level < LOG_EMERG)
		level = LOG_EMERG;
	if (level > LOG_DEBUG)
		level = LOG_DEBUG;

	/* Opens syslog (LOG_PID) with a "*" filter at level. */
	qb_log_init(ident, LOG_DAEMON, (uint8_t)level);
	inited = true;
	qb_log_format_set(QB_LOG_SYSLOG, "%b");

	stderr_on = to_stderr;
	if (to_stderr) {
		qb_log_filter_ctl(QB_LOG_STDERR, QB_LOG_FILTER_ADD, QB_LOG_FILTER_FILE, "*",
				  (uint8_t)level);
		qb_log_format_set(QB_LOG_STDERR, "%T %N[%P] %p: %b");
		qb_log_ctl(QB_LOG_STDERR, QB_LOG_CONF_ENABLED, QB_TRUE);
	}

	qb_log_filter_ctl(QB_LOG_BLACKBOX, QB_LOG_FILTER_ADD, QB_LOG_FILTER_FILE, "*", LOG_DEBUG);
	qb_log_ctl(QB_LOG_BLACKBOX, QB_LOG_CONF_SIZE, BLACKBOX_SIZE);
	r = qb_log_ctl(QB_LOG_BLACKBOX, QB_LOG_CONF_ENABLED, QB_TRUE);

	rlog_set_level(LOG_DEBUG);
	rlog_set_sink(sink, NULL);

	if (r < 0) {
		log_warn_errno(-r, "cannot set up the blackbox");
		return r;
	}
	unlink_shm_files(ident);
	if (bb_path && *bb_path) {
		if (strlen(bb_path) >= sizeof(blackbox_path)) {
			log_warn("blackbox file name too long: %s", bb_path);
			return -ENAMETOOLONG;
		}
		strcpy(blackbox_path, bb_path);
		fatal_install();
	}
	return 0;
}

void qblog_set_level(int level)
{
	static const int32_t targets[] = { QB_LOG_SYSLOG, QB_LOG_STDERR };

	if (!inited)
		return;
	level = level < LOG_EMERG ? LOG_EMERG : level > LOG_DEBUG ? LOG_DEBUG : level;
	pthread_mutex_lock(&log_lock);
	for (size_t i = 0; i < ARRAY_SIZE(targets); i++) {
		if (targets[i] == QB_LOG_STDERR && !stderr_on)
			continue;
		qb_log_filter_ctl(targets[i], QB_LOG_FILTER_CLEAR_ALL, QB_LOG_FILTER_FILE, "*", 0);
		qb_log_filter_ctl(targets[i], QB_LOG_FILTER_ADD, QB_LOG_FILTER_FILE, "*",
				  (uint8_t)level);
	}
	pthread_mutex_unlock(&log_lock);
}

void qblog_fini(void)
{
	if (!inited)
		return;
	fatal_uninstall();
	rlog_set_sink(NULL, NULL);
	pthread_mutex_lock(&log_lock);
	qb_log_fini();
	pthread_mutex_unlock(&log_lock);
	blackbox_path[0] = '\0';
	inited = false;
	stderr_on = false;
}
