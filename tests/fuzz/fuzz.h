/* fuzz.h: what every fuzz target shares.  A target is one function,
 * LLVMFuzzerTestOneInput(), built twice: with clang's libFuzzer (make fuzz,
 * configure --enable-fuzz; tests/fuzz.sh runs them) and with the plain
 * driver replay.c (make check replays the corpus, tests/fuzz/corpus/NAME/,
 * in the normal and the sanitizer builds).  A target aborts (FUZZ_ASSERT)
 * when a parser breaks a promise its header makes, not only on a crash. */
#ifndef REPL_TESTS_FUZZ_H
#define REPL_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: fuzz assertion failed: %s\n", __FILE__, __LINE__, #cond); \
		abort(); \
	} \
} while (0)

static void fuzz__sink(int level, const char *msg, void *data)
{
	(void)level;
	(void)msg;
	(void)data;
}

/* Every log message is formatted (a bad argument is found) and dropped:
 * printing them would be most of the time spent. */
static inline void fuzz_quiet(void)
{
	static int done;

	if (done)
		return;
	done = 1;
	rlog_set_sink(fuzz__sink, NULL);
	rlog_set_level(LOG_DEBUG);
}

/* A private directory for targets that need files, made once per process
 * and removed at exit. */
const char *fuzz_tmpdir(void);

#endif
