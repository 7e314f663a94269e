/* test-util.c: size parsing and CRC32C from tables. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "unit.h"
#include "util.h"

static const struct {
	const char *in;
	int ret;
	uint64_t val;
} sizes[] = {
	{ "0", 0, 0 },
	{ "512", 0, 512 },
	{ "4K", 0, 4096 },
	{ "4k", 0, 4096 },
	{ "64M", 0, 64ull << 20 },
	{ "10G", 0, 10ull << 30 },
	{ "10GiB", 0, 10ull << 30 },
	{ "2T", 0, 2ull << 40 },
	{ "1GB", 0, 1ull << 30 },
	{ "", -EINVAL, 0 },
	{ "-1", -EINVAL, 0 },
	{ " 5", -EINVAL, 0 },
	{ "5 ", -EINVAL, 0 },
	{ "1.5G", -EINVAL, 0 },
	{ "5X", -EINVAL, 0 },
	{ "G", -EINVAL, 0 },
	{ "99999999999999999999", -ERANGE, 0 },
	{ "99999999999T", -ERANGE, 0 },
};

static const struct {
	const char *in;
	uint32_t crc;
} crcs[] = {
	{ "", 0x00000000u },
	{ "a", 0xc1d04330u },
	{ "123456789", 0xe3069283u },
	{ "The quick brown fox jumps over the lazy dog", 0x22620404u },
};

int main(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		uint64_t v = 0;
		int r = parse_size(sizes[i].in, &v);
		CHECK_MSG(r == sizes[i].ret, "parse_size(\"%s\") = %d", sizes[i].in, r);
		if (r == 0)
			CHECK_MSG(v == sizes[i].val, "parse_size(\"%s\") value", sizes[i].in);
	}
	for (size_t i = 0; i < ARRAY_SIZE(crcs); i++) {
		uint32_t c = crc32c(0, crcs[i].in, strlen(crcs[i].in));
		CHECK_MSG(c == crcs[i].crc, "crc32c(\"%s\") = %08x", crcs[i].in, c);
	}
	/* Incremental equals one-shot, across the 8-byte fast path. */
	{
		const char *s = "The quick brown fox jumps over the lazy dog";
		uint32_t c = crc32c(0, s, 13);
		c = crc32c(c, s + 13, strlen(s) - 13);
		CHECK(c == 0x22620404u);
	}
	return unit_done("test-util");
}
