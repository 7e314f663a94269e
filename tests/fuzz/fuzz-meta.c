/* fuzz-meta.c: meta_open() (replication/meta.c) on any file: a replica's
 * metadata may be damaged, truncated, or not metadata at all, and opening
 * it must refuse (-EUCLEAN and friends), never crash or take a superblock
 * that breaks meta.h's rules.  The input is the file; it is opened twice:
 * as it is, and with both slots' checksums made right, so that the fuzzer
 * gets past them to the fields. */
#include "config.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "meta.h"
#include "util.h"

#define SLOT_CRC (META_SLOT_SIZE - 4)	/* meta_format.c: the CRC ends the slot */

static void open_file(const char *path, const uint8_t *data, size_t size)
{
	const struct meta_super *sb;
	struct meta *m = NULL;
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
	if (meta_open(path, &m) != 0) {
		FUZZ_ASSERT(m == NULL);
		return;
	}
	sb = meta_get(m);
	FUZZ_ASSERT(sb->size > 0 && sb->size % 512 == 0);
	FUZZ_ASSERT(sb->region_shift >= META_REGION_SHIFT_MIN &&
		    sb->region_shift <= META_REGION_SHIFT_MAX);
	FUZZ_ASSERT((sb->flags & ~META_F_ALL) == 0);
	for (unsigned i = 0; i < META_MAX_PEERS; i++)
		FUZZ_ASSERT(strlen(sb->peers[i].node) <= META_NODE_MAX);
	(void)meta_bits_count(m, 0);
	meta_close(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[256];
	uint8_t *fixed;

	fuzz_quiet();
	if (size > (1u << 20))
		return 0;
	snprintf(path, sizeof(path), "%s/vol.meta", fuzz_tmpdir());
	open_file(path, data, size);
	if (size < META_SLOT_SIZE || !(fixed = malloc(size)))
		return 0;
	memcpy(fixed, data, size);
	for (size_t s = 0; s < 2 && (s + 1) * META_SLOT_SIZE <= size; s++) {
		uint8_t *slot = fixed + s * META_SLOT_SIZE;
		uint32_t crc = htole32(crc32c(0, slot, SLOT_CRC));

		memcpy(slot + SLOT_CRC, &crc, 4);
	}
	open_file(path, fixed, size);
	free(fixed);
	return 0;
}
