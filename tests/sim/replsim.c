/* replsim.c: the deterministic simulator of the replicated engine.
 *
 *   replsim --seed N [--trace]        one run, replayed exactly
 *   replsim --runs K [--from S] [-j J]  seeds S..S+K-1, each in a child
 *
 * A run: 2 or 3 replicas of one volume (the seed says), bootstrapped in
 * sync; a client workload on the Primary; faults chosen by the seed (link
 * cuts, partitions, message delay, crashes with power loss and restarts,
 * disk EIO, slow disks, full disks and unreadable sectors (--full-disk,
 * --bad-sectors), an online verify started on any replica:
 * verify_watch.c, the volume grown while in use: cm_grow(), a live
 * migration to another replica: migrate.c; the cluster manager promotes
 * a survivor); then
 * every fault healed and the run must settle: one Primary, every replica
 * in sync, every request answered, replicas byte-identical (oracle.c),
 * and an online verify on the Primary ends and finds them equal.
 * Exit status: 0 all runs passed, 1 an invariant was violated, 3 only
 * liveness (did not settle) failed. */
#include "config.h"

#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "replsim.h"
#include "sys.h"

unsigned max_failovers = 2;
static uint64_t run_len = 8000 * SIM_MS;
static unsigned n_faults;
static bool sweeping;	/* only failures are printed */
static bool no_eio;	/* --no-eio: no disk EIO faults (see the README) */
/* --full-disk: half the disk faults are a full file system instead;
 * --bad-sectors: a quarter, a range of unreadable sectors (half the
 * client's reads on that node go there: oracle.c) */
static bool full_disk, bad_sectors;
static uint64_t full_since[SIM_NODES], bad_since[SIM_NODES];
static unsigned long full_refused[SIM_NODES], bad_refused[SIM_NODES];

static void log_sink(int level, const char *msg, void *data)
{
	(void)level;
	(void)data;
	trace("%s", msg);
}

static void restart_ev(void *a, uint64_t b)
{
	int i = (int)b;

	(void)a;
	if (nodes[i].alive)
		return;
	trace("FAULT over: n%d restarts", i);
	if (node_start(i) < 0) {
		/* Opening a volume writes its metadata: not while the disk
		 * fails writes; the cluster's monitor tries again. */
		if (!sim_diskcfg.eio_permille[i])
			fail("restart", "n%d cannot open its volume after a crash", i);
		trace("cm: n%d's daemon did not start: the disk fails writes, retrying", i);
		sim_at(sim_now + 500 * SIM_MS, -1, restart_ev, NULL, (uint64_t)i);
		return;
	}
	cm_tick(NULL, 0);
}

static void heal_side_ev(void *a, uint64_t b)
{
	(void)a;
	trace("FAULT over: n%d rejoins", (int)b);
	cm_set_side((int)b, 0);
	cm_tick(NULL, 0);
}

/* A full disk refuses every write: none may be tried again as fast as it
 * fails (a resync sent 4 GiB in 5 s to one, tests/repl-disk-full.sh).
 * Besides the guest's own (each tried three times on the Primary), a few
 * per second: a resync's window after each of its pauses. */
#define FULL_REFUSED_PER_S 100
#define FULL_REFUSED_MIN 100

static void disk_not_full(int i)
{
	unsigned long n = sim_diskcfg.enospc[i] - full_refused[i];
	double s = (double)(sim_now - full_since[i]) / 1e9;

	if (!sim_diskcfg.full[i])
		return;
	sim_diskcfg.full[i] = false;
	trace("disk: n%d refused %lu writes in %.3f s while full", i, n, s);
	if ((double)n > FULL_REFUSED_MIN + FULL_REFUSED_PER_S * s)
		fail("busy", "n%d's full disk was sent %lu writes in %.3f s: something tries "
		     "them again as fast as they fail", i, n, s);
}

/* Unreadable sectors are read again no faster than a full disk is
 * written (a verify read the same region again forever, and a resync
 * would have: tests/repl-verify-eio.sh). */
static void sectors_readable(int i)
{
	unsigned long n = sim_diskcfg.bad_reads[i] - bad_refused[i];
	double s = (double)(sim_now - bad_since[i]) / 1e9;

	if (!sim_diskcfg.bad_len[i])
		return;
	sim_diskcfg.bad_len[i] = 0;
	trace("disk: n%d's unreadable sectors failed %lu reads in %.3f s", i, n, s);
	if ((double)n > FULL_REFUSED_MIN + FULL_REFUSED_PER_S * s)
		fail("busy", "n%d's unreadable sectors were read %lu times in %.3f s: something "
		     "tries them again as fast as they fail", i, n, s);
}

static void disk_ok_ev(void *a, uint64_t b)
{
	(void)a;
	trace("FAULT over: n%d's disk is healthy", (int)b);
	sim_diskcfg.eio_permille[b] = 0;
	sim_diskcfg.slow[b] = false;
	disk_not_full((int)b);
	sectors_readable((int)b);
}

static void delay_ok_ev(void *a, uint64_t b)
{
	(void)a;
	(void)b;
	trace("FAULT over: network delay normal");
	sim_netcfg.delay_max = 2 * SIM_MS;
}

static bool may_lose_primary(int i)
{
	return i != cm_primary || failovers < max_failovers;
}

/* The faults of the split-brain profile (split.c): two replicas in
 * static mode; the Primary never goes down, n0 or n1 may be cut off. */
static void fault_static(unsigned k, int i, uint64_t dur)
{
	int s = 1 - cm_primary;

	if (split_busy() && k < 65)
		return;
	if (k < 25) {
		trace("FAULT link cut n0-n1");
		sim_net_cut(0, 1);
	} else if (k < 50) {
		if (side[0] != side[1])
			return;
		/* long enough, when the operator is to act, for the cut-off
		 * Secondary to notice */
		if (rnd_chance(500) && split_fault())
			dur += 4000 * SIM_MS;
		trace("FAULT partition: n%d cut off from n%d for %.3f s", i, 1 - i,
		      (double)dur / 1e9);
		cm_set_side(i, 1);
		sim_at(sim_now + dur, -1, heal_side_ev, NULL, (uint64_t)i);
	} else if (k < 65) {
		if (s < 0 || s > 1 || !nodes[s].alive)
			return;
		trace("FAULT n%d's daemon exits", s);
		node_exit(s);
		sim_at(sim_now + dur, -1, restart_ev, NULL, (uint64_t)s);
	} else if (k < 80) {
		sim_diskcfg.slow[i] = true;
		trace("FAULT n%d's disk is slow for %.3f s", i, (double)dur / 1e9);
		sim_at(sim_now + dur, -1, disk_ok_ev, NULL, (uint64_t)i);
	} else {
		sim_netcfg.delay_max = 20 * SIM_MS + rnd_below(500 * SIM_MS);
		trace("FAULT network delay up to %.3f s for %.3f s",
		      (double)sim_netcfg.delay_max / 1e9, (double)dur / 1e9);
		sim_at(sim_now + dur, -1, delay_ok_ev, NULL, 0);
	}
}

static void fault_ev(void *a, uint64_t b)
{
	unsigned k = (unsigned)rnd_below(124);
	int i = (int)rnd_below(n_replicas), j = (int)rnd_below(n_replicas);
	uint64_t dur = 200 * SIM_MS + rnd_below(5000 * SIM_MS);

	(void)a;
	(void)b;
	if (sim_now >= run_len)
		return;
	sim_at(sim_now + 300 * SIM_MS + rnd_below(3000 * SIM_MS), -1, fault_ev, NULL, 0);
	n_faults++;
	if (static_mode) {
		fault_static(k % 100, i % 2, dur);
		return;
	}
	if (k < 20) {
		if (i == j)
			j = (i + 1) % (int)n_replicas;
		trace("FAULT link cut n%d-n%d", i, j);
		sim_net_cut(i, j);
	} else if (k < 40) {
		int v = (int)rnd_below(SIM_NODES);
		bool busy = false;
		for (int x = 0; x < SIM_NODES; x++)
			busy |= side[x] != 0;
		if (busy || !may_lose_primary(v))
			return;
		trace("FAULT partition: n%d cut off from the others for %.3f s", v,
		      (double)dur / 1e9);
		cm_set_side(v, 1);
		sim_at(sim_now + dur, -1, heal_side_ev, NULL, (uint64_t)v);
		sim_at(sim_now + 100 * SIM_MS + rnd_below(1500 * SIM_MS), -1, cm_tick, NULL, 0);
	} else if (k < 60) {
		if (!nodes[i].alive || !may_lose_primary(i))
			return;
		if (small_al && i == cm_primary && rnd_chance(500)) {
			node_bounce(i);
			return;
		}
		node_crash(i, (int)rnd_below(2));
		sim_at(sim_now + dur, -1, restart_ev, NULL, (uint64_t)i);
		sim_at(sim_now + 100 * SIM_MS + rnd_below(1500 * SIM_MS), -1, cm_tick, NULL, 0);
	} else if (k < 72) {
		if (no_eio)
			return;
		if (full_disk && (dur / SIM_MS) % 2 == 0) {
			/* drawn from dur: the seeds' random streams stay */
			if (sim_diskcfg.full[i])
				return;
			sim_diskcfg.full[i] = true;
			full_since[i] = sim_now;
			full_refused[i] = sim_diskcfg.enospc[i];
			trace("FAULT n%d's disk is full for %.3f s", i, (double)dur / 1e9);
			sim_at(sim_now + dur, -1, disk_ok_ev, NULL, (uint64_t)i);
			return;
		}
		if (bad_sectors && (dur / SIM_MS) % 4 == 1) {
			/* where and how many, from dur too */
			if (sim_diskcfg.bad_len[i])
				return;
			sim_diskcfg.bad_off[i] = (dur / 1000 * 512) % VOL_SIZE;
			sim_diskcfg.bad_len[i] = 4096 * (1 + (dur / 1000) % 16);
			bad_since[i] = sim_now;
			bad_refused[i] = sim_diskcfg.bad_reads[i];
			trace("FAULT n%d cannot read %" PRIu64 "+%" PRIu64 " for %.3f s", i,
			      sim_diskcfg.bad_off[i], sim_diskcfg.bad_len[i], (double)dur / 1e9);
			sim_at(sim_now + dur, -1, disk_ok_ev, NULL, (uint64_t)i);
			/* half the time, an operator verifies */
			if ((dur / 1000) % 2)
				verify_fault(i);
			return;
		}
		sim_diskcfg.eio_permille[i] = 20 + (unsigned)rnd_below(300);
		trace("FAULT n%d's disk fails %u/1000 writes and flushes for %.3f s", i,
		      sim_diskcfg.eio_permille[i], (double)dur / 1e9);
		sim_at(sim_now + dur, -1, disk_ok_ev, NULL, (uint64_t)i);
	} else if (k < 86) {
		sim_diskcfg.slow[i] = true;
		trace("FAULT n%d's disk is slow for %.3f s", i, (double)dur / 1e9);
		sim_at(sim_now + dur, -1, disk_ok_ev, NULL, (uint64_t)i);
	} else if (k >= 116) {
		/* a quarter of them move the role instead (drawn from dur, so
		 * that the seeds' random streams stay as they were) */
		if ((dur / SIM_MS) % 4 == 0)
			cm_move(i);
		else
			migrate_fault(i);
	} else if (k >= 110) {
		cm_grow();
	} else if (k >= 100) {
		verify_fault(i);
	} else {
		sim_netcfg.delay_max = 20 * SIM_MS + rnd_below(500 * SIM_MS);
		trace("FAULT network delay up to %.3f s for %.3f s",
		      (double)sim_netcfg.delay_max / 1e9, (double)dur / 1e9);
		sim_at(sim_now + dur, -1, delay_ok_ev, NULL, 0);
	}
}

/* After the run settled and the replicas were found byte-identical: an
 * online verify on the Primary must end within a bounded time and find
 * no region that differs on any peer (each peer's count too). */
static void final_verify(void)
{
	struct repl_volume_status st;
	char why[200] = "";
	int p = cm_primary, r;
	uint64_t deadline = sim_now + 60000 * SIM_MS;

	ON(p, r = repl_volume_verify(nodes[p].vol, false, why, sizeof(why)));
	if (r < 0)
		fail("verify", "n%d cannot start an online verify once settled: %s", p, why);
	do
		repl_volume_status(nodes[p].vol, &st);
	while (st.verify_running && sim_step() && sim_now < deadline);
	repl_volume_status(nodes[p].vol, &st);
	if (st.verify_running || st.verify_done != st.verify_total)
		fail("verify", "the online verify on n%d did not end within 60 s (%" PRIu64
		     " of %" PRIu64 " regions)", p, st.verify_done, st.verify_total);
	for (unsigned k = 0; k < st.n_peers; k++)
		if (st.peers[k].verify_differing)
			fail("verify", "the online verify on n%d says %" PRIu64 " region(s) differ "
			     "on %s (the first at byte %" PRIu64 "), but the replicas are "
			     "byte-identical", p, st.peers[k].verify_differing,
			     st.peers[k].node, st.verify_n_listed ? st.verify_listed[0] : 0);
	trace("run: the online verify found every region equal");
}

/* Is the cluster settled: one Primary, every replica in sync with it, no
 * request waiting? */
static bool settled(const char **why)
{
	struct repl_volume_status st;
	int p = cm_primary;

	if (p < 0 || !nodes[p].alive) {
		*why = "no Primary";
		return false;
	}
	repl_volume_status(nodes[p].vol, &st);
	for (unsigned k = 0; k < st.n_peers; k++) {
		if (!st.peers[k].in_sync) {
			*why = "a replica is not in sync";
			return false;
		}
	}
	/* ... and each replica sees the Primary too: a replica that crashed
	 * and restarted before the Primary noticed is not in sync, whatever
	 * the Primary's old link still says. */
	for (int i = 0; i < (int)n_replicas; i++) {
		if (i == p)
			continue;
		if (!nodes[i].alive) {
			*why = "a replica is down";
			return false;
		}
		repl_volume_status(nodes[i].vol, &st);
		for (unsigned k = 0; k < st.n_peers; k++) {
			if (st.peers[k].node[1] - '0' == p &&
			    st.peers[k].link != REPL_LINK_CONNECTED) {
				*why = "a replica does not see the Primary";
				return false;
			}
		}
	}
	if (workload_pending()) {
		*why = "requests unanswered";
		return false;
	}
	if (split_busy()) {
		*why = "the operator has not resolved the split brain";
		return false;
	}
	for (int i = 0; i < (int)n_replicas; i++) {
		repl_volume_status(nodes[i].vol, &st);
		if (st.size != cm_size) {
			*why = "a replica has not grown to the volume's size";
			return false;
		}
		for (unsigned k = 0; i == p && k < st.n_peers; k++) {
			if (st.peers[k].size != cm_size) {
				*why = "the Primary has not heard that a replica grew";
				return false;
			}
		}
	}
	return true;
}

/* Steps until the cluster is settled, then on for SETTLE_QUIET_MS: true
 * if it still is then.  What a replica asked its new Primary for (its
 * recent regions, recent.c) may be on the wire when its resync, done
 * before the Primary saw the asks, ends: the Primary counts it in sync
 * and resyncs those regions a round trip later (sim seed 874 with
 * --inline). */
#define SETTLE_QUIET_MS 100
static bool settled_a_while(uint64_t deadline, const char **why)
{
	uint64_t quiet;

	for (;;) {
		while (sim_now < deadline && !settled(why) && sim_step())
			;
		if (!settled(why))
			return false;	/* the deadline, or nothing left to happen */
		quiet = sim_now + SETTLE_QUIET_MS * SIM_MS;
		while (sim_now < quiet && sim_step())
			;
		if (settled(why))
			return true;
	}
}

/* Every replica lost writes by its own account, none partial, and the
 * disk of one at least failed: each is Inconsistent and its disk failed
 * writes or flushes (a flush that fails tears what it had to write:
 * sim_disk.c), or it lost power and has not been resynced since
 * (power_lost); or the cluster records it Outdated.  No replica knows
 * that it holds every write acknowledged, and none may be promoted
 * without an operator's --force (DRBD, with every disk detached, is as
 * stuck; sim seed 14446 of the EIO profile: the Primary's flush failed
 * and it stepped down for the target of a resync it had just sent in
 * full, which lost its power before its own flush ended; 13681 of
 * --inline: the disks of the two replicas of a new Primary's era failed
 * in turn, the old Primary Outdated).  A run ends so only after the
 * losses came within moments of each other. */
static bool all_disks_lost(void)
{
	struct repl_volume_status st;
	bool failed = false;

	for (int i = 0; i < (int)n_replicas; i++) {
		if (!nodes[i].alive)
			return false;
		repl_volume_status(nodes[i].vol, &st);
		if (st.partial || !strcmp(st.role, "Primary"))
			return false;
		if (cm_outdated_node(i) && strcmp(st.disk, "UpToDate"))
			continue;
		if (strcmp(st.disk, "Inconsistent"))
			return false;
		if (sim_disk_failed(i))
			failed = true;
		else if (!st.power_lost)
			return false;
	}
	return failed;
}

static void dump_status(void)
{
	for (int i = 0; i < (int)n_replicas; i++) {
		struct repl_volume_status st;

		if (!nodes[i].alive) {
			printf("  n%d: down\n", i);
			continue;
		}
		repl_volume_status(nodes[i].vol, &st);
		printf("  n%d: %s %s%s%s", i, st.role, st.disk, st.io_frozen ? " frozen" : "",
		       cm_outdated_node(i) ? " (cluster: Outdated)" : "");
		for (unsigned k = 0; k < st.n_peers; k++)
			printf("; %s %s %s oos=%" PRIu64 "%s%s%s", st.peers[k].node,
			       st.peers[k].link_name, st.peers[k].peer_disk,
			       st.peers[k].out_of_sync_bytes, st.peers[k].in_sync ? " in-sync" : "",
			       st.peers[k].reason[0] ? " why: " : "", st.peers[k].reason);
		printf("\n");
	}
}

static int run(uint64_t seed)
{
	const char *why = "";
	uint64_t deadline;

	run_seed = seed;
	sim_seed(seed);
	sim_env_reset();
	sim_net_reset();
	sim_disk_reset();
	oracle_reset();
	verify_watch_reset();
	migrate_reset();
	split_reset();
	repl_sys_set(sim_sys_ops());
	rlog_set_sink(log_sink, NULL);
	rlog_set_level(sim_tracing ? LOG_INFO : -1);
	n_faults = 0;
	cluster_init(static_mode ? 2 : 2 + (unsigned)rnd_below(2));
	sim_netcfg.dup_connect_permille = 50;
	sim_netcfg.short_recv_permille = 200;
	sim_net_seed(seed);
	trace("run: seed %" PRIu64 ", %u replicas, at most %u failovers", seed, n_replicas,
	      max_failovers);
	for (int i = 0; i < (int)n_replicas; i++)
		if (node_start(i) < 0)
			fail("start", "n%d cannot create its volume", i);
	/* bootstrap: wait for the first resync */
	deadline = sim_now + 120000 * SIM_MS;
	while (sim_step() && sim_now < deadline && !settled(&why))
		;
	if (!settled(&why))
		fail("liveness", "the cluster never got in sync at the start: %s", why);
	trace("run: in sync, workload and faults start");
	workload_start();
	run_len += sim_now;
	sim_at(sim_now + rnd_below(1000 * SIM_MS), -1, fault_ev, NULL, 0);
	while (sim_now < run_len && sim_step())
		;
	/* heal everything */
	trace("run: healing every fault");
	workload_stop();
	for (int i = 0; i < SIM_NODES; i++) {
		sim_diskcfg.eio_permille[i] = 0;
		sim_diskcfg.slow[i] = false;
		disk_not_full(i);
		sectors_readable(i);
		cm_set_side(i, 0);
	}
	sim_netcfg.delay_max = 2 * SIM_MS;
	for (int i = 0; i < (int)n_replicas; i++)
		if (!nodes[i].alive)
			restart_ev(NULL, (uint64_t)i);
	cm_tick(NULL, 0);
	deadline = sim_now + 300000 * SIM_MS;
	if (!settled_a_while(deadline, &why)) {
		if (all_disks_lost()) {
			trace("run: no replica may be promoted: each lost writes (its "
			      "disk failed, or its power, or the cluster records it "
			      "Outdated), and none knows that it holds every write "
			      "acknowledged (an operator's --force is the way out)");
			if (!sweeping)
				printf("seed %" PRIu64 ": ok, with no Primary at the end: every "
				       "replica lost writes, a disk failing\n", seed);
			return 0;
		}
		printf("seed %" PRIu64 ": status after heal:\n", seed);
		dump_status();
		fail("liveness", "not settled 300 s after every fault healed: %s", why);
	}
	oracle_final();
	deadline = sim_now + 60000 * SIM_MS;
	while (verify_watch_busy() && sim_step() && sim_now < deadline)
		;
	if (verify_watch_busy())
		fail("verify", "an online verify started during the faults did not end "
		     "within 60 s of the cluster settling");
	final_verify();
	if (!sweeping)
		printf("seed %" PRIu64 ": ok (%u replicas, %u requests, %u acknowledged, %u failed, "
	       "%u faults, %u failovers, %.1f s simulated)\n", seed, n_replicas, stat_ops,
	       stat_acked, stat_failed, n_faults, failovers, (double)sim_now / 1e9);
	return 0;
}

static int sweep(uint64_t from, uint64_t runs, unsigned jobs)
{
	unsigned running = 0, bad = 0, live = 0;
	uint64_t next = from, done = 0;
	pid_t pids[64];
	uint64_t seeds[64];

	if (jobs > 64)
		jobs = 64;
	while (done < runs) {
		uint64_t seed = 0;
		int st;
		pid_t pid;

		while (running < jobs && next < from + runs) {
			uint64_t s = next++;
			pid = fork();
			if (pid < 0) {
				perror("fork");
				return 2;
			}
			if (pid == 0) {
				sweeping = true;
				run(s);
				_exit(0);
			}
			pids[running] = pid;
			seeds[running++] = s;
		}
		pid = wait(&st);
		if (pid < 0)
			break;
		for (unsigned k = 0; k < running; k++) {
			if (pids[k] == pid) {
				seed = seeds[k];
				pids[k] = pids[running - 1];
				seeds[k] = seeds[running - 1];
				running--;
				break;
			}
		}
		done++;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			continue;
		(WIFEXITED(st) && WEXITSTATUS(st) == 3) ? live++ : bad++;
		if (!WIFEXITED(st))
			printf("seed %" PRIu64 ": VIOLATION crash: the run died of signal %d\n",
			       seed, WTERMSIG(st));
	}
	printf("replsim: %" PRIu64 " runs from seed %" PRIu64 ": %u violated an invariant, %u "
	       "did not settle\n", runs, from, bad, live);
	return bad ? 1 : live ? 3 : 0;
}

int main(int argc, char **argv)
{
	uint64_t seed = 1, runs = 0, from = 1;
	unsigned jobs = 1;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--trace")) {
			sim_tracing = true;
		} else if (!strcmp(a, "--inline")) {
			sim_inline = true;
		} else if (!strcmp(a, "--small-al")) {
			small_al = true;
		} else if (!strcmp(a, "--no-eio")) {
			no_eio = true;
		} else if (!strcmp(a, "--full-disk")) {
			full_disk = true;
		} else if (!strcmp(a, "--bad-sectors")) {
			bad_sectors = true;
		} else if (!strcmp(a, "--split-brain")) {
			static_mode = true;
		} else if (!strcmp(a, "--seed") && v) {
			seed = strtoull(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--runs") && v) {
			runs = strtoull(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--from") && v) {
			from = strtoull(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "-j") && v) {
			jobs = (unsigned)strtoul(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--failovers") && v) {
			max_failovers = (unsigned)strtoul(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--time") && v) {
			run_len = strtoull(v, NULL, 0) * SIM_MS;
			i++;
		} else {
			fprintf(stderr, "usage: replsim --seed N [--trace] | --runs K [--from S] "
				"[-j J]  [--failovers F] [--time MS] [--no-eio | --split-brain] "
				"[--inline] [--small-al] [--full-disk] [--bad-sectors]\n");
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Large blocks (the engine's frames and read buffers, the disks)
	 * from the heap, kept when freed: a run allocates and frees them
	 * over and over, and fresh pages for each were most of its time. */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	if (runs)
		return sweep(from, runs, jobs ? jobs : 1);
	return run(seed);
}
