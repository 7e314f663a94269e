/* meta_format.c: the on-disk format of the replica metadata file (meta.h):
 * its geometry (regions, bitmap pages, file size), the validation of a
 * superblock, the encoding and decoding of the two superblock slots and
 * of bitmap pages, and the choice of the current slot at open.  No I/O
 * and no state: meta.c, meta_io.c and meta_grow.c read and write what it
 * encodes; it never decides a role, a disk state or a generation.
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
 *   56   4   flags                  336  16  boot id (0: unknown)
 *                                   352      zero up to 4092
 *                                   4092 4   CRC32C of bytes [0, 4092)
 *
 *   peer slot: 0 72 node (NUL terminated, zero padded), 72 1 disk_state,
 *              73 1 flags (META_PF_*), 74 6 reserved (0), 80 8 bitmap_gen
 *
 * gen_history[2..7] came with no version change: every version wrote
 * zeros there and no version reads them, so a file written before holds
 * an empty deeper history, and an older build reading a newer file sees
 * the two newest entries only (less ancestry, never a wrong one).  The
 * boot id came the same way: zero (unknown) in a file written before, and
 * an older build drops it (unknown again, the cautious reading).  The flag
 * META_F_POWER_LOST that came with it makes an older build refuse such a
 * file ("unknown flags") rather than forget that the replica lacks writes.
 * The peer flags came the same way; an older build drops them and resyncs
 * a blind bitmap as it is (as it did).
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

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "log.h"
#include "meta.h"
#include "meta_int.h"
#include "util.h"

#define META_MAGIC "REPLMETA"

enum {
	OFF_MAGIC = 0, OFF_VERSION = 8, OFF_SLOT_SIZE = 12, OFF_SEQ = 16,
	OFF_UUID = 24, OFF_SIZE = 40, OFF_SHIFT = 48, OFF_ROLE = 52,
	OFF_DISK = 53, OFF_NPEERS = 54, OFF_FLAGS = 56, OFF_GEN_CUR = 64,
	OFF_GEN_BM = 72, OFF_GEN_HIST = 80, OFF_BM_OFF = 96, OFF_BM_STRIDE = 104,
	OFF_PEERS = 112, PEER_LEN = 88, OFF_GEN_HIST2 = 288, OFF_BOOT_ID = 336,
	PEER_NODE = 0, PEER_NODE_LEN = 72, PEER_DISK = 72, PEER_FLAGS = 73, PEER_BM_GEN = 80,
	OFF_CRC = META_SLOT_SIZE - 4,
};

_Static_assert(OFF_PEERS + META_MAX_PEERS * PEER_LEN <= OFF_GEN_HIST2, "slot overflow");
_Static_assert(OFF_GEN_HIST2 + (META_GEN_HISTORY - 2) * 8 <= OFF_BOOT_ID, "slot overflow");
_Static_assert(OFF_BOOT_ID + META_BOOT_ID_LEN <= OFF_CRC, "slot overflow");
_Static_assert(PEER_NODE_LEN > META_NODE_MAX, "node field too small");

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

/* ---- geometry and validation --------------------------------------- */

uint64_t repl__meta_regions_of(uint64_t size, uint32_t shift)
{
	return (size >> shift) + ((size & ((UINT64_C(1) << shift) - 1)) != 0);
}

/* Bitmap pages per peer (version 3), and their bytes on disk. */
size_t repl__meta_pages_of(uint64_t regions)
{
	return (size_t)DIV_ROUND_UP(DIV_ROUND_UP(regions, 64), WORDS_PER_PAGE);
}

uint64_t repl__meta_stride_of(uint64_t regions)
{
	return (uint64_t)repl__meta_pages_of(regions) * META_BITMAP_PAGE;
}

/* Version 2: bare words, page aligned. */
uint64_t repl__meta_stride_bare(uint64_t regions)
{
	uint64_t bytes = DIV_ROUND_UP(regions, 64) * 8;

	return DIV_ROUND_UP(bytes, META_BITMAP_PAGE) * META_BITMAP_PAGE;
}

static uint64_t stride_for(uint64_t regions, unsigned version)
{
	return version == META_VERSION_BARE ? repl__meta_stride_bare(regions)
					      : repl__meta_stride_of(regions);
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
const char *repl__meta_super_invalid(const struct meta_super *sb)
{
	if (sb->region_shift < META_REGION_SHIFT_MIN ||
	    sb->region_shift > META_REGION_SHIFT_MAX)
		return "region_shift out of range [12, 30]";
	if (sb->size == 0 || sb->size % 512)
		return "size is zero or not a multiple of 512";
	if (repl__meta_regions_of(sb->size, sb->region_shift) >
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
		if (sb->peers[i].flags & ~META_PF_ALL)
			return "unknown peer flags";
	}
	return NULL;
}

void repl__meta_slot_encode(const struct meta_super *sb, uint8_t *s)
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
	memcpy(s + OFF_BOOT_ID, sb->boot_id, META_BOOT_ID_LEN);
	put64(s + OFF_BM_OFF, META_BITMAP_OFFSET);
	put64(s + OFF_BM_STRIDE,
	      repl__meta_stride_of(repl__meta_regions_of(sb->size, sb->region_shift)));
	for (unsigned i = 0; i < META_MAX_PEERS; i++) {
		uint8_t *p = s + OFF_PEERS + i * PEER_LEN;

		memcpy(p + PEER_NODE, sb->peers[i].node,
		       strnlen(sb->peers[i].node, META_NODE_MAX));
		p[PEER_DISK] = sb->peers[i].disk_state;
		p[PEER_FLAGS] = sb->peers[i].flags;
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
	memcpy(sb->boot_id, s + OFF_BOOT_ID, META_BOOT_ID_LEN);
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
		sb->peers[i].flags = p[PEER_FLAGS];
		sb->peers[i].bitmap_gen = get64(p + PEER_BM_GEN);
	}
	*why = repl__meta_super_invalid(sb);
	if (*why)
		return -EUCLEAN;
	if (get64(s + OFF_BM_OFF) != META_BITMAP_OFFSET ||
	    get64(s + OFF_BM_STRIDE) !=
		    stride_for(repl__meta_regions_of(sb->size, sb->region_shift), *version)) {
		*why = "bitmap placement disagrees with size and region_shift";
		return -EUCLEAN;
	}
	return 0;
}

/* ---- sizes and places in the file --------------------------------------- */

uint64_t repl__meta_file_size_for(const struct meta_super *sb, unsigned version)
{
	return META_BITMAP_OFFSET +
	       META_BITMAPS * stride_for(repl__meta_regions_of(sb->size, sb->region_shift),
					 version);
}

uint64_t repl__meta_file_size_of(const struct meta *m)
{
	return META_BITMAP_OFFSET + META_BITMAPS * m->stride;
}

off_t repl__meta_page_offset(const struct meta *m, unsigned bm, size_t page)
{
	return (off_t)(META_BITMAP_OFFSET + bm * m->stride + page * META_BITMAP_PAGE);
}

uint32_t repl__meta_page_number(const struct meta *m, unsigned bm, size_t page)
{
	return (uint32_t)(bm * m->npages + page);
}

static void page_encode(const struct meta *m, unsigned bm, size_t page, uint8_t *out)
{
	memcpy(out, (const uint8_t *)m->bm[bm] + page * PG_BITS, PG_BITS);
	put32(out + PG_NUM, repl__meta_page_number(m, bm, page));
	put32(out + PG_CRC, crc32c(0, out, PG_CRC));
}

/* Pages [first, end) of bitmap bm, encoded, into buf. */
void repl__meta_pages_encode(const struct meta *m, unsigned bm, size_t first, size_t end,
			     uint8_t *buf)
{
	for (size_t p = first; p < end; p++)
		page_encode(m, bm, p, buf + (p - first) * META_BITMAP_PAGE);
}

/* ---- the current slot ---------------------------------------------------- */

/* Picks the valid slot with the highest seq out of the first 8 KiB, but
 * the other valid one where that seq is void_seq (meta_open_void()); its
 * format version is the file's. */
int repl__meta_pick_slot(const char *path, const uint8_t *buf, uint64_t void_seq,
			 struct meta_super *sb, unsigned *slot, unsigned *version)
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
	if (void_seq && cand[*slot].seq == void_seq && !rc[1 - *slot]) {
		log_warn("meta %s: superblock slot %u holds an update that failed and "
			 "was never acted on (seq %" PRIu64 "): taking slot %u", path,
			 *slot, void_seq, 1 - *slot);
		*slot = 1 - *slot;
	}
	*sb = cand[*slot];
	*version = ver[*slot];
	return 0;
}
