/* test-meta.c: unit tests of the replica metadata file (meta.c): creation,
 * roundtrips, crash safety against torn or corrupted superblock slots,
 * refusal of damaged files, the dirty bitmaps against a simple model,
 * checked bitmap pages (a damaged one dirties its range, no more), the
 * upgrade of a format 2 file, and growing: bits kept, new bits clear, crash
 * safety of the replaced file.
 * Works in a private directory under /tmp; it does not test the engine. */
#include "config.h"

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
#include "sys.h"
#include "unit.h"
#include "util.h"

#define KiB 1024u

static char dir[] = "/tmp/test-meta.XXXXXX";
static char path[256];

/* ---- helpers ----------------------------------------------------------- */

static void make_path(const char *name)
{
	snprintf(path, sizeof(path), "%s/%s", dir, name);
}

static void init_super(struct meta_super *sb, uint64_t size, uint32_t shift)
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

static bool super_same(const struct meta_super *a, const struct meta_super *b)
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

static unsigned dir_entries(void)
{
	return unit_dir_entries(dir);
}

static void clean_dir(void)
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

static int raw_rw(bool write, void *buf, size_t len, off_t off)
{
	int fd = open(path, O_RDWR);
	int err;

	if (fd < 0)
		return -errno;
	err = write ? full_pwrite(fd, buf, len, off) : full_pread(fd, buf, len, off);
	close(fd);
	return err;
}

static uint64_t raw_seq(unsigned slot)
{
	uint64_t v = 0;

	CHECK(raw_rw(false, &v, 8, (off_t)slot * META_SLOT_SIZE + 16) == 0);
	return le64toh(v);
}

/* Slot holding the highest seq (the current superblock). */
static unsigned newest_slot(void)
{
	return raw_seq(1) > raw_seq(0);
}

static void corrupt(off_t off, size_t len)
{
	uint8_t *junk = malloc(len);

	CHECK(junk && random_bytes(junk, len) == 0);
	CHECK(raw_rw(true, junk, len, off) == 0);
	free(junk);
}

/* Edits a slot's field and recomputes its CRC, as a buggy writer would. */
static void patch_slot(unsigned slot, size_t off, const void *val, size_t len)
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
static void patch_page(size_t page, size_t off, const void *val, size_t len, bool fix_crc)
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

static off_t file_size(void)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : -1;
}

static int open_expect_fail(void)
{
	struct meta *m = (struct meta *)&m;	/* must be reset to NULL */
	int err = meta_open(path, &m);

	CHECK(m == NULL);
	if (!err)
		meta_close(m);
	return err;
}

static struct meta *create_std(const char *name, struct meta_super *sb)
{
	struct meta *m = NULL;

	make_path(name);
	init_super(sb, 10 * 64 * KiB + 4 * KiB, 16);
	CHECK(meta_create(path, sb, &m) == 0);
	CHECK(m != NULL);
	return m;
}

/* ---- superblock ---------------------------------------------------------- */

static void test_roundtrip(void)
{
	struct meta_super sb;
	struct meta *m = create_std("roundtrip", &sb);

	if (!m)
		return;
	CHECK(super_same(meta_get(m), &sb));
	CHECK(meta_get(m)->seq == 1);
	CHECK(meta_regions(m) == 11);
	CHECK(meta_bits_count(m, 0) == 0 && meta_bits_count(m, 1) == 0);
	CHECK(!meta_bitmap_needs_flush(m));
	CHECK(dir_entries() == 1);	/* no temp file left behind */
	/* 2 slots + 3 bitmaps (2 peers, the write intent) of one page each. */
	CHECK(file_size() == 8192 + META_BITMAPS * 4096);
	meta_close(m);

	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (!m)
		return;
	CHECK(super_same(meta_get(m), &sb));
	CHECK(meta_get(m)->seq == 1);
	CHECK(strlen(meta_get(m)->peers[1].node) == META_NODE_MAX);
	CHECK(meta_regions(m) == 11);
	meta_close(m);
	meta_close(NULL);
}

/* A failed update that must not be taken back (meta_assume): the new
 * superblock is what the caller sees from then on, nothing more is
 * written (the metadata is broken), and the disk still holds what the last
 * good update wrote: a restart decides from that. */
static void test_assume(void)
{
	struct meta_super sb, blank;
	struct meta *m = create_std("assume", &sb);

	if (!m)
		return;
	sb.gen_current = meta_new_gen();
	CHECK(meta_update(m, &sb) == 0);
	blank = *meta_get(m);
	blank.gen_current = 0;
	memset(blank.gen_history, 0, sizeof(blank.gen_history));
	blank.disk_state = META_INCONSISTENT;
	blank.size += 512;		/* kept: it cannot change */
	meta_assume(m, &blank);
	CHECK(meta_get(m)->gen_current == 0 && meta_get(m)->disk_state == META_INCONSISTENT);
	CHECK(meta_get(m)->size == sb.size && meta_get(m)->region_shift == sb.region_shift);
	CHECK(meta_get(m)->seq == 3);
	CHECK(meta_broken(m) == -EIO);
	CHECK(meta_update(m, &sb) == -EIO);
	CHECK(meta_get(m)->gen_current == 0);
	meta_assume(m, &sb);		/* again: still broken, shows sb */
	CHECK(meta_get(m)->gen_current == sb.gen_current && meta_broken(m) == -EIO);
	meta_close(m);

	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (!m)
		return;
	CHECK(meta_get(m)->gen_current == sb.gen_current && meta_get(m)->seq == 2);
	CHECK(meta_broken(m) == 0);
	meta_close(m);
}

static void test_create_exists(void)
{
	struct meta_super sb, sb2;
	struct meta *m = create_std("exists", &sb), *m2 = (struct meta *)&m2;

	meta_close(m);
	init_super(&sb2, 1 << 20, 16);
	CHECK(meta_create(path, &sb2, &m2) == -EEXIST);
	CHECK(m2 == NULL);
	m = NULL;
	CHECK(meta_open(path, &m) == 0);	/* untouched */
	if (m)
		CHECK(super_same(meta_get(m), &sb));
	meta_close(m);

	make_path("exists-plain");
	CHECK(access(path, F_OK) != 0);
	CHECK(close(open(path, O_CREAT | O_WRONLY, 0600)) == 0);
	CHECK(meta_create(path, &sb2, &m2) == -EEXIST);
	CHECK(file_size() == 0);
	CHECK(dir_entries() == 2);
}

static void test_create_invalid(void)
{
	struct meta_super sb;
	struct meta *m = (struct meta *)&m;

	make_path("invalid");
#define BAD(stmt) do { \
		init_super(&sb, 1 << 20, 16); \
		stmt; \
		CHECK_MSG(meta_create(path, &sb, &m) == -EINVAL, "%s", #stmt); \
		CHECK(m == NULL); \
	} while (0)
	BAD(sb.region_shift = 11);
	BAD(sb.region_shift = 31);
	BAD(sb.size = 0);
	BAD(sb.size = 1000);
	BAD(sb.size = UINT64_MAX - 511);	/* bitmap far too large */
	BAD(sb.role = 2);
	BAD(sb.disk_state = META_FAILED + 1);
	BAD(sb.flags = 1u << 31);
	BAD(sb.peers[0].node[3] = '\n');
	BAD(memset(sb.peers[1].node, 'a', sizeof(sb.peers[1].node)));
	BAD(sb.peers[1].disk_state = 200);
	BAD(sb.peers[0].flags = 0x80);
#undef BAD
	CHECK(dir_entries() == 0);
}

static void test_updates(void)
{
	struct meta_super sb, cur;
	struct meta *m = create_std("updates", &sb);

	if (!m)
		return;
	for (unsigned i = 0; i < 10; i++) {
		cur = *meta_get(m);
		cur.gen_history[1] = cur.gen_history[0];
		cur.gen_history[0] = cur.gen_current;
		cur.gen_current = meta_new_gen();
		cur.role = i & 1;
		cur.disk_state = (uint8_t)(i % (META_FAILED + 1));
		cur.flags = i % 8;
		snprintf(cur.peers[0].node, sizeof(cur.peers[0].node), "peer-%u", i);
		cur.peers[1].node[0] = '\0';
		CHECK(meta_update(m, &cur) == 0);
		CHECK(meta_get(m)->seq == 2 + i);
		CHECK(super_same(meta_get(m), &cur));
	}
	cur = *meta_get(m);
	sb = cur;
	sb.size += 512;
	CHECK(meta_update(m, &sb) == -EINVAL);
	sb = cur;
	sb.region_shift = 17;
	CHECK(meta_update(m, &sb) == -EINVAL);
	sb = cur;
	sb.peers[0].node[0] = 0x7f;
	CHECK(meta_update(m, &sb) == -EINVAL);
	CHECK(meta_get(m)->seq == 11 && super_same(meta_get(m), &cur));
	/* Passing meta_get()'s own superblock back is fine. */
	CHECK(meta_update(m, meta_get(m)) == 0 && meta_get(m)->seq == 12);
	meta_close(m);

	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (!m)
		return;
	CHECK(super_same(meta_get(m), &cur));
	CHECK(meta_get(m)->seq == 12);
	CHECK(strcmp(meta_get(m)->peers[0].node, "peer-9") == 0);
	CHECK(meta_get(m)->peers[1].node[0] == '\0');
	meta_close(m);
}

static void test_torn_update(void)
{
	struct meta_super sb, a, b, c;
	struct meta *m = create_std("torn", &sb);
	uint8_t half[META_SLOT_SIZE / 2];
	unsigned s;

	if (!m)
		return;
	a = sb;
	a.gen_current = 0xa;
	CHECK(meta_update(m, &a) == 0);
	b = a;
	b.gen_current = 0xb;
	b.role = META_SECONDARY;
	CHECK(meta_update(m, &b) == 0);
	meta_close(m);

	/* The newest slot overwritten with garbage: the previous survives. */
	s = newest_slot();
	CHECK(raw_seq(s) == 3);
	corrupt((off_t)s * META_SLOT_SIZE, META_SLOT_SIZE);
	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (!m)
		return;
	CHECK(super_same(meta_get(m), &a) && meta_get(m)->seq == 2);
	/* The next update goes to the damaged slot and repairs it. */
	c = a;
	c.gen_current = 0xc;
	CHECK(meta_update(m, &c) == 0 && meta_get(m)->seq == 3);
	meta_close(m);
	CHECK(newest_slot() == s);
	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (m)
		CHECK(super_same(meta_get(m), &c) && meta_get(m)->seq == 3);
	meta_close(m);

	/* Torn write: new first half, old second half. */
	CHECK(raw_rw(false, half, sizeof(half),
		     (off_t)(1 - s) * META_SLOT_SIZE + META_SLOT_SIZE / 2) == 0);
	CHECK(raw_rw(true, half, sizeof(half),
		     (off_t)s * META_SLOT_SIZE + META_SLOT_SIZE / 2) == 0);
	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (m)
		CHECK(super_same(meta_get(m), &a) && meta_get(m)->seq == 2);
	meta_close(m);

	/* A few flipped bytes in the middle. */
	s = 1 - s;
	corrupt((off_t)s * META_SLOT_SIZE + 1000, 3);
	CHECK(open_expect_fail() == -EUCLEAN);	/* now both are bad */
}

/* An update whose fdatasync fails is reported failed, and the next open,
 * which a restart of the daemon does with the page cache as it was (or
 * with a disk that took the write), must not find it: the caller acted
 * on its failure (issue 13, sim seeds 1638 and 473: a refused promotion
 * whose superblock, read back at the restart, carried a generation no
 * peer knew, and a split brain). */
static struct repl_sys_ops failing_sync;

static int fdatasync_fails(int fd)
{
	(void)fd;
	errno = EIO;
	return -1;
}

static void test_failed_update(void)
{
	struct meta_super sb, a, b;
	struct meta *m = create_std("failed-update", &sb);

	if (!m)
		return;
	a = sb;
	a.gen_current = 0xa;
	CHECK(meta_update(m, &a) == 0);
	failing_sync = repl__sys_posix;
	failing_sync.fdatasync = fdatasync_fails;
	repl_sys_set(&failing_sync);
	b = a;
	b.gen_current = 0xb;
	b.role = META_PRIMARY;
	CHECK(meta_update_void_failed(m, &b) == -EIO);
	repl_sys_set(NULL);
	CHECK(super_same(meta_get(m), &a) && meta_get(m)->seq == 2);
	CHECK(meta_broken(m) == -EIO);
	CHECK(meta_update(m, &b) == -EIO);
	meta_close(m);
	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (m)
		CHECK_MSG(super_same(meta_get(m), &a) && meta_get(m)->seq == 2,
			  "the failed update is read back: seq %llu, gen_current %#llx",
			  (unsigned long long)meta_get(m)->seq,
			  (unsigned long long)meta_get(m)->gen_current);
	meta_close(m);
}

/* The same when voiding the slot fails too (the disk fails its writes):
 * meta_unvoided() names the update, and meta_open_void() given it takes
 * the other slot, then writes the next update above it (sim seed 6810 of
 * the EIO profile: a new generation for a lost peer read back at the
 * restart, and a split brain with the replica promoted meanwhile). */
static bool sync_failed;

static int fdatasync_fails_once(int fd)
{
	(void)fd;
	sync_failed = true;
	errno = EIO;
	return -1;
}

static ssize_t pwritev2_fails_after_sync(int fd, const void *buf, size_t len, off_t off,
					 int rwflags)
{
	if (sync_failed) {
		errno = EIO;
		return -1;
	}
	return repl__sys_posix.pwritev2(fd, buf, len, off, rwflags);
}

static void test_unvoided_update(void)
{
	struct meta_super sb, a, b, c;
	struct meta *m = create_std("unvoided", &sb);

	if (!m)
		return;
	a = sb;
	a.gen_current = 0xa;
	CHECK(meta_update(m, &a) == 0 && meta_unvoided(m) == 0);
	failing_sync = repl__sys_posix;
	failing_sync.fdatasync = fdatasync_fails_once;
	failing_sync.pwritev2 = pwritev2_fails_after_sync;
	sync_failed = false;
	repl_sys_set(&failing_sync);
	b = a;
	b.gen_current = 0xb;
	CHECK(meta_update_void_failed(m, &b) == -EIO);
	repl_sys_set(NULL);
	CHECK(meta_unvoided(m) == 3);
	meta_close(m);
	m = NULL;
	CHECK(meta_open(path, &m) == 0);	/* what a restart not told reads */
	if (m)
		CHECK(meta_get(m)->gen_current == 0xb && meta_get(m)->seq == 3);
	meta_close(m);
	m = NULL;
	CHECK(meta_open_void(path, 2, &m) == 0);	/* not the newest: no effect */
	if (m)
		CHECK(meta_get(m)->gen_current == 0xb && meta_get(m)->seq == 3);
	meta_close(m);
	m = NULL;
	CHECK(meta_open_void(path, 3, &m) == 0);
	if (!m)
		return;
	CHECK_MSG(super_same(meta_get(m), &a), "the unvoided update is read: gen_current %#llx",
		  (unsigned long long)meta_get(m)->gen_current);
	c = a;
	c.gen_current = 0xc;
	CHECK(meta_update(m, &c) == 0 && meta_get(m)->seq == 4);
	meta_close(m);
	m = NULL;
	CHECK(meta_open_void(path, 3, &m) == 0);	/* a stale name: no effect */
	if (m)
		CHECK(super_same(meta_get(m), &c) && meta_get(m)->seq == 4);
	meta_close(m);
}

/* A superblock write that fails (not its fdatasync) leaves the metadata
 * broken as well: a later update, made from meta_get(), would otherwise
 * write a superblock without the failed change (a peer recorded
 * Outdated, this replica Outdated), and the failed change is lost. */
static ssize_t pwritev2_fails(int fd, const void *buf, size_t len, off_t off, int rwflags)
{
	(void)fd, (void)buf, (void)len, (void)off, (void)rwflags;
	errno = EIO;
	return -1;
}

static void test_failed_write(void)
{
	struct meta_super sb, a, b;
	struct meta *m = create_std("failed-write", &sb);

	if (!m)
		return;
	a = sb;
	a.peers[0].disk_state = META_OUTDATED;
	failing_sync = repl__sys_posix;
	failing_sync.pwritev2 = pwritev2_fails;
	repl_sys_set(&failing_sync);
	CHECK(meta_update(m, &a) == -EIO);
	repl_sys_set(NULL);
	CHECK(super_same(meta_get(m), &sb));
	CHECK_MSG(meta_broken(m) == -EIO, "a failed superblock write leaves the metadata "
		  "usable: %d", meta_broken(m));
	b = *meta_get(m);
	b.gen_current = 0xb;
	CHECK_MSG(meta_update(m, &b) == -EIO, "a later update wrote a superblock without "
		  "the failed change");
	meta_close(m);
	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (m)
		CHECK(super_same(meta_get(m), &sb));
	meta_close(m);
}

static void test_both_corrupt(void)
{
	struct meta_super sb;
	struct meta *m = create_std("both", &sb);

	meta_close(m);
	corrupt(0, META_SLOT_SIZE);
	corrupt(META_SLOT_SIZE, META_SLOT_SIZE);
	CHECK(open_expect_fail() == -EUCLEAN);
	CHECK(file_size() == 8192 + META_BITMAPS * 4096);	/* not reinitialised */
}

static void test_truncated(void)
{
	struct meta_super sb;
	struct meta *m = create_std("trunc", &sb);
	off_t full = file_size();

	meta_close(m);
	CHECK(truncate(path, full + 1) == 0);
	CHECK(open_expect_fail() == -EUCLEAN);
	CHECK(truncate(path, full - 4096) == 0);
	CHECK(open_expect_fail() == -EUCLEAN);
	CHECK(truncate(path, 8192) == 0);
	CHECK(open_expect_fail() == -EUCLEAN);
	CHECK(truncate(path, 6000) == 0);	/* slot 1 torn as well */
	CHECK(open_expect_fail() == -EUCLEAN);
	CHECK(truncate(path, 100) == 0);
	CHECK(open_expect_fail() == -EUCLEAN);
	CHECK(truncate(path, 0) == 0);
	CHECK(open_expect_fail() == -EUCLEAN);
}

static void test_garbage(void)
{
	make_path("garbage");
	CHECK(close(open(path, O_CREAT | O_WRONLY, 0600)) == 0);
	corrupt(0, 64 * KiB);
	CHECK(open_expect_fail() == -EUCLEAN);
	CHECK(truncate(path, 16384) == 0);	/* plausible size, still junk */
	CHECK(open_expect_fail() == -EUCLEAN);

	make_path("missing");
	CHECK(open_expect_fail() == -ENOENT);
	CHECK(open_expect_fail() == -ENOENT);
}

static void test_bad_fields(void)
{
	struct meta_super sb;
	struct meta *m = create_std("fields", &sb);
	uint32_t v;
	uint8_t name[72];
	unsigned s;

	if (!m)
		return;
	sb.gen_current = 42;
	CHECK(meta_update(m, &sb) == 0);
	meta_close(m);
	s = newest_slot();

	/* Intact CRC, impossible contents: that slot is ignored... */
	v = htole32(40);
	patch_slot(s, 48, &v, 4);	/* region_shift */
	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (m)
		CHECK(meta_get(m)->seq == 1 && meta_get(m)->gen_current != 42);
	meta_close(m);
	/* ...and with both slots bad the file is refused. */
	memset(name, 'a', sizeof(name));
	patch_slot(1 - s, 112, name, sizeof(name));	/* peer 0 node, no NUL */
	CHECK(open_expect_fail() == -EUCLEAN);

	/* A newer format version is reported as such, not as garbage. */
	v = htole32(4);
	patch_slot(0, 8, &v, 4);
	patch_slot(1, 8, &v, 4);
	CHECK(open_expect_fail() == -EPROTONOSUPPORT);
}

static void test_busy(void)
{
	struct meta_super sb;
	struct meta *m = create_std("busy", &sb), *m2 = (struct meta *)&m2;

	CHECK(meta_open(path, &m2) == -EBUSY);
	CHECK(m2 == NULL);
	meta_close(m);
	CHECK(meta_open(path, &m2) == 0);
	meta_close(m2);
}

/* ---- bitmaps ------------------------------------------------------------- */

static void test_bitmap_edges(void)
{
	struct meta_super sb;
	struct meta *m = create_std("bm-edges", &sb);	/* 11 regions, last 4 KiB */
	const uint64_t R = 64 * KiB, size = 10 * R + 4 * KiB;

	if (!m)
		return;
	CHECK(meta_bits_set_range(m, 0, 0, 1) == 1);
	CHECK(meta_bitmap_needs_flush(m));
	CHECK(meta_bits_set_range(m, 0, 0, R) == 0);
	CHECK(meta_bits_set_range(m, 0, R - 1, 2) == 1);	/* region 1 */
	CHECK(meta_bit_test(m, 0, 0) && meta_bit_test(m, 0, 1) && !meta_bit_test(m, 0, 2));
	CHECK(meta_bits_set_range(m, 0, size - 1, 1) == 1);	/* region 10 */
	CHECK(meta_bits_set_range(m, 0, size, 4096) == 0);
	CHECK(meta_bits_set_range(m, 0, 5 * R, 0) == 0);
	CHECK(meta_bit_next(m, 0, 0) == 0);
	CHECK(meta_bit_next(m, 0, 2) == 10);
	CHECK(meta_bit_next(m, 0, 11) == 11 && meta_bit_next(m, 0, 1000) == 11);
	CHECK(meta_bits_set_range(m, 0, 0, UINT64_MAX) == 8);	/* no overflow */
	CHECK(meta_bits_set_range(m, 0, size - 1, UINT64_MAX) == 0);
	CHECK(meta_bits_count(m, 0) == 11 && meta_bits_count(m, 1) == 0);

	CHECK(meta_bits_clear_range(m, 0, 1, 2 * R) == 1);	/* only region 1 */
	CHECK(!meta_bit_test(m, 0, 1) && meta_bit_test(m, 0, 0) && meta_bit_test(m, 0, 2));
	CHECK(meta_bits_clear_range(m, 0, 10 * R, 100) == 0);	/* partial */
	CHECK(meta_bits_clear_range(m, 0, 10 * R + 1, UINT64_MAX) == 0);
	CHECK(meta_bits_clear_range(m, 0, 10 * R, 4 * KiB) == 1);	/* reaches the end */
	CHECK(meta_bits_clear_range(m, 0, 3 * R, 2 * R - 1) == 1);	/* region 3 */
	CHECK(meta_bits_clear_range(m, 0, 3 * R, 2 * R) == 1);	/* and 4 */
	CHECK(meta_bits_clear_range(m, 0, size, R) == 0);
	CHECK(meta_bits_count(m, 0) == 11 - 4);
	CHECK(meta_bit_next(m, 0, 1) == 2 && meta_bit_next(m, 0, 3) == 5);
	CHECK(meta_bit_next(m, 0, 10) == 11);

	/* Bad peer indices are inert. */
	CHECK(meta_bits_set_range(m, META_BITMAPS, 0, R) == 0);
	CHECK(!meta_bit_test(m, META_BITMAPS, 0));
	CHECK(meta_bits_count(m, META_BITMAPS) == 0);
	CHECK(meta_bit_next(m, META_BITMAPS, 0) == 11);
	meta_bits_set_all(m, META_BITMAPS);

	meta_bits_set_all(m, 1);
	CHECK(meta_bits_count(m, 1) == 11 && meta_bit_next(m, 1, 10) == 10);
	CHECK(meta_bits_clear_range(m, 1, 0, UINT64_MAX) == 11);
	CHECK(meta_bits_count(m, 1) == 0);
	CHECK(meta_bitmap_flush(m) == 0);
	CHECK(!meta_bitmap_needs_flush(m));
	CHECK(meta_bitmap_flush(m) == 0);
	meta_close(m);
}

static void check_bits_equal(struct meta *m, unsigned peer, const uint64_t *want,
			     size_t n)
{
	uint64_t r = meta_bit_next(m, peer, 0);

	CHECK(meta_bits_count(m, peer) == n);
	for (size_t i = 0; i < n; i++) {
		CHECK_MSG(r == want[i], "peer %u bit %zu: got %ju want %ju", peer,
			  i, (uintmax_t)r, (uintmax_t)want[i]);
		r = meta_bit_next(m, peer, r + 1);
	}
	CHECK(r == meta_regions(m));
}

/* Several pages: 70000 regions of 4 KiB are 3 bitmap pages per peer. */
static void test_bitmap_pages(void)
{
	static const uint64_t want[] = { 0, 63, 64, 32767, 32768, 65535, 65536, 69999 };
	struct meta_super sb;
	struct meta *m = NULL;
	const uint64_t size = 70000ull * 4096 - 512;
	uint64_t raw;

	make_path("bm-pages");
	init_super(&sb, size, 12);
	CHECK(meta_create(path, &sb, &m) == 0);
	if (!m)
		return;
	CHECK(meta_regions(m) == 70000);
	CHECK(file_size() == 8192 + META_BITMAPS * 12288);
	CHECK(meta_bits_set_range(m, 0, 0, 1) == 1);
	CHECK(meta_bits_set_range(m, 0, 63 * 4096 + 100, 4096) == 2);	/* word edge */
	CHECK(meta_bits_set_range(m, 0, 32767 * 4096, 8192) == 2);	/* page edge */
	CHECK(meta_bits_set_range(m, 0, 65535 * 4096 + 4095, 2) == 2);
	CHECK(meta_bits_set_range(m, 0, size - 512, 512) == 1);
	check_bits_equal(m, 0, want, 8);
	meta_bits_set_all(m, 1);
	CHECK(meta_bits_count(m, 1) == 70000);
	CHECK(meta_bit_next(m, 1, 69999) == 69999);
	CHECK(meta_bitmap_flush(m) == 0);
	/* Lazy clears: no flush needed, but the next flush writes them. */
	CHECK(meta_bits_clear_range(m, 1, 4096, size) == 69999);
	CHECK(!meta_bitmap_needs_flush(m));
	CHECK(meta_bitmap_flush(m) == 0);
	meta_close(m);

	/* The documented layout: word 0 of peer 0 at 8192, of peer 1 at
	 * 8192 + stride; bit b of word w is region 64 w + b (words 0..510 in
	 * the first page). */
	CHECK(raw_rw(false, &raw, 8, 8192) == 0);
	CHECK(le64toh(raw) == (1ull | 1ull << 63));
	CHECK(raw_rw(false, &raw, 8, 8192 + 8) == 0);
	CHECK(le64toh(raw) == 1);
	CHECK(raw_rw(false, &raw, 8, 8192 + 12288) == 0);
	CHECK(le64toh(raw) == 1);

	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (!m)
		return;
	check_bits_equal(m, 0, want, 8);
	check_bits_equal(m, 1, want, 1);
	/* Unflushed bits are written by close. */
	CHECK(meta_bits_set_range(m, 1, size - 1, 1) == 1);
	meta_close(m);
	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (m)
		CHECK(meta_bit_test(m, 1, 69999) && meta_bits_count(m, 1) == 2);
	meta_close(m);

	/* Junk past the last region (in the last word of the last page, one
	 * that passes its check) is dropped on open. */
	raw = htole64(~0ull);
	patch_page(2, (PAGE_WORDS - 1) * 8, &raw, 8, true);
	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (m)
		check_bits_equal(m, 0, want, 8);
	meta_close(m);
}

/* meta_bits_in_flush(): the pages with set bits that the running job
 * writes, from _begin to _end; not pages with only cleared bits. */
static void test_bits_in_flush(void)
{
	struct meta_super sb;
	struct meta *m = NULL;
	struct meta_flush_job *job = NULL;
	const uint64_t page2 = 70000ull * 4096 - 4096;	/* a region in page 2 */

	make_path("bm-inflush");
	init_super(&sb, 70000ull * 4096, 12);	/* 3 bitmap pages */
	CHECK(meta_create(path, &sb, &m) == 0);
	if (!m)
		return;
	CHECK(meta_bits_set_range(m, 0, page2, 4096) == 1);
	CHECK(meta_bitmap_flush(m) == 0);
	CHECK(meta_bits_set_range(m, 0, 4096, 4096) == 1);	/* page 0 */
	CHECK(meta_bits_clear_range(m, 0, page2, 4096) == 1);	/* page 2 */
	CHECK(!meta_bits_in_flush(m, 0, 4096, 4096));
	CHECK(meta_bitmap_flush_begin(m, &job) == 0 && job != NULL);
	CHECK(!meta_bitmap_needs_flush(m));
	CHECK(meta_bits_in_flush(m, 0, 4096, 4096));
	CHECK(meta_bits_in_flush(m, 0, 30000ull * 4096, 5000ull * 4096));	/* pages 0 and 1 */
	CHECK(!meta_bits_in_flush(m, 0, page2, 4096));	/* only cleared */
	CHECK(!meta_bits_in_flush(m, 0, 40000ull * 4096, 4096));	/* page 1 */
	CHECK(!meta_bits_in_flush(m, 1, 4096, 4096));
	CHECK(meta_bits_set_range(m, 0, 4096 + 100, 1) == 0);	/* already set ... */
	CHECK(!meta_bitmap_needs_flush(m));	/* ... so only in_flush tells */
	if (job)
		CHECK(meta_flush_job_run(job) == 0);
	meta_flush_job_end(m, job, 0);
	CHECK(!meta_bits_in_flush(m, 0, 4096, 4096));
	meta_close(m);
}

/* A flush in one call while a job runs: the job, written after it, must
 * not put back its older copy of a page (bit 2 stays on disk). */
static void test_flush_during_job(void)
{
	struct meta_super sb;
	struct meta *m = NULL;
	struct meta_flush_job *job = NULL;

	make_path("bm-during-job");
	init_super(&sb, 70000ull * 4096, 12);
	CHECK(meta_create(path, &sb, &m) == 0);
	if (!m)
		return;
	CHECK(meta_bits_set_range(m, META_INTENT, 4096, 4096) == 1);
	CHECK(meta_bitmap_flush_begin(m, &job) == 0 && job != NULL);
	CHECK(meta_bits_set_range(m, META_INTENT, 2 * 4096, 4096) == 1);
	CHECK(meta_bitmap_flush(m) == 0);
	if (job)
		CHECK(meta_flush_job_run(job) == 0);
	meta_flush_job_end(m, job, 0);
	meta_close(m);
	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (!m)
		return;
	CHECK(meta_bit_test(m, META_INTENT, 1) && meta_bit_test(m, META_INTENT, 2));
	meta_close(m);
}

/* Random set/clear ranges against a one-bool-per-region model. */
static void test_bitmap_model(void)
{
	enum { N = 300 };
	const uint64_t rs = 4096, size = N * rs - 1536;
	struct meta_super sb;
	struct meta *m = NULL;
	bool model[N] = { false };
	uint64_t expect_count = 0;

	make_path("bm-model");
	init_super(&sb, size, 12);
	CHECK(meta_create(path, &sb, &m) == 0);
	if (!m)
		return;
	for (unsigned iter = 0; iter < 3000; iter++) {
		uint32_t rnd[3];
		uint64_t off, len, end, changed = 0, got;
		bool set;

		CHECK(random_bytes(rnd, sizeof(rnd)) == 0);
		set = rnd[0] & 1;
		off = rnd[1] % (size + 8192);
		len = (rnd[0] >> 1) % 4 == 0 ? rnd[2] % 512 : rnd[2] % (size / 4);
		end = MIN(off + len, size);
		for (uint64_t r = 0; r < N; r++) {
			uint64_t lo = r * rs, hi = MIN(lo + rs, size);
			bool hit = set ? (off < hi && end > lo && len) :
					 (off <= lo && end >= hi && off < size && len);

			if (hit && model[r] != set) {
				model[r] = set;
				changed++;
			}
		}
		expect_count = set ? expect_count + changed : expect_count - changed;
		got = set ? meta_bits_set_range(m, 0, off, len) :
			    meta_bits_clear_range(m, 0, off, len);
		CHECK_MSG(got == changed, "iter %u %s %ju+%ju: %ju != %ju", iter,
			  set ? "set" : "clear", (uintmax_t)off, (uintmax_t)len,
			  (uintmax_t)got, (uintmax_t)changed);
		if (iter % 500 == 0)
			CHECK(meta_bitmap_flush(m) == 0);
	}
	CHECK(meta_bits_count(m, 0) == expect_count);
	for (uint64_t r = 0; r < N; r++)
		CHECK(meta_bit_test(m, 0, r) == model[r]);
	CHECK(meta_bitmap_flush(m) == 0);
	meta_close(m);
	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (!m)
		return;
	for (uint64_t r = 0; r < N; r++)
		CHECK(meta_bit_test(m, 0, r) == model[r]);
	meta_close(m);
}

/* A damaged bitmap page: every region it covers is dirty, the other pages
 * and bitmaps keep exactly their bits, and the page is rewritten so that
 * the next open finds nothing wrong.  70000 regions of 4 KiB: 3 pages per
 * bitmap; page 1 covers regions 32704..65407, page 2 65408..69999. */
static void test_bitmap_damage(void)
{
	static const uint64_t p0[] = { 5, 40000, 69000 };
	const uint64_t size = 70000ull * 4096;
	struct meta_super sb;
	struct meta *m = NULL;
	uint8_t b, pg[4096];

	make_path("bm-damage");
	init_super(&sb, size, 12);
	CHECK(meta_create(path, &sb, &m) == 0);
	if (!m)
		return;
	for (unsigned i = 0; i < 3; i++)
		CHECK(meta_bits_set_range(m, 0, p0[i] << 12, 1) == 1);
	CHECK(meta_bits_set_range(m, 1, 7 << 12, 1) == 1);
	CHECK(meta_bits_set_range(m, META_INTENT, 50000ull << 12, 1) == 1);
	CHECK(meta_bitmap_flush(m) == 0);
	meta_close(m);

	/* One flipped bit, the one of region 40000 (word 625, the 115th of
	 * page 1): without the check, region 40000 would be skipped. */
	CHECK(raw_rw(false, &b, 1, 8192 + 4096 + (625 - PAGE_WORDS) * 8) == 0);
	b ^= 1;
	patch_page(1, (625 - PAGE_WORDS) * 8, &b, 1, false);
	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (!m)
		return;
	CHECK(meta_bad_pages(m) == 1);
	CHECK(meta_bit_test(m, 0, 40000));
	CHECK(meta_bits_count(m, 0) == 2 + (65408 - 32704));
	CHECK(meta_bit_test(m, 0, 5) && !meta_bit_test(m, 0, 6) && meta_bit_test(m, 0, 69000));
	CHECK(!meta_bit_test(m, 0, 32703) && meta_bit_test(m, 0, 32704));
	CHECK(meta_bit_test(m, 0, 65407) && !meta_bit_test(m, 0, 65408));
	CHECK(meta_bits_count(m, 1) == 1 && meta_bit_test(m, 1, 7));
	CHECK(meta_bits_count(m, META_INTENT) == 1 && meta_bit_test(m, META_INTENT, 50000));
	CHECK(!meta_bitmap_needs_flush(m));	/* already rewritten */
	meta_close(m);
	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (!m)
		return;
	CHECK(meta_bad_pages(m) == 0 && meta_bits_count(m, 0) == 2 + (65408 - 32704));
	meta_close(m);

	/* A page written at the wrong place (peer 0's page 0 over peer 1's,
	 * its own check intact) and a damaged check of the activity log's
	 * last, partial page: both ranges dirty, nothing else. */
	CHECK(raw_rw(false, pg, sizeof(pg), 8192) == 0);
	CHECK(raw_rw(true, pg, sizeof(pg), 8192 + 3 * 4096) == 0);
	b = 0x5a;
	patch_page(8, PAGE_CRC_OFF, &b, 1, false);
	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (!m)
		return;
	CHECK(meta_bad_pages(m) == 2);
	CHECK(meta_bits_count(m, 0) == 2 + (65408 - 32704));
	CHECK(meta_bits_count(m, 1) == 32704 && meta_bit_next(m, 1, 32704) == 70000);
	CHECK(meta_bits_count(m, META_INTENT) == 1 + (70000 - 65408));
	CHECK(meta_bit_next(m, META_INTENT, 50001) == 65408);
	meta_close(m);
}

/* A format 2 file (bare pages of 512 words, no checks) opens with every
 * bit and is upgraded: format 3 from then on, seq + 1, nothing left
 * beside it.  65536 regions of 4 KiB are 1024 words: 2 bare pages, 3
 * checked ones, so every bitmap but the first moves. */
static void test_upgrade(void)
{
	static const uint64_t bits[META_BITMAPS][3] = {
		{ 0, 511 * 64, 65535 }, { 1, 32767, 40000 }, { 2, 100, 65534 },
	};
	const uint64_t size = 65536ull * 4096, bare = 8192;
	static uint64_t words[1024];
	struct meta_super sb;
	struct meta *m = NULL;
	uint32_t v = htole32(2);
	uint64_t st = htole64(bare);

	make_path("upgrade");
	init_super(&sb, size, 12);
	CHECK(meta_create(path, &sb, &m) == 0);
	if (!m)
		return;
	meta_close(m);
	/* The same slots with version 2 and the bare stride, bare bitmaps. */
	for (unsigned s = 0; s < 2; s++) {
		patch_slot(s, 8, &v, 4);
		patch_slot(s, 104, &st, 8);
	}
	CHECK(truncate(path, 8192 + META_BITMAPS * bare) == 0);
	for (unsigned i = 0; i < META_BITMAPS; i++) {
		memset(words, 0, sizeof(words));
		for (unsigned k = 0; k < 3; k++)
			words[bits[i][k] / 64] |= htole64(1ull << (bits[i][k] % 64));
		CHECK(raw_rw(true, words, sizeof(words), (off_t)(8192 + i * bare)) == 0);
	}

	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (!m)
		return;
	CHECK(meta_bad_pages(m) == 0);
	CHECK(super_same(meta_get(m), &sb) && meta_get(m)->seq == 2);
	for (unsigned i = 0; i < META_BITMAPS; i++)
		check_bits_equal(m, i, bits[i], 3);
	CHECK(file_size() == 8192 + META_BITMAPS * 12288);
	CHECK(dir_entries() == 1);
	CHECK(raw_rw(false, &v, 4, 8) == 0 && le32toh(v) == 3);
	CHECK(raw_rw(false, &v, 4, 4096 + 8) == 0 && le32toh(v) == 3);
	meta_close(m);
	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (!m)
		return;
	CHECK(meta_get(m)->seq == 2 && meta_bad_pages(m) == 0);
	for (unsigned i = 0; i < META_BITMAPS; i++)
		check_bits_equal(m, i, bits[i], 3);
	meta_close(m);
}

/* The history beyond its first two generations lives in bytes that
 * builds before it wrote as zeros and never read (meta_format.c): a file
 * written by one of them opens with those generations empty, the two
 * newest kept; and the deeper ones are where meta_format.c says, so that
 * such a build, which checks nothing there, keeps reading newer files. */
static void test_history_before(void)
{
	static const uint8_t zero[(META_GEN_HISTORY - 2) * 8];
	struct meta_super sb;
	struct meta *m = create_std("history-before", &sb);
	uint64_t v;

	if (!m)
		return;
	meta_close(m);
	CHECK(raw_rw(false, &v, 8, 288) == 0 && le64toh(v) == sb.gen_history[2]);
	CHECK(raw_rw(false, &v, 8, 288 + 40) == 0 && le64toh(v) == sb.gen_history[7]);
	for (unsigned s = 0; s < 2; s++)
		patch_slot(s, 288, zero, sizeof(zero));
	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (!m)
		return;
	CHECK(meta_get(m)->gen_history[0] == sb.gen_history[0]);
	CHECK(meta_get(m)->gen_history[1] == sb.gen_history[1]);
	for (unsigned i = 2; i < META_GEN_HISTORY; i++)
		CHECK(meta_get(m)->gen_history[i] == 0);
	meta_close(m);
}

/* The boot id came like the deeper history: a file written before it
 * (zeros there) opens with it unknown, and it is where meta_format.c says. */
static void test_boot_id_before(void)
{
	static const uint8_t zero[META_BOOT_ID_LEN];
	struct meta_super sb;
	struct meta *m = create_std("boot-id-before", &sb);
	uint8_t raw[META_BOOT_ID_LEN];

	if (!m)
		return;
	meta_close(m);
	CHECK(raw_rw(false, raw, sizeof(raw), 336) == 0 && !memcmp(raw, sb.boot_id, sizeof(raw)));
	for (unsigned s = 0; s < 2; s++)
		patch_slot(s, 336, zero, sizeof(zero));
	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (!m)
		return;
	CHECK(!memcmp(meta_get(m)->boot_id, zero, sizeof(zero)));
	CHECK(meta_get(m)->gen_history[7] == sb.gen_history[7]);
	meta_close(m);
}

/* ---- identifiers and names ----------------------------------------------- */

static void test_ids(void)
{
	uint8_t a[16], b[16];
	char s[37];

	CHECK(meta_generate_uuid(a) == 0 && meta_generate_uuid(b) == 0);
	CHECK(memcmp(a, b, 16) != 0);
	uuid_format(a, s);
	CHECK(s[14] == '4' && strchr("89ab", s[19]));
	for (int i = 0; i < 1000; i++)
		CHECK(meta_new_gen() != 0);
	CHECK(meta_new_gen() != meta_new_gen());
	CHECK(!strcmp(meta_disk_state_name(META_UPTODATE), "UpToDate"));
	CHECK(!strcmp(meta_disk_state_name(META_OUTDATED), "Outdated"));
	CHECK(!strcmp(meta_disk_state_name(META_DISKLESS), "Diskless"));
	CHECK(!strcmp(meta_disk_state_name(META_INCONSISTENT), "Inconsistent"));
	CHECK(!strcmp(meta_disk_state_name(META_CONSISTENT), "Consistent"));
	CHECK(!strcmp(meta_disk_state_name(META_FAILED), "Failed"));
	CHECK(!strcmp(meta_disk_state_name((enum meta_disk_state)77), "Unknown"));
}

/* ---- growing --------------------------------------------------------------- */

/* Bits set in every bitmap at known regions, some flushed, some pending. */
static const uint64_t grow_bits[META_BITMAPS][4] = {
	{ 0, 5, 12799, 25599 },	/* 25599: the last region of 100 MiB at 4 KiB */
	{ 3, 4096, 20000, 25598 },
	{ 1, 2, 8191, 25599 },
};

static bool grow_bits_kept(const struct meta *m)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < META_BITMAPS; i++) {
		for (unsigned k = 0; k < 4; k++)
			if (!meta_bit_test(m, i, grow_bits[i][k]))
				return false;
		n += meta_bits_count(m, i);
	}
	return n == META_BITMAPS * 4;	/* and nothing else, new bits clear */
}

static struct meta *create_grow(const char *name, struct meta_super *sb)
{
	struct meta *m = NULL;

	make_path(name);
	init_super(sb, 100ull << 20, 12);	/* 25600 regions: one bitmap page */
	CHECK(meta_create(path, sb, &m) == 0);
	if (!m)
		return NULL;
	for (unsigned i = 0; i < META_BITMAPS; i++)
		for (unsigned k = 0; k < 4; k++) {
			meta_bits_set_range(m, i, grow_bits[i][k] << 12, 4 * KiB);
			if (k == 1)
				CHECK(meta_bitmap_flush(m) == 0);	/* half on disk */
		}
	return m;
}

static void test_grow(void)
{
	struct meta_super sb, want;
	struct meta *m = create_grow("grow", &sb), *m2 = NULL;
	const uint64_t big = (200ull << 20) + 1536;	/* 51201 regions, 2 pages */

	if (!m)
		return;
	want = *meta_get(m);
	want.size = big;
	CHECK(meta_grow(m, big) == 0);
	CHECK(meta_get(m)->size == big && meta_regions(m) == 51201);
	CHECK(meta_get(m)->seq == 2 && super_same(meta_get(m), &want));
	CHECK(grow_bits_kept(m));
	CHECK(!meta_bitmap_needs_flush(m));	/* the pending bits went with the file */
	CHECK(file_size() == 8192 + META_BITMAPS * 8192);
	CHECK(dir_entries() == 1);		/* no PATH.grow left */
	CHECK(meta_open(path, &m2) == -EBUSY);	/* the new file is locked too */
	/* The new area works like the rest, to its last partial region. */
	CHECK(meta_bits_set_range(m, 1, big - 512, 512) == 1);
	CHECK(meta_bit_test(m, 1, 51200) && meta_bit_next(m, 1, 25599) == 51200);
	CHECK(meta_bits_clear_range(m, 1, 51200ull << 12, 1536) == 1);	/* to the end */
	meta_close(m);

	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (!m)
		return;
	CHECK(meta_get(m)->size == big && super_same(meta_get(m), &want));
	CHECK(grow_bits_kept(m));
	/* Updates go on with the new size; the old one is refused. */
	want.gen_current = 77;
	CHECK(meta_update(m, &want) == 0 && meta_get(m)->seq == 3);
	want.size = sb.size;
	CHECK(meta_update(m, &want) == -EINVAL);
	meta_close(m);

	/* A second grow, over an unaligned size. */
	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (m) {
		CHECK(meta_grow(m, 300ull << 20) == 0 && meta_regions(m) == 76800);
		CHECK(grow_bits_kept(m) && meta_get(m)->gen_current == 77);
	}
	meta_close(m);
}

static void test_grow_refused(void)
{
	struct meta_super sb;
	struct meta *m = create_grow("grow-refused", &sb);
	const uint64_t size = 100ull << 20;

	if (!m)
		return;
	CHECK(meta_grow(m, size) == -EINVAL);		/* not larger */
	CHECK(meta_grow(m, size - 512) == -EINVAL);	/* smaller */
	CHECK(meta_grow(m, size + 100) == -EINVAL);	/* not a multiple of 512 */
	/* 2^31 regions at 4 KiB is 8 TiB: beyond, the bitmaps would not fit. */
	CHECK(meta_grow(m, (8ull << 40) + 4096) == -EINVAL);
	CHECK(meta_get(m)->size == size && meta_get(m)->seq == 1 && grow_bits_kept(m));
	CHECK(dir_entries() == 1 && file_size() == 8192 + META_BITMAPS * 4096);
	meta_close(m);
}

/* A crash during a grow: before the rename, PATH is the old file, intact,
 * and the half-written PATH.grow goes at the next open; after it, either
 * slot of the new file holds the new size. */
static void test_grow_crash(void)
{
	struct meta_super sb;
	struct meta *m = create_grow("grow-crash", &sb);
	char stale[300];
	const uint64_t big = 200ull << 20;

	if (!m)
		return;
	meta_close(m);
	snprintf(stale, sizeof(stale), "%s.grow", path);
	CHECK(close(open(stale, O_CREAT | O_WRONLY, 0600)) == 0);
	CHECK(truncate(stale, 5000) == 0);	/* torn: the crash hit mid-write */
	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	CHECK(access(stale, F_OK) < 0 && errno == ENOENT);
	if (!m)
		return;
	CHECK(meta_get(m)->size == sb.size && grow_bits_kept(m));
	CHECK(meta_grow(m, big) == 0);
	meta_close(m);

	/* The current slot lost: the other one is the copy, new size too. */
	CHECK(newest_slot() == 0);
	corrupt(0, META_SLOT_SIZE);
	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (m)
		CHECK(meta_get(m)->size == big && meta_get(m)->seq == 1 && grow_bits_kept(m));
	meta_close(m);
}

/* A flush job begun before a grow and run after it writes to the old file:
 * the new one is untouched and complete. */
static void test_grow_flush_job(void)
{
	struct meta_super sb;
	struct meta *m = create_grow("grow-job", &sb);
	struct meta_flush_job *job = NULL;
	const uint64_t big = 200ull << 20;

	if (!m)
		return;
	CHECK(meta_bits_set_range(m, 0, 777ull << 12, 1) == 1);
	CHECK(meta_bitmap_flush_begin(m, &job) == 0 && job != NULL);
	CHECK(meta_grow(m, big) == 0);
	CHECK(meta_bits_set_range(m, 2, 40000ull << 12, 1) == 1);	/* new area */
	if (job)
		CHECK(meta_flush_job_run(job) == 0);
	meta_flush_job_free(job);
	CHECK(meta_bitmap_flush(m) == 0);
	meta_close(m);
	m = NULL;
	CHECK(meta_open(path, &m) == 0);
	if (!m)
		return;
	CHECK(meta_get(m)->size == big);
	CHECK(meta_bit_test(m, 0, 777) && meta_bit_test(m, 2, 40000));
	CHECK(meta_bits_count(m, 0) == 5 && meta_bits_count(m, 2) == 5);
	meta_close(m);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 99;
	}
	test_roundtrip();
	clean_dir();
	test_create_exists();
	clean_dir();
	test_create_invalid();
	clean_dir();
	test_updates();
	test_assume();
	test_torn_update();
	test_failed_update();
	test_unvoided_update();
	test_failed_write();
	test_both_corrupt();
	test_truncated();
	test_garbage();
	test_bad_fields();
	test_busy();
	test_bitmap_edges();
	test_bitmap_pages();
	test_bits_in_flush();
	clean_dir();
	test_flush_during_job();
	test_bitmap_model();
	test_bitmap_damage();
	clean_dir();
	test_upgrade();
	clean_dir();
	test_history_before();
	test_boot_id_before();
	clean_dir();
	test_ids();
	clean_dir();
	test_grow();
	clean_dir();
	test_grow_refused();
	clean_dir();
	test_grow_crash();
	test_grow_flush_job();
	clean_dir();
	rmdir(dir);
	return unit_done("test-meta");
}
