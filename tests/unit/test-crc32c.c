/* test-crc32c.c: the hardware CRC32C (SSE4.2) and the portable one agree:
 * known vectors, then random data at every length 0..4200 and some large
 * ones, from every start alignment 0..15, continuing from random CRCs
 * (crc32c(crc, ...) is how frames are summed in two pieces), and crc32c()
 * itself picks one of them.  Without SSE4.2 the hardware half is skipped
 * (said on stdout) and the portable code is still checked. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "unit.h"

static const struct {
	const char *in;
	uint32_t crc;
} vectors[] = {
	{ "", 0x00000000u },
	{ "a", 0xc1d04330u },
	{ "123456789", 0xe3069283u },
	{ "The quick brown fox jumps over the lazy dog", 0x22620404u },
};

/* xorshift: the same bytes on every run. */
static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static void check_one(const uint8_t *p, size_t len, uint32_t seed, bool hw)
{
	uint32_t sw = crc32c_sw(seed, p, len);

	CHECK_MSG(crc32c(seed, p, len) == sw, "crc32c() differs, len %zu", len);
	if (hw)
		CHECK_MSG(crc32c_hw(seed, p, len) == sw,
			  "hw %08x != sw %08x, len %zu, align %u, seed %08x",
			  crc32c_hw(seed, p, len), sw, len, (unsigned)((uintptr_t)p & 15), seed);
	/* In two pieces, split anywhere: what a frame's header + payload do. */
	if (len) {
		size_t cut = (size_t)(rnd() % len);
		uint32_t two = crc32c(crc32c(seed, p, cut), p + cut, len - cut);
		CHECK_MSG(two == sw, "split at %zu of %zu", cut, len);
	}
}

int main(void)
{
	enum { BIG = 5u << 20 };
	bool hw = crc32c_hw_ok();
	uint8_t *buf = malloc(BIG + 16);
	size_t big[] = { 8191, 65536, 65537, 1u << 20, (4u << 20) + 3, BIG };

	if (!buf)
		return 99;
	printf("test-crc32c: SSE4.2 crc32 %s\n", hw ? "present: hardware vs portable" :
	       "absent: portable code only");
	for (size_t i = 0; i < BIG + 16; i++)
		buf[i] = (uint8_t)rnd();
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		size_t n = strlen(vectors[i].in);
		CHECK(crc32c_sw(0, vectors[i].in, n) == vectors[i].crc);
		CHECK(crc32c(0, vectors[i].in, n) == vectors[i].crc);
		if (hw)
			CHECK(crc32c_hw(0, vectors[i].in, n) == vectors[i].crc);
	}
	for (size_t len = 0; len <= 4200; len++)
		for (unsigned a = 0; a < 16; a++)
			check_one(buf + a, len, (a & 1) ? (uint32_t)rnd() : 0, hw);
	for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++)
		for (unsigned a = 0; a < 16; a += 5)
			check_one(buf + a, big[i], (uint32_t)rnd(), hw);
	free(buf);
	return unit_done("test-crc32c");
}
