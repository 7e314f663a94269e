/* test-gen-faults.c: the generation rules of replication/gen.c under every
 * sequence of up to four ordinary faults on three replicas.
 *
 * A small pure model of three replicas: each has its generations (current,
 * history, a bitmap generation per peer), disk state, role, whether it
 * crashed as Primary, and the data it holds, as the number of the last
 * acknowledged write it has (one Primary at a time writes, so every
 * replica holds a prefix of one history).  The engine's generation steps
 * are played through the real gen.c functions: gen_decide() at every
 * handshake, gen_on_disconnect_primary() when a Primary loses a peer (once
 * the outdate is confirmed: never for a Primary cut off without quorum),
 * gen_on_primary_moved() for its connected Secondaries,
 * gen_on_resync_done() at the end of a resync (none at its start: resync.c
 * makes no sync generation, as its targets adopt none); the
 * few steps the engine does inline are mirrored here, each with the file
 * it comes from.  The faults (a table) are the ones a user meets: kill -9
 * the Primary and promote a survivor (the dead one restarted at once, or
 * left away), kill -9 or SIGTERM a Secondary (restarted at once, or left
 * away), restart a replica that is away, a Primary cut off without quorum
 * (a survivor promoted) that crashes before it hears of that and rejoins
 * (issue 13's split brains of the simulator).  After every step the Primary
 * writes.  Checked at every handshake:
 *   - never split brain or unrelated data: no two Primaries ever wrote;
 *   - a resync never goes from a replica that lacks an acknowledged write
 *     the target has, and two replicas that do not resync hold the same
 *     data when one of them is the Primary.
 * Each replica has its own view of each link (peer.c's p->suppressed: a
 * link of two Secondaries that differ carries state only): a Secondary
 * follows its Primary's generations, and takes its writes, only when its
 * own view says the link carries data; a Primary's write to one that does
 * not drops the link (peer.c take_from_primary).  Verdicts between two
 * Secondaries are not acted on by the engine (it re-decides once one is
 * Primary) and are not checked.  Every handshake is tried in both orders
 * of a restarted replica (Primary first, or the Secondaries first).
 *
 * A replica away across more generation changes than the history holds
 * (gen.h GEN_HISTORY) finds no common generation (StandAlone, no data
 * moved); the model keeps each replica's unbounded lineage to tell this
 * from a real "unrelated", checks that the newer side holds all the older
 * one has, and fails if it happens at all: with the 2-entry history of
 * before, 204 handshakes here did (seeds 540, 845, 4625 of tests/sim.sh).
 * With 6e3c7a3's one-sided unsuppression (mutated in by hand), the
 * issue's sequence and 50 others end in split brain here. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gen.h"
#include "unit.h"
#include "util.h"

#define N 3
#define DEPTH 4

struct rep {
	bool up, primary, crashed;
	uint8_t disk;
	uint64_t current, history[GEN_HISTORY];
	uint64_t bitmap[N];		/* per peer (meta peers[].bitmap_gen) */
	unsigned data;			/* last acknowledged write held */
	bool lost_primary;		/* its Primary went away (peer.c) */
	bool linked[N];			/* connected to replica j */
	bool state_only[N];		/* ... its view: Secondaries that differ,
					 * the link carries state only (peer.c
					 * p->suppressed) */
	/* Every generation its data descends from, unbounded: what the
	 * two-entry history would say if it forgot nothing. */
	uint64_t lineage[64];
	unsigned n_lineage;
};

struct world {
	struct rep r[N];
	unsigned acked;
	uint64_t next_id;
	char trail[256];		/* the faults so far, for messages */
	bool failed;
};

static unsigned sequences, handshakes, forgotten;
static char forgotten_example[320];

static uint64_t fresh(struct world *w)
{
	return ++w->next_id;
}

static void fail(struct world *w, const char *what, unsigned i, unsigned j, const char *why)
{
	if (w->failed)
		return;		/* the first failure of a sequence says it */
	w->failed = true;
	CHECK_MSG(0, "%s: %s between %c and %c (%s)", w->trail, what, 'a' + i, 'a' + j, why);
}

static void lineage_add(struct rep *r, uint64_t id)
{
	for (unsigned k = 0; k < r->n_lineage; k++)
		if (r->lineage[k] == id)
			return;
	if (r->n_lineage < ARRAY_SIZE(r->lineage))
		r->lineage[r->n_lineage++] = id;
}

static bool descends(const struct rep *r, uint64_t id)
{
	for (unsigned k = 0; k < r->n_lineage; k++)
		if (r->lineage[k] == id)
			return true;
	return false;
}

/* i's view: the link to j carries data (peer.c: up, not suppressed). */
static bool in_sync(const struct world *w, unsigned i, unsigned j)
{
	return w->r[i].linked[j] && !w->r[i].state_only[j];
}

static int primary_of(const struct world *w)
{
	for (unsigned i = 0; i < N; i++)
		if (w->r[i].up && w->r[i].primary)
			return (int)i;
	return -1;
}

/* Replica i's generations as peer j sees them (repl__peer_gen_side). */
static struct gen_side side(const struct world *w, unsigned i, unsigned j)
{
	const struct rep *r = &w->r[i];
	struct gen_side g = { .current = r->current, .bitmap = r->bitmap[j],
			      .disk_state = r->disk, .primary = r->primary,
			      .crashed_primary = r->crashed, .node_id = i + 1 };

	memcpy(g.history, r->history, sizeof(g.history));
	return g;
}

static void store(struct world *w, unsigned i, unsigned j, const struct gen_side *g)
{
	struct rep *r = &w->r[i];

	r->current = g->current;
	memcpy(r->history, g->history, sizeof(r->history));
	r->bitmap[j] = g->bitmap;
}

static void unlink_pair(struct world *w, unsigned i, unsigned j)
{
	w->r[i].linked[j] = w->r[j].linked[i] = false;
	w->r[i].state_only[j] = w->r[j].state_only[i] = false;
}

/* The Primary's current changed: its connected Secondaries follow
 * (peer.c on_state, through gen_on_primary_moved), each by its own view
 * of the link. */
static void followers_follow(struct world *w, unsigned p)
{
	for (unsigned j = 0; j < N; j++) {
		struct gen_side g;
		if (j == p || !in_sync(w, p, j) || !in_sync(w, j, p))
			continue;
		g = side(w, j, p);
		CHECK(gen_on_primary_moved(&g, w->r[p].current) == 0);
		store(w, j, p, &g);
		lineage_add(&w->r[j], w->r[j].current);
	}
}

/* Two Secondaries that differed and are equal now carry on as in sync
 * (peer.c on_state: both sides learn it). */
static void secondaries_settle(struct world *w)
{
	for (unsigned i = 0; i < N; i++)
		for (unsigned j = 0; j < N; j++)
			if (w->r[i].state_only[j] && w->r[i].current == w->r[j].current &&
			    w->r[i].disk == GEN_DISK_UPTODATE && w->r[j].disk == GEN_DISK_UPTODATE) {
				w->r[i].state_only[j] = w->r[j].state_only[i] = false;
			}
}

/* A resync from s to t, to its end (resync.c: rs_start_source, rs_finish;
 * the target takes the source's generations in repl__rs_on_done). */
static void resync(struct world *w, unsigned s, unsigned t)
{
	struct gen_side g = side(w, s, t);

	if (w->r[t].data > w->r[s].data)
		fail(w, "a resync loses acknowledged writes", s, t, "source lacks them");
	if (g.bitmap)
		CHECK(gen_on_resync_done(&g) == 0);
	store(w, s, t, &g);
	w->r[s].crashed = false;
	w->r[t].current = w->r[s].current;
	memcpy(w->r[t].history, w->r[s].history, sizeof(w->r[t].history));
	memset(w->r[t].bitmap, 0, sizeof(w->r[t].bitmap));
	w->r[t].disk = GEN_DISK_UPTODATE;
	w->r[t].crashed = false;
	w->r[t].data = w->r[s].data;
	memcpy(w->r[t].lineage, w->r[s].lineage, sizeof(w->r[t].lineage));
	w->r[t].n_lineage = w->r[s].n_lineage;
	w->r[s].linked[t] = w->r[t].linked[s] = true;
}

/* The handshake of i and j (peer.c on_volume). */
static void connect_pair(struct world *w, unsigned i, unsigned j)
{
	struct gen_side l = side(w, i, j), p = side(w, j, i);
	struct gen_verdict v = gen_decide(&l, &p);
	enum gen_decision d = v.decision;
	bool any_primary = l.primary || p.primary;

	handshakes++;
	CHECK(gen_decide(&p, &l).decision == gen_decision_mirror(d));
	if (any_primary && d == GEN_UNRELATED &&
	    (descends(&w->r[i], p.current) || descends(&w->r[j], l.current))) {
		/* A known limit, counted: one side was away across more
		 * generation changes than the history holds, so they look
		 * unrelated (StandAlone, a person decides).  Still, the
		 * newer side must hold everything the older one has. */
		unsigned newer = descends(&w->r[i], p.current) ? i : j;
		if (w->r[newer].data < w->r[i + j - newer].data)
			fail(w, "forgotten ancestry hides a loss", i, j, v.reason);
		if (!forgotten++)
			snprintf(forgotten_example, sizeof(forgotten_example), "%s: %c and %c",
				 w->trail, 'a' + i, 'a' + j);
		return;
	}
	if (any_primary && (d == GEN_SPLIT_BRAIN || d == GEN_UNRELATED))
		fail(w, d == GEN_SPLIT_BRAIN ? "split brain" : "unrelated data", i, j, v.reason);
	if (any_primary && d == GEN_REFUSE)
		fail(w, "refused", i, j, v.reason);
	w->r[i].linked[j] = w->r[j].linked[i] = true;
	w->r[i].state_only[j] = w->r[j].state_only[i] = !any_primary && d != GEN_NO_SYNC;
	if (!any_primary)
		return;		/* Secondaries: no data flows between them */
	switch (d) {
	case GEN_NO_SYNC:
		if (w->r[i].data != w->r[j].data)
			fail(w, "no resync though the data differ", i, j, v.reason);
		break;
	case GEN_SOURCE_BITMAP:
	case GEN_SOURCE_FULL:
		resync(w, i, j);
		break;
	case GEN_TARGET_BITMAP:
	case GEN_TARGET_FULL:
		resync(w, j, i);
		break;
	default:
		break;
	}
}

static void connect_pair(struct world *w, unsigned i, unsigned j);
static void outdate(struct world *w, unsigned p, unsigned j);

/* The Primary writes once; its connected Secondaries get it.  One that
 * does not see itself following this Primary refuses the write and the
 * link goes (peer.c take_from_primary): outdated, it reconnects. */
static void primary_writes(struct world *w)
{
	int p = primary_of(w);

	if (p < 0)
		return;
	for (unsigned j = 0; j < N; j++)
		if (in_sync(w, (unsigned)p, j) && !in_sync(w, j, (unsigned)p)) {
			unlink_pair(w, (unsigned)p, j);
			outdate(w, (unsigned)p, j);
			connect_pair(w, (unsigned)p, j);
		}
	w->acked++;
	w->r[p].data = w->acked;
	for (unsigned j = 0; j < N; j++)
		if (in_sync(w, (unsigned)p, j))
			w->r[j].data = w->acked;
}

/* The Primary p lost the link to j (replicate.c outdate_peer). */
static void outdate(struct world *w, unsigned p, unsigned j)
{
	struct gen_side g = side(w, p, j);

	g.primary = true;
	CHECK(gen_on_disconnect_primary(&g, fresh(w)) == 0);
	store(w, p, j, &g);
	lineage_add(&w->r[p], w->r[p].current);
	followers_follow(w, p);
}

/* The Primary p lost the link to j and the outdate is not confirmed
 * (cut off without quorum): nothing is acknowledged from now on, and the
 * new generation waits for the confirmation (replicate.c outdate_peer,
 * new_gen_for), which a crash forestalls: nothing changes here. */
static void outdate_unconfirmed(struct world *w, unsigned p, unsigned j)
{
	(void)w;
	(void)p;
	(void)j;
}

/* Replica i goes away (crash or clean stop). */
static void go_down(struct world *w, unsigned i, bool crash)
{
	int p = primary_of(w);

	w->r[i].up = false;
	if (crash && w->r[i].primary)
		w->r[i].crashed = true;
	w->r[i].primary = false;
	for (unsigned j = 0; j < N; j++) {
		bool was_linked = in_sync(w, j, i);
		if (j == i || !w->r[j].up)
			continue;
		unlink_pair(w, i, j);
		if ((int)i == p)
			w->r[j].lost_primary = true;
		if ((int)j == p && was_linked)
			outdate(w, j, i);
	}
}

/* Which handshake of a restarted replica ends first: the one with the
 * Primary, or the ones with the Secondaries (both orders are explored). */
static bool secondaries_first;

/* Replica i starts and meets every replica that is up. */
static void come_back(struct world *w, unsigned i)
{
	int p = primary_of(w);

	w->r[i].up = true;
	w->r[i].lost_primary = false;
	if (!secondaries_first && p >= 0)
		connect_pair(w, i, (unsigned)p);
	for (unsigned j = 0; j < N; j++)
		if (j != i && (int)j != p && w->r[j].up)
			connect_pair(w, i, j);
	if (secondaries_first && p >= 0)
		connect_pair(w, i, (unsigned)p);
	secondaries_settle(w);
}

/* role.c repl__volume_promote / promote_generation, then the recent
 * writes of a lost Primary made to agree (recent.c: a resync from the new
 * Primary to each connected Secondary that lost it too). */
static void promote(struct world *w, unsigned i)
{
	struct rep *r = &w->r[i];
	bool all_up = true;

	for (unsigned j = 0; j < N; j++) {
		if (j == i)
			continue;
		if (w->r[j].up && r->state_only[j])
			unlink_pair(w, i, j);	/* reconnects to resync */
		if (!in_sync(w, i, j)) {
			all_up = false;
			if (!r->bitmap[j])
				r->bitmap[j] = r->current;
		}
	}
	if (!all_up) {
		memmove(&r->history[1], &r->history[0], sizeof(r->history[0]) * (GEN_HISTORY - 1));
		r->history[0] = r->current;
		r->current = fresh(w);
		lineage_add(r, r->current);
	}
	r->primary = true;
	r->disk = GEN_DISK_UPTODATE;
	followers_follow(w, i);
	for (unsigned j = 0; j < N; j++) {
		if (j == i || !w->r[j].up)
			continue;
		if (!r->linked[j])
			connect_pair(w, i, j);
		else if (r->lost_primary || w->r[j].lost_primary)
			resync(w, i, j);
		w->r[j].lost_primary = false;
	}
	r->lost_primary = false;
}

/* ---- the faults --------------------------------------------------------- */

enum fault_kind {
	F_FAILOVER,		/* kill -9 the Primary, promote x, restart the dead one */
	F_FAILOVER_AWAY,	/* kill -9 the Primary, promote x; the dead one stays away */
	F_KILL_SEC,		/* kill -9 Secondary x, restart it */
	F_STOP_SEC,		/* SIGTERM Secondary x, restart it */
	F_KILL_SEC_AWAY,	/* kill -9 Secondary x; it stays away */
	F_STOP_SEC_AWAY,	/* SIGTERM Secondary x; it stays away */
	F_RESTART,		/* restart x, which is away */
	F_CUTOFF,		/* cut the Primary off, promote x, the cut-off
				 * one crashes, restarts, rejoins */
	F_KINDS
};

static const char *const fault_names[F_KINDS] = {
	"failover-to", "failover-away-to", "kill-restart", "stop-restart",
	"kill", "stop", "restart", "cutoff-crash-to",
};

/* A survivor may be promoted: up, UpToDate and in sync with the Primary
 * until it died (what a person checks before "promote"). */
static bool may_promote(const struct world *w, int p, unsigned x)
{
	return (int)x != p && w->r[x].up && in_sync(w, (unsigned)p, x) &&
	       w->r[x].disk == GEN_DISK_UPTODATE;
}

/* Applies fault k to replica x; false if it does not apply here. */
static bool apply(struct world *w, enum fault_kind k, unsigned x)
{
	int p = primary_of(w);

	switch (k) {
	case F_FAILOVER:
	case F_FAILOVER_AWAY:
		if (p < 0 || !may_promote(w, p, x))
			return false;
		go_down(w, (unsigned)p, true);
		promote(w, x);
		primary_writes(w);
		if (k == F_FAILOVER)
			come_back(w, (unsigned)p);
		return true;
	case F_KILL_SEC:
	case F_STOP_SEC:
	case F_KILL_SEC_AWAY:
	case F_STOP_SEC_AWAY:
		if ((int)x == p || !w->r[x].up)
			return false;
		go_down(w, x, k == F_KILL_SEC || k == F_KILL_SEC_AWAY);
		primary_writes(w);
		if (k == F_KILL_SEC || k == F_STOP_SEC)
			come_back(w, x);
		return true;
	case F_RESTART:
		if (w->r[x].up)
			return false;
		come_back(w, x);
		return true;
	case F_CUTOFF:
		if (p < 0 || !may_promote(w, p, x))
			return false;
		/* The cut: the Primary loses every link without quorum (its
		 * writes wait for the outdates, which never come), the
		 * others lose their Primary; it crashes before it hears of
		 * the promotion (a cut-off Primary that hears of it steps
		 * down and starts over blank: replicate.c). */
		for (unsigned j = 0; j < N; j++) {
			if (j == (unsigned)p || !w->r[j].up)
				continue;
			bool was_linked = in_sync(w, (unsigned)p, j);
			unlink_pair(w, (unsigned)p, j);
			w->r[j].lost_primary = true;
			if (was_linked)
				outdate_unconfirmed(w, (unsigned)p, j);
		}
		go_down(w, (unsigned)p, true);
		promote(w, x);
		primary_writes(w);
		come_back(w, (unsigned)p);
		return true;
	default:
		return false;
	}
}

/* Three replicas in sync, a Primary (role.c: first promotion). */
static void start(struct world *w)
{
	memset(w, 0, sizeof(*w));
	w->next_id = 0x100;
	for (unsigned i = 0; i < N; i++) {
		w->r[i].up = true;
		w->r[i].disk = GEN_DISK_UPTODATE;
		w->r[i].current = 0x100;
		lineage_add(&w->r[i], 0x100);
		for (unsigned j = 0; j < N; j++)
			w->r[i].linked[j] = i != j;
	}
	w->r[0].primary = true;
	primary_writes(w);
}

static void explore(const struct world *w, unsigned depth)
{
	sequences++;
	if (depth == DEPTH || w->failed)
		return;
	for (unsigned k = 0; k < F_KINDS; k++)
		for (unsigned x = 0; x < N; x++) {
			struct world next = *w;
			size_t n = strlen(next.trail);
			snprintf(next.trail + n, sizeof(next.trail) - n, "%s%s %c",
				 n ? ", " : "", fault_names[k], 'a' + x);
			if (!apply(&next, (enum fault_kind)k, x))
				continue;
			primary_writes(&next);
			explore(&next, depth + 1);
		}
}

/* The sequence of issue 12, item 10, step by step. */
static void test_issue_sequence(void)
{
	struct world w;

	start(&w);
	snprintf(w.trail, sizeof(w.trail), "issue 12 item 10 (order %d)", secondaries_first);
	CHECK(apply(&w, F_FAILOVER, 1));	/* kill a, promote b, restart a */
	primary_writes(&w);
	CHECK(apply(&w, F_FAILOVER, 2));	/* kill b, promote c, restart b */
	primary_writes(&w);
	CHECK(apply(&w, F_STOP_SEC, 1));	/* SIGTERM b, restart it */
	primary_writes(&w);
	CHECK(apply(&w, F_FAILOVER, 0));	/* kill c, promote a, restart c */
	primary_writes(&w);
	CHECK(!w.failed);
	CHECK(primary_of(&w) == 0);
	for (unsigned j = 1; j < N; j++) {
		CHECK(in_sync(&w, 0, j) && in_sync(&w, j, 0));
		CHECK(w.r[j].data == w.acked);
		CHECK(w.r[j].current == w.r[0].current);
	}
}

/* Seeds 244 and 401 of tests/sim.sh: a failover whose new Primary resyncs
 * its recent writes to the Secondary that lost the old Primary too (the
 * two hold the same current), then a second failover to that Secondary;
 * the first Primary, away all along, comes back.  The new Primary's
 * history still holds the generation it has: a full sync, not "no
 * common generation" (the resync made no generation of its own to push
 * it out). */
static void test_recent_resync_sequence(void)
{
	unsigned before = forgotten;
	struct world w;

	start(&w);
	snprintf(w.trail, sizeof(w.trail), "recent resync (order %d)", secondaries_first);
	CHECK(apply(&w, F_FAILOVER_AWAY, 1));	/* kill a, promote b; c resynced */
	primary_writes(&w);
	CHECK(apply(&w, F_FAILOVER_AWAY, 2));	/* kill b, promote c */
	primary_writes(&w);
	CHECK(apply(&w, F_RESTART, 0));		/* a comes back */
	primary_writes(&w);
	CHECK(!w.failed);
	CHECK_MSG(forgotten == before, "a and c found no common generation");
	CHECK(in_sync(&w, 2, 0) && w.r[0].data == w.acked);
}

int main(void)
{
	struct world w;

	for (unsigned order = 0; order < 2; order++) {
		secondaries_first = order;
		test_issue_sequence();
		test_recent_resync_sequence();
		start(&w);
		explore(&w, 0);
	}
	printf("test-gen-faults: %u sequences, %u handshakes\n", sequences, handshakes);
	CHECK_MSG(forgotten == 0, "%u handshakes found no common generation because one "
		  "side was away across more changes than the %d-entry history holds "
		  "(StandAlone, no data moved), e.g. %s", forgotten, GEN_HISTORY,
		  forgotten_example);
	CHECK(sequences > 1000);
	return unit_done("test-gen-faults");
}
