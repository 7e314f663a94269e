/* test-handshake.c: table tests of replication/handshake.c, the
 * connect-time decisions.  The first table is hs_identity() (same volume,
 * UUID adoption between blanks); the second is hs_decide(), a row per rule
 * in the order handshake.c applies them, each naming the inputs that
 * matter and the verdict: the action (up, drop and retry, StandAlone with
 * which BYE), the generation decision, why, and the flags peer_state.c
 * acts on.  The generation rules themselves are test-gen.c's. */
#include "config.h"

#include <string.h>

#include "handshake.h"
#include "unit.h"
#include "wire.h"

enum { A = 0xa1, B = 0xb2, C = 0xc3 };

/* S(node_id, current, bitmap, history0, disk, primary, crashed) */
#define S(id, c, b, h0, disk, pri, crash) { \
	.current = (c), .bitmap = (b), .history = { (h0) }, \
	.disk_state = GEN_DISK_##disk, .primary = (pri), \
	.crashed_primary = (crash), .node_id = (id) }
#define L(...) S(1, __VA_ARGS__)
#define P(...) S(2, __VA_ARGS__)

static const struct {
	const char *name;
	bool same_name, blank, peer_blank;
	int cmp;
	enum hs_identity want;
} ids[] = {
	{ "other name", false, false, false, 0, HS_ID_NAME_DIFFERS },
	{ "other name, same UUID", false, true, true, 0, HS_ID_NAME_DIFFERS },
	{ "same UUID", true, false, false, 0, HS_ID_SAME },
	{ "same UUID, both blank", true, true, true, 0, HS_ID_SAME },
	{ "blank meets data", true, true, false, 1, HS_ID_ADOPT },
	{ "blank meets data, lower UUID", true, true, false, -1, HS_ID_ADOPT },
	{ "two blanks, peer's lower", true, true, true, -1, HS_ID_ADOPT },
	{ "two blanks, ours lower", true, true, true, 1, HS_ID_KEEP },
	{ "data meets blank", true, false, true, -1, HS_ID_KEEP },
	{ "two volumes with data", true, false, false, 1, HS_ID_UUID_DIFFERS },
	{ "two volumes with data, peer lower", true, false, false, -1, HS_ID_UUID_DIFFERS },
};

/* Flags of a row's input and expected verdict. */
enum {
	CROSS = 1 << 0,		/* in: the peer lost a crossing */
	TOLD = 1 << 1,		/* in: our VOLUME said a Primary is here */
	OTHERP = 1 << 2,	/* in: another Primary is up here now */
	SAYS_OUT = 1 << 3,	/* in: the peer records us Outdated */
	INSYNC = 1 << 4,	/* in: in sync with another Primary */
	RESYNCED = 1 << 5,	/* in: resynced by another peer */
	DISC = 1 << 6,		/* in: every after-sb policy is disconnect */
	KEEP = 1 << 7,		/* in: resolve --keep named this node */
	DECIDED = 1 << 8,	/* out: gen_decide() ran */
	WAIT = 1 << 9,		/* out: Secondaries wait (state only) */
	OUTD = 1 << 10,		/* out: record ourselves Outdated */
	STALE = 1 << 11,	/* out: forget stale bits */
	AUTO = 1 << 12,		/* out: split brain resolved automatically */
	NOQ = 1 << 13,		/* in: this replica has no quorum */
	BLIND = 1 << 14,	/* in: our bitmap for the peer is blind */
	PNOQ = 1 << 16,		/* in: the peer has no quorum */
	PLOST = 1 << 15,	/* in: the peer lost power */
};
#define OUT_FLAGS (DECIDED | WAIT | OUTD | STALE | AUTO)

struct row {
	const char *name;
	struct gen_side l, p;
	uint64_t local_dirty, peer_dirty;
	unsigned flags;
	enum hs_action action;
	uint32_t bye;
	enum gen_decision d;
	const char *why;	/* prefix of the verdict's why; NULL: empty */
};

static const struct row rows[] = {
	/* a crossing the peer lost: nothing of a Primary that lost is taken */
	{ "lost crossing, still Primary", L(A, 0, 0, UPTODATE, 0, 0), P(A, 0, 0, UPTODATE, 1, 0),
	  0, 0, CROSS, HS_DROP, 0, GEN_NO_SYNC, HS_LOST_CROSSING },
	{ "lost crossing, Secondary now", L(A, 0, 0, UPTODATE, 0, 0), P(A, 0, 0, UPTODATE, 0, 0),
	  0, 0, CROSS | DECIDED | STALE, HS_UP, 0, GEN_NO_SYNC, NULL },
	/* two Primaries: retry until one demotes */
	{ "two Primaries", L(A, 0, 0, UPTODATE, 1, 0), P(A, 0, 0, UPTODATE, 1, 0),
	  0, 0, 0, HS_DROP, 0, GEN_NO_SYNC, "the peer is Primary too" },
	/* in sync */
	{ "same generation, Secondaries", L(A, 0, 0, UPTODATE, 0, 0), P(A, 0, 0, UPTODATE, 0, 0),
	  0, 0, DECIDED | STALE, HS_UP, 0, GEN_NO_SYNC, NULL },
	{ "same generation, local Primary", L(A, 0, 0, UPTODATE, 1, 0), P(A, 0, 0, UPTODATE, 0, 0),
	  3, 0, DECIDED, HS_UP, 0, GEN_NO_SYNC, NULL },
	{ "same generation, peer Primary", L(A, 0, 0, UPTODATE, 0, 0), P(A, 0, 0, UPTODATE, 1, 0),
	  0, 0, DECIDED, HS_UP, 0, GEN_NO_SYNC, NULL },
	/* resyncs, and a crashed Primary's side takes a full one */
	{ "source, bitmap", L(B, A, C, UPTODATE, 1, 0), P(A, 0, C, OUTDATED, 0, 0),
	  0, 0, DECIDED, HS_UP, 0, GEN_SOURCE_BITMAP, NULL },
	{ "source, peer crashed: full", L(B, A, C, UPTODATE, 1, 0), P(A, 0, C, OUTDATED, 0, 1),
	  0, 0, DECIDED, HS_UP, 0, GEN_SOURCE_FULL, NULL },
	/* a peer that lost power, and our bitmap for it began at our
	 * promotion with it away: full; either alone: the bitmap */
	{ "source, blind bitmap, peer lost power: full", L(B, A, C, UPTODATE, 1, 0),
	  P(A, 0, C, OUTDATED, 0, 0), 0, 0, BLIND | PLOST | DECIDED, HS_UP, 0, GEN_SOURCE_FULL,
	  NULL },
	{ "source, blind bitmap", L(B, A, C, UPTODATE, 1, 0), P(A, 0, C, OUTDATED, 0, 0),
	  0, 0, BLIND | DECIDED, HS_UP, 0, GEN_SOURCE_BITMAP, NULL },
	{ "source, bitmap, peer lost power", L(B, A, C, UPTODATE, 1, 0),
	  P(A, 0, C, OUTDATED, 0, 0), 0, 0, PLOST | DECIDED, HS_UP, 0, GEN_SOURCE_BITMAP, NULL },
	{ "target, bitmap", L(A, 0, 0, UPTODATE, 0, 0), P(B, A, 0, UPTODATE, 1, 0),
	  0, 0, DECIDED, HS_UP, 0, GEN_TARGET_BITMAP, NULL },
	{ "target, local crashed: full", L(A, 0, 0, UPTODATE, 0, 1), P(B, A, 0, UPTODATE, 1, 0),
	  0, 0, DECIDED, HS_UP, 0, GEN_TARGET_FULL, NULL },
	/* Secondaries: a resync between them only with no Primary about */
	{ "Secondaries resync", L(A, 0, 0, OUTDATED, 0, 0), P(B, A, 0, UPTODATE, 0, 0),
	  0, 0, DECIDED, HS_UP, 0, GEN_TARGET_BITMAP, NULL },
	{ "Secondaries resync, the target without quorum", L(A, 0, 0, OUTDATED, 0, 0),
	  P(B, A, 0, UPTODATE, 0, 0), 0, 0, NOQ | DECIDED, HS_UP, 0, GEN_TARGET_BITMAP, NULL },
	{ "Secondaries resync, the source without quorum: it waits for the records",
	  L(B, A, 0, UPTODATE, 0, 0), P(A, 0, 0, OUTDATED, 0, 0), 0, 0, NOQ | DECIDED, HS_DROP, 0,
	  GEN_SOURCE_BITMAP, "no quorum here" },
	{ "Secondaries resync, the source without quorum: the target waits too",
	  L(A, 0, 0, OUTDATED, 0, 0), P(B, A, 0, UPTODATE, 0, 0), 0, 0, PNOQ | DECIDED, HS_DROP, 0,
	  GEN_TARGET_BITMAP, "no quorum at the source" },
	{ "Secondaries resync, the target without quorum, seen from the source",
	  L(B, A, 0, UPTODATE, 0, 0), P(A, 0, 0, OUTDATED, 0, 0), 0, 0, PNOQ | DECIDED, HS_UP, 0,
	  GEN_SOURCE_BITMAP, NULL },
	{ "Primary's target without quorum", L(A, 0, 0, OUTDATED, 0, 0),
	  P(B, A, 0, UPTODATE, 1, 0), 0, 0, NOQ | DECIDED, HS_UP, 0, GEN_TARGET_BITMAP, NULL },
	{ "Primary without quorum, source", L(B, A, C, UPTODATE, 1, 0), P(A, 0, C, OUTDATED, 0, 0),
	  0, 0, NOQ | DECIDED, HS_UP, 0, GEN_SOURCE_BITMAP, NULL },
	{ "Secondaries, we told of a Primary", L(A, 0, 0, OUTDATED, 0, 0), P(B, A, 0, UPTODATE, 0, 0),
	  0, 0, TOLD | DECIDED | WAIT, HS_UP, 0, GEN_TARGET_BITMAP, NULL },
	{ "Secondaries, a Primary came meanwhile", L(A, 0, 0, OUTDATED, 0, 0),
	  P(B, A, 0, UPTODATE, 0, 0), 0, 0, OTHERP | DECIDED, HS_DROP, 0, GEN_TARGET_BITMAP,
	  "a Primary connected meanwhile" },
	{ "Secondaries in sync, a Primary about", L(A, 0, 0, UPTODATE, 0, 0),
	  P(A, 0, 0, UPTODATE, 0, 0), 0, 0, OTHERP | DECIDED | STALE, HS_UP, 0, GEN_NO_SYNC, NULL },
	{ "Secondaries, split brain: wait", L(B, A, 0, UPTODATE, 0, 0), P(C, A, 0, UPTODATE, 0, 0),
	  1, 1, DISC | DECIDED | WAIT, HS_UP, 0, GEN_SPLIT_BRAIN, NULL },
	/* StandAlone */
	{ "split brain, a Primary", L(B, A, 0, UPTODATE, 1, 0), P(C, A, 0, UPTODATE, 0, 0),
	  1, 1, DISC | DECIDED, HS_STANDALONE, WIRE_BYE_SPLIT_BRAIN, GEN_SPLIT_BRAIN,
	  "split brain: resolve with \"replagent resolve v0 --keep NODE\" on both nodes" },
	{ "split brain, our data kept: retry until the peer discarded",
	  L(B, A, 0, UPTODATE, 1, 0), P(C, A, 0, UPTODATE, 0, 0), 1, 1, DISC | KEEP | DECIDED,
	  HS_DROP, 0, GEN_SPLIT_BRAIN, "split brain: this node's data is kept" },
	{ "our data kept, the peer discarded: full resync", L(B, A, 0, UPTODATE, 1, 0),
	  P(0, 0, 0, INCONSISTENT, 0, 0), 0, 0, KEEP | DECIDED, HS_UP, 0, GEN_SOURCE_FULL, NULL },
	{ "split brain, both wrote (defaults)", L(B, A, 0, UPTODATE, 1, 0),
	  P(C, A, 0, UPTODATE, 0, 0), 4, 2, DECIDED, HS_STANDALONE, WIRE_BYE_SPLIT_BRAIN,
	  GEN_SPLIT_BRAIN, "split brain:" },
	{ "split brain, the Secondary wrote nothing (defaults)", L(B, A, 0, UPTODATE, 1, 0),
	  P(C, A, 0, UPTODATE, 0, 0), 4, 0, DECIDED | AUTO, HS_UP, 0, GEN_SOURCE_BITMAP, NULL },
	{ "unrelated, a Primary", L(B, A, 0, UPTODATE, 1, 0), P(C, 0, 0, UPTODATE, 0, 0),
	  0, 0, DECIDED, HS_STANDALONE, WIRE_BYE_REFUSED, GEN_UNRELATED, "unrelated: " },
	/* the peer's record that we missed writes */
	{ "peer says Outdated", L(A, 0, 0, UPTODATE, 0, 0), P(A, 0, 0, UPTODATE, 0, 0),
	  0, 0, SAYS_OUT | DECIDED | STALE | OUTD, HS_UP, 0, GEN_NO_SYNC, NULL },
	{ "peer says Outdated, in sync with a Primary", L(A, 0, 0, UPTODATE, 0, 0),
	  P(A, 0, 0, UPTODATE, 0, 0), 0, 0, SAYS_OUT | INSYNC | DECIDED | STALE, HS_UP, 0,
	  GEN_NO_SYNC, NULL },
	{ "peer says Outdated, resynced since", L(A, 0, 0, UPTODATE, 0, 0),
	  P(A, 0, 0, UPTODATE, 0, 0), 0, 0, SAYS_OUT | RESYNCED | DECIDED | STALE, HS_UP, 0,
	  GEN_NO_SYNC, NULL },
	{ "peer says Outdated, we are the source", L(B, A, C, UPTODATE, 1, 0),
	  P(A, 0, C, OUTDATED, 0, 0), 0, 0, SAYS_OUT | DECIDED, HS_UP, 0, GEN_SOURCE_BITMAP, NULL },
	{ "peer says Outdated, we are Primary", L(A, 0, 0, UPTODATE, 1, 0),
	  P(A, 0, 0, UPTODATE, 0, 0), 0, 0, SAYS_OUT | DECIDED, HS_UP, 0, GEN_NO_SYNC, NULL },
	{ "peer says Outdated, we are Outdated", L(A, 0, 0, OUTDATED, 0, 0),
	  P(A, 0, 0, UPTODATE, 1, 0), 0, 0, SAYS_OUT | DECIDED, HS_UP, 0, GEN_NO_SYNC, NULL },
};

static unsigned out_flags(const struct hs_verdict *v)
{
	return (v->decided ? DECIDED : 0) | (v->wait ? WAIT : 0) | (v->outdated ? OUTD : 0) |
	       (v->forget_stale ? STALE : 0) | (v->auto_resolved ? AUTO : 0);
}

static void run_row(const struct row *r)
{
	struct hs_in in = {
		.volume = "v0", .local = r->l, .peer = r->p,
		.local_dirty = r->local_dirty, .peer_dirty = r->peer_dirty,
		.after_sb = SB_CONFIG_DEFAULT,
		.lost_crossing = r->flags & CROSS, .told_has_primary = r->flags & TOLD,
		.other_primary = r->flags & OTHERP, .peer_says_outdated = r->flags & SAYS_OUT,
		.in_sync_with_primary = r->flags & INSYNC, .resynced_by_other = r->flags & RESYNCED,
		.keeping = r->flags & KEEP, .quorate = !(r->flags & NOQ),
		.bitmap_blind = r->flags & BLIND, .peer_quorate = !(r->flags & PNOQ),
	};
	struct hs_verdict v;

	in.peer.lost_power = r->flags & PLOST;
	if (r->flags & DISC)
		in.after_sb = (struct sb_config){ SB_DISCONNECT, SB_DISCONNECT, SB_DISCONNECT };
	hs_decide(&in, &v);
	CHECK_MSG(v.action == r->action, "%s: action %d, want %d", r->name, v.action, r->action);
	CHECK_MSG(v.bye == r->bye, "%s: bye %u, want %u", r->name, v.bye, r->bye);
	CHECK_MSG(out_flags(&v) == (r->flags & OUT_FLAGS), "%s: flags %#x, want %#x", r->name,
		  out_flags(&v), r->flags & OUT_FLAGS);
	if (v.decided)
		CHECK_MSG(v.gv.decision == r->d, "%s: %s, want %s", r->name,
			  gen_decision_name(v.gv.decision), gen_decision_name(r->d));
	if (r->why)
		CHECK_MSG(strncmp(v.why, r->why, strlen(r->why)) == 0, "%s: why \"%s\"",
			  r->name, v.why);
	else
		CHECK_MSG(v.why[0] == '\0', "%s: why \"%s\"", r->name, v.why);
}

/* A long volume name is cut to the reason's length, never overrun. */
static void test_long_name(void)
{
	char name[300];
	struct hs_in in = { .volume = name, .local = L(B, A, 0, UPTODATE, 1, 0),
			    .peer = P(C, A, 0, UPTODATE, 0, 0), .local_dirty = 1, .peer_dirty = 1,
			    .after_sb = { SB_DISCONNECT, SB_DISCONNECT, SB_DISCONNECT } };
	struct hs_verdict v;

	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	hs_decide(&in, &v);
	CHECK(v.action == HS_STANDALONE);
	CHECK(strlen(v.why) == HS_WHY_MAX - 1);
}

int main(void)
{
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		CHECK_MSG(hs_identity(ids[i].same_name, ids[i].blank, ids[i].peer_blank,
				      ids[i].cmp) == ids[i].want, "%s", ids[i].name);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		run_row(&rows[i]);
	test_long_name();
	return unit_done("test-handshake");
}
