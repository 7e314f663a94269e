/* meta-fixture.h: what test-meta.c and test-meta-bitmap.c share: a private
 * directory under /tmp, a standard superblock, raw access to the file
 * (seq of a slot, corruption, a slot or bitmap page patched with a valid
 * CRC).  Include after unit.h (CHECK). */
#ifndef REPL_TESTS_META_FIXTURE_H
#define REPL_TESTS_META_FIXTURE_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "meta.h"
#include "unit.h"
#include "util.h"

#define KiB 1024u

static char dir[] = "/tmp/test-meta.XXXXXX";
static char path[256];

/* ---- helpers ----------------------------------------------------------- */

static inline void make_path(const char *name)
{
	snprintf(path, sizeof(path), "%s/%s", dir, name);
}

static inline void init_super(struct meta_super *sb, uint64_t size, uint32_t shift)
{
	memset(sb, 0, sizeof(*sb));
	CHECK(meta_generate_uuid(sb->uuid) == 0);
	sb->size = size;
	sb->region_shift = shift;
	sb->role = META_PRIMARY;
	sb->disk_state = META_UPTODATE;
	sb->flags = META_F_CLEAN | META_F_FULL_SYNC | META_F_POWER_LOST;
	for (unsigned i = 0; i < META_BOOT_ID_LEN; i++)
		sb->boot_id[i] = (uint8_t)(0xb0 + i);
	sb->gen_current = 0x1111222233334444ull;
	sb->gen_bitmap = 0x5555666677778888ull;
	sb->gen_history[0] = 0x99990000aaaabbbbull;
	sb->gen_history[1] = 0xccccddddeeeeffffull;
	for (unsigned i = 2; i < META_GEN_HISTORY; i++)
		sb->gen_history[i] = 0x4242000000000000ull + i;
	strcpy(sb->peers[0].node, "node-b.example.com");
	sb->peers[0].disk_state = META_OUTDATED;
	sb->peers[0].bitmap_gen = 0x0123456789abcdefull;
	memset(sb->peers[1].node, 'x', META_NODE_MAX);	/* longest name */
	sb->peers[1].disk_state = META_INCONSISTENT;
	sb->peers[1].bitmap_gen = 7;
	sb->peers[1].flags = META_PF_BLIND;
	sb->seq = 999;	/* must be ignored */
}

static inline bool super_same(const struct meta_super *a, const struct meta_super *b)
{
	if (memcmp(a->uuid, b->uuid, 16) || a->size != b->size ||
	    a->region_shift != b->region_shift || a->role != b->role ||
	    a->disk_state != b->disk_state || a->flags != b->flags ||
	    a->gen_current != b->gen_current || a->gen_bitmap != b->gen_bitmap ||
	    memcmp(a->gen_history, b->gen_history, sizeof(a->gen_history)) ||
	    memcmp(a->boot_id, b->boot_id, sizeof(a->boot_id)))
		return false;
	for (unsigned i = 0; i < META_MAX_PEERS; i++)
		if (strcmp(a->peers[i].node, b->peers[i].node) ||
		    a->peers[i].disk_state != b->peers[i].disk_state ||
		    a->peers[i].flags != b->peers[i].flags ||
		    a->peers[i].bitmap_gen != b->peers[i].bitmap_gen)
			return false;
	return true;
}

static inline unsigned dir_entries(void)
{
	return unit_dir_entries(dir);
}

static inline void clean_dir(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[512];

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(d);
}

static inline int raw_rw(bool write, void *buf, size_t len, off_t off)
{
	int fd = open(path, O_RDWR);
	int err;

	if (fd < 0)
		return -errno;
	err = write ? full_pwrite(fd, buf, len, off) : full_pread(fd, buf, len, off);
	close(fd);
	return err;
}

static inline uint64_t raw_seq(unsigned slot)
{
	uint64_t v = 0;

	CHECK(raw_rw(false, &v, 8, (off_t)slot * META_SLOT_SIZE + 16) == 0);
	return le64toh(v);
}

/* Slot holding the highest seq (the current superblock). */
static inline unsigned newest_slot(void)
{
	return raw_seq(1) > raw_seq(0);
}

static inline void corrupt(off_t off, size_t len)
{
	uint8_t *junk = malloc(len);

	CHECK(junk && random_bytes(junk, len) == 0);
	CHECK(raw_rw(true, junk, len, off) == 0);
	free(junk);
}

/* Edits a slot's field and recomputes its CRC, as a buggy writer would. */
static inline void patch_slot(unsigned slot, size_t off, const void *val,
			      size_t len)
{
	uint8_t s[META_SLOT_SIZE];
	uint32_t crc;

	CHECK(raw_rw(false, s, sizeof(s), (off_t)slot * META_SLOT_SIZE) == 0);
	memcpy(s + off, val, len);
	crc = htole32(crc32c(0, s, META_SLOT_SIZE - 4));
	memcpy(s + META_SLOT_SIZE - 4, &crc, 4);
	CHECK(raw_rw(true, s, sizeof(s), (off_t)slot * META_SLOT_SIZE) == 0);
}

/* Bitmap page layout (meta_format.c): 511 words, page number, CRC32C. */
#define PAGE_WORDS 511u
#define PAGE_NUM_OFF 4088
#define PAGE_CRC_OFF 4092

/* Edits bytes of bitmap page `page` (of the file, bitmaps one after the
 * other) and, with fix_crc, recomputes its CRC. */
static inline void patch_page(size_t page, size_t off, const void *val, size_t len,
			      bool fix_crc)
{
	uint8_t pg[4096];
	uint32_t crc;
	off_t at = 8192 + (off_t)page * 4096;

	CHECK(raw_rw(false, pg, sizeof(pg), at) == 0);
	memcpy(pg + off, val, len);
	if (fix_crc) {
		crc = htole32(crc32c(0, pg, PAGE_CRC_OFF));
		memcpy(pg + PAGE_CRC_OFF, &crc, 4);
	}
	CHECK(raw_rw(true, pg, sizeof(pg), at) == 0);
}

static inline off_t file_size(void)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : -1;
}

static inline int open_expect_fail(void)
{
	struct meta *m = (struct meta *)&m;	/* must be reset to NULL */
	int err = meta_open(path, &m);

	CHECK(m == NULL);
	if (!err)
		meta_close(m);
	return err;
}

/* Closes m and opens the file again: what a restart reads.  NULL (and a
 * failed check) when it does not open. */
static inline struct meta *reopen(struct meta *m)
{
	meta_close(m);
	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	return m;
}

static inline struct meta *create_std(const char *name, struct meta_super *sb)
{
	struct meta *m = NULL;

	make_path(name);
	init_super(sb, 10 * 64 * KiB + 4 * KiB, 16);
	CHECK(meta_create(path, sb, &m) == 0);
	CHECK(m != NULL);
	return m;
}

#endif
