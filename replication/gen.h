/* gen.h: generation identifiers of a replicated volume, what two replicas
 * decide from them when they connect, and how they change.
 *
 * Each replica keeps DRBD-style generations: a current generation (the data
 * it holds), a bitmap generation (the current generation of the moment it
 * started tracking writes its peer lacks, 0 when in sync), and a short
 * history of older ones.  gen_decide() compares two replicas' generations
 * and disk states and says who syncs from whom, or that it is split brain or
 * unrelated data.  sb_decide() is the automatic split-brain recovery policy
 * (DRBD's after-sb-0pri/1pri/2pri).  The gen_on_*() transitions are the only
 * way generations change; fresh ids are passed in, so everything here is a
 * pure function: no I/O, no clock, no randomness, no global state.
 *
 * Contracts the caller keeps (they are what make the bitmap decisions
 * correct):
 *  - a *_BITMAP resync covers the union of both sides' out-of-sync bitmaps;
 *  - a *_FULL resync sets every bit in the source's bitmap, then runs as a
 *    bitmap resync, so an interrupted full sync resumes from the bitmap;
 *  - a replica that restarts after crashing as Primary sets crashed_primary
 *    and marks its activity-log regions in its own bitmap before connecting;
 *  - a replica that went down uncleanly and whose host restarted since (a
 *    power loss: the writes it acknowledged and had not flushed may be
 *    gone), or that cannot tell, sets lost_power until a resync as target
 *    or a promotion makes its data whole or the reference again.
 *
 * This is not the bitmap, the metadata store or the connection state
 * machine; it only decides. */
#ifndef REPL_GEN_H
#define REPL_GEN_H

#include <stdbool.h>
#include <stdint.h>

/* Older generations kept, newest first.  Each generation change a replica
 * away missed (a lost peer, a promotion with one away) pushes one: with 2,
 * a replica away across three of them (tests/sim.sh seeds 540, 845, 4625)
 * found no common generation with the others and stayed StandAlone; 8
 * outlasts any fault sequence the simulator and test-gen-faults play.
 * The metadata (meta.h) and the VOLUME message (wire.h) carry as many. */
#define GEN_HISTORY 8

/* Disk states, in DRBD's order of "goodness" (UNKNOWN is only for a peer's
 * disk that we cannot see). */
enum gen_disk {
	GEN_DISK_DISKLESS = 0,
	GEN_DISK_INCONSISTENT = 1,	/* partial data: resync target */
	GEN_DISK_OUTDATED = 2,		/* consistent, known to be stale */
	GEN_DISK_CONSISTENT = 3,	/* consistent, freshness unknown */
	GEN_DISK_UPTODATE = 4,
	GEN_DISK_UNKNOWN = 5,
};

struct gen_side {
	uint64_t current;	/* 0: blank replica, never held data */
	uint64_t bitmap;	/* 0: not tracking changes for a peer */
	uint64_t history[GEN_HISTORY];	/* newest first; 0 = empty */
	uint8_t disk_state;	/* enum gen_disk */
	bool primary;		/* role at the time of the handshake */
	bool crashed_primary;	/* went down uncleanly while Primary */
	bool lost_power;	/* went down uncleanly with its host: may lack
				 * writes it acknowledged (see above) */
	bool host_restarted;	/* with lost_power: its host did restart (boot
				 * ids differ), it does lack them; without: it
				 * could not tell */
	bool partial;		/* with Inconsistent and without lost_power:
				 * only writes of its Primary's that its disk
				 * failed made it so; it holds every other
				 * acknowledged write, and those regions are in
				 * its bitmaps (rules 20, 21) */
	uint32_t node_id;	/* distinct per node; tie-break only */
};

enum gen_decision {
	GEN_NO_SYNC = 0,
	GEN_SOURCE_BITMAP,	/* local is SyncSource, resync the bitmaps */
	GEN_TARGET_BITMAP,	/* local is SyncTarget, resync the bitmaps */
	GEN_SOURCE_FULL,	/* local is SyncSource of a full sync */
	GEN_TARGET_FULL,	/* local is SyncTarget of a full sync */
	GEN_SPLIT_BRAIN,	/* both sides changed independently */
	GEN_UNRELATED,		/* no common ancestor: different data */
	GEN_REFUSE,		/* a direction exists but is unsafe (see rules
				 * 7, 21, 22): stay disconnected */
};

/* Rule numbers of the decision table in gen.c; mirrored rules (local and
 * peer swapped) share a number. */
enum gen_rule {
	GEN_R_DISKLESS = 1,
	GEN_R_BOTH_BLANK = 2,
	GEN_R_BLANK = 3,
	GEN_R_SAME = 4,
	GEN_R_CRASHED = 5,
	GEN_R_BOTH_CRASHED = 6,
	GEN_R_BOTH_CRASHED_TIE = 7,
	GEN_R_BOTH_WAYS = 8,
	GEN_R_BITMAP = 9,
	GEN_R_HISTORY = 10,
	GEN_R_SB_BITMAP = 11,
	GEN_R_SB_ANCESTOR = 12,
	GEN_R_UNRELATED = 13,
	GEN_R_LOST_POWER = 14,
	GEN_R_INCONSISTENT = 20,
	GEN_R_SOURCE_INCONSISTENT = 21,
	GEN_R_TARGET_PRIMARY = 22,
	GEN_R_OUTDATED_DIVERGED = 23,
	GEN_R_SB_RESOLVED = 30,
};

struct gen_verdict {
	enum gen_decision decision;
	enum gen_rule rule;
	const char *reason;	/* static; the same text for both sides */
};

/* The decision, seen from local.  gen_decide(a, b) and gen_decide(b, a)
 * always give mirrored decisions (SOURCE <-> TARGET) with the same rule and
 * reason. */
struct gen_verdict gen_decide(const struct gen_side *local,
			      const struct gen_side *peer);
enum gen_decision gen_decision_mirror(enum gen_decision d);
const char *gen_decision_name(enum gen_decision d);
const char *gen_disk_name(uint8_t disk);
bool gen_disk_consistent(uint8_t disk);

/* ---- transitions: 0, or -EINVAL for a zero or already used new_id ---- */

/* A freshly created replica: no generations, Inconsistent, Secondary.
 * node_id is kept. */
void gen_new_volume(struct gen_side *s);
/* The operator declares this replica's data authoritative (DRBD's
 * "primary --force"): the first data of a new volume, or the survivor of a
 * manual split-brain resolution.  Becomes UpToDate with a new current. */
int gen_on_force_uptodate(struct gen_side *s, uint64_t new_id);
/* Promotion with no peer connected: -ESTALE unless the disk is UpToDate or
 * Consistent.  Starts a new current (old current to bitmap) unless the
 * bitmap already tracks changes since the split.  Becomes UpToDate. */
int gen_on_promote_disconnected(struct gen_side *s, uint64_t new_id);
/* A Primary lost its peer: the old current goes to the bitmap (or, when the
 * bitmap is already set, to the history) and a new current starts.  No-op
 * on a Secondary.  The engine calls it once the peer's outdate is
 * confirmed (replicate.c), as DRBD makes its new current UUID only when
 * I/O resumes after fencing: a Primary that crashed cut off before that
 * acknowledged nothing since, and keeps the generation the others hold. */
int gen_on_disconnect_primary(struct gen_side *s, uint64_t new_id);
/* A connected, in-sync Secondary hears that its Primary started a new
 * current generation (a promotion with a replica away, a lost peer
 * recorded Outdated): it holds the same data, so it takes the same
 * current, the old one going to the history.  Every such change must be
 * followed, or a later comparison with a replica that did follow finds
 * two histories and says split brain where nothing diverged.  No-op when
 * already equal; -EINVAL for 0.  The bitmap is left alone. */
int gen_on_primary_moved(struct gen_side *s, uint64_t primary_current);
/* Resync start.  The source makes sure it has a bitmap generation (new_id
 * if it had none) and sends it as *sync_id; the target adopts it as its
 * current and becomes Inconsistent, so an interrupted resync resumes as a
 * bitmap resync (target current == source bitmap).  (The engine's targets
 * adopt no sync id: they take the source's generations at the end, so
 * resync.c does not call gen_on_sync_source_start(): its fresh id would
 * only push an ancestor out of the history.) */
int gen_on_sync_source_start(struct gen_side *s, uint64_t new_id, uint64_t *sync_id);
int gen_on_sync_target_start(struct gen_side *s, uint64_t sync_id);
/* Resync finished, on the source: the bitmap generation moves to the
 * history and is cleared; crashed_primary is cleared. */
int gen_on_resync_done(struct gen_side *s);
/* Resync finished, on the target: it takes the source's generations (as
 * they are after gen_on_resync_done) and disk state, and holds every write
 * again (crashed_primary and lost_power are cleared).  -ESTALE if the target's
 * current is not the source's bitmap (no gen_on_sync_target_start). */
int gen_on_resync_done_target(struct gen_side *s, const struct gen_side *source);

/* ---- automatic split-brain recovery ------------------------------------- */

/* Only split brain by rule 11 (equal bitmap generations) is recoverable
 * automatically: both bitmaps then count changes since the same split, and
 * a bitmap resync repairs it.  Other split brains need the operator. */
enum sb_policy {
	SB_DISCONNECT = 0,		/* 0/1/2 primaries: never resolve */
	SB_DISCARD_ZERO_CHANGES,	/* 0 primaries: if exactly one side
					 * wrote, keep it (neither: tie-break) */
	SB_DISCARD_LEAST_CHANGES,	/* 0 primaries: keep the side with more
					 * changes (equal: tie-break) */
	SB_DISCARD_SECONDARY,		/* 1 primary: keep the Primary */
	SB_CONSENSUS,			/* 1 primary: keep the Primary if the
					 * 0-primary policy agrees */
};

enum sb_outcome { SB_STAY_STANDALONE = 0, SB_KEEP_LOCAL, SB_KEEP_PEER };

struct sb_config {
	enum sb_policy after_sb_0pri, after_sb_1pri, after_sb_2pri;
};

/* Safe defaults: resolve only when a side has nothing to lose. */
#define SB_CONFIG_DEFAULT \
	((struct sb_config){ SB_DISCARD_ZERO_CHANGES, SB_CONSENSUS, SB_DISCONNECT })

struct sb_side {
	bool primary;		/* role at the time of the handshake */
	uint64_t changes;	/* regions written since the split */
	uint32_t node_id;	/* ties: the lower node_id keeps its data */
};

struct sb_verdict {
	enum sb_outcome outcome;
	const char *reason;	/* static */
};

/* Never discards a Primary's data; a policy not valid for the number of
 * primaries (sb_policy_valid) means STAY_STANDALONE. */
struct sb_verdict sb_decide(const struct sb_side *local, const struct sb_side *peer,
			    const struct sb_config *cfg);
bool sb_policy_valid(unsigned primaries, enum sb_policy pol);
const char *sb_policy_name(enum sb_policy pol);
/* "disconnect", "discard-zero-changes", ...: 0 or -EINVAL. */
int sb_policy_parse(const char *s, enum sb_policy *out);

/* After sb_decide() on a split brain: a recoverable one (rule 11) becomes a
 * bitmap resync towards the kept side, still refused (rules 21, 22) if that
 * is unsafe; anything else stays what gen_decide() said. */
struct gen_verdict gen_after_split_brain(const struct gen_side *local,
					 const struct gen_side *peer,
					 enum sb_outcome outcome);

/* Two Secondaries (neither side Primary) after the rules above: may the
 * link carry the resync d calls for?  NULL: yes (or there is nothing to
 * carry).  Else the link carries state only, and the text says what it
 * waits for.  A resync runs between Secondaries only when neither has a
 * Primary connected (else the source could apply that Primary's writes
 * to regions it already sent; the target resyncs from the Primary), the
 * generations show the target older (rules 9, 10: not only rule 20's
 * "one side is Inconsistent") and the source is UpToDate and did not
 * crash as Primary (others may have moved on since); a split brain, unrelated data or a refusal
 * waits for a Primary (its promotion reconnects them).  Both sides pass
 * what they told each other, so they agree. */
const char *gen_secondaries_wait(struct gen_verdict gv, const struct gen_side *local,
				 const struct gen_side *peer, bool local_has_primary,
				 bool peer_has_primary);

#endif
