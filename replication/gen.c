/* gen.c: see gen.h.
 *
 * gen_decide() decision table, after DRBD's drbd_uuid_compare() and
 * drbd_sync_handshake().  The first matching row wins.  L = local, P = peer;
 * c, b, h = current, bitmap, history generations; "x in h" = equal to a
 * non-zero history entry.  A primed row is the mirror of the row above it:
 * local and peer swapped, SOURCE and TARGET swapped.  The table in
 * tests/unit/test-gen.c has test rows for every row here, in this order.
 *
 * rule  condition                                         decision
 * ----  ------------------------------------------------  ----------------
 *   1   L or P Diskless                                   NO_SYNC
 *   2   L.c == 0 and P.c == 0          (both blank)       NO_SYNC
 *   3   L.c == 0                       (local blank)      TARGET_FULL
 *   3'  P.c == 0                                          SOURCE_FULL
 *  14   L.c == P.c, only L lost power (L a Secondary)     TARGET_FULL
 *  14'  L.c == P.c, only P lost power (P a Secondary)     SOURCE_FULL
 *   4   L.c == P.c, neither crashed as Primary            NO_SYNC
 *  14a  L.c == P.c, L crashed as Primary, both lost       SOURCE_FULL
 *       power, neither Primary now, P's host restarted
 *  14a' mirror of 14a                                     TARGET_FULL
 *   5   L.c == P.c, only L crashed as Primary, L not      TARGET_BITMAP (full:
 *       Primary now, and L lost power or P is Primary     handshake.c)
 *   5'  mirror of 5                                       SOURCE_BITMAP (full)
 *   5a  L.c == P.c, only L crashed, L Primary again or    SOURCE_BITMAP (AL)
 *       its host kept its writes (P not Primary)
 *   5a' mirror of 5a                                      TARGET_BITMAP (AL)
 *   6   L.c == P.c, both crashed, L.id < P.id             SOURCE_BITMAP (AL)
 *   6'  L.c == P.c, both crashed, L.id > P.id             TARGET_BITMAP (AL)
 *   7   L.c == P.c, both crashed, L.id == P.id            REFUSE
 *   8   (L.b == P.c or P.c in L.h) and
 *       (P.b == L.c or L.c in P.h)     (points both ways) SPLIT_BRAIN
 *   9   P.b == L.c                                        TARGET_BITMAP
 *   9'  L.b == P.c                                        SOURCE_BITMAP
 *  10   L.c in P.h                                        TARGET_FULL
 *  10'  P.c in L.h                                        SOURCE_FULL
 *  11   L.b == P.b != 0                                   SPLIT_BRAIN (auto-
 *                                                         recoverable)
 *  12   {L.b, L.h} and {P.b, P.h} share a non-zero id     SPLIT_BRAIN
 *  13   otherwise                                         UNRELATED
 *
 * Then disk states and roles, on the result of rules 2..13:
 *
 *  20   exactly one side Inconsistent, the other          the consistent side
 *       consistent, and the result is not already         is source: BITMAP
 *       that sync (also after rule 13: UNRELATED);        after rules 5, 6,
 *       not when that side is partial and rules 5, 9,     9, 11, else FULL
 *       10 or 14 made it the source
 *  21   the source's disk is not consistent, and not      REFUSE
 *       partial with rule 5, 9, 10 or 14
 *  22   the target is a Primary with consistent data      REFUSE
 *  23   after rules 8, 11, 12 or 13 only (split brain,    the Primary is
 *       unrelated): one side Outdated, the other an       source: FULL
 *       UpToDate Primary
 *
 * Then, between two Secondaries only (gen_secondaries_wait()), the
 * resync of rules 2..22 runs, or the link carries state only and waits:
 *
 *  40   no resync, or a source or target: no Primary      carry it
 *       connected to either, the source UpToDate
 *  41   either has a Primary connected                    wait (from it)
 *  42   the source is not UpToDate, crashed as Primary    wait for a Primary
 *       or lost power, or the rule is not 9, 10 or 14
 *  43   split brain, unrelated, refused                   wait for a Primary
 *
 * Departures from DRBD: generations carry no flag bits (no masking); rule 8
 * makes contradictory generations split brain instead of letting rule order
 * pick a side, which keeps the table symmetric by construction; rule 12
 * counts a bitmap generation found in the other side's history as a common
 * ancestor; rule 20 after rule 4 is a full sync (DRBD: bitmap), and
 * rule 20 applies after rule 13 too (DRBD: unrelated aborts first); rule 6
 * breaks the tie by node id instead of by connection direction; rule 5
 * makes the replica that did not crash the source (DRBD: the crashed
 * Primary) when the crashed one lost power: it may have lost with it the
 * writes it had acknowledged and not flushed, which the other holds; a
 * crashed Primary whose host kept running (only its daemon died: the page
 * cache kept every write) or that was promoted again (its data made the
 * reference, role.c) is the source (5a), as in DRBD.  Rule 14 (numbered
 * last, it came last) is the same for a Secondary: plain writes are
 * acknowledged before they are flushed on both sides, so one that lost
 * power takes everything from one that did not (it cannot say which
 * regions it lost); between two that both lost power, nobody holds more,
 * unless one crashed as Primary and the other's host did restart (14a):
 * a Primary flushes before it records a peer Outdated (replicate.c), so
 * what that peer held and will never give back is durable on the Primary
 * only, and the other, whose page cache is gone, cannot say which regions
 * it lost: it takes everything (sim seed 39100 of --inline: the other was
 * made the source, and a write only the Primary and the Outdated peer
 * still held was lost).  One that only could not tell (its flush after
 * the crash failed) may hold every write, and stays the source (rule 5;
 * sim seed 1755: 14a without that condition lost a write it held).
 * "Lost power" comes from the boot id recorded in the metadata (role.c,
 * volume.c); a replica that cannot tell counts as having lost it.
 * A partial Inconsistent side (gen.h; DRBD has none: its disk detaches)
 * holds every acknowledged write outside the regions its failed writes
 * touched, and those are in its bitmaps: where the generations or a power
 * loss make it the source (rules 5, 9, 10, 14), it stays the source; made
 * the target by rule 20, it lost acknowledged writes to a crashed Primary
 * that lost its power (sim seeds 120650 of the EIO profile: the crashed
 * Primary full-resynced over the only copy of a write). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "gen.h"
#include "util.h"

static struct gen_verdict verdict(enum gen_decision d, enum gen_rule r, const char *why)
{
	return (struct gen_verdict){ .decision = d, .rule = r, .reason = why };
}

bool gen_disk_consistent(uint8_t disk)
{
	return disk == GEN_DISK_OUTDATED || disk == GEN_DISK_CONSISTENT ||
	       disk == GEN_DISK_UPTODATE;
}

enum gen_decision gen_decision_mirror(enum gen_decision d)
{
	switch (d) {
	case GEN_SOURCE_BITMAP: return GEN_TARGET_BITMAP;
	case GEN_TARGET_BITMAP: return GEN_SOURCE_BITMAP;
	case GEN_SOURCE_FULL: return GEN_TARGET_FULL;
	case GEN_TARGET_FULL: return GEN_SOURCE_FULL;
	default: return d;
	}
}

const char *gen_decision_name(enum gen_decision d)
{
	static const char *const names[] = {
		[GEN_NO_SYNC] = "no-sync",
		[GEN_SOURCE_BITMAP] = "source-bitmap",
		[GEN_TARGET_BITMAP] = "target-bitmap",
		[GEN_SOURCE_FULL] = "source-full",
		[GEN_TARGET_FULL] = "target-full",
		[GEN_SPLIT_BRAIN] = "split-brain",
		[GEN_UNRELATED] = "unrelated",
		[GEN_REFUSE] = "refuse",
	};

	if ((unsigned)d < ARRAY_SIZE(names) && names[d])
		return names[d];
	return "?";
}

const char *gen_disk_name(uint8_t disk)
{
	static const char *const names[] = {
		[GEN_DISK_DISKLESS] = "Diskless",
		[GEN_DISK_INCONSISTENT] = "Inconsistent",
		[GEN_DISK_OUTDATED] = "Outdated",
		[GEN_DISK_CONSISTENT] = "Consistent",
		[GEN_DISK_UPTODATE] = "UpToDate",
		[GEN_DISK_UNKNOWN] = "DUnknown",
	};

	return disk < ARRAY_SIZE(names) ? names[disk] : "?";
}

static bool is_source(enum gen_decision d)
{
	return d == GEN_SOURCE_BITMAP || d == GEN_SOURCE_FULL;
}

static bool is_target(enum gen_decision d)
{
	return d == GEN_TARGET_BITMAP || d == GEN_TARGET_FULL;
}

static bool in_history(uint64_t id, const struct gen_side *s)
{
	for (unsigned i = 0; i < GEN_HISTORY; i++)
		if (s->history[i] && s->history[i] == id)
			return true;
	return false;
}

/* Rule 12: a non-zero id among one side's bitmap and history that is also
 * among the other's. */
static bool share_ancestor(const struct gen_side *a, const struct gen_side *b)
{
	if (a->bitmap && (a->bitmap == b->bitmap || in_history(a->bitmap, b)))
		return true;
	for (unsigned i = 0; i < GEN_HISTORY; i++)
		if (a->history[i] && (a->history[i] == b->bitmap || in_history(a->history[i], b)))
			return true;
	return false;
}

/* A replica that may lack writes it acknowledged (rule 14); a Primary's
 * data is the reference whatever happened to it before. */
static bool lost(const struct gen_side *s)
{
	return s->lost_power && !s->primary;
}

/* Rule 5a, for the one side that crashed as Primary: is its data the
 * reference for its activity log? */
static bool crashed_is_source(const struct gen_side *crashed, const struct gen_side *other)
{
	return crashed->primary || (!lost(crashed) && !other->primary);
}

/* Rules 14, 4..7: same current generation. */
static struct gen_verdict same_current(const struct gen_side *l, const struct gen_side *p)
{
	static const char power[] = "same current; the replica that lost power takes "
				    "everything from one that did not";
	static const char crashed[] = "same current; the crashed Primary lost power: it takes "
				      "its activity log from the replica that did not crash";
	static const char again[] = "same current; the crashed Primary kept its writes (or "
				    "was promoted again): it resyncs its activity log";
	static const char all_lost[] = "same current; the crashed Primary lost power and the "
				       "other's host restarted: the Primary's data is the reference";
	static const char both[] = "same current; both crashed as Primary, the lower node id "
				   "resyncs the activity logs";

	if (lost(l) && !lost(p))
		return verdict(GEN_TARGET_FULL, GEN_R_LOST_POWER, power);
	if (lost(p) && !lost(l))
		return verdict(GEN_SOURCE_FULL, GEN_R_LOST_POWER, power);
	if (!l->crashed_primary && !p->crashed_primary)
		return verdict(GEN_NO_SYNC, GEN_R_SAME, "same current generation");
	if (!l->crashed_primary && lost(l) && l->host_restarted && lost(p))
		return verdict(GEN_TARGET_FULL, GEN_R_LOST_POWER, all_lost);
	if (!p->crashed_primary && lost(p) && p->host_restarted && lost(l))
		return verdict(GEN_SOURCE_FULL, GEN_R_LOST_POWER, all_lost);
	if (!p->crashed_primary)
		return crashed_is_source(l, p) ? verdict(GEN_SOURCE_BITMAP, GEN_R_CRASHED, again)
					       : verdict(GEN_TARGET_BITMAP, GEN_R_CRASHED, crashed);
	if (!l->crashed_primary)
		return crashed_is_source(p, l) ? verdict(GEN_TARGET_BITMAP, GEN_R_CRASHED, again)
					       : verdict(GEN_SOURCE_BITMAP, GEN_R_CRASHED, crashed);
	if (l->node_id < p->node_id)
		return verdict(GEN_SOURCE_BITMAP, GEN_R_BOTH_CRASHED, both);
	if (l->node_id > p->node_id)
		return verdict(GEN_TARGET_BITMAP, GEN_R_BOTH_CRASHED, both);
	return verdict(GEN_REFUSE, GEN_R_BOTH_CRASHED_TIE,
		       "same current; both crashed as Primary and node ids are equal");
}

/* Rules 2..13: generations only. */
static struct gen_verdict compare_gens(const struct gen_side *l, const struct gen_side *p)
{
	bool src, tgt;

	if (!l->current && !p->current)
		return verdict(GEN_NO_SYNC, GEN_R_BOTH_BLANK, "both replicas are blank");
	if (!l->current)
		return verdict(GEN_TARGET_FULL, GEN_R_BLANK, "a blank replica syncs fully");
	if (!p->current)
		return verdict(GEN_SOURCE_FULL, GEN_R_BLANK, "a blank replica syncs fully");
	if (l->current == p->current)
		return same_current(l, p);

	/* Both currents are non-zero from here on, so zero never matches. */
	src = l->bitmap == p->current || in_history(p->current, l);
	tgt = p->bitmap == l->current || in_history(l->current, p);
	if (src && tgt)
		return verdict(GEN_SPLIT_BRAIN, GEN_R_BOTH_WAYS,
			       "each current is an ancestor of the other");
	if (p->bitmap == l->current)
		return verdict(GEN_TARGET_BITMAP, GEN_R_BITMAP,
			       "target's current is the source's bitmap generation");
	if (l->bitmap == p->current)
		return verdict(GEN_SOURCE_BITMAP, GEN_R_BITMAP,
			       "target's current is the source's bitmap generation");
	if (tgt)
		return verdict(GEN_TARGET_FULL, GEN_R_HISTORY,
			       "target's current is in the source's history");
	if (src)
		return verdict(GEN_SOURCE_FULL, GEN_R_HISTORY,
			       "target's current is in the source's history");
	if (l->bitmap && l->bitmap == p->bitmap)
		return verdict(GEN_SPLIT_BRAIN, GEN_R_SB_BITMAP,
			       "both changed since the same bitmap generation");
	if (share_ancestor(l, p))
		return verdict(GEN_SPLIT_BRAIN, GEN_R_SB_ANCESTOR,
			       "both changed since a common ancestor");
	return verdict(GEN_UNRELATED, GEN_R_UNRELATED, "no common generation");
}

/* Rules 20 and 21: a partial Inconsistent side that the generations or a
 * power loss make the source (gen.h). */
static bool partial_source(const struct gen_side *src, struct gen_verdict v)
{
	return src->disk_state == GEN_DISK_INCONSISTENT && src->partial && !src->lost_power &&
	       (v.rule == GEN_R_CRASHED || v.rule == GEN_R_BITMAP || v.rule == GEN_R_HISTORY ||
		v.rule == GEN_R_LOST_POWER);
}

/* Rules 21 and 22. */
static struct gen_verdict guard(const struct gen_side *l, const struct gen_side *p,
				struct gen_verdict v)
{
	const struct gen_side *src, *tgt;

	if (is_source(v.decision)) {
		src = l;
		tgt = p;
	} else if (is_target(v.decision)) {
		src = p;
		tgt = l;
	} else {
		return v;
	}
	if (!gen_disk_consistent(src->disk_state) && !partial_source(src, v))
		return verdict(GEN_REFUSE, GEN_R_SOURCE_INCONSISTENT,
			       "the sync source's data is not consistent");
	if (tgt->primary && gen_disk_consistent(tgt->disk_state))
		return verdict(GEN_REFUSE, GEN_R_TARGET_PRIMARY,
			       "the sync target is a Primary with consistent data");
	return v;
}

/* Rule 20. */
static struct gen_verdict inconsistent_side(const struct gen_side *l,
					    const struct gen_side *p,
					    struct gen_verdict v)
{
	bool l_ok = gen_disk_consistent(l->disk_state);
	bool p_ok = gen_disk_consistent(p->disk_state);
	bool bitmap;
	enum gen_decision d;

	if ((is_source(v.decision) && partial_source(l, v)) ||
	    (is_target(v.decision) && partial_source(p, v)))
		return v;

	/* Also over UNRELATED (rule 13): the volume UUIDs matched
	 * (handshake.c), and an Inconsistent side's data is nobody's
	 * reference.  A replica whose disk keeps failing its writes is
	 * Inconsistent and reconnects many times; each loss moves the
	 * Primary's generation, and after a few its current falls out of
	 * the Primary's history: StandAlone for good otherwise. */
	if (!(l->disk_state == GEN_DISK_INCONSISTENT && p_ok) &&
	    !(p->disk_state == GEN_DISK_INCONSISTENT && l_ok))
		return v;
	bitmap = v.rule == GEN_R_CRASHED || v.rule == GEN_R_BOTH_CRASHED ||
		 v.rule == GEN_R_BITMAP || v.rule == GEN_R_SB_BITMAP;
	if (l_ok)
		d = bitmap ? GEN_SOURCE_BITMAP : GEN_SOURCE_FULL;
	else
		d = bitmap ? GEN_TARGET_BITMAP : GEN_TARGET_FULL;
	if (d == v.decision)
		return v;
	return verdict(d, GEN_R_INCONSISTENT,
		       "one side is Inconsistent: the consistent side is the source");
}

/* Rule 23: like rule 20 for a replica recorded Outdated (by the cluster
 * or by a Primary: it holds nothing anyone needs, and cannot be promoted,
 * so whatever it wrote alone was never acknowledged) facing the Primary:
 * one that was away while the Primary's generation moved more often than
 * the history keeps (a partition while another replica's failing disk
 * made it lose and regain that one again and again: sim seed 558), or one
 * whose failed promotion left a generation it never wrote in on its disk
 * (its metadata failed, then failed to void it: sim seed 3201). */
static struct gen_verdict outdated_side(const struct gen_side *l, const struct gen_side *p,
					struct gen_verdict v)
{
	static const char why[] = "split brain or no common generation, but one side is "
				  "Outdated: it takes everything from the Primary";

	if (v.decision != GEN_UNRELATED && v.decision != GEN_SPLIT_BRAIN)
		return v;
	if (l->disk_state == GEN_DISK_OUTDATED && !l->primary && p->primary &&
	    p->disk_state == GEN_DISK_UPTODATE)
		return verdict(GEN_TARGET_FULL, GEN_R_OUTDATED_DIVERGED, why);
	if (p->disk_state == GEN_DISK_OUTDATED && !p->primary && l->primary &&
	    l->disk_state == GEN_DISK_UPTODATE)
		return verdict(GEN_SOURCE_FULL, GEN_R_OUTDATED_DIVERGED, why);
	return v;
}

struct gen_verdict gen_decide(const struct gen_side *local, const struct gen_side *peer)
{
	struct gen_verdict v;

	if (local->disk_state == GEN_DISK_DISKLESS || peer->disk_state == GEN_DISK_DISKLESS)
		return verdict(GEN_NO_SYNC, GEN_R_DISKLESS, "a diskless side has nothing to resync");
	v = compare_gens(local, peer);
	v = inconsistent_side(local, peer, v);
	v = outdated_side(local, peer, v);
	return guard(local, peer, v);
}

struct gen_verdict gen_after_split_brain(const struct gen_side *local,
					 const struct gen_side *peer,
					 enum sb_outcome outcome)
{
	struct gen_verdict v = gen_decide(local, peer);

	if (v.decision != GEN_SPLIT_BRAIN || v.rule != GEN_R_SB_BITMAP)
		return v;
	if (outcome != SB_KEEP_LOCAL && outcome != SB_KEEP_PEER)
		return v;
	v = verdict(outcome == SB_KEEP_LOCAL ? GEN_SOURCE_BITMAP : GEN_TARGET_BITMAP,
		    GEN_R_SB_RESOLVED, "split brain resolved: bitmap resync from the kept side");
	return guard(local, peer, v);
}

/* ---- transitions ------------------------------------------------------ */

static bool id_fresh(const struct gen_side *s, uint64_t id)
{
	return id && id != s->current && id != s->bitmap && !in_history(id, s);
}

/* An id already in the history is not pushed again: a duplicate would
 * push out an older ancestor that a replica away since then still holds
 * as its current (a resync ends by pushing the bitmap generation, which
 * a promotion may have put there already). */
static void push_history(struct gen_side *s, uint64_t id)
{
	if (in_history(id, s))
		return;
	memmove(&s->history[1], &s->history[0], sizeof(s->history) - sizeof(s->history[0]));
	s->history[0] = id;
}

/* The old current goes to the bitmap, or to the history when the bitmap
 * already tracks an earlier split. */
static void rotate_current(struct gen_side *s, uint64_t new_id)
{
	if (s->current) {
		if (!s->bitmap)
			s->bitmap = s->current;
		else
			push_history(s, s->current);
	}
	s->current = new_id;
}

void gen_new_volume(struct gen_side *s)
{
	uint32_t node_id = s->node_id;

	memset(s, 0, sizeof(*s));
	s->node_id = node_id;
	s->disk_state = GEN_DISK_INCONSISTENT;
}

int gen_on_force_uptodate(struct gen_side *s, uint64_t new_id)
{
	if (!id_fresh(s, new_id))
		return -EINVAL;
	rotate_current(s, new_id);
	s->disk_state = GEN_DISK_UPTODATE;
	return 0;
}

int gen_on_promote_disconnected(struct gen_side *s, uint64_t new_id)
{
	if (s->disk_state != GEN_DISK_UPTODATE && s->disk_state != GEN_DISK_CONSISTENT)
		return -ESTALE;
	if (!id_fresh(s, new_id))
		return -EINVAL;
	if (!s->bitmap)
		rotate_current(s, new_id);
	s->disk_state = GEN_DISK_UPTODATE;
	s->primary = true;
	return 0;
}

int gen_on_disconnect_primary(struct gen_side *s, uint64_t new_id)
{
	uint64_t old = s->current;

	if (!s->primary)
		return 0;
	if (!id_fresh(s, new_id))
		return -EINVAL;
	rotate_current(s, new_id);
	/* The old current went to this peer's bitmap only; it stays an
	 * ancestor for all of them: a peer lost at the same moment (a
	 * partition) is rotated next from the new current, which it never
	 * saw, and must still find the one it holds (a full sync, not
	 * "unrelated"). */
	if (old && s->bitmap == old)
		push_history(s, old);
	return 0;
}

int gen_on_primary_moved(struct gen_side *s, uint64_t primary_current)
{
	if (!primary_current)
		return -EINVAL;
	if (s->current == primary_current)
		return 0;
	if (s->current)
		push_history(s, s->current);
	s->current = primary_current;
	return 0;
}

int gen_on_sync_source_start(struct gen_side *s, uint64_t new_id, uint64_t *sync_id)
{
	if (!gen_disk_consistent(s->disk_state) || !s->current)
		return -ESTALE;
	if (!s->bitmap) {
		if (!id_fresh(s, new_id))
			return -EINVAL;
		s->bitmap = new_id;
	}
	*sync_id = s->bitmap;
	return 0;
}

int gen_on_sync_target_start(struct gen_side *s, uint64_t sync_id)
{
	if (!sync_id)
		return -EINVAL;
	s->current = sync_id;
	s->bitmap = 0;
	s->disk_state = GEN_DISK_INCONSISTENT;
	return 0;
}

int gen_on_resync_done(struct gen_side *s)
{
	if (!s->bitmap)
		return -EINVAL;
	push_history(s, s->bitmap);
	s->bitmap = 0;
	s->crashed_primary = false;
	return 0;
}

int gen_on_resync_done_target(struct gen_side *s, const struct gen_side *source)
{
	struct gen_side after = *source;

	if (!source->bitmap || s->current != source->bitmap)
		return -ESTALE;
	gen_on_resync_done(&after);
	s->current = after.current;
	s->bitmap = 0;
	memcpy(s->history, after.history, sizeof(s->history));
	s->disk_state = source->disk_state;
	s->crashed_primary = false;
	s->lost_power = false;
	return 0;
}

/* ---- split-brain recovery policy ------------------------------------- */

static const char *const sb_names[] = {
	[SB_DISCONNECT] = "disconnect",
	[SB_DISCARD_ZERO_CHANGES] = "discard-zero-changes",
	[SB_DISCARD_LEAST_CHANGES] = "discard-least-changes",
	[SB_DISCARD_SECONDARY] = "discard-secondary",
	[SB_CONSENSUS] = "consensus",
};

const char *sb_policy_name(enum sb_policy pol)
{
	if ((unsigned)pol < ARRAY_SIZE(sb_names))
		return sb_names[pol];
	return "?";
}

int sb_policy_parse(const char *s, enum sb_policy *out)
{
	for (unsigned i = 0; i < ARRAY_SIZE(sb_names); i++) {
		if (strcmp(s, sb_names[i]) == 0) {
			*out = (enum sb_policy)i;
			return 0;
		}
	}
	return -EINVAL;
}

bool sb_policy_valid(unsigned primaries, enum sb_policy pol)
{
	switch (primaries) {
	case 0:
		return pol == SB_DISCONNECT || pol == SB_DISCARD_ZERO_CHANGES ||
		       pol == SB_DISCARD_LEAST_CHANGES;
	case 1:
		return pol == SB_DISCONNECT || pol == SB_DISCARD_SECONDARY ||
		       pol == SB_CONSENSUS;
	case 2:
		return pol == SB_DISCONNECT;
	default:
		return false;
	}
}

/* What a 0-primary policy prefers, before ties are broken. */
enum sb_pref { PREF_NONE, PREF_LOCAL, PREF_PEER, PREF_TIE };

static enum sb_pref sb_prefer(const struct sb_side *l, const struct sb_side *p,
			      enum sb_policy pol, const char **why)
{
	switch (pol) {
	case SB_DISCARD_ZERO_CHANGES:
		if (!l->changes && !p->changes) {
			*why = "neither side changed";
			return PREF_TIE;
		}
		if (l->changes && p->changes) {
			*why = "both sides changed";
			return PREF_NONE;
		}
		*why = "only one side changed: it is kept";
		return l->changes ? PREF_LOCAL : PREF_PEER;
	case SB_DISCARD_LEAST_CHANGES:
		if (l->changes == p->changes) {
			*why = "both sides changed as much";
			return PREF_TIE;
		}
		*why = "the side with more changes is kept";
		return l->changes > p->changes ? PREF_LOCAL : PREF_PEER;
	case SB_DISCONNECT:
		*why = "policy is disconnect";
		return PREF_NONE;
	default:
		*why = "policy not valid without a Primary";
		return PREF_NONE;
	}
}

static struct sb_verdict sb_verdict(enum sb_outcome o, const char *why)
{
	return (struct sb_verdict){ .outcome = o, .reason = why };
}

static struct sb_verdict sb_keep(bool local, const char *why)
{
	return sb_verdict(local ? SB_KEEP_LOCAL : SB_KEEP_PEER, why);
}

static struct sb_verdict sb_0pri(const struct sb_side *l, const struct sb_side *p,
				 enum sb_policy pol)
{
	const char *why;

	switch (sb_prefer(l, p, pol, &why)) {
	case PREF_LOCAL:
		return sb_keep(true, why);
	case PREF_PEER:
		return sb_keep(false, why);
	case PREF_TIE:
		if (l->node_id == p->node_id)
			return sb_verdict(SB_STAY_STANDALONE, "tie, and node ids are equal");
		return sb_keep(l->node_id < p->node_id, "tie: the lower node id is kept");
	default:
		return sb_verdict(SB_STAY_STANDALONE, why);
	}
}

static struct sb_verdict sb_1pri(const struct sb_side *l, const struct sb_side *p,
				 const struct sb_config *cfg)
{
	const char *why;
	enum sb_pref pref;

	switch (cfg->after_sb_1pri) {
	case SB_DISCONNECT:
		return sb_verdict(SB_STAY_STANDALONE, "policy is disconnect");
	case SB_DISCARD_SECONDARY:
		return sb_keep(l->primary, "the Primary is kept");
	case SB_CONSENSUS:
		if (!sb_policy_valid(0, cfg->after_sb_0pri))
			return sb_verdict(SB_STAY_STANDALONE,
					  "consensus: policy without a Primary not valid");
		pref = sb_prefer(l, p, cfg->after_sb_0pri, &why);
		if (pref == PREF_TIE || pref == (l->primary ? PREF_LOCAL : PREF_PEER))
			return sb_keep(l->primary, "consensus: the Primary is kept");
		return sb_verdict(SB_STAY_STANDALONE,
				  "consensus: the policy without a Primary would not keep it");
	default:
		return sb_verdict(SB_STAY_STANDALONE, "policy not valid with one Primary");
	}
}

struct sb_verdict sb_decide(const struct sb_side *local, const struct sb_side *peer,
			    const struct sb_config *cfg)
{
	unsigned primaries = (unsigned)local->primary + (unsigned)peer->primary;

	switch (primaries) {
	case 0:
		if (!sb_policy_valid(0, cfg->after_sb_0pri))
			return sb_verdict(SB_STAY_STANDALONE, "policy not valid without a Primary");
		return sb_0pri(local, peer, cfg->after_sb_0pri);
	case 1:
		return sb_1pri(local, peer, cfg);
	default:
		return sb_verdict(SB_STAY_STANDALONE, "two Primaries: never resolved automatically");
	}
}

const char *gen_secondaries_wait(struct gen_verdict gv, const struct gen_side *local,
				 const struct gen_side *peer, bool local_has_primary,
				 bool peer_has_primary)
{
	enum gen_decision d = gv.decision;
	const struct gen_side *src = is_source(d) ? local : peer;

	if (local->primary || peer->primary || d == GEN_NO_SYNC)
		return NULL;
	if (!is_source(d) && !is_target(d))
		return "waits for a Primary";
	if (local_has_primary || peer_has_primary)
		return "a Primary is connected: the resync comes from it";
	/* One that lost power may lack writes the target holds (it cannot
	 * say which): only a Primary's data is the reference then (sim seed
	 * 64176 of the EIO profile: a full resync from such a Secondary took
	 * a write from the other that the Primary then did not resend). */
	if (src->disk_state != GEN_DISK_UPTODATE || src->crashed_primary || src->lost_power ||
	    (gv.rule != GEN_R_BITMAP && gv.rule != GEN_R_HISTORY &&
	     gv.rule != GEN_R_LOST_POWER))
		return "the source is not known UpToDate: waits for a Primary";
	return NULL;
}
