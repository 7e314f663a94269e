/* meta.c: the replica metadata file of meta.h: encoding and validation of
 * the two superblock slots, atomic creation, crash-safe updates, and the
 * in-memory dirty bitmaps with page-granular flushing.  It is not a policy:
 * it never decides a role, a disk state or a generation, and it does no I/O
 * on the backing store.
 *
 * Superblock slot, version 1 (little-endian, offsets in bytes):
 *
 *   0    8   magic "REPLMETA"       60   4   reserved (0)
 *   8    4   version (1)            64   8   gen_current
 *   12   4   slot size (4096)       72   8   gen_bitmap
 *   16   8   seq                    80   8   gen_history[0]
 *   24  16   uuid                   88   8   gen_history[1]
 *   40   8   size                   96   8   bitmap offset (8192)
 *   48   4   region_shift           104  8   bitmap stride (bytes per peer)
 *   52   1   role                   112  88  peer slot 0
 *   53   1   disk_state             200  88  peer slot 1
 *   54   2   number of peer slots   288  48  gen_history[2..7]
 *   56   4   flags                  336      zero up to 4092
 *                                   4092 4   CRC32C of bytes [0, 4092)
 *
 *   peer slot: 0 72 node (NUL terminated, zero padded), 72 1 disk_state,
 *              73 7 reserved (0), 80 8 bitmap_gen
 *
 * gen_history[2..7] came with no version change: every version wrote
 * zeros there and no version reads them, so a file written before holds
 * an empty deeper history, and an older build reading a newer file sees
 * the two newest entries only (less ancestry, never a wrong one).
 *
 * magic, version, seq and the CRC keep their places in every version, so
 * that a newer file is recognised as such rather than as garbage.
 *
 * Bitmap page, version 3 (each bitmap is a whole number of these):
 *
 *   0    4088  511 little-endian 64-bit words of bits
 *   4088 4     page number: bitmap * pages per bitmap + page
 *   4092 4     CRC32C of bytes [0, 4092)
 *
 * A page that fails its check (a flipped bit, a torn or lost write, a page
 * written at the wrong place) cannot say which regions it dropped, so every
 * region it covers is marked out of sync: a resync of that range, never a
 * silent gap.  Version 2 had bare pages (512 words, no check); such a file
 * is read and replaced by a version 3 one at open, the way meta_grow()
 * replaces a file.  In memory the words are contiguous, in on-disk byte
 * order; a flush encodes pages from them. */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "meta.h"
#include "sys.h"
#include "util.h"

#define META_MAGIC "REPLMETA"
#define META_VERSION 3u	/* 2: the write-intent bitmap; 3: checked bitmap pages */
#define META_VERSION_BARE 2u	/* the last version without page checks */

enum {
	OFF_MAGIC = 0, OFF_VERSION = 8, OFF_SLOT_SIZE = 12, OFF_SEQ = 16,
	OFF_UUID = 24, OFF_SIZE = 40, OFF_SHIFT = 48, OFF_ROLE = 52,
	OFF_DISK = 53, OFF_NPEERS = 54, OFF_FLAGS = 56, OFF_GEN_CUR = 64,
	OFF_GEN_BM = 72, OFF_GEN_HIST = 80, OFF_BM_OFF = 96, OFF_BM_STRIDE = 104,
	OFF_PEERS = 112, PEER_LEN = 88, OFF_GEN_HIST2 = 288,
	PEER_NODE = 0, PEER_NODE_LEN = 72, PEER_DISK = 72, PEER_BM_GEN = 80,
	OFF_CRC = META_SLOT_SIZE - 4,
};

_Static_assert(OFF_PEERS + META_MAX_PEERS * PEER_LEN <= OFF_GEN_HIST2, "slot overflow");
_Static_assert(OFF_GEN_HIST2 + (META_GEN_HISTORY - 2) * 8 <= OFF_CRC, "slot overflow");
_Static_assert(PEER_NODE_LEN > META_NODE_MAX, "node field too small");

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
};

const char *meta_disk_state_name(enum meta_disk_state s)
{
	switch (s) {
	case META_DISKLESS: return "Diskless";
	case META_INCONSISTENT: return "Inconsistent";
	case META_OUTDATED: return "Outdated";
	case META_CONSISTENT: return "Consistent";
	case META_UPTODATE: return "UpToDate";
	case META_FAILED: return "Failed";
	}
	return "Unknown";
}

/* ---- little-endian field access ----------------------------------- */

static void put16(uint8_t *p, uint16_t v) { v = htole16(v); memcpy(p, &v, 2); }
static void put32(uint8_t *p, uint32_t v) { v = htole32(v); memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { v = htole64(v); memcpy(p, &v, 8); }
static uint16_t get16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return le16toh(v); }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return le32toh(v); }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return le64toh(v); }

/* ---- geometry and validation --------------------------------------- */

static uint64_t regions_of(uint64_t size, uint32_t shift)
{
	return (size >> shift) + ((size & ((UINT64_C(1) << shift) - 1)) != 0);
}

/* Bitmap pages per peer (version 3), and their bytes on disk. */
static size_t pages_of(uint64_t regions)
{
	return (size_t)DIV_ROUND_UP(DIV_ROUND_UP(regions, 64), WORDS_PER_PAGE);
}

static uint64_t stride_of(uint64_t regions)
{
	return (uint64_t)pages_of(regions) * META_BITMAP_PAGE;
}

/* Version 2: bare words, page aligned. */
static uint64_t stride_bare(uint64_t regions)
{
	uint64_t bytes = DIV_ROUND_UP(regions, 64) * 8;

	return DIV_ROUND_UP(bytes, META_BITMAP_PAGE) * META_BITMAP_PAGE;
}

static uint64_t stride_for(uint64_t regions, unsigned version)
{
	return version == META_VERSION_BARE ? stride_bare(regions) : stride_of(regions);
}

static bool node_valid(const char *node, size_t field_len)
{
	size_t len = strnlen(node, field_len);

	if (len > META_NODE_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)node[i] < 0x20 || (unsigned char)node[i] > 0x7e)
			return false;
	return true;
}

/* Checks a superblock's contents; returns NULL or what is wrong with it. */
static const char *super_invalid(const struct meta_super *sb)
{
	if (sb->region_shift < META_REGION_SHIFT_MIN ||
	    sb->region_shift > META_REGION_SHIFT_MAX)
		return "region_shift out of range [12, 30]";
	if (sb->size == 0 || sb->size % 512)
		return "size is zero or not a multiple of 512";
	if (regions_of(sb->size, sb->region_shift) >
	    (uint64_t)META_BITMAP_MAX_BYTES * 8)
		return "size too large for the region size (bitmap limit)";
	if (sb->role > META_PRIMARY)
		return "unknown role";
	if (sb->disk_state > META_FAILED)
		return "unknown disk state";
	if (sb->flags & ~META_F_ALL)
		return "unknown flags";
	for (unsigned i = 0; i < META_MAX_PEERS; i++) {
		if (!node_valid(sb->peers[i].node, sizeof(sb->peers[i].node)))
			return "peer node name not NUL terminated or not printable";
		if (sb->peers[i].disk_state > META_FAILED)
			return "unknown peer disk state";
	}
	return NULL;
}

static void slot_encode(const struct meta_super *sb, uint8_t *s)
{
	memset(s, 0, META_SLOT_SIZE);
	memcpy(s + OFF_MAGIC, META_MAGIC, 8);
	put32(s + OFF_VERSION, META_VERSION);
	put32(s + OFF_SLOT_SIZE, META_SLOT_SIZE);
	put64(s + OFF_SEQ, sb->seq);
	memcpy(s + OFF_UUID, sb->uuid, 16);
	put64(s + OFF_SIZE, sb->size);
	put32(s + OFF_SHIFT, sb->region_shift);
	s[OFF_ROLE] = sb->role;
	s[OFF_DISK] = sb->disk_state;
	put16(s + OFF_NPEERS, META_MAX_PEERS);
	put32(s + OFF_FLAGS, sb->flags);
	put64(s + OFF_GEN_CUR, sb->gen_current);
	put64(s + OFF_GEN_BM, sb->gen_bitmap);
	put64(s + OFF_GEN_HIST, sb->gen_history[0]);
	put64(s + OFF_GEN_HIST + 8, sb->gen_history[1]);
	for (unsigned i = 2; i < META_GEN_HISTORY; i++)
		put64(s + OFF_GEN_HIST2 + (i - 2) * 8, sb->gen_history[i]);
	put64(s + OFF_BM_OFF, META_BITMAP_OFFSET);
	put64(s + OFF_BM_STRIDE, stride_of(regions_of(sb->size, sb->region_shift)));
	for (unsigned i = 0; i < META_MAX_PEERS; i++) {
		uint8_t *p = s + OFF_PEERS + i * PEER_LEN;

		memcpy(p + PEER_NODE, sb->peers[i].node,
		       strnlen(sb->peers[i].node, META_NODE_MAX));
		p[PEER_DISK] = sb->peers[i].disk_state;
		put64(p + PEER_BM_GEN, sb->peers[i].bitmap_gen);
	}
	put32(s + OFF_CRC, crc32c(0, s, OFF_CRC));
}

/* Decodes and validates one slot of version 2 or 3 (*version says
 * which): 0, -EUCLEAN (*why says why) or -EPROTONOSUPPORT (intact, but a
 * version we do not know). */
static int slot_decode(const uint8_t *s, struct meta_super *sb, unsigned *version,
		       const char **why)
{
	if (memcmp(s + OFF_MAGIC, META_MAGIC, 8)) {
		*why = "bad magic";
		return -EUCLEAN;
	}
	if (get32(s + OFF_CRC) != crc32c(0, s, OFF_CRC)) {
		*why = "bad checksum";
		return -EUCLEAN;
	}
	*version = get32(s + OFF_VERSION);
	if (*version != META_VERSION && *version != META_VERSION_BARE) {
		*why = "unsupported format version";
		return -EPROTONOSUPPORT;
	}
	if (get32(s + OFF_SLOT_SIZE) != META_SLOT_SIZE ||
	    get16(s + OFF_NPEERS) != META_MAX_PEERS) {
		*why = "unexpected slot size or number of peer slots";
		return -EUCLEAN;
	}
	memset(sb, 0, sizeof(*sb));
	sb->seq = get64(s + OFF_SEQ);
	memcpy(sb->uuid, s + OFF_UUID, 16);
	sb->size = get64(s + OFF_SIZE);
	sb->region_shift = get32(s + OFF_SHIFT);
	sb->role = s[OFF_ROLE];
	sb->disk_state = s[OFF_DISK];
	sb->flags = get32(s + OFF_FLAGS);
	sb->gen_current = get64(s + OFF_GEN_CUR);
	sb->gen_bitmap = get64(s + OFF_GEN_BM);
	sb->gen_history[0] = get64(s + OFF_GEN_HIST);
	sb->gen_history[1] = get64(s + OFF_GEN_HIST + 8);
	for (unsigned i = 2; i < META_GEN_HISTORY; i++)
		sb->gen_history[i] = get64(s + OFF_GEN_HIST2 + (i - 2) * 8);
	for (unsigned i = 0; i < META_MAX_PEERS; i++) {
		const uint8_t *p = s + OFF_PEERS + i * PEER_LEN;
		const char *node = (const char *)p + PEER_NODE;
		size_t len = strnlen(node, PEER_NODE_LEN);

		if (len > META_NODE_MAX) {
			*why = "peer node name not NUL terminated";
			return -EUCLEAN;
		}
		for (size_t k = len; k < PEER_NODE_LEN; k++)
			if (p[PEER_NODE + k]) {
				*why = "garbage after a peer node name";
				return -EUCLEAN;
			}
		memcpy(sb->peers[i].node, node, len);
		sb->peers[i].disk_state = p[PEER_DISK];
		sb->peers[i].bitmap_gen = get64(p + PEER_BM_GEN);
	}
	*why = super_invalid(sb);
	if (*why)
		return -EUCLEAN;
	if (get64(s + OFF_BM_OFF) != META_BITMAP_OFFSET ||
	    get64(s + OFF_BM_STRIDE) !=
		    stride_for(regions_of(sb->size, sb->region_shift), *version)) {
		*why = "bitmap placement disagrees with size and region_shift";
		return -EUCLEAN;
	}
	return 0;
}

/* ---- struct meta life cycle ------------------------------------------ */

static void meta_free(struct meta *m)
{
	if (!m)
		return;
	if (m->fd >= 0)
		repl__sys->close(m->fd);
	for (unsigned i = 0; i < META_BITMAPS; i++) {
		free(m->bm[i]);
		free(m->pstate[i]);
		free(m->pflush[i]);
	}
	free(m->path);
	free(m);
}

/* Allocates a struct meta for sb's geometry with clear bitmaps; takes fd. */
static int meta_alloc(const char *path, int fd, const struct meta_super *sb,
		      struct meta **out)
{
	struct meta *m = calloc(1, sizeof(*m));

	if (!m) {
		repl__sys->close(fd);
		return -ENOMEM;
	}
	m->fd = fd;
	m->sb = *sb;
	m->regions = regions_of(sb->size, sb->region_shift);
	m->stride = stride_of(m->regions);
	m->npages = pages_of(m->regions);
	m->path = strdup(path);
	if (!m->path)
		goto nomem;
	for (unsigned i = 0; i < META_BITMAPS; i++) {
		m->bm[i] = calloc(m->npages, PG_BITS);
		m->pstate[i] = calloc(m->npages, 1);
		m->pflush[i] = calloc(m->npages, 1);
		if (!m->bm[i] || !m->pstate[i] || !m->pflush[i])
			goto nomem;
	}
	*out = m;
	return 0;
nomem:
	meta_free(m);
	return -ENOMEM;
}

static uint64_t file_size_for(const struct meta_super *sb, unsigned version)
{
	return META_BITMAP_OFFSET +
	       META_BITMAPS * stride_for(regions_of(sb->size, sb->region_shift), version);
}

static uint64_t file_size_of(const struct meta *m)
{
	return META_BITMAP_OFFSET + META_BITMAPS * m->stride;
}

static int lock_fd(const char *path, int fd)
{
	if (repl__sys->flock(fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	if (errno == EWOULDBLOCK) {
		log_err("meta %s: in use (locked by another opener)", path);
		return -EBUSY;
	}
	log_err_errno(errno, "meta %s: flock", path);
	return -errno;
}

static int sync_fd(struct meta *m, const char *what)
{
	if (repl__sys->fdatasync(m->fd) == 0)
		return 0;
	log_err_errno(errno, "meta %s: fdatasync after %s; refusing further writes",
		      m->path, what);
	m->broken = -EIO;
	return -EIO;
}

/* ---- bitmap pages on disk ------------------------------------------------ */

static off_t page_offset(const struct meta *m, unsigned bm, size_t page)
{
	return (off_t)(META_BITMAP_OFFSET + bm * m->stride + page * META_BITMAP_PAGE);
}

static uint32_t page_number(const struct meta *m, unsigned bm, size_t page)
{
	return (uint32_t)(bm * m->npages + page);
}

static void page_encode(const struct meta *m, unsigned bm, size_t page, uint8_t *out)
{
	memcpy(out, (const uint8_t *)m->bm[bm] + page * PG_BITS, PG_BITS);
	put32(out + PG_NUM, page_number(m, bm, page));
	put32(out + PG_CRC, crc32c(0, out, PG_CRC));
}

/* Pages [first, end) of bitmap bm, encoded, into buf. */
static void pages_encode(const struct meta *m, unsigned bm, size_t first, size_t end,
			 uint8_t *buf)
{
	for (size_t p = first; p < end; p++)
		page_encode(m, bm, p, buf + (p - first) * META_BITMAP_PAGE);
}

/* Writes pages [first, end) of bitmap bm to fd, a few at a time. */
static int pages_write(const struct meta *m, int fd, unsigned bm, size_t first, size_t end)
{
	uint8_t *buf = malloc(PAGES_PER_WRITE * META_BITMAP_PAGE);
	int err = 0;

	if (!buf)
		return -ENOMEM;
	while (first < end && !err) {
		size_t n = MIN(end - first, (size_t)PAGES_PER_WRITE);

		pages_encode(m, bm, first, first + n, buf);
		err = repl__full_pwrite(fd, buf, n * META_BITMAP_PAGE, page_offset(m, bm, first));
		first += n;
	}
	free(buf);
	return err;
}

/* Every page of every bitmap: a new file, or one that replaces another. */
static int bitmaps_write_all(const struct meta *m, int fd)
{
	int err = 0;

	for (unsigned i = 0; i < META_BITMAPS && !err; i++)
		err = pages_write(m, fd, i, 0, m->npages);
	return err;
}

/* ---- create ------------------------------------------------------------ */

static int fsync_dir_of(const char *path)
{
	char *copy = strdup(path);
	int fd, err = 0;

	if (!copy)
		return -ENOMEM;
	fd = repl__sys->open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0 || repl__sys->fsync(fd) < 0)
		err = -errno;
	if (err)
		log_err_errno(-err, "meta %s: fsync of its directory", path);
	if (fd >= 0)
		repl__sys->close(fd);
	free(copy);
	return err;
}

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
	slot_encode(&m->sb, buf);
	copy.seq = 0;
	slot_encode(&copy, buf + META_SLOT_SIZE);
	err = repl__full_pwrite(m->fd, buf, 2 * META_SLOT_SIZE, 0);
	free(buf);
	if (!err)
		err = bitmaps_write_all(m, m->fd);
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
	const char *why = super_invalid(init);
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
	err = meta_alloc(path, fd, &sb, &m);
	if (!err)
		err = lock_fd(tmp, fd);
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
	err = fsync_dir_of(path);
	if (err) {
		repl__sys->unlink(path);
		goto fail;
	}
	free(tmp);
	*out = m;
	return 0;
fail:
	meta_free(m);
	free(tmp);
	return err;
}

/* ---- open ---------------------------------------------------------------- */

/* Picks the valid slot with the highest seq out of the first 8 KiB; its
 * format version is the file's. */
static int pick_slot(const char *path, const uint8_t *buf, struct meta_super *sb,
		     unsigned *slot, unsigned *version)
{
	struct meta_super cand[2];
	unsigned ver[2] = { 0, 0 };
	int rc[2];

	for (unsigned i = 0; i < 2; i++) {
		const char *why = NULL;

		rc[i] = slot_decode(buf + i * META_SLOT_SIZE, &cand[i], &ver[i], &why);
		if (rc[i] == -EPROTONOSUPPORT) {
			log_err("meta %s: slot %u has format version %" PRIu32
				", this build knows %u", path, i,
				get32(buf + i * META_SLOT_SIZE + OFF_VERSION), META_VERSION);
			return -EPROTONOSUPPORT;
		}
		if (rc[i])
			log_warn("meta %s: superblock slot %u invalid (%s); ignoring it",
				 path, i, why);
	}
	if (rc[0] && rc[1]) {
		log_err("meta %s: neither superblock slot is valid: not replagent "
			"metadata, or corrupted; refusing to use or reinitialise it",
			path);
		return -EUCLEAN;
	}
	*slot = rc[0] ? 1 : rc[1] ? 0 : cand[1].seq > cand[0].seq;
	*sb = cand[*slot];
	*version = ver[*slot];
	return 0;
}

static uint64_t bits_change(struct meta *m, unsigned peer, uint64_t first,
			    uint64_t end, bool set);

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
	bits_change(m, bm, first, end, true);
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

		err = repl__full_pread(m->fd, buf, n * META_BITMAP_PAGE, page_offset(m, bm, first));
		for (size_t k = 0; k < n && !err; k++) {
			const uint8_t *pg = buf + k * META_BITMAP_PAGE;

			if (get32(pg + PG_CRC) != crc32c(0, pg, PG_CRC))
				page_distrust(m, bm, first + k, "fails its checksum");
			else if (get32(pg + PG_NUM) != page_number(m, bm, first + k))
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
	uint64_t stride = stride_bare(m->regions);

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

static char *grow_path_of(const char *path);

/* A grow interrupted by a crash left PATH.grow; PATH itself is intact
 * (the rename never happened).  Called with PATH locked. */
static void remove_stale_grow(const char *path)
{
	char *tmp = grow_path_of(path);

	if (tmp && repl__sys->unlink(tmp) == 0)
		log_warn("meta %s: removed %s, left by a grow that did not finish", path, tmp);
	free(tmp);
}

static int upgrade(struct meta *m);

int meta_open(const char *path, struct meta **out)
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
	err = lock_fd(path, fd);
	if (!err)
		remove_stale_grow(path);
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
		err = pick_slot(path, buf, &sb, &slot, &version);
	free(buf);
	if (!err && (uint64_t)st.st_size != file_size_for(&sb, version)) {
		log_err("meta %s: file is %jd bytes, its superblock needs %" PRIu64
			" (truncated or damaged)", path, (intmax_t)st.st_size,
			file_size_for(&sb, version));
		err = -EUCLEAN;
	}
	if (err) {
		repl__sys->close(fd);
		return err;
	}
	err = meta_alloc(path, fd, &sb, &m);
	if (err)
		return err;
	m->cur_slot = slot;
	err = load_bitmaps(m, version);
	if (!err && version == META_VERSION_BARE)
		err = upgrade(m);
	/* The ranges of damaged pages, marked out of sync, on disk at once. */
	if (!err && m->bad_pages)
		err = meta_bitmap_flush(m);
	if (err) {
		meta_free(m);
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

int meta_update(struct meta *m, const struct meta_super *sb)
{
	struct meta_super next = *sb;
	unsigned slot = 1 - m->cur_slot;
	const char *why = super_invalid(sb);
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
	slot_encode(&next, buf);
	err = repl__full_pwrite(m->fd, buf, META_SLOT_SIZE, (off_t)slot * META_SLOT_SIZE);
	free(buf);
	if (err) {
		log_err_errno(-err, "meta %s: writing superblock slot %u", m->path, slot);
		return err;
	}
	err = sync_fd(m, "a superblock update");
	if (err)
		return err;
	m->sb = next;
	m->cur_slot = slot;
	return 0;
}

/* ---- growing ----------------------------------------------------------------
 *
 * A larger size moves the second and third bitmaps (the stride grows), so
 * the file cannot change in place safely.  Instead a whole new file is
 * written beside it (PATH.grow: both slots, every bitmap from memory),
 * made durable, locked, and renamed over PATH; rename is atomic, so a crash
 * leaves either the old file or the new one, both complete.  A PATH.grow
 * left by a crash is removed by the next meta_open(). */

static char *grow_path_of(const char *path)
{
	char *p;

	return asprintf(&p, "%s.grow", path) < 0 ? NULL : p;
}

/* Slot 0 current (seq of n), slot 1 an older copy, the bitmaps of n. */
static int write_grown_file(struct meta *n, uint64_t old_seq)
{
	uint8_t *buf = calloc(2, META_SLOT_SIZE);
	struct meta_super copy = n->sb;
	int err;

	if (!buf)
		return -ENOMEM;
	err = posix_fallocate(n->fd, 0, (off_t)file_size_of(n));
	if (err == EOPNOTSUPP || err == EINVAL)
		err = repl__sys->ftruncate(n->fd, (off_t)file_size_of(n)) < 0 ? errno : 0;
	err = -err;
	slot_encode(&n->sb, buf);
	copy.seq = old_seq;
	slot_encode(&copy, buf + META_SLOT_SIZE);
	if (!err)
		err = repl__full_pwrite(n->fd, buf, 2 * META_SLOT_SIZE, 0);
	free(buf);
	if (!err)
		err = bitmaps_write_all(n, n->fd);
	if (!err && repl__sys->fsync(n->fd) < 0)
		err = -errno;
	return err;
}

/* The new file, complete and durable at tmp, locked; *out owns its fd. */
static int build_grown(struct meta *m, const char *tmp, const struct meta_super *sb,
		       struct meta **out)
{
	struct meta *n = NULL;
	int fd, err;

	repl__sys->unlink(tmp);
	fd = repl__sys->open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	err = meta_alloc(m->path, fd, sb, &n);	/* takes fd */
	if (err)
		return err;
	err = lock_fd(tmp, n->fd);
	/* Every bit of the old size keeps its place; the new ones are clear. */
	for (unsigned i = 0; i < META_BITMAPS && !err; i++)
		memcpy(n->bm[i], m->bm[i], m->npages * PG_BITS);
	if (!err)
		err = write_grown_file(n, m->sb.seq);
	if (err) {
		meta_free(n);
		return err;
	}
	*out = n;
	return 0;
}

/* m takes n's file and geometry; n's shell is freed. */
static void adopt_grown(struct meta *m, struct meta *n)
{
	repl__sys->close(m->fd);
	m->fd = n->fd;
	n->fd = -1;
	m->sb = n->sb;
	m->cur_slot = 0;
	m->regions = n->regions;
	m->stride = n->stride;
	m->npages = n->npages;
	for (unsigned i = 0; i < META_BITMAPS; i++) {
		free(m->bm[i]);
		free(m->pstate[i]);
		free(m->pflush[i]);
		m->bm[i] = n->bm[i];
		m->pstate[i] = n->pstate[i];
		/* (clear: the new file was written whole and synced) */
		m->pflush[i] = n->pflush[i];
		n->bm[i] = NULL;
		n->pstate[i] = NULL;
		n->pflush[i] = NULL;
	}
	m->pages_set = 0;
	m->pages_dirty = 0;
	meta_free(n);
}

/* Replaces m's file by a new one with superblock sb and m's bitmaps (see
 * meta_grow()).  0, or -errno with m unchanged, or -EIO with m on the new
 * file but broken. */
static int replace_file(struct meta *m, const struct meta_super *sb)
{
	struct meta *n = NULL;
	char *tmp;
	int err;

	tmp = grow_path_of(m->path);
	if (!tmp)
		return -ENOMEM;
	err = build_grown(m, tmp, sb, &n);
	if (err) {
		log_err_errno(-err, "meta %s: writing the new metadata %s", m->path, tmp);
		repl__sys->unlink(tmp);
		free(tmp);
		return err;
	}
	if (repl__sys->renameat2(tmp, m->path, 0) < 0) {
		err = -errno;
		log_err_errno(-err, "meta %s: renaming %s over it", m->path, tmp);
		repl__sys->unlink(tmp);
		meta_free(n);
		free(tmp);
		return err;
	}
	free(tmp);
	adopt_grown(m, n);
	/* Without the directory on disk a crash could bring back the old
	 * file, without the bits set from now on: write nothing more. */
	err = fsync_dir_of(m->path);
	if (err) {
		log_err("meta %s: replaced, but not durably; refusing further writes", m->path);
		m->broken = -EIO;
		return -EIO;
	}
	return 0;
}

int meta_grow(struct meta *m, uint64_t size)
{
	struct meta_super sb = m->sb;
	const char *why;

	if (m->broken)
		return m->broken;
	sb.size = size;
	sb.seq = m->sb.seq + 1;
	why = size <= m->sb.size ? "the new size is not larger" : super_invalid(&sb);
	if (why) {
		log_err("meta %s: cannot grow to %" PRIu64 " bytes: %s", m->path, size, why);
		return -EINVAL;
	}
	return replace_file(m, &sb);
}

/* A version 2 file, read into memory, becomes a version 3 one holding the
 * same (seq + 1), replaced as a grow replaces it: a crash leaves one or
 * the other, each complete. */
static int upgrade(struct meta *m)
{
	struct meta_super sb = m->sb;
	int err;

	sb.seq = m->sb.seq + 1;
	err = replace_file(m, &sb);
	if (err)
		log_err_errno(-err, "meta %s: cannot upgrade it from format version %u to %u",
			      m->path, META_VERSION_BARE, META_VERSION);
	else
		log_notice("meta %s: upgraded from format version %u to %u (checked bitmap "
			   "pages)", m->path, META_VERSION_BARE, META_VERSION);
	return err;
}

/* ---- bitmaps --------------------------------------------------------------- */

uint64_t meta_regions(const struct meta *m)
{
	return m->regions;
}

static void mark_page(struct meta *m, unsigned peer, size_t word, uint8_t state)
{
	uint8_t *ps = &m->pstate[peer][word / WORDS_PER_PAGE];

	if (*ps >= state)
		return;
	if (*ps == PAGE_CLEAN)
		m->pages_dirty++;
	if (state == PAGE_SET)
		m->pages_set++;
	*ps = state;
}

/* Sets or clears regions [first, end); returns how many bits changed. */
static uint64_t bits_change(struct meta *m, unsigned peer, uint64_t first,
			    uint64_t end, bool set)
{
	uint64_t *bm = m->bm[peer];
	uint64_t changed = 0;

	while (first < end) {
		size_t w = (size_t)(first / 64);
		unsigned lo = first % 64;
		uint64_t n = MIN(end - first, 64 - lo);
		uint64_t mask = (n == 64 ? ~UINT64_C(0) : (UINT64_C(1) << n) - 1) << lo;
		uint64_t old = le64toh(bm[w]);
		uint64_t val = set ? old | mask : old & ~mask;

		if (val != old) {
			changed += (uint64_t)__builtin_popcountll(val ^ old);
			bm[w] = htole64(val);
			mark_page(m, peer, w, set ? PAGE_SET : PAGE_CLEARED);
		}
		first += n;
	}
	return changed;
}

/* End of [offset, offset + len) clamped to the volume, without overflow. */
static uint64_t range_end(const struct meta *m, uint64_t offset, uint64_t len)
{
	if (len > m->sb.size - offset)
		return m->sb.size;
	return offset + len;
}

bool meta_bit_test(const struct meta *m, unsigned peer, uint64_t region)
{
	if (peer >= META_BITMAPS || region >= m->regions)
		return false;
	return (le64toh(m->bm[peer][region / 64]) >> (region % 64)) & 1;
}

uint64_t meta_bits_set_range(struct meta *m, unsigned peer, uint64_t offset,
			     uint64_t len)
{
	uint64_t end;

	if (peer >= META_BITMAPS || len == 0 || offset >= m->sb.size)
		return 0;
	end = range_end(m, offset, len);
	return bits_change(m, peer, offset >> m->sb.region_shift,
			   ((end - 1) >> m->sb.region_shift) + 1, true);
}

uint64_t meta_bits_clear_range(struct meta *m, unsigned peer, uint64_t offset,
			       uint64_t len)
{
	uint64_t rsize = UINT64_C(1) << m->sb.region_shift;
	uint64_t first, last, end;

	if (peer >= META_BITMAPS || len == 0 || offset >= m->sb.size)
		return 0;
	end = range_end(m, offset, len);
	first = regions_of(offset, m->sb.region_shift);
	last = end == m->sb.size ? m->regions : end / rsize;
	return first < last ? bits_change(m, peer, first, last, false) : 0;
}

void meta_bits_set_all(struct meta *m, unsigned peer)
{
	if (peer < META_BITMAPS)
		bits_change(m, peer, 0, m->regions, true);
}

uint64_t meta_bits_count(const struct meta *m, unsigned peer)
{
	size_t nwords = (size_t)DIV_ROUND_UP(m->regions, 64);
	uint64_t n = 0;

	if (peer >= META_BITMAPS)
		return 0;
	for (size_t w = 0; w < nwords; w++)
		n += (uint64_t)__builtin_popcountll(le64toh(m->bm[peer][w]));
	return n;
}

uint64_t meta_bit_next(const struct meta *m, unsigned peer, uint64_t from)
{
	size_t nwords = (size_t)DIV_ROUND_UP(m->regions, 64);
	size_t w;
	uint64_t word;

	if (peer >= META_BITMAPS || from >= m->regions)
		return m->regions;
	w = (size_t)(from / 64);
	word = le64toh(m->bm[peer][w]) & (~UINT64_C(0) << (from % 64));
	for (;;) {
		if (word) {
			uint64_t r = (uint64_t)w * 64 + (uint64_t)__builtin_ctzll(word);
			return MIN(r, m->regions);
		}
		if (++w >= nwords)
			return m->regions;
		word = le64toh(m->bm[peer][w]);
	}
}

bool meta_bitmap_needs_flush(const struct meta *m)
{
	return m->pages_set != 0;
}

bool meta_bits_in_flush(const struct meta *m, unsigned bitmap, uint64_t offset,
			uint64_t len)
{
	uint64_t regions_per_page = (uint64_t)WORDS_PER_PAGE * 64, end;
	size_t p, last;

	if (bitmap >= META_BITMAPS || len == 0 || offset >= m->sb.size)
		return false;
	end = range_end(m, offset, len);
	p = (size_t)((offset >> m->sb.region_shift) / regions_per_page);
	last = (size_t)(((end - 1) >> m->sb.region_shift) / regions_per_page);
	for (; p <= last; p++)
		if (m->pflush[bitmap][p])
			return true;
	return false;
}

/* Writes one peer's dirty pages, a run of consecutive pages at a time. */
static int flush_peer(struct meta *m, unsigned peer)
{
	const uint8_t *ps = m->pstate[peer];
	size_t p = 0;

	while (p < m->npages) {
		size_t q;
		int err;

		if (ps[p] == PAGE_CLEAN) {
			p++;
			continue;
		}
		for (q = p + 1; q < m->npages && ps[q] != PAGE_CLEAN; q++)
			;
		err = pages_write(m, m->fd, peer, p, q);
		if (err) {
			log_err_errno(-err, "meta %s: writing bitmap %u", m->path, peer);
			return err;
		}
		p = q;
	}
	return 0;
}

int meta_bitmap_flush(struct meta *m)
{
	int err;

	if (m->broken)
		return m->broken;
	if (!m->pages_dirty)
		return 0;
	for (unsigned i = 0; i < META_BITMAPS; i++) {
		err = flush_peer(m, i);
		if (err)
			return err;
	}
	err = sync_fd(m, "a bitmap flush");
	if (err)
		return err;
	for (unsigned i = 0; i < META_BITMAPS; i++)
		memset(m->pstate[i], PAGE_CLEAN, m->npages);
	m->pages_set = 0;
	m->pages_dirty = 0;
	return 0;
}

/* A flush in two halves, so that only the copy runs on the loop thread and
 * the writing on a worker.  Jobs must run one at a time, in the order they
 * were begun: a later job's pages supersede an earlier one's. */
struct meta_flush_run {
	off_t off;
	size_t len;
	char *data;
};

struct meta_flush_job {
	int fd;
	const char *path;
	size_t n, cap;
	struct meta_flush_run *runs;
};

/* Pages [p, q) of bitmap peer, encoded, as the job's next run. */
static int job_add(struct meta_flush_job *j, const struct meta *m, unsigned peer,
		   size_t p, size_t q)
{
	struct meta_flush_run *r;
	size_t len = (q - p) * META_BITMAP_PAGE;

	if (j->n == j->cap) {
		size_t cap = j->cap ? j->cap * 2 : 8;
		r = realloc(j->runs, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		j->runs = r;
		j->cap = cap;
	}
	r = &j->runs[j->n];
	r->data = malloc(len);
	if (!r->data)
		return -ENOMEM;
	pages_encode(m, peer, p, q, (uint8_t *)r->data);
	r->len = len;
	r->off = page_offset(m, peer, p);
	j->n++;
	return 0;
}

static int job_add_peer(struct meta *m, struct meta_flush_job *j, unsigned peer)
{
	const uint8_t *ps = m->pstate[peer];
	size_t p = 0, q;
	int err;

	while (p < m->npages) {
		if (ps[p] == PAGE_CLEAN) {
			p++;
			continue;
		}
		for (q = p + 1; q < m->npages && ps[q] != PAGE_CLEAN; q++)
			;
		err = job_add(j, m, peer, p, q);
		if (err)
			return err;
		p = q;
	}
	return 0;
}

int meta_bitmap_flush_begin(struct meta *m, struct meta_flush_job **out)
{
	struct meta_flush_job *j;
	int err = 0;

	*out = NULL;
	if (m->broken)
		return m->broken;
	if (!m->pages_dirty)
		return 0;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	/* The job's own descriptor: meta_grow() may replace the file (and
	 * close m->fd) while the job runs.  Its writes then reach the old
	 * file, harmlessly: the new one was made from memory, which has
	 * every bit the job carries. */
	j->fd = repl__sys->dup(m->fd);
	j->path = m->path;
	if (j->fd < 0) {
		err = -errno;
		log_err_errno(-err, "meta %s: dup for a bitmap flush", m->path);
		free(j);
		return err;
	}
	for (unsigned i = 0; i < META_BITMAPS && !err; i++)
		err = job_add_peer(m, j, i);
	if (err) {
		meta_flush_job_free(j);
		return err;
	}
	for (unsigned i = 0; i < META_BITMAPS; i++) {
		for (size_t p = 0; p < m->npages; p++)
			m->pflush[i][p] = m->pstate[i][p] == PAGE_SET;
		memset(m->pstate[i], PAGE_CLEAN, m->npages);
	}
	m->pages_set = 0;
	m->pages_dirty = 0;
	*out = j;
	return 0;
}

int meta_flush_job_run(struct meta_flush_job *j)
{
	int err;

	for (size_t i = 0; i < j->n; i++) {
		err = repl__full_pwrite(j->fd, j->runs[i].data, j->runs[i].len, j->runs[i].off);
		if (err) {
			log_err_errno(-err, "meta %s: writing bitmap", j->path);
			return err;
		}
	}
	if (repl__sys->fdatasync(j->fd) < 0) {
		err = -errno;
		log_err_errno(errno, "meta %s: fdatasync of the bitmap", j->path);
		return err;
	}
	return 0;
}

void meta_flush_job_free(struct meta_flush_job *j)
{
	if (!j)
		return;
	if (j->fd >= 0)
		repl__sys->close(j->fd);
	for (size_t i = 0; i < j->n; i++)
		free(j->runs[i].data);
	free(j->runs);
	free(j);
}

void meta_flush_job_end(struct meta *m, struct meta_flush_job *j, int result)
{
	if (j && result < 0 && !m->broken) {
		log_err("meta %s: a bitmap flush failed; refusing further writes", m->path);
		m->broken = -EIO;
	}
	if (j)
		for (unsigned i = 0; i < META_BITMAPS; i++)
			memset(m->pflush[i], 0, m->npages);
	meta_flush_job_free(j);
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
	meta_free(m);
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
