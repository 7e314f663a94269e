/* test-gen.c: table tests of replication/gen.c.
 *
 * The first table mirrors the decision table at the top of gen.c row for
 * row, in the same order; every row is also checked with local and peer
 * swapped.  Then an exhaustive symmetry and safety sweep over small
 * generation sets, the transitions played through whole scenarios, and the
 * split-brain recovery policies. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "gen.h"
#include "unit.h"
#include "util.h"

/* Generation ids used in the tables. */
enum { A = 0xa1, B = 0xb2, C = 0xc3, D = 0xd4 };

/* S(node_id, current, bitmap, history0, history1, disk, primary, crash):
 * crash is CP (crashed as Primary, its host kept its writes), LP (lost
 * power, as a Secondary, or could not tell) or CL (both: crashed as
 * Primary and lost power); HR with LP or CL: its host did restart; PA:
 * partial (gen.h), for an Inconsistent side. */
enum { CP = 1, LP = 2, CL = 3, HR = 4, PA = 8 };
#define S(id, c, b, h0, h1, disk, pri, crash) { \
	.current = (c), .bitmap = (b), .history = { (h0), (h1) }, \
	.disk_state = GEN_DISK_##disk, .primary = (pri), \
	.crashed_primary = ((crash) & CP) != 0, .lost_power = ((crash) & LP) != 0, \
	.host_restarted = ((crash) & HR) != 0, .partial = ((crash) & PA) != 0, \
	.node_id = (id) }
#define L(...) S(1, __VA_ARGS__)
#define P(...) S(2, __VA_ARGS__)

struct row {
	const char *name;
	struct gen_side l, p;
	enum gen_decision d;
	enum gen_rule rule;
};

static const struct row rows[] = {
	/* 1 */
	{ "local diskless", L(A, 0, 0, 0, DISKLESS, 0, 0), P(B, 0, 0, 0, UPTODATE, 0, 0),
	  GEN_NO_SYNC, GEN_R_DISKLESS },
	{ "peer diskless, local primary", L(A, 0, 0, 0, UPTODATE, 1, 0), P(0, 0, 0, 0, DISKLESS, 0, 0),
	  GEN_NO_SYNC, GEN_R_DISKLESS },
	/* 2 */
	{ "both blank", L(0, 0, 0, 0, INCONSISTENT, 0, 0), P(0, 0, 0, 0, INCONSISTENT, 0, 0),
	  GEN_NO_SYNC, GEN_R_BOTH_BLANK },
	/* 3, 3' */
	{ "local blank", L(0, 0, 0, 0, INCONSISTENT, 0, 0), P(A, 0, 0, 0, UPTODATE, 1, 0),
	  GEN_TARGET_FULL, GEN_R_BLANK },
	{ "peer blank", L(A, B, C, 0, UPTODATE, 0, 0), P(0, 0, 0, 0, INCONSISTENT, 0, 0),
	  GEN_SOURCE_FULL, GEN_R_BLANK },
	/* 14, 14' */
	{ "local lost power", L(A, 0, 0, 0, UPTODATE, 0, LP), P(A, 0, 0, 0, UPTODATE, 0, 0),
	  GEN_TARGET_FULL, GEN_R_LOST_POWER },
	{ "peer lost power, local Primary", L(A, 0, 0, 0, UPTODATE, 1, 0),
	  P(A, 0, 0, 0, UPTODATE, 0, LP), GEN_SOURCE_FULL, GEN_R_LOST_POWER },
	{ "crashed primary lost power, peer did not", L(A, 0, 0, 0, CONSISTENT, 0, CL),
	  P(A, 0, 0, 0, UPTODATE, 0, 0), GEN_TARGET_FULL, GEN_R_LOST_POWER },
	{ "lost power, peer crashed primary kept its writes", L(A, 0, 0, 0, UPTODATE, 0, LP),
	  P(A, 0, 0, 0, CONSISTENT, 0, CP), GEN_TARGET_FULL, GEN_R_LOST_POWER },
	{ "both crashed primary, only local lost power", S(1, A, 0, 0, 0, CONSISTENT, 0, CL),
	  S(2, A, 0, 0, 0, CONSISTENT, 0, CP), GEN_TARGET_FULL, GEN_R_LOST_POWER },
	/* 4 */
	{ "both lost power", L(A, 0, 0, 0, UPTODATE, 0, LP), P(A, 0, 0, 0, UPTODATE, 0, LP),
	  GEN_NO_SYNC, GEN_R_SAME },
	{ "lost power, Primary again", L(A, 0, 0, 0, UPTODATE, 1, LP),
	  P(A, 0, 0, 0, UPTODATE, 0, 0), GEN_NO_SYNC, GEN_R_SAME },
	{ "same current", L(A, 0, B, 0, UPTODATE, 0, 0), P(A, 0, B, 0, UPTODATE, 0, 0),
	  GEN_NO_SYNC, GEN_R_SAME },
	{ "same current, one Primary", L(A, 0, 0, 0, UPTODATE, 1, 0), P(A, 0, 0, 0, UPTODATE, 0, 0),
	  GEN_NO_SYNC, GEN_R_SAME },
	{ "same current, outdated peer", L(A, 0, 0, 0, UPTODATE, 0, 0), P(A, 0, 0, 0, OUTDATED, 0, 0),
	  GEN_NO_SYNC, GEN_R_SAME },
	/* 14a, 14a' */
	{ "local crashed primary lost power, peer's host restarted",
	  L(A, 0, 0, 0, CONSISTENT, 0, CL), P(A, 0, 0, 0, UPTODATE, 0, LP | HR),
	  GEN_SOURCE_FULL, GEN_R_LOST_POWER },
	{ "peer crashed primary lost power, local host restarted",
	  L(A, 0, 0, 0, UPTODATE, 0, LP | HR), P(A, 0, 0, 0, CONSISTENT, 0, CL | HR),
	  GEN_TARGET_FULL, GEN_R_LOST_POWER },
	/* 5, 5' */
	{ "local crashed primary, both lost power", L(A, 0, 0, 0, CONSISTENT, 0, CL | HR),
	  P(A, 0, 0, 0, UPTODATE, 0, LP), GEN_TARGET_BITMAP, GEN_R_CRASHED },
	{ "peer crashed primary, both lost power", L(A, 0, 0, 0, UPTODATE, 0, LP),
	  P(A, 0, 0, 0, CONSISTENT, 0, CL), GEN_SOURCE_BITMAP, GEN_R_CRASHED },
	{ "crashed primary, peer promoted", L(A, 0, 0, 0, UPTODATE, 0, CP), P(A, 0, 0, 0, UPTODATE, 1, 0),
	  GEN_TARGET_BITMAP, GEN_R_CRASHED },
	/* 5a, 5a' */
	{ "crashed primary kept its writes", L(A, 0, 0, 0, CONSISTENT, 0, CP),
	  P(A, 0, 0, 0, UPTODATE, 0, 0), GEN_SOURCE_BITMAP, GEN_R_CRASHED },
	{ "peer crashed primary kept its writes", L(A, 0, 0, 0, UPTODATE, 0, 0),
	  P(A, 0, 0, 0, UPTODATE, 0, CP), GEN_TARGET_BITMAP, GEN_R_CRASHED },
	{ "crashed primary promoted again", L(A, 0, 0, 0, UPTODATE, 1, 1), P(A, 0, 0, 0, OUTDATED, 0, 0),
	  GEN_SOURCE_BITMAP, GEN_R_CRASHED },
	{ "peer crashed, promoted again", L(A, 0, 0, 0, UPTODATE, 0, 0), P(A, 0, 0, 0, UPTODATE, 1, 1),
	  GEN_TARGET_BITMAP, GEN_R_CRASHED },
	/* 6, 6' */
	{ "both crashed, local id lower", S(1, A, 0, 0, 0, CONSISTENT, 0, 1),
	  S(2, A, 0, 0, 0, CONSISTENT, 0, 1), GEN_SOURCE_BITMAP, GEN_R_BOTH_CRASHED },
	{ "both crashed, local id higher", S(9, A, 0, 0, 0, CONSISTENT, 0, 1),
	  S(4, A, 0, 0, 0, CONSISTENT, 0, 1), GEN_TARGET_BITMAP, GEN_R_BOTH_CRASHED },
	/* 7 */
	{ "both crashed, equal ids", S(3, A, 0, 0, 0, CONSISTENT, 0, 1),
	  S(3, A, 0, 0, 0, CONSISTENT, 0, 1), GEN_REFUSE, GEN_R_BOTH_CRASHED_TIE },
	/* 8 */
	{ "bitmaps point both ways", L(B, A, 0, 0, UPTODATE, 0, 0), P(A, B, 0, 0, UPTODATE, 0, 0),
	  GEN_SPLIT_BRAIN, GEN_R_BOTH_WAYS },
	{ "history and bitmap point both ways", L(B, 0, A, 0, UPTODATE, 0, 0),
	  P(A, B, 0, 0, UPTODATE, 0, 0), GEN_SPLIT_BRAIN, GEN_R_BOTH_WAYS },
	/* 9, 9' */
	{ "peer bitmap is local current", L(A, 0, 0, 0, UPTODATE, 0, 0), P(B, A, 0, 0, UPTODATE, 1, 0),
	  GEN_TARGET_BITMAP, GEN_R_BITMAP },
	{ "local bitmap is peer current", L(B, A, C, 0, UPTODATE, 1, 0), P(A, 0, C, 0, OUTDATED, 0, 0),
	  GEN_SOURCE_BITMAP, GEN_R_BITMAP },
	{ "Inconsistent target (resync resumes)", L(A, 0, 0, 0, INCONSISTENT, 0, 0),
	  P(B, A, 0, 0, UPTODATE, 0, 0), GEN_TARGET_BITMAP, GEN_R_BITMAP },
	/* 10, 10' */
	{ "local current in peer history", L(A, 0, 0, 0, OUTDATED, 0, 0), P(C, B, A, 0, UPTODATE, 1, 0),
	  GEN_TARGET_FULL, GEN_R_HISTORY },
	{ "peer current in local history[1]", L(C, 0, B, A, UPTODATE, 0, 0),
	  P(A, 0, 0, 0, UPTODATE, 0, 0), GEN_SOURCE_FULL, GEN_R_HISTORY },
	/* 11 */
	{ "equal bitmaps", L(B, A, 0, 0, UPTODATE, 1, 0), P(C, A, 0, 0, UPTODATE, 1, 0),
	  GEN_SPLIT_BRAIN, GEN_R_SB_BITMAP },
	/* 12 */
	{ "equal history", L(B, 0, A, 0, UPTODATE, 0, 0), P(C, 0, A, 0, UPTODATE, 0, 0),
	  GEN_SPLIT_BRAIN, GEN_R_SB_ANCESTOR },
	{ "bitmap in peer history", L(B, A, 0, 0, UPTODATE, 0, 0), P(C, 0, D, A, UPTODATE, 0, 0),
	  GEN_SPLIT_BRAIN, GEN_R_SB_ANCESTOR },
	/* 13 */
	{ "unrelated", L(B, A, 0, 0, UPTODATE, 0, 0), P(C, D, 0, 0, UPTODATE, 0, 0),
	  GEN_UNRELATED, GEN_R_UNRELATED },
	/* Rule 20 wins over 13: same volume UUID (handshake.c), and the
	 * Inconsistent side's generations fell out of the other's history
	 * while its disk kept failing (each loss moved the Primary's). */
	{ "unrelated, peer Inconsistent", L(B, 0, 0, 0, UPTODATE, 0, 0),
	  P(C, 0, 0, 0, INCONSISTENT, 0, 0), GEN_SOURCE_FULL, GEN_R_INCONSISTENT },
	/* 20 */
	{ "peer Inconsistent, gens said target", L(A, 0, 0, 0, UPTODATE, 0, 0),
	  P(B, A, 0, 0, INCONSISTENT, 0, 0), GEN_SOURCE_BITMAP, GEN_R_INCONSISTENT },
	{ "peer Inconsistent, same current", L(A, 0, 0, 0, UPTODATE, 0, 0),
	  P(A, 0, 0, 0, INCONSISTENT, 0, 0), GEN_SOURCE_FULL, GEN_R_INCONSISTENT },
	{ "peer Inconsistent, equal bitmaps", L(B, A, 0, 0, UPTODATE, 0, 0),
	  P(C, A, 0, 0, INCONSISTENT, 0, 0), GEN_SOURCE_BITMAP, GEN_R_INCONSISTENT },
	{ "local Inconsistent, common history", L(B, 0, A, 0, INCONSISTENT, 0, 0),
	  P(C, 0, A, 0, OUTDATED, 0, 0), GEN_TARGET_FULL, GEN_R_INCONSISTENT },
	/* 20: not for a partial side that rules 5, 9, 10 or 14 made the
	 * source */
	{ "partial, peer crashed Primary lost power", L(A, 0, 0, 0, INCONSISTENT, 0, PA),
	  P(A, 0, 0, 0, UPTODATE, 0, CL), GEN_SOURCE_FULL, GEN_R_LOST_POWER },
	{ "partial, peer lost power", L(A, 0, 0, 0, INCONSISTENT, 0, PA),
	  P(A, 0, 0, 0, UPTODATE, 0, LP), GEN_SOURCE_FULL, GEN_R_LOST_POWER },
	{ "partial, peer behind", L(B, 0, A, 0, INCONSISTENT, 0, PA),
	  P(A, 0, 0, 0, OUTDATED, 0, 0), GEN_SOURCE_FULL, GEN_R_HISTORY },
	{ "partial, peer behind on its bitmap", L(B, A, 0, 0, INCONSISTENT, 0, PA),
	  P(A, 0, 0, 0, OUTDATED, 0, 0), GEN_SOURCE_BITMAP, GEN_R_BITMAP },
	{ "partial, same current as an UpToDate peer", L(A, 0, 0, 0, INCONSISTENT, 0, PA),
	  P(A, 0, 0, 0, UPTODATE, 0, 0), GEN_TARGET_FULL, GEN_R_INCONSISTENT },
	{ "partial and crashed Primary that kept its writes", L(A, 0, 0, 0, INCONSISTENT, 0, PA),
	  P(A, 0, 0, 0, UPTODATE, 0, CP), GEN_TARGET_BITMAP, GEN_R_CRASHED },
	{ "partial behind", L(A, 0, 0, 0, INCONSISTENT, 0, PA), P(B, 0, A, 0, UPTODATE, 0, 0),
	  GEN_TARGET_FULL, GEN_R_HISTORY },
	{ "partial that lost power: Inconsistent", L(A, 0, 0, 0, INCONSISTENT, 0, PA | LP),
	  P(A, 0, 0, 0, UPTODATE, 0, LP), GEN_TARGET_FULL, GEN_R_INCONSISTENT },
	/* 21 */
	{ "both Inconsistent", L(A, 0, 0, 0, INCONSISTENT, 0, 0), P(B, A, 0, 0, INCONSISTENT, 0, 0),
	  GEN_REFUSE, GEN_R_SOURCE_INCONSISTENT },
	{ "blank and Inconsistent", L(0, 0, 0, 0, INCONSISTENT, 0, 0),
	  P(A, 0, 0, 0, INCONSISTENT, 0, 0), GEN_REFUSE, GEN_R_SOURCE_INCONSISTENT },
	{ "source disk unknown", L(A, 0, 0, 0, UPTODATE, 0, 0), P(B, A, 0, 0, UNKNOWN, 0, 0),
	  GEN_REFUSE, GEN_R_SOURCE_INCONSISTENT },
	{ "partial over an Inconsistent peer that lost power",
	  L(A, 0, 0, 0, INCONSISTENT, 0, PA), P(A, 0, 0, 0, INCONSISTENT, 0, LP),
	  GEN_SOURCE_FULL, GEN_R_LOST_POWER },
	{ "partial, both Inconsistent, same current", L(A, 0, 0, 0, INCONSISTENT, 0, PA),
	  P(A, 0, 0, 0, INCONSISTENT, 0, 0), GEN_NO_SYNC, GEN_R_SAME },
	/* 22 */
	{ "target is consistent Primary", L(A, 0, 0, 0, UPTODATE, 1, 0),
	  P(B, A, 0, 0, UPTODATE, 0, 0), GEN_REFUSE, GEN_R_TARGET_PRIMARY },
	{ "target is outdated Primary", L(A, 0, 0, 0, OUTDATED, 1, 0),
	  P(C, 0, A, 0, UPTODATE, 0, 0), GEN_REFUSE, GEN_R_TARGET_PRIMARY },
	{ "Inconsistent Primary may be target", L(A, 0, 0, 0, INCONSISTENT, 1, 0),
	  P(B, A, 0, 0, UPTODATE, 0, 0), GEN_TARGET_BITMAP, GEN_R_BITMAP },
	/* 23 */
	{ "unrelated, local Outdated, peer Primary", L(B, A, 0, 0, OUTDATED, 0, 0),
	  P(C, D, 0, 0, UPTODATE, 1, 0), GEN_TARGET_FULL, GEN_R_OUTDATED_DIVERGED },
	{ "unrelated, peer Outdated, local Primary", L(C, D, 0, 0, UPTODATE, 1, 0),
	  P(B, A, 0, 0, OUTDATED, 0, 0), GEN_SOURCE_FULL, GEN_R_OUTDATED_DIVERGED },
	{ "unrelated, Outdated and an UpToDate Secondary", L(B, A, 0, 0, OUTDATED, 0, 0),
	  P(C, D, 0, 0, UPTODATE, 0, 0), GEN_UNRELATED, GEN_R_UNRELATED },
	{ "split brain, local Outdated, peer Primary", L(B, A, 0, 0, OUTDATED, 0, 0),
	  P(C, A, 0, 0, UPTODATE, 1, 0), GEN_TARGET_FULL, GEN_R_OUTDATED_DIVERGED },
	{ "split brain, Outdated and an UpToDate Secondary", L(B, A, 0, 0, OUTDATED, 0, 0),
	  P(C, A, 0, 0, UPTODATE, 0, 0), GEN_SPLIT_BRAIN, GEN_R_SB_BITMAP },
	{ "split brain, both UpToDate, peer Primary", L(B, A, 0, 0, UPTODATE, 0, 0),
	  P(C, A, 0, 0, UPTODATE, 1, 0), GEN_SPLIT_BRAIN, GEN_R_SB_BITMAP },
};

static void check_pair(const char *name, const struct gen_side *l, const struct gen_side *p,
		       enum gen_decision d, enum gen_rule rule)
{
	struct gen_verdict a = gen_decide(l, p), b = gen_decide(p, l);

	CHECK_MSG(a.decision == d && a.rule == rule, "%s: got %s rule %d (%s), want %s rule %d",
		  name, gen_decision_name(a.decision), a.rule, a.reason,
		  gen_decision_name(d), rule);
	CHECK_MSG(b.decision == gen_decision_mirror(d) && b.rule == rule,
		  "%s mirrored: got %s rule %d (%s)", name,
		  gen_decision_name(b.decision), b.rule, b.reason);
	CHECK_MSG(a.reason && b.reason && strcmp(a.reason, b.reason) == 0,
		  "%s: reasons differ", name);
}

static void test_table(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++)
		check_pair(rows[i].name, &rows[i].l, &rows[i].p, rows[i].d, rows[i].rule);
}

/* Every combination of a small universe of generations, disk states and
 * flags: decisions mirror, and no decision syncs from a non-consistent
 * source or into a consistent Primary. */
static void test_sweep(void)
{
	static const uint8_t disks[] = { GEN_DISK_DISKLESS, GEN_DISK_INCONSISTENT,
					 GEN_DISK_OUTDATED, GEN_DISK_UPTODATE };
	enum { NG = 3, NSIDE = NG * NG * NG * NG * 4 * 2 * 8 };
	static struct gen_side sides[NSIDE];
	unsigned n = 0, bad_mirror = 0, bad_source = 0, bad_target = 0, bad_power = 0;
	unsigned seen[GEN_REFUSE + 1] = { 0 };

	for (unsigned c = 0; c < NG; c++)
	for (unsigned b = 0; b < NG; b++)
	for (unsigned h0 = 0; h0 < NG; h0++)
	for (unsigned h1 = 0; h1 < NG; h1++)
	for (unsigned d = 0; d < 4; d++)
	for (unsigned pri = 0; pri < 2; pri++)
	for (unsigned cr = 0; cr < 8; cr++)
		sides[n++] = (struct gen_side){
			.current = c, .bitmap = b, .history = { h0, h1 },
			.disk_state = disks[d], .primary = pri, .crashed_primary = cr & 1,
			.lost_power = (cr >> 1) & 1, .host_restarted = cr >> 2,
		};

	for (unsigned i = 0; i < NSIDE; i++) {
		for (unsigned j = 0; j < NSIDE; j++) {
			struct gen_side l = sides[i], p = sides[j];
			struct gen_verdict x, y;
			const struct gen_side *src = NULL, *tgt = NULL;

			l.node_id = 1;
			p.node_id = 2;
			x = gen_decide(&l, &p);
			y = gen_decide(&p, &l);
			if ((unsigned)x.decision <= GEN_REFUSE)
				seen[x.decision]++;
			if (y.decision != gen_decision_mirror(x.decision) || x.rule != y.rule ||
			    strcmp(x.reason, y.reason) != 0)
				bad_mirror++;
			if (x.decision == GEN_SOURCE_BITMAP || x.decision == GEN_SOURCE_FULL) {
				src = &l;
				tgt = &p;
			} else if (x.decision == GEN_TARGET_BITMAP || x.decision == GEN_TARGET_FULL) {
				src = &p;
				tgt = &l;
			}
			if (src && !gen_disk_consistent(src->disk_state))
				bad_source++;
			if (tgt && tgt->primary && gen_disk_consistent(tgt->disk_state))
				bad_target++;
			/* Same data but for what a power loss took: the side
			 * that kept its writes is never overwritten by one
			 * that may lack some (a Primary is the reference;
			 * an Inconsistent side holds nothing to keep). */
			if (src && l.current && l.current == p.current && src->lost_power &&
			    !src->primary && !tgt->lost_power &&
			    gen_disk_consistent(tgt->disk_state))
				bad_power++;
		}
	}
	CHECK(n == NSIDE);
	for (unsigned d = 0; d <= GEN_REFUSE; d++)
		CHECK_MSG(seen[d] > 0, "sweep never decided %s", gen_decision_name(d));
	CHECK_MSG(bad_mirror == 0, "%u pairs not mirrored", bad_mirror);
	CHECK_MSG(bad_source == 0, "%u syncs from a non-consistent source", bad_source);
	CHECK_MSG(bad_target == 0, "%u syncs into a consistent Primary", bad_target);
	CHECK_MSG(bad_power == 0, "%u syncs from a replica that lost power into one that did not",
		  bad_power);
}

/* ---- transitions, as whole scenarios ------------------------------------ */

static uint64_t next_id = 0x1000;

static uint64_t fresh(void)
{
	return next_id++;
}

static enum gen_decision decide(const struct gen_side *l, const struct gen_side *p)
{
	struct gen_verdict v = gen_decide(l, p), w = gen_decide(p, l);

	CHECK(w.decision == gen_decision_mirror(v.decision));
	return v.decision;
}

/* Runs a resync from src to tgt to completion, as the engine would. */
static void resync(struct gen_side *src, struct gen_side *tgt)
{
	uint64_t sync_id = 0;

	CHECK(gen_on_sync_source_start(src, fresh(), &sync_id) == 0);
	CHECK(gen_on_sync_target_start(tgt, sync_id) == 0);
	CHECK(tgt->disk_state == GEN_DISK_INCONSISTENT);
	CHECK(gen_on_resync_done_target(tgt, src) == 0);
	CHECK(gen_on_resync_done(src) == 0);
	CHECK(decide(src, tgt) == GEN_NO_SYNC);
	CHECK(src->bitmap == 0 && tgt->bitmap == 0);
}

/* Two fresh replicas: the operator makes a the initial data. */
static void fresh_pair(struct gen_side *a, struct gen_side *b)
{
	a->node_id = 1;
	b->node_id = 2;
	gen_new_volume(a);
	gen_new_volume(b);
	CHECK(a->node_id == 1 && b->node_id == 2);
	CHECK(decide(a, b) == GEN_NO_SYNC);
	CHECK(gen_on_promote_disconnected(a, fresh()) == -ESTALE);
	CHECK(gen_on_force_uptodate(a, fresh()) == 0);
	CHECK(a->disk_state == GEN_DISK_UPTODATE && a->bitmap == 0);
	CHECK(decide(a, b) == GEN_SOURCE_FULL);
	resync(a, b);
	CHECK(b->disk_state == GEN_DISK_UPTODATE);
}

static void test_scenarios(void)
{
	struct gen_side a, b, save;
	uint64_t sync_id, id;

	/* Initial sync, interrupted: resumes from the bitmap. */
	a.node_id = 1;
	b.node_id = 2;
	gen_new_volume(&a);
	gen_new_volume(&b);
	CHECK(gen_on_force_uptodate(&a, fresh()) == 0);
	CHECK(gen_on_sync_source_start(&a, fresh(), &sync_id) == 0);
	CHECK(gen_on_sync_target_start(&b, sync_id) == 0);
	CHECK(decide(&a, &b) == GEN_SOURCE_BITMAP);
	CHECK(decide(&b, &a) == GEN_TARGET_BITMAP);
	/* Source start again (resume) keeps the sync id. */
	CHECK(gen_on_sync_source_start(&a, fresh(), &id) == 0 && id == sync_id);
	CHECK(gen_on_resync_done_target(&b, &a) == 0);
	CHECK(gen_on_resync_done(&a) == 0);
	CHECK(decide(&a, &b) == GEN_NO_SYNC);
	CHECK(gen_on_resync_done(&a) == -EINVAL);

	/* Primary loses its peer and writes on: peer syncs from its bitmap. */
	fresh_pair(&a, &b);
	a.primary = true;	/* promoted while connected: no new current */
	save = b;
	CHECK(gen_on_disconnect_primary(&b, fresh()) == 0);	/* Secondary: no-op */
	CHECK(memcmp(&save, &b, sizeof(b)) == 0);
	CHECK(gen_on_disconnect_primary(&a, fresh()) == 0);
	CHECK(decide(&a, &b) == GEN_SOURCE_BITMAP);
	/* Demoted and promoted again while still alone: same split. */
	a.primary = false;
	id = a.current;
	CHECK(gen_on_promote_disconnected(&a, fresh()) == 0);
	CHECK(a.current == id);
	CHECK(decide(&a, &b) == GEN_SOURCE_BITMAP);
	resync(&a, &b);

	/* ... and while the peer is away the Secondary is promoted too. */
	fresh_pair(&a, &b);
	a.primary = true;
	CHECK(gen_on_disconnect_primary(&a, fresh()) == 0);
	CHECK(gen_on_promote_disconnected(&b, fresh()) == 0);
	CHECK(decide(&a, &b) == GEN_SPLIT_BRAIN);
	CHECK(gen_decide(&a, &b).rule == GEN_R_SB_BITMAP);
	/* Operator resolution: the victim forgets its data, full sync. */
	b.primary = false;
	gen_new_volume(&b);
	CHECK(decide(&a, &b) == GEN_SOURCE_FULL);
	resync(&a, &b);

	/* Failover: a (Primary) crashes, b is promoted; a comes back. */
	fresh_pair(&a, &b);
	a.primary = true;
	a.crashed_primary = true;	/* set by a at restart */
	a.primary = false;
	a.disk_state = GEN_DISK_CONSISTENT;
	/* Only its daemon died: it holds every write, and more (rule 5a). */
	CHECK(decide(&a, &b) == GEN_SOURCE_BITMAP);
	/* Its host lost power: it may have lost unflushed writes that b
	 * holds, so b is the source even if b stayed Secondary (rule 14). */
	a.lost_power = true;
	CHECK(decide(&a, &b) == GEN_TARGET_FULL);
	CHECK(gen_on_promote_disconnected(&b, fresh()) == 0);
	CHECK(decide(&a, &b) == GEN_TARGET_BITMAP);
	resync(&b, &a);
	CHECK(!a.crashed_primary && !a.lost_power);

	/* Primary loses its peer during a resync it is source of. */
	fresh_pair(&a, &b);
	a.primary = true;
	CHECK(gen_on_disconnect_primary(&a, fresh()) == 0);
	CHECK(gen_on_sync_source_start(&a, fresh(), &sync_id) == 0);
	CHECK(gen_on_sync_target_start(&b, sync_id) == 0);
	CHECK(gen_on_disconnect_primary(&a, fresh()) == 0);	/* bitmap kept */
	CHECK(a.bitmap == sync_id);
	CHECK(decide(&a, &b) == GEN_SOURCE_BITMAP);
	resync(&a, &b);

	/* Two splits in a row, peer away all along: full sync from history. */
	fresh_pair(&a, &b);
	a.primary = true;
	CHECK(gen_on_disconnect_primary(&a, fresh()) == 0);
	save = b;
	resync(&a, &b);		/* with some third replica, say */
	CHECK(gen_on_disconnect_primary(&a, fresh()) == 0);
	CHECK(decide(&a, &save) == GEN_SOURCE_FULL);

	/* A Primary with two peers loses both at once (its partition lost
	 * quorum): the engine rotates for b, then for c with the current b's
	 * loss made, which c never saw.  c comes back holding the old current:
	 * not unrelated (StandAlone for good), a full sync. */
	fresh_pair(&a, &b);
	a.primary = true;
	save = b;			/* c: in sync with a, like b */
	CHECK(gen_on_disconnect_primary(&a, fresh()) == 0);	/* b's slot */
	CHECK(decide(&a, &b) == GEN_SOURCE_BITMAP);
	a.bitmap = 0;			/* c's slot, nothing recorded yet */
	CHECK(gen_on_disconnect_primary(&a, fresh()) == 0);
	CHECK(decide(&a, &save) == GEN_SOURCE_FULL);

	/* Transition argument checks. */
	fresh_pair(&a, &b);
	CHECK(gen_on_force_uptodate(&a, 0) == -EINVAL);
	CHECK(gen_on_force_uptodate(&a, a.current) == -EINVAL);
	CHECK(gen_on_force_uptodate(&a, a.history[0]) == -EINVAL);
	a.primary = true;
	CHECK(gen_on_disconnect_primary(&a, 0) == -EINVAL);
	CHECK(gen_on_sync_target_start(&b, 0) == -EINVAL);
	b.disk_state = GEN_DISK_OUTDATED;
	CHECK(gen_on_promote_disconnected(&b, fresh()) == -ESTALE);
	b.disk_state = GEN_DISK_INCONSISTENT;
	CHECK(gen_on_sync_source_start(&b, fresh(), &id) == -ESTALE);
	CHECK(gen_on_resync_done_target(&b, &a) == -ESTALE);
}

/* ---- split-brain recovery ----------------------------------------------- */

#define SB(pri, chg, id) { .primary = (pri), .changes = (chg), .node_id = (id) }
#define CFG(p0, p1, p2) { SB_##p0, SB_##p1, SB_##p2 }
#define DEFAULT CFG(DISCARD_ZERO_CHANGES, CONSENSUS, DISCONNECT)

struct sb_row {
	const char *name;
	struct sb_side l, p;
	struct sb_config cfg;
	enum sb_outcome want;
};

static const struct sb_row sb_rows[] = {
	/* defaults, no Primary */
	{ "0pri: only peer changed", SB(0, 0, 1), SB(0, 5, 2), DEFAULT, SB_KEEP_PEER },
	{ "0pri: only local changed", SB(0, 5, 1), SB(0, 0, 2), DEFAULT, SB_KEEP_LOCAL },
	{ "0pri: both changed", SB(0, 5, 1), SB(0, 1, 2), DEFAULT, SB_STAY_STANDALONE },
	{ "0pri: neither changed, lower id", SB(0, 0, 1), SB(0, 0, 2), DEFAULT, SB_KEEP_LOCAL },
	{ "0pri: neither changed, higher id", SB(0, 0, 7), SB(0, 0, 2), DEFAULT, SB_KEEP_PEER },
	{ "0pri: neither changed, equal ids", SB(0, 0, 3), SB(0, 0, 3), DEFAULT, SB_STAY_STANDALONE },
	/* defaults, one Primary (consensus with discard-zero-changes) */
	{ "1pri: secondary unchanged", SB(1, 5, 1), SB(0, 0, 2), DEFAULT, SB_KEEP_LOCAL },
	{ "1pri: primary unchanged", SB(1, 0, 1), SB(0, 5, 2), DEFAULT, SB_STAY_STANDALONE },
	{ "1pri: both changed", SB(0, 5, 1), SB(1, 5, 2), DEFAULT, SB_STAY_STANDALONE },
	{ "1pri: neither changed", SB(0, 0, 1), SB(1, 0, 2), DEFAULT, SB_KEEP_PEER },
	/* defaults, two Primaries */
	{ "2pri: never", SB(1, 0, 1), SB(1, 5, 2), DEFAULT, SB_STAY_STANDALONE },
	/* other policies */
	{ "0pri disconnect", SB(0, 0, 1), SB(0, 5, 2), CFG(DISCONNECT, CONSENSUS, DISCONNECT),
	  SB_STAY_STANDALONE },
	{ "0pri least: peer more", SB(0, 3, 1), SB(0, 7, 2),
	  CFG(DISCARD_LEAST_CHANGES, DISCONNECT, DISCONNECT), SB_KEEP_PEER },
	{ "0pri least: local more", SB(0, 7, 1), SB(0, 3, 2),
	  CFG(DISCARD_LEAST_CHANGES, DISCONNECT, DISCONNECT), SB_KEEP_LOCAL },
	{ "0pri least: equal", SB(0, 4, 1), SB(0, 4, 2),
	  CFG(DISCARD_LEAST_CHANGES, DISCONNECT, DISCONNECT), SB_KEEP_LOCAL },
	{ "1pri disconnect", SB(1, 5, 1), SB(0, 0, 2), CFG(DISCARD_ZERO_CHANGES, DISCONNECT,
	  DISCONNECT), SB_STAY_STANDALONE },
	{ "1pri discard-secondary", SB(0, 100, 1), SB(1, 1, 2),
	  CFG(DISCONNECT, DISCARD_SECONDARY, DISCONNECT), SB_KEEP_PEER },
	{ "1pri consensus/least: primary more", SB(1, 10, 1), SB(0, 3, 2),
	  CFG(DISCARD_LEAST_CHANGES, CONSENSUS, DISCONNECT), SB_KEEP_LOCAL },
	{ "1pri consensus/least: primary less", SB(1, 3, 1), SB(0, 10, 2),
	  CFG(DISCARD_LEAST_CHANGES, CONSENSUS, DISCONNECT), SB_STAY_STANDALONE },
	{ "1pri consensus/least: equal", SB(0, 3, 1), SB(1, 3, 2),
	  CFG(DISCARD_LEAST_CHANGES, CONSENSUS, DISCONNECT), SB_KEEP_PEER },
	{ "1pri consensus/disconnect", SB(1, 5, 1), SB(0, 0, 2),
	  CFG(DISCONNECT, CONSENSUS, DISCONNECT), SB_STAY_STANDALONE },
	/* policies not valid for the number of primaries */
	{ "0pri discard-secondary", SB(0, 0, 1), SB(0, 5, 2),
	  CFG(DISCARD_SECONDARY, CONSENSUS, DISCONNECT), SB_STAY_STANDALONE },
	{ "1pri discard-zero-changes", SB(1, 5, 1), SB(0, 0, 2),
	  CFG(DISCARD_ZERO_CHANGES, DISCARD_ZERO_CHANGES, DISCONNECT), SB_STAY_STANDALONE },
	{ "1pri consensus, 0pri consensus", SB(1, 5, 1), SB(0, 0, 2),
	  CFG(CONSENSUS, CONSENSUS, DISCONNECT), SB_STAY_STANDALONE },
	{ "2pri consensus", SB(1, 5, 1), SB(1, 0, 2),
	  CFG(DISCARD_ZERO_CHANGES, CONSENSUS, CONSENSUS), SB_STAY_STANDALONE },
	{ "2pri discard-zero-changes", SB(1, 5, 1), SB(1, 0, 2),
	  CFG(DISCARD_ZERO_CHANGES, CONSENSUS, DISCARD_ZERO_CHANGES), SB_STAY_STANDALONE },
};

static enum sb_outcome sb_mirror(enum sb_outcome o)
{
	return o == SB_KEEP_LOCAL ? SB_KEEP_PEER : o == SB_KEEP_PEER ? SB_KEEP_LOCAL : o;
}

static void test_sb(void)
{
	struct sb_config def = SB_CONFIG_DEFAULT;
	const struct sb_config want_def = DEFAULT;
	enum sb_policy pol;

	CHECK(memcmp(&def, &want_def, sizeof(def)) == 0);
	for (size_t i = 0; i < ARRAY_SIZE(sb_rows); i++) {
		const struct sb_row *r = &sb_rows[i];
		struct sb_verdict a = sb_decide(&r->l, &r->p, &r->cfg);
		struct sb_verdict b = sb_decide(&r->p, &r->l, &r->cfg);

		CHECK_MSG(a.outcome == r->want, "%s: got %d (%s), want %d", r->name,
			  a.outcome, a.reason, r->want);
		CHECK_MSG(b.outcome == sb_mirror(r->want), "%s mirrored: got %d (%s)",
			  r->name, b.outcome, b.reason);
		CHECK_MSG(a.reason && b.reason && strcmp(a.reason, b.reason) == 0,
			  "%s: reasons differ", r->name);
		/* A Primary's data is never discarded. */
		CHECK(!(a.outcome == SB_KEEP_LOCAL && r->p.primary));
		CHECK(!(a.outcome == SB_KEEP_PEER && r->l.primary));
	}

	CHECK(sb_policy_valid(0, SB_DISCARD_ZERO_CHANGES));
	CHECK(sb_policy_valid(0, SB_DISCARD_LEAST_CHANGES));
	CHECK(!sb_policy_valid(0, SB_DISCARD_SECONDARY));
	CHECK(!sb_policy_valid(0, SB_CONSENSUS));
	CHECK(sb_policy_valid(1, SB_CONSENSUS));
	CHECK(sb_policy_valid(1, SB_DISCARD_SECONDARY));
	CHECK(!sb_policy_valid(1, SB_DISCARD_LEAST_CHANGES));
	CHECK(sb_policy_valid(2, SB_DISCONNECT));
	CHECK(!sb_policy_valid(2, SB_DISCARD_SECONDARY));
	CHECK(!sb_policy_valid(3, SB_DISCONNECT));
	for (int p = SB_DISCONNECT; p <= SB_CONSENSUS; p++) {
		CHECK(sb_policy_parse(sb_policy_name((enum sb_policy)p), &pol) == 0);
		CHECK((int)pol == p);
		CHECK(sb_policy_valid(0, pol) || sb_policy_valid(1, pol));
	}
	CHECK(sb_policy_parse("violently", &pol) == -EINVAL);
	CHECK(sb_policy_parse("", &pol) == -EINVAL);
}

static void test_after_split_brain(void)
{
	const struct gen_side l = L(B, A, 0, 0, UPTODATE, 0, 0);
	const struct gen_side p = P(C, A, 0, 0, UPTODATE, 0, 0);
	const struct gen_side lp = L(B, A, 0, 0, UPTODATE, 1, 0);
	const struct gen_side hl = L(B, 0, A, 0, UPTODATE, 0, 0);
	const struct gen_side hp = P(C, 0, A, 0, UPTODATE, 0, 0);
	struct gen_verdict v;

	v = gen_after_split_brain(&l, &p, SB_KEEP_LOCAL);
	CHECK(v.decision == GEN_SOURCE_BITMAP && v.rule == GEN_R_SB_RESOLVED);
	v = gen_after_split_brain(&p, &l, SB_KEEP_PEER);
	CHECK(v.decision == GEN_TARGET_BITMAP && v.rule == GEN_R_SB_RESOLVED);
	v = gen_after_split_brain(&l, &p, SB_KEEP_PEER);
	CHECK(v.decision == GEN_TARGET_BITMAP);
	v = gen_after_split_brain(&l, &p, SB_STAY_STANDALONE);
	CHECK(v.decision == GEN_SPLIT_BRAIN && v.rule == GEN_R_SB_BITMAP);
	/* Not recoverable: a common history entry only. */
	v = gen_after_split_brain(&hl, &hp, SB_KEEP_LOCAL);
	CHECK(v.decision == GEN_SPLIT_BRAIN && v.rule == GEN_R_SB_ANCESTOR);
	/* Still never into a consistent Primary. */
	v = gen_after_split_brain(&lp, &p, SB_KEEP_PEER);
	CHECK(v.decision == GEN_REFUSE && v.rule == GEN_R_TARGET_PRIMARY);
	/* Not a split brain at all: unchanged. */
	v = gen_after_split_brain(&l, &l, SB_KEEP_PEER);
	CHECK(v.decision == GEN_NO_SYNC);
}

/* gen_secondaries_wait(), rules 40..43 of gen.c: a table, each row also
 * checked from the other side (mirrored decision, sides swapped). */
struct sec_row {
	const char *name;
	enum gen_decision d;	/* from the local side */
	enum gen_rule rule;
	struct gen_side l, p;
	bool l_has, p_has;	/* a Primary connected to that side */
	bool wait;
};

static const struct sec_row sec_rows[] = {
	/* 40: the issue 16 case, no Primary anywhere: c missed writes that
	 * b holds, UpToDate; the resync runs between them. */
	{ "no primary, source uptodate, bitmap", GEN_SOURCE_BITMAP, GEN_R_BITMAP,
	  L(B, A, 0, 0, UPTODATE, 0, 0), P(A, 0, 0, 0, OUTDATED, 0, 0), 0, 0, false },
	{ "no primary, source uptodate, full", GEN_SOURCE_FULL, GEN_R_HISTORY,
	  L(B, 0, A, 0, UPTODATE, 0, 0), P(A, 0, 0, 0, OUTDATED, 0, 1), 0, 0, false },
	{ "nothing to resync", GEN_NO_SYNC, GEN_R_SAME,
	  L(A, 0, 0, 0, UPTODATE, 0, 0), P(A, 0, 0, 0, UPTODATE, 0, 0), 1, 0, false },
	{ "local primary", GEN_SOURCE_BITMAP, GEN_R_BITMAP,
	  L(B, A, 0, 0, UPTODATE, 1, 0), P(A, 0, 0, 0, OUTDATED, 0, 0), 0, 1, false },
	/* 41 */
	{ "source has a primary", GEN_SOURCE_FULL, GEN_R_HISTORY,
	  L(B, 0, A, 0, UPTODATE, 0, 0), P(A, 0, 0, 0, OUTDATED, 0, 0), 1, 0, true },
	{ "target has a primary", GEN_SOURCE_FULL, GEN_R_HISTORY,
	  L(B, 0, A, 0, UPTODATE, 0, 0), P(A, 0, 0, 0, OUTDATED, 0, 0), 0, 1, true },
	/* 42 */
	{ "source outdated", GEN_SOURCE_BITMAP, GEN_R_BITMAP,
	  L(B, A, 0, 0, OUTDATED, 0, 0), P(A, 0, 0, 0, OUTDATED, 0, 0), 0, 0, true },
	{ "source consistent", GEN_SOURCE_BITMAP, GEN_R_BITMAP,
	  L(B, A, 0, 0, CONSISTENT, 0, 0), P(A, 0, 0, 0, OUTDATED, 0, 0), 0, 0, true },
	/* 43 */
	{ "split brain", GEN_SPLIT_BRAIN, GEN_R_SB_BITMAP,
	  L(B, A, 0, 0, UPTODATE, 0, 0), P(C, A, 0, 0, UPTODATE, 0, 0), 0, 0, true },
	{ "unrelated", GEN_UNRELATED, GEN_R_UNRELATED,
	  L(B, 0, 0, 0, UPTODATE, 0, 0), P(C, 0, 0, 0, UPTODATE, 0, 0), 0, 0, true },
	{ "refused", GEN_REFUSE, GEN_R_SOURCE_INCONSISTENT,
	  L(B, A, 0, 0, INCONSISTENT, 0, 0), P(A, 0, 0, 0, OUTDATED, 0, 0), 0, 0, true },
	{ "source crashed as primary", GEN_SOURCE_BITMAP, GEN_R_BITMAP,
	  L(B, A, 0, 0, UPTODATE, 0, 1), P(A, 0, 0, 0, OUTDATED, 0, 0), 0, 0, true },
	/* sim seed 64176: a Secondary that lost power gave a full resync
	 * from its torn data to one that held a write it had lost */
	{ "source lost power", GEN_SOURCE_FULL, GEN_R_HISTORY,
	  L(B, 0, A, 0, UPTODATE, 0, LP | HR), P(A, 0, 0, 0, OUTDATED, 0, 0), 0, 0, true },
	{ "only rule 20: the target is inconsistent", GEN_SOURCE_FULL, GEN_R_INCONSISTENT,
	  L(A, 0, 0, 0, UPTODATE, 0, 0), P(C, 0, 0, 0, INCONSISTENT, 0, 0), 0, 0, true },
};

static void test_secondaries(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(sec_rows); i++) {
		const struct sec_row *r = &sec_rows[i];
		struct gen_verdict v = { r->d, r->rule, "" };
		struct gen_verdict mv = { gen_decision_mirror(r->d), r->rule, "" };
		const char *w = gen_secondaries_wait(v, &r->l, &r->p, r->l_has, r->p_has);
		const char *m = gen_secondaries_wait(mv, &r->p, &r->l, r->p_has, r->l_has);

		CHECK_MSG((w != NULL) == r->wait, "%s", r->name);
		CHECK_MSG((m != NULL) == r->wait, "%s", r->name);
		CHECK_MSG(!w || !m || strcmp(w, m) == 0, "%s", r->name);
	}
}

static void test_names(void)
{
	CHECK(strcmp(gen_decision_name(GEN_SPLIT_BRAIN), "split-brain") == 0);
	CHECK(strcmp(gen_decision_name((enum gen_decision)99), "?") == 0);
	CHECK(strcmp(gen_disk_name(GEN_DISK_UPTODATE), "UpToDate") == 0);
	CHECK(strcmp(gen_disk_name(200), "?") == 0);
	CHECK(!gen_disk_consistent(GEN_DISK_INCONSISTENT));
	CHECK(!gen_disk_consistent(GEN_DISK_UNKNOWN));
	CHECK(gen_disk_consistent(GEN_DISK_OUTDATED));
}

int main(void)
{
	test_table();
	test_sweep();
	test_scenarios();
	test_sb();
	test_after_split_brain();
	test_secondaries();
	test_names();
	return unit_done("test-gen");
}
