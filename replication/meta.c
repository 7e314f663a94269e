/* meta.c: the replica metadata file of meta.h: atomic creation, open
 * (validation, loading the bitmaps, distrusting damaged pages), crash-safe
 * superblock updates, close, and fresh identifiers.  It is not a policy:
 * it never decides a role, a disk state or a generation, and it does no I/O
 * on the backing store.  The format is in meta_format.c, the bitmaps in
 * meta_bitmap.c, the file's syncs and flushes in meta_io.c, growing in
 * meta_grow.c (meta_int.h has their layers). */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "meta.h"
#include "meta_int.h"
#include "sys.h"
#include "util.h"

/* ---- create ------------------------------------------------------------ */

/* Moves tmp to path unless path exists (-EEXIST). */
static int rename_noreplace(const char *tmp, const char *path)
{
	if (repl__sys->renameat2(tmp, path, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
		return -errno;
	/* File system without RENAME_NOREPLACE: link() never replaces. */
	if (repl__sys->link(tmp, path) < 0)
		return -errno;
	repl__sys->unlink(tmp);
	return 0;
}

/* Writes both slots (slot 0 current with seq 1, slot 1 a copy with seq 0)
 * and every bitmap page (clear, each with its check: a page never written
 * would not pass it), and makes the file durable.  Written, not sparse: a
 * bitmap flush must not meet ENOSPC later. */
static int write_new_file(struct meta *m)
{
	uint8_t *buf = calloc(2, META_SLOT_SIZE);
	struct meta_super copy = m->sb;
	int err;

	if (!buf)
		return -ENOMEM;
	repl__meta_slot_encode(&m->sb, buf);
	copy.seq = 0;
	repl__meta_slot_encode(&copy, buf + META_SLOT_SIZE);
	err = repl__full_pwrite(m->fd, buf, 2 * META_SLOT_SIZE, 0);
	free(buf);
	if (!err)
		err = repl__meta_bitmaps_write_all(m, m->fd);
	if (err)
		return err;
	if (repl__sys->fsync(m->fd) < 0)
		return -errno;
	return 0;
}

int meta_create(const char *path, const struct meta_super *init, struct meta **out)
{
	struct meta_super sb = *init;
	struct meta *m = NULL;
	const char *why = repl__meta_super_invalid(init);
	char *tmp;
	int fd, err;

	*out = NULL;
	if (why) {
		log_err("meta %s: cannot create: %s", path, why);
		return -EINVAL;
	}
	if (repl__sys->access(path, F_OK) == 0) {
		log_err("meta %s: already exists; not overwriting", path);
		return -EEXIST;
	}
	if (asprintf(&tmp, "%s.tmp.XXXXXX", path) < 0)
		return -ENOMEM;
	fd = repl__sys->mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		log_err_errno(-err, "meta %s: creating a temporary file", path);
		free(tmp);
		return err;
	}
	sb.seq = 1;
	err = repl__meta_alloc(path, fd, &sb, &m);
	if (!err)
		err = repl__meta_lock_fd(tmp, fd);
	if (!err) {
		err = write_new_file(m);
		if (err)
			log_err_errno(-err, "meta %s: writing %s", path, tmp);
	}
	if (!err) {
		err = rename_noreplace(tmp, path);
		if (err == -EEXIST)
			log_err("meta %s: already exists; not overwriting", path);
		else if (err)
			log_err_errno(-err, "meta %s: renaming %s", path, tmp);
	}
	if (err) {
		repl__sys->unlink(tmp);
		goto fail;
	}
	err = repl__meta_fsync_dir_of(path);
	if (err) {
		repl__sys->unlink(path);
		goto fail;
	}
	free(tmp);
	*out = m;
	return 0;
fail:
	repl__meta_free(m);
	free(tmp);
	return err;
}

/* ---- open ---------------------------------------------------------------- */

static const char *bitmap_name(unsigned bm, char *buf, size_t len)
{
	if (bm == META_INTENT)
		return "the activity log";
	snprintf(buf, len, "the bitmap of peer slot %u", bm);
	return buf;
}

/* A page that failed its check: nothing tells which of its bits were set,
 * so every region it covers is out of sync (and the page is rewritten). */
static void page_distrust(struct meta *m, unsigned bm, size_t page, const char *why)
{
	uint64_t first = (uint64_t)page * WORDS_PER_PAGE * 64;
	uint64_t end = MIN(first + WORDS_PER_PAGE * 64, m->regions);
	unsigned shift = m->sb.region_shift;
	char name[48];

	memset((uint8_t *)m->bm[bm] + page * PG_BITS, 0, PG_BITS);
	repl__meta_bits_change(m, bm, first, end, true);
	m->bad_pages++;
	log_err("meta %s: page %zu of %s %s: all of its range, bytes %" PRIu64 " to %" PRIu64
		", is marked out of sync (it will be resynced)", m->path, page,
		bitmap_name(bm, name, sizeof(name)), why, first << shift,
		MIN(end << shift, m->sb.size));
}

/* Version 3: reads bitmap bm page by page, checking each. */
static int load_pages(struct meta *m, unsigned bm)
{
	uint8_t *buf = malloc(PAGES_PER_WRITE * META_BITMAP_PAGE);
	int err = 0;

	if (!buf)
		return -ENOMEM;
	for (size_t first = 0; first < m->npages && !err; first += PAGES_PER_WRITE) {
		size_t n = MIN(m->npages - first, (size_t)PAGES_PER_WRITE);

		err = repl__full_pread(m->fd, buf, n * META_BITMAP_PAGE,
				       repl__meta_page_offset(m, bm, first));
		for (size_t k = 0; k < n && !err; k++) {
			const uint8_t *pg = buf + k * META_BITMAP_PAGE;

			if (get32(pg + PG_CRC) != crc32c(0, pg, PG_CRC))
				page_distrust(m, bm, first + k, "fails its checksum");
			else if (get32(pg + PG_NUM) != repl__meta_page_number(m, bm, first + k))
				page_distrust(m, bm, first + k, "holds another page");
			else
				memcpy((uint8_t *)m->bm[bm] + (first + k) * PG_BITS, pg, PG_BITS);
		}
	}
	free(buf);
	return err;
}

/* Version 2: bare words at a page-aligned stride. */
static int load_bare(struct meta *m, unsigned bm)
{
	uint64_t stride = repl__meta_stride_bare(m->regions);

	return repl__full_pread(m->fd, m->bm[bm], (size_t)DIV_ROUND_UP(m->regions, 64) * 8,
			  (off_t)(META_BITMAP_OFFSET + bm * stride));
}

/* Zeroes (and reports) bits past the last region. */
static void drop_junk(struct meta *m, unsigned bm)
{
	uint64_t tail = m->regions % 64, *w = m->bm[bm];
	size_t last = (size_t)DIV_ROUND_UP(m->regions, 64) - 1;
	size_t nwords = m->npages * WORDS_PER_PAGE;
	bool junk = false;
	char name[48];

	if (tail && (le64toh(w[last]) >> tail)) {
		w[last] = htole64(le64toh(w[last]) & ((UINT64_C(1) << tail) - 1));
		junk = true;
	}
	for (size_t i = last + 1; i < nwords; i++) {
		junk |= w[i] != 0;
		w[i] = 0;
	}
	if (junk)
		log_warn("meta %s: %s had bits past the end of the volume; ignored",
			 m->path, bitmap_name(bm, name, sizeof(name)));
}

static int load_bitmaps(struct meta *m, unsigned version)
{
	for (unsigned i = 0; i < META_BITMAPS; i++) {
		int err = version == META_VERSION_BARE ? load_bare(m, i) : load_pages(m, i);

		if (err) {
			log_err_errno(-err, "meta %s: reading bitmap %u", m->path, i);
			return err;
		}
		drop_junk(m, i);
	}
	return 0;
}

int meta_open(const char *path, struct meta **out)
{
	return meta_open_void(path, 0, out);
}

int meta_open_void(const char *path, uint64_t void_seq, struct meta **out)
{
	uint8_t *buf = calloc(2, META_SLOT_SIZE);
	struct meta_super sb;
	struct meta *m = NULL;
	struct stat st;
	unsigned slot, version = 0;
	int fd, err;

	*out = NULL;
	if (!buf)
		return -ENOMEM;
	fd = repl__sys->open(path, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		log_err_errno(-err, "meta %s: open", path);
		free(buf);
		return err;
	}
	err = repl__meta_lock_fd(path, fd);
	if (!err)
		repl__meta_remove_stale_grow(path);
	if (!err && repl__sys->fstat(fd, &st) < 0) {
		err = -errno;
		log_err_errno(-err, "meta %s: fstat", path);
	}
	if (!err && !S_ISREG(st.st_mode)) {
		log_err("meta %s: not a regular file", path);
		err = -EINVAL;
	}
	if (!err)
		err = repl__full_pread(fd, buf, (size_t)MIN((uint64_t)st.st_size,
						      2 * META_SLOT_SIZE), 0);
	if (!err)
		err = repl__meta_pick_slot(path, buf, void_seq, &sb, &slot, &version);
	free(buf);
	/* the next update, into the void slot, must not have its seq again */
	if (!err && sb.seq < void_seq)
		sb.seq = void_seq;
	if (!err && (uint64_t)st.st_size != repl__meta_file_size_for(&sb, version)) {
		log_err("meta %s: file is %jd bytes, its superblock needs %" PRIu64
			" (truncated or damaged)", path, (intmax_t)st.st_size,
			repl__meta_file_size_for(&sb, version));
		err = -EUCLEAN;
	}
	if (err) {
		repl__sys->close(fd);
		return err;
	}
	err = repl__meta_alloc(path, fd, &sb, &m);
	if (err)
		return err;
	m->cur_slot = slot;
	err = load_bitmaps(m, version);
	if (!err && version == META_VERSION_BARE)
		err = repl__meta_upgrade(m);
	/* The ranges of damaged pages, marked out of sync, on disk at once. */
	if (!err && m->bad_pages)
		err = meta_bitmap_flush(m);
	if (err) {
		repl__meta_free(m);
		return err;
	}
	*out = m;
	return 0;
}

uint64_t meta_bad_pages(const struct meta *m)
{
	return m->bad_pages;
}

/* ---- superblock updates ------------------------------------------------ */

const struct meta_super *meta_get(const struct meta *m)
{
	return &m->sb;
}

/* An update whose fdatasync failed is "maybe recorded": its slot may be in
 * the page cache (or on disk) with the highest seq, and a restart of the
 * daemon, which its failing metadata brings, would read it.  Zeroing the
 * slot, best effort, makes the next open take the superblock meta_get()
 * still shows.  Only a power loss that keeps the update and drops this
 * write brings it back. */
static void slot_void(struct meta *m, unsigned slot, uint64_t seq)
{
	uint8_t *buf = calloc(1, META_SLOT_SIZE);
	int err = buf ? repl__full_pwrite(m->fd, buf, META_SLOT_SIZE,
					  (off_t)slot * META_SLOT_SIZE) : -ENOMEM;

	free(buf);
	if (err) {
		log_err_errno(-err, "meta %s: voiding superblock slot %u after the failed "
			      "update: a restart may read that update", m->path, slot);
		m->unvoided = seq;
	}
}

static int update(struct meta *m, const struct meta_super *sb, bool void_failed)
{
	struct meta_super next = *sb;
	unsigned slot = 1 - m->cur_slot;
	const char *why = repl__meta_super_invalid(sb);
	uint8_t *buf;
	int err;

	if (m->broken)
		return m->broken;
	if (!why && (sb->size != m->sb.size || sb->region_shift != m->sb.region_shift))
		why = "size and region_shift cannot change";
	if (why) {
		log_err("meta %s: update refused: %s", m->path, why);
		return -EINVAL;
	}
	buf = malloc(META_SLOT_SIZE);
	if (!buf)
		return -ENOMEM;
	next.seq = m->sb.seq + 1;
	if (next.disk_state != META_INCONSISTENT)
		next.flags &= ~META_F_PARTIAL;
	repl__meta_slot_encode(&next, buf);
	err = repl__full_pwrite(m->fd, buf, META_SLOT_SIZE, (off_t)slot * META_SLOT_SIZE);
	free(buf);
	/* As after a failed fdatasync: no later update may write, from
	 * meta_get(), a superblock without this one's change (a peer not
	 * recorded Outdated, this replica not recorded Outdated), and the
	 * caller does not go on as if it was made.  A restart reads what
	 * the slots hold (a torn slot fails its check). */
	if (err) {
		log_err_errno(-err, "meta %s: writing superblock slot %u; refusing further "
			      "writes", m->path, slot);
		m->broken = -EIO;
		return err;
	}
	err = repl__meta_sync_fd(m, "a superblock update");
	if (err) {
		if (void_failed)
			slot_void(m, slot, next.seq);
		return err;
	}
	m->sb = next;
	m->cur_slot = slot;
	return 0;
}

int meta_update(struct meta *m, const struct meta_super *sb)
{
	return update(m, sb, false);
}

int meta_update_void_failed(struct meta *m, const struct meta_super *sb)
{
	return update(m, sb, true);
}

uint64_t meta_unvoided(const struct meta *m)
{
	return m->unvoided;
}

void meta_assume(struct meta *m, const struct meta_super *sb)
{
	struct meta_super next = *sb;

	next.size = m->sb.size;
	next.region_shift = m->sb.region_shift;
	next.seq = m->sb.seq + 1;
	m->sb = next;
	if (!m->broken) {
		log_err("meta %s: an update that may or may not be on disk is assumed; "
			"refusing further writes", m->path);
		m->broken = -EIO;
	}
}

void meta_refuse(struct meta *m, const char *why)
{
	if (m->broken)
		return;
	log_err("meta %s: %s; refusing further writes", m->path, why);
	m->broken = -EIO;
}

int meta_broken(const struct meta *m)
{
	return m->broken;
}

void meta_close(struct meta *m)
{
	if (!m)
		return;
	if (m->pages_dirty && !m->broken)
		meta_bitmap_flush(m);
	repl__meta_free(m);
}

/* ---- identifiers --------------------------------------------------------- */

int meta_generate_uuid(uint8_t uuid[16])
{
	int err = random_bytes(uuid, 16);

	if (err)
		return err;
	uuid[6] = (uuid[6] & 0x0f) | 0x40;
	uuid[8] = (uuid[8] & 0x3f) | 0x80;
	return 0;
}

uint64_t meta_new_gen(void)
{
	static uint64_t fallback;
	uint64_t g = 0;

	while (g == 0) {
		if (random_bytes(&g, sizeof(g)) == 0)
			continue;
		/* getrandom() failing is next to impossible; splitmix64 over
		 * the clock keeps us going without blocking. */
		g = (fallback += now_mono_ns() + UINT64_C(0x9e3779b97f4a7c15));
		g = (g ^ (g >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
		g = (g ^ (g >> 27)) * UINT64_C(0x94d049bb133111eb);
		g ^= g >> 31;
	}
	return g;
}
