/* util.h: small helpers shared by the engine and the agent: size parsing,
 * whole-buffer I/O, CRC32C, time, byte order.  No global state but the
 * simulator's clock and random source (util_set_sources). */
#ifndef REPL_COMMON_UTIL_H
#define REPL_COMMON_UTIL_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "crc32c.h"	/* crc32c(): once declared here, most callers still include util.h */

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#define UNUSED __attribute__((unused))

/* "10G", "512M", "4096", "1.5T" is not accepted (integers only).
 * Returns 0, or -EINVAL for garbage, -ERANGE on overflow. */
int parse_size(const char *s, uint64_t *out);
/* Decimal unsigned integer in [min, max]; 0 or -EINVAL / -ERANGE. */
int parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* A UUID as text, "8-4-4-4-12" hex digits (either case), exactly 36
 * characters, into 16 bytes: 0 or -EINVAL. */
int parse_uuid(const char *s, uint8_t out[16]);
/* Are all len bytes zero (true for len 0)? */
bool all_zero(const void *buf, size_t len);
/* Formats bytes for humans ("1.5 GiB"); returns buf. */
const char *format_size(uint64_t bytes, char *buf, size_t len);

/* Whole-buffer positional and stream I/O: 0 or -errno (-EIO on a short
 * read at end of file, -EPIPE on EOF for full_read). */
int full_pread(int fd, void *buf, size_t len, off_t off);
int full_pwrite(int fd, const void *buf, size_t len, off_t off);
int full_read(int fd, void *buf, size_t len);
int full_write(int fd, const void *buf, size_t len);

/* Small state files, relative to a directory fd.  file_replace_at: name
 * replaced whole by buf: written to tmp (0600, not following a link),
 * fsync'ed, renamed over name, the directory fsync'ed, so that a crash
 * leaves the old file or the new one; tmp removed on failure.  0 or
 * -errno. */
int file_replace_at(int dirfd, const char *name, const char *tmp, const void *buf, size_t len);
/* file_read_text_at: a regular file (not a link) of fewer than cap bytes,
 * read whole into buf, NUL-terminated and with no NUL inside.  0, or
 * -errno with *why a sentence for people (strerror, "not a regular file",
 * "file too large", "NUL byte in file"). */
int file_read_text_at(int dirfd, const char *name, char *buf, size_t cap, const char **why);


uint64_t now_mono_ns(void);
uint64_t now_mono_ms(void);

/* Fills buf with random bytes from getrandom(); 0 or -errno. */
int random_bytes(void *buf, size_t len);
/* The engine's simulator (tests/sim, through repl_sys_set) replaces the
 * monotonic clock and the random source of the whole process; NULL: the
 * real ones. */
void util_set_sources(uint64_t (*now_ns)(void), int (*random)(void *buf, size_t len));
/* Formats a 16-byte UUID as 36 characters plus NUL. */
void uuid_format(const uint8_t uuid[16], char out[37]);

int fd_set_nonblock(int fd);
int fd_set_cloexec(int fd);

#endif
