/* test-meta-bitmap.c: unit tests of the replica metadata file's dirty
 * bitmaps (meta_bitmap.c, meta_io.c): edges, pages, flushes and flush
 * jobs, against a simple model, checked bitmap pages (a damaged one dirties
 * its range, no more), the upgrade of a format 2 file, and growing: bits
 * kept, new bits clear, crash safety of the replaced file.
 * Works in a private directory under /tmp; it does not test the engine. */
#include "config.h"

#include "sys.h"
#include "unit.h"
#include "meta-fixture.h"

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
	if (!(m = reopen(m)))
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
	if (!(m = reopen(m)))
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
	if (!(m = reopen(m)))
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
	if (!(m = reopen(m)))
		return;
	CHECK(meta_get(m)->seq == 2 && meta_bad_pages(m) == 0);
	for (unsigned i = 0; i < META_BITMAPS; i++)
		check_bits_equal(m, i, bits[i], 3);
	meta_close(m);
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
	if (!(m = reopen(m)))
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
	test_grow();
	clean_dir();
	test_grow_refused();
	clean_dir();
	test_grow_crash();
	test_grow_flush_job();
	clean_dir();
	rmdir(dir);
	return unit_done("test-meta-bitmap");
}
