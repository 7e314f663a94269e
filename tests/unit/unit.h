/* unit.h: the smallest test harness that reports like automake expects.
 * CHECK() records a failure and goes on; the program exits 1 if any failed. */
#ifndef REPL_TESTS_UNIT_H
#define REPL_TESTS_UNIT_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int unit_failures;
static int unit_checks;

#define CHECK(cond) do { \
	unit_checks++; \
	if (!(cond)) { \
		unit_failures++; \
		fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
	} \
} while (0)

#define CHECK_MSG(cond, ...) do { \
	unit_checks++; \
	if (!(cond)) { \
		unit_failures++; \
		fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__); \
		fputc('\n', stderr); \
	} \
} while (0)

/* How many entries (not . and ..) directory dir holds; 0 if unreadable. */
static inline unsigned unit_dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static inline int unit_done(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, unit_checks, unit_failures);
	return unit_failures ? 1 : 0;
}

#endif
