/* verify_watch.c: online verify as a fault.  An operator starts
 * `replagent verify` (now and then with --repair on the Primary) on any
 * replica while the faults go on, and the run watches it: the verify must
 * not lose a write or hang the cluster (the other invariants), it must end
 * (the run's final verify cannot start while one still runs), and it must
 * not report a region that differs where the two replicas were the same
 * all along: a pair it compares (the Primary and a peer in sync with it,
 * or a Secondary and its Primary) that stayed connected on one connection,
 * in sync, with no disk error anywhere, from the start to the end of the
 * verify. */
#include "config.h"

#include <inttypes.h>
#include <string.h>

#include "peer.h"
#include "replsim.h"

#define WATCH_MS 10

static struct {
	int node;			/* -1: none watched */
	unsigned incarnation;
	unsigned long eios;
	bool clean[REPL_MAX_PEERS];	/* this pair stayed the same so far */
	uint64_t conn[REPL_MAX_PEERS];
	uint64_t started;
} vw = { .node = -1 };

static int peer_node(const struct repl_volume_status *st, unsigned k)
{
	return st->peers[k].node[1] - '0';
}

/* Is the pair (vw.node, its peer k) the same replica on both sides now? */
static bool pair_clean(const struct repl_volume_status *st, unsigned k)
{
	struct repl_volume *vol = nodes[vw.node].vol;
	int j = peer_node(st, k), p = cm_primary;
	struct repl_volume_status ps;

	if (!vol->peers[k] || vol->peers[k]->conn_id != vw.conn[k] ||
	    st->peers[k].link != REPL_LINK_CONNECTED || sim_diskcfg.eios != vw.eios)
		return false;
	if (vw.node == p)
		return st->peers[k].in_sync;
	if (j != p || p < 0 || !nodes[p].alive || strcmp(st->disk, "UpToDate"))
		return false;
	/* a Secondary and its Primary: the Primary says it is in sync */
	repl_volume_status(nodes[p].vol, &ps);
	for (unsigned m = 0; m < ps.n_peers; m++)
		if (peer_node(&ps, m) == vw.node)
			return ps.peers[m].in_sync;
	return false;
}

static void watch_ev(void *a, uint64_t b)
{
	struct repl_volume_status st;
	int i = vw.node;

	(void)a;
	(void)b;
	if (i < 0)
		return;
	if (!nodes[i].alive || nodes[i].incarnation != vw.incarnation) {
		trace("verify: n%d went down while verifying", i);
		vw.node = -1;
		return;
	}
	repl_volume_status(nodes[i].vol, &st);
	for (unsigned k = 0; k < st.n_peers; k++)
		vw.clean[k] = vw.clean[k] && pair_clean(&st, k);
	if (st.verify_running) {
		sim_at(sim_now + WATCH_MS * SIM_MS, -1, watch_ev, NULL, 0);
		return;
	}
	for (unsigned k = 0; k < st.n_peers; k++)
		if (vw.clean[k] && st.peers[k].verify_differing)
			fail("verify", "the online verify on n%d (from %.3f s) says %" PRIu64
			     " region(s) differ on %s (the first at byte %" PRIu64 "), but the "
			     "pair stayed connected, in sync and without a disk error throughout",
			     i, (double)vw.started / 1e9, st.peers[k].verify_differing,
			     st.peers[k].node, st.verify_n_listed ? st.verify_listed[0] : 0);
	trace("verify: the online verify on n%d ended", i);
	vw.node = -1;
}

void verify_fault(int i)
{
	struct repl_volume_status st;
	char why[200] = "";
	bool repair;
	int r;

	if (!nodes[i].alive || vw.node >= 0)
		return;
	repair = i == cm_primary && rnd_chance(300);
	ON(i, r = repl_volume_verify(nodes[i].vol, repair, why, sizeof(why)));
	trace("FAULT online verify%s started on n%d%s%s", repair ? " --repair" : "", i,
	      r < 0 ? ": refused: " : "", r < 0 ? why : "");
	if (r < 0)
		return;
	vw.node = i;
	vw.incarnation = nodes[i].incarnation;
	vw.eios = sim_diskcfg.eios;
	vw.started = sim_now;
	repl_volume_status(nodes[i].vol, &st);
	for (unsigned k = 0; k < st.n_peers; k++) {
		vw.conn[k] = nodes[i].vol->peers[k]->conn_id;
		vw.clean[k] = pair_clean(&st, k);
	}
	sim_at(sim_now + WATCH_MS * SIM_MS, -1, watch_ev, NULL, 0);
}

void verify_watch_reset(void)
{
	vw.node = -1;
}

bool verify_watch_busy(void)
{
	return vw.node >= 0;
}
