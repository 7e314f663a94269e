/* fuzz-voldb.c: the volume database's file format (agent/voldb.c): a
 * node reads DIR/NAME.vol at start, and a damaged file must be skipped,
 * never crash the daemon.  The input is the text of vol0.vol: parsed by
 * voldef_parse() (a definition it accepts must format and parse back to
 * the same definition) and loaded from a directory by voldb_load(). */
#include "config.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "clmsg.h"
#include "fuzz.h"
#include "voldb.h"

static void parse(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), err[256], buf[VOLDB_FILE_MAX + 1];
	struct voldef v, again;
	struct voldb *db;
	int n;

	if (!text)
		return;
	memcpy(text, data, size);
	text[size] = '\0';
	if (voldef_parse(text, &v, err, sizeof(err)) == 0) {
		FUZZ_ASSERT(voldef_check(&v, NULL) == 0);
		n = voldef_format(&v, buf, sizeof(buf));
		FUZZ_ASSERT(n > 0 && (size_t)n < sizeof(buf));
		FUZZ_ASSERT(voldef_parse(buf, &again, err, sizeof(err)) == 0);
		FUZZ_ASSERT(voldef_cmp(&v, &again) == 0);
		if (voldb_new(NULL, &db) == 0) {
			FUZZ_ASSERT(voldb_merge(db, &v) == VOLDB_NEW);
			FUZZ_ASSERT(voldb_merge(db, &again) == VOLDB_SAME);
			FUZZ_ASSERT(voldb_find(db, v.name) != NULL);
			voldb_free(db);
		}
	} else {
		FUZZ_ASSERT(memchr(err, '\0', sizeof(err)) && err[0]);
	}
	free(text);
}

static void load(const uint8_t *data, size_t size)
{
	char path[512];
	struct voldb *db;
	int fd, r;

	snprintf(path, sizeof(path), "%s/db", fuzz_tmpdir());
	if (voldb_new(path, &db) < 0)
		abort();
	snprintf(path, sizeof(path), "%s/db/vol0.vol", fuzz_tmpdir());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
	r = voldb_load(db);
	FUZZ_ASSERT(r == 0 || r == 1);
	FUZZ_ASSERT(voldb_count(db) == (r == 0 ? 1u : 0u));
	voldb_free(db);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_quiet();
	if (size > 2 * VOLDB_FILE_MAX)
		return 0;
	parse(data, size);
	load(data, size);
	return 0;
}
