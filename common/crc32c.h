/* crc32c.h: CRC32C (Castagnoli), the checksum of the replication wire
 * frames, the metadata superblock and pages, and online verify.  crc32c()
 * uses the SSE4.2 crc32 instruction when the CPU has it (decided once, at
 * the first call) and the portable slicing-by-8 code otherwise; both give
 * the same result, which tests/unit/test-crc32c checks.  Not a MAC: it
 * catches corruption, not forgery. */
#ifndef REPL_COMMON_CRC32C_H
#define REPL_COMMON_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* CRC32C of buf, continuing from crc (0 to start): crc32c(crc32c(0, a),
 * b) == crc32c(0, a || b). */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

/* The two implementations, for the test and the benchmark: the portable
 * one always works; crc32c_hw() may only be called when crc32c_hw_ok(). */
uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len);
uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len);
bool crc32c_hw_ok(void);

#endif
