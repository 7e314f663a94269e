/* meta.h: the on-disk metadata of one replica of a volume, kept in its own
 * file beside (not inside) the backing store: identity, size, role, disk
 * state, DRBD-style generation identifiers, what we know of each peer, and
 * one dirty bitmap per peer slot.  Updates are crash safe: a crash at any
 * moment leaves the file readable with the previous or the new superblock.
 * This is not a replication protocol, nor a policy: meta.c records what the
 * caller decides and never interprets roles, states, flags or generations.
 *
 * File layout (all integers little-endian, format version 3):
 *
 *   0      superblock slot 0 (META_SLOT_SIZE bytes)
 *   4096   superblock slot 1
 *   8192   dirty bitmap of peer slot 0, bitmap_stride bytes
 *   8192 + bitmap_stride       dirty bitmap of peer slot 1
 *   end    = 8192 + META_BITMAPS * bitmap_stride (the exact file size; the
 *            last bitmap is the write-intent bitmap, META_INTENT)
 *
 * A bitmap is a run of 4096-byte pages, each 511 64-bit words of bits, its
 * page number and a CRC32C (meta_format.c has the layout); bitmap_stride is
 * DIV_ROUND_UP(DIV_ROUND_UP(regions, 64), 511) pages, with regions =
 * DIV_ROUND_UP(size, 1 << region_shift).  Bit b of the 64-bit word w (word
 * w % 511 of page w / 511) covers region 64 * w + b; bits past the last
 * region are zero.  A page that fails its check at open has all of its
 * regions marked out of sync (meta_bad_pages() counts them): a damaged
 * bitmap makes a resync larger, never one that skips a region.  Format
 * version 2 (bare pages of 512 words) is read and upgraded in place.
 * Each slot holds magic "REPLMETA", version, seq and a CRC32C in
 * its last 4 bytes over the rest of the slot; see meta_format.c for every
 * field.
 * An update writes the slot not holding the current superblock with seq + 1
 * and fdatasyncs; open takes the valid slot with the highest seq.  The file
 * size changes only by meta_grow(), which replaces the whole file at once.
 *
 * Thread safety: none inside.  A struct meta is used by one thread at a
 * time; the caller serialises every call on it (including the const ones
 * against the mutating ones).  Different struct metas are independent.
 *
 * Errors: functions return 0 or -errno and log what went wrong.  -EUCLEAN
 * means the file is not (or no longer) valid metadata; it is never silently
 * reinitialised.  After an fdatasync failure the struct meta refuses further
 * writes with -EIO (the kernel may have dropped the dirty pages): close it
 * and treat the replica's disk as failed. */
#ifndef REPL_META_H
#define REPL_META_H

#include <stdbool.h>
#include <stdint.h>

/* Older generations kept (gen.h GEN_HISTORY): 2 at their old place, the
 * others in what older versions left zero (meta_format.c). */
#define META_GEN_HISTORY 8
#define META_MAX_PEERS 2
/* Bitmaps: one per peer slot, then the write-intent bitmap (the activity
 * log): regions a Primary may be writing, set durably before the write and
 * cleared lazily after it, so that after a crash only they need a resync. */
#define META_INTENT META_MAX_PEERS
#define META_BITMAPS (META_MAX_PEERS + 1)
#define META_NODE_MAX 64		/* node name length, without the NUL */

#define META_SLOT_SIZE 4096u
#define META_BITMAP_OFFSET (2 * META_SLOT_SIZE)
#define META_BITMAP_PAGE 4096u		/* flush and check granularity */
#define META_REGION_SHIFT_MIN 12
#define META_REGION_SHIFT_MAX 30
#define META_REGION_SHIFT_DEFAULT 16	/* 64 KiB per bit */
/* Largest bitmap per peer: 2^31 regions (128 TiB at 64 KiB regions). */
#define META_BITMAP_MAX_BYTES (256u << 20)

enum meta_disk_state {
	META_DISKLESS = 0,
	META_INCONSISTENT,
	META_OUTDATED,
	META_CONSISTENT,
	META_UPTODATE,
	META_FAILED,
};

/* DRBD spelling: "Diskless", "Inconsistent", "Outdated", "Consistent",
 * "UpToDate", "Failed"; "Unknown" for anything else. */
const char *meta_disk_state_name(enum meta_disk_state s);

enum meta_role { META_SECONDARY = 0, META_PRIMARY = 1 };

/* Superblock flags (meta.c stores them, the caller gives them meaning). */
#define META_F_CLEAN		(1u << 0) /* shut down cleanly */
#define META_F_PRIMARY_CRASHED	(1u << 1) /* was primary and did not demote cleanly */
#define META_F_FULL_SYNC	(1u << 2) /* bitmaps untrusted: full resync needed */
/* Went down uncleanly and its host restarted since, or it could not tell
 * (see boot_id): writes it acknowledged and had not flushed may be gone.
 * Until a resync as target or a promotion. */
#define META_F_POWER_LOST	(1u << 3)
/* With META_F_POWER_LOST: the host did restart (both boot ids known and
 * different), so the page cache is gone for sure; without it, the replica
 * could not tell (no boot id, or the flush after the crash failed) and may
 * well hold every write.  Cleared with META_F_POWER_LOST. */
#define META_F_HOST_RESTARTED	(1u << 4)
/* With META_INCONSISTENT only (meta_update() drops it otherwise): the
 * replica went Inconsistent because its disk failed writes of its
 * Primary's while it held every other one, and the regions of those
 * writes are set in every peer's bitmap (apply.c). */
#define META_F_PARTIAL		(1u << 5)
#define META_F_ALL		(META_F_CLEAN | META_F_PRIMARY_CRASHED | META_F_FULL_SYNC | \
				 META_F_POWER_LOST | META_F_HOST_RESTARTED | META_F_PARTIAL)

/* The host's boot id (/proc/sys/kernel/random/boot_id) when the replica was
 * last opened: an unclean stop with the same boot id at the next open was
 * the daemon's alone, and the page cache kept every write. */
#define META_BOOT_ID_LEN	16

/* Peer slot flags.  META_PF_BLIND: the peer's bitmap started at our
 * promotion, with the peer away; what it acknowledged to the Primary
 * before us and had not flushed is in no bitmap (that Primary kept it in
 * memory, peer_unflushed.c), so if it lost power, a bitmap resync leaves
 * it different (handshake.c).  Goes with the bitmap generation: a bitmap
 * that starts anew without it (repl__gen_store()) clears it. */
#define META_PF_BLIND		(1u << 0)
#define META_PF_ALL		META_PF_BLIND

struct meta_peer {
	char node[META_NODE_MAX + 1];	/* "" = unused slot; printable ASCII */
	uint8_t disk_state;		/* what we last knew of the peer's disk */
	uint8_t flags;			/* META_PF_* */
	uint64_t bitmap_gen;		/* gen_current when its bitmap started */
};

struct meta_super {
	uint8_t uuid[16];
	uint64_t size;			/* bytes, > 0, multiple of 512 */
	uint32_t region_shift;		/* 1 bit per (1 << region_shift) bytes */
	uint8_t role;			/* enum meta_role */
	uint8_t disk_state;		/* enum meta_disk_state */
	uint32_t flags;			/* META_F_* */
	uint64_t gen_current, gen_bitmap, gen_history[META_GEN_HISTORY];
	struct meta_peer peers[META_MAX_PEERS];
	uint8_t boot_id[META_BOOT_ID_LEN];	/* all zero: unknown */
	uint64_t seq;			/* maintained by meta.c; ignored on input */
};

struct meta;

/* Creates the file atomically (temp file in the same directory, fsync,
 * rename without replacing, fsync of the directory), mode 0600, and opens
 * it.  -EEXIST if path exists, -EINVAL for an invalid *init.  Bitmaps start
 * all clear; seq starts at 1. */
int meta_create(const char *path, const struct meta_super *init, struct meta **out);
/* Opens and validates an existing file, taking an exclusive flock(): -EBUSY
 * if another struct meta (in any process) has it open, -EUCLEAN if it is
 * not valid metadata (neither slot valid, or wrong size for its geometry),
 * -EPROTONOSUPPORT for a format version this build does not know.  A
 * version 2 file is replaced by a version 3 one first, crash safely (as
 * meta_grow() replaces it; its errors too).  Bitmap pages that fail their
 * check are logged, their ranges marked out of sync and flushed. */
int meta_open(const char *path, struct meta **out);
/* The same, where the superblock of seq void_seq (0: none) is an update
 * that failed and could not be voided (meta_unvoided()): if it is the one
 * found, the other slot is taken instead, and the next update has a seq
 * above void_seq.  How the caller kept void_seq: lossmark.c. */
int meta_open_void(const char *path, uint64_t void_seq, struct meta **out);
/* Bitmap pages found damaged by meta_open() (their ranges are dirty). */
uint64_t meta_bad_pages(const struct meta *m);
/* Writes pending bitmap pages (best effort, errors logged), closes, frees.
 * Call meta_bitmap_flush() first to learn whether that worked.  NULL ok. */
void meta_close(struct meta *m);
/* The current superblock; valid until the next meta_update or meta_close. */
const struct meta_super *meta_get(const struct meta *m);
/* Makes *sb the current superblock, durably (fdatasync) before returning;
 * sb->seq is ignored and meta_get() then shows the new seq.  size and
 * region_shift cannot change (-EINVAL); on error meta_get() is unchanged,
 * and a failed write or fdatasync leaves the metadata broken (every later
 * update refused: meta_broken()).  An update whose fdatasync failed may
 * still be found by the next open (the page cache, or a disk that took
 * the write): "maybe recorded". */
int meta_update(struct meta *m, const struct meta_super *sb);
/* The same, for an update that must not be found later once it failed,
 * as the caller acts as if it was never made (a new generation no peer is
 * then told of): after a failed fdatasync its slot is voided (best effort;
 * only a power loss that keeps the update and drops the voiding brings
 * it back), so that the next open takes the superblock meta_get() shows. */
int meta_update_void_failed(struct meta *m, const struct meta_super *sb);
/* The seq of the last update meta_update_void_failed() could not void (0:
 * none): a restart would read it unless told (meta_open_void()). */
uint64_t meta_unvoided(const struct meta *m);
/* The caller cannot go on without an update that failed: the metadata
 * refuses every further update and flush (meta_broken()), as after a
 * failed fdatasync, until the volume is opened again.  why: for the log. */
void meta_refuse(struct meta *m, const char *why);
/* After a failed meta_update of sb that the caller must not be taken
 * back from (the write may have landed: a failed update is "maybe
 * recorded"): meta_get() shows sb from now on, and the metadata refuses
 * every further update and flush (meta_broken(), as after a failed
 * fdatasync), so that a restart decides from what the disk holds.  size
 * and region_shift are kept. */
void meta_assume(struct meta *m, const struct meta_super *sb);

/* Grows the volume to size bytes: the same superblock with the new size,
 * every bit of the old size kept in place, the new ones clear.  The file is
 * replaced as a whole (PATH.grow written, fsynced, locked and renamed over
 * PATH, then the directory fsynced), so a crash at any moment leaves the
 * old metadata or the new one, each complete and valid.  Pending bitmap
 * changes reach the new file; a flush job begun before and run after is
 * harmless (it writes to the replaced file).  0, -EINVAL (not larger, not a
 * multiple of 512, or too large for the bitmap limit), or the I/O's -errno
 * with the metadata unchanged; -EIO when the new file is in use but its
 * rename may not be durable (further writes are refused, as after a failed
 * fdatasync). */
int meta_grow(struct meta *m, uint64_t size);

/* ---- dirty bitmaps, one per peer slot ---------------------------------
 * A peer index >= META_MAX_PEERS is a caller bug: tests return false and
 * the others do nothing and return 0. */

uint64_t meta_regions(const struct meta *m);
bool meta_bit_test(const struct meta *m, unsigned peer, uint64_t region);
/* Marks every region overlapping [offset, offset + len) dirty in memory
 * (clamped to the volume size); returns how many bits went 0 -> 1.  Their
 * pages then need a flush (meta_bitmap_needs_flush()). */
uint64_t meta_bits_set_range(struct meta *m, unsigned peer, uint64_t offset,
			     uint64_t len);
/* Clears only the regions lying entirely inside [offset, offset + len); the
 * last, partial region counts as entirely inside when the range reaches the
 * end of the volume.  Returns bits cleared.  Cleared bits are written lazily
 * (by the next flush) and do not make meta_bitmap_needs_flush() true. */
uint64_t meta_bits_clear_range(struct meta *m, unsigned peer, uint64_t offset,
			       uint64_t len);
void meta_bits_set_all(struct meta *m, unsigned peer);
uint64_t meta_bits_count(const struct meta *m, unsigned peer);
/* Next set bit >= from, or meta_regions() if none. */
uint64_t meta_bit_next(const struct meta *m, unsigned peer, uint64_t from);
/* True if bits were set since the last successful flush. */
bool meta_bitmap_needs_flush(const struct meta *m);
/* True if a page of bitmap covering [offset, offset + len) had set bits
 * when the running flush job copied it (meta_bitmap_flush_begin() up to
 * meta_flush_job_end()): bits there that are set in memory may not be on
 * disk before that job ends, although meta_bitmap_needs_flush() is false. */
bool meta_bits_in_flush(const struct meta *m, unsigned bitmap, uint64_t offset,
			uint64_t len);
/* Writes every changed bitmap page and fdatasyncs: once it returns 0, the
 * bitmaps as they were at the call survive a crash.  Nothing to write -> 0
 * without I/O. */
int meta_bitmap_flush(struct meta *m);

/* Random version 4 UUID; 0 or -errno. */
int meta_generate_uuid(uint8_t uuid[16]);
/* Random non-zero 64-bit generation identifier. */
uint64_t meta_new_gen(void);

/* Bitmap flush in two halves: _begin (the caller's thread, no I/O) copies
 * the changed pages and marks them clean; _run (any thread) writes them and
 * fdatasyncs.  Run jobs one at a time, in the order begun.  *job is NULL
 * when nothing needs writing.  0 or -errno. */
struct meta_flush_job;
int meta_bitmap_flush_begin(struct meta *m, struct meta_flush_job **job);
int meta_flush_job_run(struct meta_flush_job *job);
void meta_flush_job_free(struct meta_flush_job *job);
/* The caller's thread, after _run: frees the job (NULL ok).  A job that
 * failed (result < 0) leaves the metadata broken: its pages were marked
 * clean and may not be on disk, and after a failed fdatasync nothing can
 * tell (a retry may report success for data the kernel dropped), so every
 * later update, flush and flush_begin fails with -EIO. */
void meta_flush_job_end(struct meta *m, struct meta_flush_job *job, int result);
/* 0, or -EIO once a write or fdatasync of the metadata failed. */
int meta_broken(const struct meta *m);

#endif
