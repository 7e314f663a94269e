/* fuzz_util.c: helpers for the fuzz targets that need the file system. */
#include "config.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz.h"

static char tmpdir[64];

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	remove(path);
	return 0;
}

static void remove_tmpdir(void)
{
	nftw(tmpdir, remove_one, 8, FTW_DEPTH | FTW_PHYS);
}

const char *fuzz_tmpdir(void)
{
	/* tmpfs first: meta.c and voldb.c sync what they write, and an fsync
	 * there costs nothing. */
	static const char *const bases[] = { "/dev/shm", "/tmp" };

	if (tmpdir[0])
		return tmpdir;
	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		snprintf(tmpdir, sizeof(tmpdir), "%s/replfuzz.XXXXXX", bases[i]);
		if (mkdtemp(tmpdir)) {
			atexit(remove_tmpdir);
			return tmpdir;
		}
	}
	perror("mkdtemp");
	abort();
}
