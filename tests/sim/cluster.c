/* cluster.c: the simulated nodes (each an engine with one replica of the
 * volume, on the simulated loop, network and disk) and the cluster manager
 * that drives them by the rules of the OCF agent and replagentd's cluster
 * mode: membership with quorum (three voters; with two replicas the third
 * is a quorum-only node), a Primary only on the quorate side, never an
 * Outdated or Inconsistent replica promoted, a lost replica recorded
 * Outdated before the Primary may acknowledge (the outdate hook), a
 * cut-off Primary stepped down when it comes back to a cluster that has
 * another. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "meta.h"
#include "repl_int.h"
#include "replsim.h"

struct node nodes[SIM_NODES];
unsigned n_replicas;
int side[SIM_NODES];
int cm_primary = -1;
unsigned failovers;
uint64_t cm_size = VOL_SIZE;
bool small_al;
static bool cm_outdated[SIM_NODES];
static bool seen[SIM_NODES][SIM_NODES];
static bool bootstrapped;
/* a daemon exited for a restart, cm_daemon_restarts() */
static bool restart_wanted[SIM_NODES];
/* the Primary's daemon was restarted: its replacement is not a failover
 * of the fault budget (max_failovers) */
static bool owed_promotion;
/* the node the cluster promoted last, crashed or not: any other Primary
 * is stale (it was cut off while this one was promoted) */
static int last_promoted = -1;
/* Primary at the last changed hook; the cluster manager promoting */
static bool was_primary[SIM_NODES], cm_promoting;
static int move_to = -1;		/* cm_move(): promoted first */

struct outdate_req {
	int from, lost;
	uint64_t token;
	unsigned incarnation;	/* of the daemon that asked */
	bool pending;
};
static struct outdate_req oreq[64];

const char *node_name(int i)
{
	static const char *names[SIM_NODES] = { "n0", "n1", "n2" };

	return names[i];
}

static bool reachable(int a, int b)
{
	bool alive_a = a >= (int)n_replicas || nodes[a].alive;
	bool alive_b = b >= (int)n_replicas || nodes[b].alive;

	return alive_a && alive_b && side[a] == side[b];
}

bool quorate_side(int s)
{
	unsigned n = 0;

	for (int i = 0; i < SIM_NODES; i++)
		if (side[i] == s && (i >= (int)n_replicas || nodes[i].alive))
			n++;
	return n * 2 > SIM_NODES;
}


static void outdate_done_ev(void *a, uint64_t token)
{
	struct node *n = a;

	if (n->alive)
		repl_volume_outdate_done(n->vol, token);
}

static bool try_outdate(struct outdate_req *r)
{
	int lost = r->lost;

	/* replagentd keeps a request the group has not recorded in its state
	 * directory (agent/outdates.c) and sends it again when its daemon is
	 * back: the request waits for that, unless it is void by then (another
	 * node promoted since, below). */
	if (!nodes[r->from].alive) {
		if (r->from == last_promoted)
			return false;
		r->pending = false;
		return true;
	}
	if (!quorate_side(side[r->from]))
		return false;
	if (r->from != last_promoted) {
		/* a stale Primary's request: refused, it steps down */
		trace("cm: n%d is not the Primary the cluster knows: outdate refused", r->from);
		r->pending = false;
		return true;
	}
	if (!cm_outdated[lost])
		trace("cm: n%d records n%d Outdated", r->from, lost);
	cm_outdated[lost] = true;
	for (int k = 0; k < (int)n_replicas; k++) {
		if (!nodes[k].alive || !reachable(r->from, k))
			continue;
		if (k == lost)
			ON(k, repl_volume_mark_outdated(nodes[k].vol));
		else
			ON(k, repl_volume_peer_outdated(nodes[k].vol, node_name(lost)));
	}
	/* a daemon started since waits for no such confirmation */
	if (nodes[r->from].incarnation == r->incarnation)
		sim_at(sim_now + 1 * SIM_MS + rnd_below(30 * SIM_MS), r->from, outdate_done_ev,
		       &nodes[r->from], r->token);
	r->pending = false;
	return true;
}

static int hook_outdate(void *arg, struct repl_volume *vol, const char *node, uint64_t token)
{
	struct node *n = arg;
	int lost = node[0] == 'n' ? node[1] - '0' : -1;

	(void)vol;
	if (lost < 0 || lost >= (int)n_replicas)
		return -22;
	trace("cm: n%d asks to outdate %s (token %llu)", n->id, node, (unsigned long long)token);
	for (unsigned i = 0; i < 64; i++) {
		if (!oreq[i].pending) {
			oreq[i] = (struct outdate_req){ n->id, lost, token, n->incarnation, true };
			try_outdate(&oreq[i]);
			return 0;
		}
	}
	return -11;
}

static void clear_outdated(void);

/* replagentd's Primary says which replicas are in sync again whenever its
 * state changes (clusterd_hook_changed(), "in sync again" records), not
 * at the next tick: a resync that ends just before the Primary crashes
 * must not leave the cluster recording its target Outdated, which holds
 * every write the crashed Primary acknowledged and is the only replica
 * that may be promoted then. */
static void hook_changed(void *arg, struct repl_volume *vol)
{
	struct node *n = arg;
	struct repl_volume_status st;
	bool primary = repl_volume_role(vol) == REPL_PRIMARY;

	/* It took the role by itself, from its migration window (a handover,
	 * or the Primary left it): replagentd tells the group
	 * (clusterd_hook_changed()), which records it the Primary. */
	repl_volume_status(vol, &st);
	if (primary && !was_primary[n->id] && !cm_promoting && strcmp(st.window, "none")) {
		trace("cm: n%d took the Primary role from its migration window: the cluster "
		      "records it", n->id);
		cm_primary = last_promoted = n->id;
		oracle_role_moved(n->id);
	}
	was_primary[n->id] = primary;
	oracle_changed(n->id);
	if (n->id == cm_primary && !static_mode)
		clear_outdated();
}

static int hook_may_promote(void *arg, struct repl_volume *vol, bool takeover, char *why,
			    size_t len)
{
	struct node *n = arg;

	(void)vol;
	(void)takeover;
	if (!quorate_side(side[n->id]) || cm_outdated[n->id]) {
		snprintf(why, len, "no quorum or Outdated");
		return -1;
	}
	return 0;
}

static const struct repl_hooks hooks_tmpl = {
	.outdate = hook_outdate,
	.changed = hook_changed,
	.may_promote = hook_may_promote,
};

static const uint8_t vol_uuid[16] = { 0x5e, 0xed, 1, 2, 3, 4, 0x40, 5, 0x80, 6, 7, 8, 9, 10, 11, 12 };
static const uint8_t key[32] = "replsim shared secret, 32 bytes";

int node_start(int i)
{
	struct node *n = &nodes[i];
	struct repl_loop loop = { .ops = &sim_loop_ops, .data = (void *)(intptr_t)i };
	struct repl_volume_config cfg = {
		.name = "v", .backing = "/d/v.img", .meta = "/d/v.meta", .size = cm_size,
		.io_threads = 1, .node = node_name(i), .listen_host = node_name(i),
		.listen_port = "7000", .key = key, .key_len = sizeof(key),
		.outdate_timeout_ms = 0, .uuid = vol_uuid,
		.region_shift = small_al ? 12 : 0, .al_extent_shift = small_al ? 14 : 0,
		.al_extents = small_al ? 16 : 0, .loss_marker = "/run/v.lost",
	};
	struct repl_hooks h = hooks_tmpl;
	int r;

	if (static_mode) {
		/* replagentd without a cluster: no outdate hook, no guard */
		h.outdate = NULL;
		h.may_promote = NULL;
	}

	for (unsigned j = 0; j < n_replicas; j++) {
		if ((int)j == i)
			continue;
		cfg.peers[cfg.n_peers].node = node_name((int)j);
		cfg.peers[cfg.n_peers].host = node_name((int)j);
		cfg.peers[cfg.n_peers].port = "7000";
		cfg.n_peers++;
	}
	h.arg = n;
	n->id = i;
	ON(i, r = repl_engine_new(&loop, &n->eng));
	if (r < 0)
		return r;
	ON(i, repl_engine_set_hooks(n->eng, &h));
	ON(i, r = repl_volume_add(n->eng, &cfg, &n->vol));
	if (r < 0) {
		ON(i, repl_engine_free(n->eng));	/* tried again later */
		n->eng = NULL;
		return r;
	}
	n->alive = true;
	n->incarnation++;
	/* As replagentd's cluster mode: not quorate until the state exchange
	 * is over, the group's records told first (membership()). */
	n->quorate = static_mode;
	if (!static_mode)
		ON(i, repl_volume_set_quorate(n->vol, false));
	was_primary[i] = repl_volume_role(n->vol) == REPL_PRIMARY;
	restart_wanted[i] = false;
	for (int j = 0; j < SIM_NODES; j++)
		seen[i][j] = true;
	return 0;
}

/* Power loss: nothing of the node's runs any more (its engine is
 * abandoned, as a crashed process is), unflushed data goes. */
void node_crash(int i, int mode)
{
	struct node *n = &nodes[i];

	trace("FAULT crash n%d with power loss (%s)", i, mode ? "a random subset of unflushed "
	      "sectors survives" : "all unflushed data lost");
	n->alive = false;
	sim_cancel_node(i);
	sim_fd_forget_node(i);
	sim_net_crash(i);
	sim_disk_power_loss(i, mode);
	oracle_crash(i);
	n->eng = NULL;
	n->vol = NULL;
	if (cm_primary == i)
		cm_primary = -1;
}

/* The daemon exits, its host stays up: what it wrote stays in the page
 * cache, the rest is as after a crash. */
void node_exit(int i)
{
	struct node *n = &nodes[i];

	n->alive = false;
	sim_cancel_node(i);
	sim_fd_forget_node(i);
	sim_net_crash(i);
	oracle_exit(i);
	n->eng = NULL;
	n->vol = NULL;
	if (cm_primary == i) {
		cm_primary = -1;
		owed_promotion = true;
	}
}

/* The daemon exits and starts again at once, before the cluster notices
 * (a fault of --small-al only): its host kept what it wrote.  A replica
 * starts as Secondary; a Primary's is owed its role back (node_exit()),
 * which the cluster gives it again when no other replica is ahead, and
 * its peers then take its activity log from it (gen.c, rule 5a or 9
 * with the crash), the one resync whose extent follows the log. */
void node_bounce(int i)
{
	trace("FAULT n%d's daemon exits and starts again at once", i);
	node_exit(i);
	if (node_start(i) < 0) {
		trace("cm: n%d's daemon did not start again: retrying", i);
		restart_wanted[i] = true;
	}
	sim_at(sim_now + SIM_MS, -1, cm_tick, NULL, 0);
}

/* The cluster's monitor restarts a daemon whose metadata is failing
 * (replagentd's health says critical: every write fails until a restart,
 * repl_volume_status()), and tries again while the disk still fails the
 * writes that opening the volume makes. */
void cm_daemon_restarts(void)
{
	struct repl_volume_status st;

	for (int i = 0; i < (int)n_replicas; i++) {
		struct node *n = &nodes[i];

		if (!n->alive && restart_wanted[i]) {
			if (node_start(i) < 0) {
				trace("cm: n%d's daemon did not start again: retrying", i);
				continue;
			}
			trace("cm: n%d's daemon started again", i);
			restart_wanted[i] = false;
			continue;
		}
		if (!n->alive)
			continue;
		repl_volume_status(n->vol, &st);
		if (strncmp(st.meta_error, "metadata failing", 16) != 0)
			continue;
		trace("cm: n%d's metadata is failing: restarting its daemon", i);
		node_exit(i);
		restart_wanted[i] = true;
	}
}

void cm_set_side(int i, int s)
{
	if (side[i] == s)
		return;
	side[i] = s;
	for (int j = 0; j < SIM_NODES; j++)
		if (j != i && side[j] != s)
			sim_net_blackhole(i, j);
}

static void membership(void)
{
	for (int i = 0; i < (int)n_replicas; i++) {
		struct node *n = &nodes[i];
		bool q;

		if (!n->alive)
			continue;
		for (int j = 0; j < (int)n_replicas; j++) {
			bool r = reachable(i, j);
			if (j == i || r == seen[i][j])
				continue;
			seen[i][j] = r;
			if (!r) {
				trace("cm: n%d hears that n%d left", i, j);
				ON(i, repl_volume_peer_gone(n->vol, node_name(j)));
			} else if (cm_outdated[j] && nodes[j].alive) {
				ON(j, repl_volume_mark_outdated(nodes[j].vol));
			}
		}
		q = quorate_side(side[i]);
		if (q != n->quorate) {
			/* the group's record of it comes before its quorum */
			if (q && cm_outdated[i])
				ON(i, repl_volume_mark_outdated(n->vol));
			n->quorate = q;
			trace("cm: n%d %s quorum", i, q ? "has" : "lost");
			ON(i, repl_volume_set_quorate(n->vol, q));
		}
	}
}

static void clear_outdated(void)
{
	struct repl_volume_status st;
	int p = cm_primary;

	if (p < 0 || !nodes[p].alive || !quorate_side(side[p]))
		return;
	ON(p, repl_volume_status(nodes[p].vol, &st));
	for (unsigned k = 0; k < st.n_peers; k++) {
		int j = st.peers[k].node[1] - '0';
		if (!(st.peers[k].in_sync || st.peers[k].following_clean) || !cm_outdated[j])
			continue;
		trace("cm: n%d is in sync again, no longer Outdated", j);
		cm_outdated[j] = false;
		for (int o = 0; o < (int)n_replicas; o++) {
			if (!nodes[o].alive || o == p)
				continue;
			if (o == j)
				ON(o, repl_volume_uptodate_by(nodes[o].vol, node_name(p)));
			else
				ON(o, repl_volume_peer_uptodate(nodes[o].vol, node_name(j)));
		}
	}
}

static void roles(void)
{
	char why[200];
	int qs = -1;

	for (int s = 0; s < 2; s++)
		if (quorate_side(s))
			qs = s;
	if (qs < 0)
		return;
	/* a Primary that came back to a cluster with another one */
	for (int i = 0; i < (int)n_replicas; i++) {
		if (!nodes[i].alive || side[i] != qs || i == cm_primary ||
		    repl_volume_role(nodes[i].vol) != REPL_PRIMARY)
			continue;
		if (i != last_promoted) {
			trace("cm: n%d is a stale Primary (n%d was promoted since): step down", i,
			      last_promoted);
			ON(i, repl_volume_step_down(nodes[i].vol));
		} else {
			cm_primary = i;	/* it kept the role through a short cut */
		}
	}
	if (cm_primary >= 0 && nodes[cm_primary].alive && side[cm_primary] == qs &&
	    repl_volume_role(nodes[cm_primary].vol) == REPL_PRIMARY)
		return;
	if (cm_primary >= 0 && nodes[cm_primary].alive && side[cm_primary] == qs) {
		/* It stepped down by itself (its disk lost writes that
		 * another replica holds): as Pacemaker recovers a promoted
		 * instance that failed, the cluster promotes one, beyond the
		 * run's budget of failovers. */
		cm_primary = -1;
		owed_promotion = true;
	}
	for (int k = -1; k < (int)n_replicas; k++) {
		int r, prev, i = k < 0 ? move_to : k;

		if (i < 0 || (k >= 0 && i == move_to) || !nodes[i].alive || side[i] != qs ||
		    cm_outdated[i])
			continue;
		if (failovers >= max_failovers && bootstrapped && !owed_promotion)
			return;
		/* the cluster knows whom it promotes: the new Primary's
		 * requests to outdate the replicas away (the engine makes them
		 * as it is promoted) are its */
		prev = last_promoted;
		last_promoted = i;
		cm_promoting = true;
		ON(i, r = repl_volume_promote(nodes[i].vol, !bootstrapped, why, sizeof(why)));
		cm_promoting = false;
		if (r < 0) {
			last_promoted = prev;
			trace("cm: n%d cannot be promoted: %s", i, why);
			continue;
		}
		trace("cm: promoted n%d%s", i, bootstrapped ? "" : " (bootstrap, forced)");
		move_to = -1;
		if (bootstrapped && !owed_promotion)
			failovers++;
		owed_promotion = false;
		bootstrapped = true;
		cm_primary = i;
		oracle_promoted(i);
		oracle_client_connect(i);
		return;
	}
}

/* Pacemaker moves the promoted role to d (pcs resource move): the guest
 * stops on the Primary (its QEMU goes, flushing nothing: killed, or the
 * client had sent no FLUSH), the Primary is demoted (refused while writes
 * are in flight: then nothing moves) and d is promoted (another replica,
 * the old Primary too, if d cannot be).  Not a failover: outside the
 * run's budget. */
void cm_move(int d)
{
	struct repl_volume_status st;
	char why[200];
	int p = cm_primary, r;

	if (p < 0 || d == p || !nodes[p].alive || !nodes[d].alive || migrate_active() ||
	    side[p] != side[d] || !quorate_side(side[p]) || oracle_client_node() != p)
		return;
	oracle_client_detach(p);
	ON(p, r = repl_volume_demote(nodes[p].vol, why, sizeof(why)));
	if (r < 0) {
		trace("FAULT move n%d -> n%d: n%d does not demote: %s", p, d, p, why);
		oracle_client_attach(p);	/* the guest runs on */
		return;
	}
	trace("FAULT move n%d -> n%d: the guest stopped on n%d, which is demoted", p, d, p);
	/* As a Secondary it keeps no activity log, and the Primary promoted
	 * next tracks only what it sends itself: what it acknowledged as
	 * Primary must be durable now, or a power loss takes it with nothing
	 * to resync it (e773d86, found by tests/repl-demote-powerloss.sh, not
	 * by the sweeps: the next Primary's flush usually came first). */
	ON(p, repl_volume_status(nodes[p].vol, &st));
	if (!strcmp(st.disk, "UpToDate") && sim_disk_unflushed(p, "/d/v.img"))
		fail("lost-write", "n%d was demoted with writes it acknowledged not yet "
		     "durable", p);
	cm_primary = -1;
	owed_promotion = true;
	move_to = d;
	roles();
}

void cm_tick(void *a, uint64_t b)
{
	(void)a;
	(void)b;
	if (static_mode) {
		split_tick();
		return;
	}
	membership();
	for (unsigned i = 0; i < 64; i++)
		if (oreq[i].pending)
			try_outdate(&oreq[i]);
	clear_outdated();
	roles();
}

static void cm_periodic(void *a, uint64_t b)
{
	cm_tick(a, b);
	cm_daemon_restarts();
	oracle_check_status();
	sim_at(sim_now + 200 * SIM_MS, -1, cm_periodic, NULL, 0);
}

/* An operator grows the volume ("replagent volume resize"): the group
 * tells every node, each grows its replica by itself (a node that is
 * down grows it when its daemon starts again, node_start()). */
void cm_grow(void)
{
	char why[200];

	if (cm_size >= VOL_MAX)
		return;
	cm_size += (1 + rnd_below(4)) * (UINT64_C(64) << 10);
	if (cm_size > VOL_MAX)
		cm_size = VOL_MAX;
	trace("FAULT resize: the volume grows to %llu bytes", (unsigned long long)cm_size);
	for (int i = 0; i < (int)n_replicas; i++) {
		int r;

		if (!nodes[i].alive)
			continue;
		ON(i, r = repl_volume_grow(nodes[i].vol, cm_size, why, sizeof(why)));
		if (r < 0)
			fail("resize", "n%d refuses to grow to %llu bytes: %s", i,
			     (unsigned long long)cm_size, why);
	}
}

void cluster_init(unsigned replicas)
{
	n_replicas = replicas;
	memset(nodes, 0, sizeof(nodes));
	memset(side, 0, sizeof(side));
	memset(cm_outdated, 0, sizeof(cm_outdated));
	memset(oreq, 0, sizeof(oreq));
	memset(restart_wanted, 0, sizeof(restart_wanted));
	memset(was_primary, 0, sizeof(was_primary));
	owed_promotion = false;
	cm_primary = -1;
	last_promoted = -1;
	move_to = -1;
	failovers = 0;
	cm_size = VOL_SIZE;
	bootstrapped = false;
	sim_reachable = reachable;
	sim_at(sim_now + 300 * SIM_MS, -1, cm_periodic, NULL, 0);
}

bool cm_outdated_node(int i)
{
	return cm_outdated[i];
}
