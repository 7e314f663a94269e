/* meta_int.h: what the files of the replica metadata (meta.c, meta_format.c,
 * meta_bitmap.c, meta_io.c, meta_grow.c) share and nothing else includes:
 * struct meta, the bitmap page layout, and their cross-file functions.
 * Layers, lowest first, each calling only those below it: meta_format.c
 * (encoding, no I/O), meta_bitmap.c (the bits in memory), meta_io.c (the
 * open file: allocation, locking, syncing, bitmap pages out, flush jobs),
 * meta_grow.c (replacing the file whole), meta.c (create, open, update,
 * close).  Thread safety and errors as meta.h says. */
#ifndef REPL_META_INT_H
#define REPL_META_INT_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "meta.h"

#define META_VERSION 3u	/* 2: the write-intent bitmap; 3: checked bitmap pages */
#define META_VERSION_BARE 2u	/* the last version without page checks */

enum { PG_BITS = META_BITMAP_PAGE - 8, PG_NUM = PG_BITS, PG_CRC = META_BITMAP_PAGE - 4 };
#define WORDS_PER_PAGE (PG_BITS / 8)
/* Pages encoded at a time by a flush, a create or a grow. */
#define PAGES_PER_WRITE 64

/* Per-page bitmap state: a page with set bits must reach the disk before
 * the writes they cover are acknowledged; cleared bits may wait. */
enum { PAGE_CLEAN = 0, PAGE_CLEARED, PAGE_SET };

struct meta {
	int fd;
	int broken;			/* -EIO after a failed fdatasync */
	char *path;
	struct meta_super sb;
	unsigned cur_slot;		/* slot holding sb */
	uint64_t regions;
	uint64_t stride;		/* bitmap bytes per peer, on disk */
	size_t npages;			/* pages per peer bitmap */
	uint64_t bad_pages;		/* pages that failed their check at open */
	uint64_t *bm[META_BITMAPS];	/* little-endian words */
	uint8_t *pstate[META_BITMAPS];
	/* Pages with set bits that the running flush job writes: set in
	 * memory but not durable until that job ends. */
	uint8_t *pflush[META_BITMAPS];
	size_t pages_set;		/* pages in PAGE_SET */
	size_t pages_dirty;		/* pages not PAGE_CLEAN */
	struct meta_flush_job *job;	/* begun and not yet ended */
	uint64_t unvoided;		/* meta_unvoided() */
};

/* ---- little-endian field access ----------------------------------- */

static inline void put16(uint8_t *p, uint16_t v) { v = htole16(v); memcpy(p, &v, 2); }
static inline void put32(uint8_t *p, uint32_t v) { v = htole32(v); memcpy(p, &v, 4); }
static inline void put64(uint8_t *p, uint64_t v) { v = htole64(v); memcpy(p, &v, 8); }
static inline uint16_t get16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return le16toh(v); }
static inline uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return le32toh(v); }
static inline uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return le64toh(v); }

/* ---- meta_format.c: geometry and encoding, no I/O ------------------------ */

uint64_t repl__meta_regions_of(uint64_t size, uint32_t shift);
/* Bitmap pages per peer (version 3), and their bytes on disk. */
size_t repl__meta_pages_of(uint64_t regions);
uint64_t repl__meta_stride_of(uint64_t regions);
/* Version 2: bare words, page aligned. */
uint64_t repl__meta_stride_bare(uint64_t regions);
/* NULL, or what is wrong with sb's contents. */
const char *repl__meta_super_invalid(const struct meta_super *sb);
/* sb into one META_SLOT_SIZE slot, current format version, with its CRC. */
void repl__meta_slot_encode(const struct meta_super *sb, uint8_t *s);
/* The valid slot with the highest seq out of the first 8 KiB of path (in
 * buf): 0, -EUCLEAN (neither is valid) or -EPROTONOSUPPORT; logs why. */
int repl__meta_pick_slot(const char *path, const uint8_t *buf, uint64_t void_seq,
			 struct meta_super *sb, unsigned *slot, unsigned *version);
uint64_t repl__meta_file_size_for(const struct meta_super *sb, unsigned version);
uint64_t repl__meta_file_size_of(const struct meta *m);
off_t repl__meta_page_offset(const struct meta *m, unsigned bm, size_t page);
uint32_t repl__meta_page_number(const struct meta *m, unsigned bm, size_t page);
/* Pages [first, end) of bitmap bm, encoded, into buf. */
void repl__meta_pages_encode(const struct meta *m, unsigned bm, size_t first, size_t end,
			     uint8_t *buf);

/* ---- meta_bitmap.c: the bits in memory ------------------------------------ */

/* Sets or clears regions [first, end); returns how many bits changed. */
uint64_t repl__meta_bits_change(struct meta *m, unsigned peer, uint64_t first,
				uint64_t end, bool set);

/* ---- meta_io.c: the open file ------------------------------------------- */

void repl__meta_free(struct meta *m);
/* Allocates a struct meta for sb's geometry with clear bitmaps; takes fd. */
int repl__meta_alloc(const char *path, int fd, const struct meta_super *sb,
		     struct meta **out);
/* flock(LOCK_EX | LOCK_NB): 0, -EBUSY (held elsewhere) or -errno. */
int repl__meta_lock_fd(const char *path, int fd);
/* fdatasync of m's file; a failure breaks m (-EIO from then on). */
int repl__meta_sync_fd(struct meta *m, const char *what);
int repl__meta_fsync_dir_of(const char *path);
/* Every page of every bitmap: a new file, or one that replaces another. */
int repl__meta_bitmaps_write_all(const struct meta *m, int fd);

/* ---- meta_grow.c: replacing the file whole -------------------------------- */

/* A version 2 file, read into memory, becomes a version 3 one. */
int repl__meta_upgrade(struct meta *m);
/* Removes PATH.grow left by a grow that a crash interrupted. */
void repl__meta_remove_stale_grow(const char *path);

#endif
