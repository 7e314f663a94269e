/* replay.c: main() for the fuzz targets without libFuzzer (gcc, make
 * check): feeds every file named on the command line, or every file of
 * $top_srcdir/tests/fuzz/corpus/NAME/ (NAME from the program's name,
 * replay-NAME) when none is named, to LLVMFuzzerTestOneInput() once.  A
 * crash or a sanitizer report fails the test; so do an empty corpus and an
 * unreadable file. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	do {
		if (len == cap) {
			uint8_t *nb = realloc(buf, cap = cap ? 2 * cap : 4096);
			if (!nb) {
				fclose(f);
				free(buf);
				return -1;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	/* A copy of exactly len bytes: ASan sees a read past the input. */
	{
		uint8_t *exact = malloc(len ? len : 1);
		if (!exact) {
			free(buf);
			return -1;
		}
		if (len)
			memcpy(exact, buf, len);
		free(buf);
		LLVMFuzzerTestOneInput(exact, len);
		free(exact);
	}
	return 0;
}

static int run_dir(const char *dir, unsigned *count)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096];
	int bad = 0;

	if (!d) {
		fprintf(stderr, "%s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (run_file(path) < 0)
			bad = -1;
		else
			(*count)++;
	}
	closedir(d);
	return bad;
}

int main(int argc, char **argv)
{
	unsigned count = 0;
	int bad = 0;
	struct stat st;

	if (argc < 2) {
		const char *top = getenv("top_srcdir");
		const char *name = strrchr(argv[0], '/');
		char dir[4096];

		name = name ? name + 1 : argv[0];
		if (!strncmp(name, "lt-", 3))
			name += 3;
		if (strncmp(name, "replay-", 7)) {
			fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
			return 2;
		}
		snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", top ? top : ".", name + 7);
		bad = run_dir(dir, &count);
	}
	for (int i = 1; i < argc; i++) {
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
			bad |= run_dir(argv[i], &count);
		else if (run_file(argv[i]) == 0)
			count++;
		else
			bad = -1;
	}
	printf("%s: %u inputs replayed\n", argv[0], count);
	return bad || count == 0 ? 1 : 0;
}
