/* crc32c.c: CRC32C in hardware where the CPU has it, slicing-by-8 where
 * not (see crc32c.h).  The choice is made at run time, not at build time,
 * so that one binary runs on any x86-64 and still uses SSE4.2 where it
 * exists; elsewhere (another architecture) only the portable code is
 * built.  The hardware path is one dependent chain of 8-byte crc32q
 * instructions: about 8 bytes per 3 cycles, several times slicing-by-8,
 * and enough to keep a 4 KiB write's checksum under a microsecond. */
#include "config.h"

#include <endian.h>
#include <string.h>

#include "crc32c.h"

/* ---- portable: slicing-by-8 over a table built on first use ------------- */

static uint32_t crc_table[8][256];
static int crc_ready;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^
					  crc_table[0][crc_table[t - 1][i] & 0xff];
	__atomic_store_n(&crc_ready, 1, __ATOMIC_RELEASE);
}

uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (!__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE))
		crc_init();
	crc = ~crc;
	while (len >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		v = le64toh(v) ^ crc;
		crc = crc_table[7][v & 0xff] ^ crc_table[6][(v >> 8) & 0xff] ^
		      crc_table[5][(v >> 16) & 0xff] ^ crc_table[4][(v >> 24) & 0xff] ^
		      crc_table[3][(v >> 32) & 0xff] ^ crc_table[2][(v >> 40) & 0xff] ^
		      crc_table[1][(v >> 48) & 0xff] ^ crc_table[0][v >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

/* ---- SSE4.2 -------------------------------------------------------------- */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

__attribute__((target("sse4.2")))
uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t c = ~crc;

	/* Byte steps up to 8-byte alignment: an unaligned crc32q is fine on
	 * every CPU that has it, but aligned loads never cross a line twice. */
	while (len && ((uintptr_t)p & 7)) {
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
		len--;
	}
	while (len >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return ~(uint32_t)c;
}

bool crc32c_hw_ok(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("sse4.2");
}

#else

uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	return crc32c_sw(crc, buf, len);
}

bool crc32c_hw_ok(void) { return false; }

#endif

/* ---- the one everybody calls --------------------------------------------- */

/* 0: not decided yet, 1: portable, 2: hardware.  A race between two first
 * callers only decides twice, the same way. */
static int crc_impl;

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	int impl = __atomic_load_n(&crc_impl, __ATOMIC_RELAXED);

	if (!impl) {
		impl = crc32c_hw_ok() ? 2 : 1;
		__atomic_store_n(&crc_impl, impl, __ATOMIC_RELAXED);
	}
	return impl == 2 ? crc32c_hw(crc, buf, len) : crc32c_sw(crc, buf, len);
}
