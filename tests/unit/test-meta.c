/* test-meta.c: unit tests of the replica metadata file's superblock
 * (meta.c): creation, roundtrips, crash safety against torn or corrupted
 * superblock slots, failed updates (voided, assumed, broken), refusal of
 * damaged files, fields of older formats, identifiers.  The bitmaps and
 * growing: test-meta-bitmap.c.
 * Works in a private directory under /tmp; it does not test the engine. */
#include "config.h"

#include "sys.h"
#include "unit.h"
#include "meta-fixture.h"

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
	clean_dir();
	test_history_before();
	test_boot_id_before();
	clean_dir();
	test_ids();
	clean_dir();
	rmdir(dir);
	return unit_done("test-meta");
}
