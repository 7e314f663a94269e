/* split.c: split brain and its resolution, the profile that
 * `replsim --split-brain` runs.
 *
 * Two replicas in static mode (replagentd without a cluster: no quorum,
 * no outdate hook; DRBD's two nodes without fencing), and an operator in
 * place of the cluster manager.  The operator promotes n0 at the start.
 * Faults: partitions (the Primary goes on alone and records its lost peer
 * Outdated at once, as static mode does), link cuts, message delay, slow
 * disks, the Secondary's daemon exiting; and once a run, during a
 * partition, the operator promotes the cut-off Secondary and starts the
 * guest there: two Primaries acknowledge writes, each in a generation of
 * its own, and the oracle's history forks (oracle_fork()).
 *
 * When the partition heals, the two must refuse each other (two
 * Primaries wait for one to demote; then both see the split brain and go
 * StandAlone; no data may move either way: a link that connects before
 * the resolution is a violation).  The operator picks the node whose data
 * is kept, moves the guest there, demotes the other, waits for StandAlone
 * on both and runs `replagent resolve --keep` on both: every block the other wrote since
 * the split must be in its BACKING.discarded-TIME file, and it must resync
 * from the kept node to byte-identical (the end of every run).
 *
 * No power loss in this profile: the oracle's branch of the promoted
 * Secondary owes the writes it held in sync, and which of those a power
 * loss may take depends on flushes it never saw. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "repl_int.h"
#include "replsim.h"

bool static_mode;

static enum {
	SB_NONE, SB_WANTED, SB_SPLIT, SB_DEMOTE, SB_STANDALONE, SB_RESOLVING, SB_DONE
} sb;
static int keep, victim;
static bool booted;

void split_reset(void)
{
	sb = SB_NONE;
	booted = false;
}

/* Faults may not start while the split brain is being made or resolved
 * (the operator's steps assume the two stay up). */
bool split_busy(void)
{
	return sb != SB_NONE && sb != SB_DONE;
}

/* During a partition: the operator will promote the cut-off Secondary. */
bool split_fault(void)
{
	if (sb != SB_NONE)
		return false;
	trace("FAULT split brain: the operator will promote the cut-off Secondary");
	sb = SB_WANTED;
	return true;
}

static enum repl_link_state link_to(int i, int j)
{
	struct repl_volume_status st;

	repl_volume_status(nodes[i].vol, &st);
	for (unsigned k = 0; k < st.n_peers; k++)
		if (st.peers[k].node[1] - '0' == j)
			return st.peers[k].link;
	return REPL_LINK_DISCONNECTED;
}

static void promote_other(void)
{
	char why[200];
	int p = cm_primary, s = 1 - p, r;

	if (p < 0 || side[0] == side[1]) {
		sb = SB_NONE;		/* healed before the operator acted */
		return;
	}
	if (!nodes[s].alive || link_to(s, p) >= REPL_LINK_CONNECTED)
		return;			/* it has not noticed yet */
	ON(s, r = repl_volume_promote(nodes[s].vol, false, why, sizeof(why)));
	if (r < 0) {
		trace("operator: n%d cannot be promoted: %s", s, why);
		sb = SB_NONE;
		return;
	}
	trace("operator: promoted n%d while n%d is Primary on the other side", s, p);
	oracle_fork(p, s);
	oracle_client_connect(s);	/* the guest starts there too */
	cm_primary = s;
	sb = SB_SPLIT;
}

/* Two Primaries may not connect (one
 * side's link alone may say Connected a while: a connection the other
 * side's restart broke, not noticed yet). */
static void check_apart(void)
{
	enum repl_link_state a, b;

	if (!nodes[0].alive || !nodes[1].alive)
		return;
	a = link_to(0, 1);
	b = link_to(1, 0);
	if (a >= REPL_LINK_CONNECTED && b >= REPL_LINK_CONNECTED)
		fail("split-brain", "n0 and n1 connected (links %d and %d) though both "
		     "acknowledged writes since they parted", (int)a, (int)b);
}

/* Healed: the operator picks whose data is kept and moves the guest
 * there. */
static void pick(void)
{
	keep = (int)rnd_below(2);
	victim = 1 - keep;
	trace("operator: two Primaries see each other; keeping n%d's data", keep);
	oracle_client_connect(keep);
	cm_primary = keep;
	sb = SB_DEMOTE;
}

static void demote(void)
{
	char why[200];
	int r;

	if (oracle_pending_on(victim))
		return;
	ON(victim, r = repl_volume_demote(nodes[victim].vol, why, sizeof(why)));
	if (r < 0) {
		trace("operator: n%d does not demote yet: %s", victim, why);
		return;
	}
	sb = SB_STANDALONE;
}

/* Both see the split brain (StandAlone): resolve on both.  Or the
 * engine resolved it by itself (the default after-sb policies, when the
 * demoted side wrote nothing since the split): it may have discarded
 * nothing that mattered. */
static void resolve(void)
{
	char why[200];
	int r;

	if (link_to(0, 1) >= REPL_LINK_CONNECTED && link_to(1, 0) >= REPL_LINK_CONNECTED) {
		trace("operator: the engine resolved the split brain by itself");
		oracle_resolved(keep, victim, NULL, 0);
		sb = SB_DONE;
		return;
	}
	if (link_to(0, 1) != REPL_LINK_STANDALONE || link_to(1, 0) != REPL_LINK_STANDALONE)
		return;
	/* on both nodes, in either order */
	for (int k = 0, first = rnd_chance(500) ? keep : victim; k < 2; k++) {
		int i = k ? 1 - first : first;

		ON(i, r = repl_volume_resolve(nodes[i].vol, node_name(keep), why, sizeof(why)));
		if (r < 0)
			fail("resolve", "replagent resolve --keep n%d on n%d: %s", keep, i, why);
	}
	sb = SB_RESOLVING;
}

static void resolved(void)
{
	char path[256];
	const char *list;
	const uint8_t *d;
	uint64_t size;

	if (nodes[victim].vol->resolving)
		return;
	list = sim_disk_find(victim, "/d/v.img.discarded-", ".regions");
	if (!list)
		fail("resolve", "n%d's resolution ended without a discarded file", victim);
	snprintf(path, sizeof(path), "%.*s", (int)(strlen(list) - strlen(".regions")), list);
	d = sim_disk_view(victim, path, &size);
	oracle_resolved(keep, victim, d, size);
	sb = SB_DONE;
}

/* The operator, every tick of the static profile. */
void split_tick(void)
{
	char why[200];
	int r;

	if (!booted) {
		ON(0, r = repl_volume_promote(nodes[0].vol, true, why, sizeof(why)));
		if (r < 0)
			fail("start", "n0 cannot be made Primary: %s", why);
		trace("operator: promoted n0 (bootstrap, forced)");
		cm_primary = 0;
		oracle_promoted(0);
		oracle_client_connect(0);
		booted = true;
		return;
	}
	if (!nodes[0].alive || !nodes[1].alive)
		return;
	if (sb == SB_SPLIT || sb == SB_DEMOTE)
		check_apart();
	switch (sb) {
	case SB_WANTED:
		promote_other();
		break;
	case SB_SPLIT:
		if (side[0] == side[1])
			pick();
		break;
	case SB_DEMOTE:
		demote();
		break;
	case SB_STANDALONE:
		resolve();
		break;
	case SB_RESOLVING:
		resolved();
		break;
	default:
		break;
	}
}
