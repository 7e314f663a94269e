/* replsim.h: the simulated cluster (cluster.c) and the oracle that checks
 * the invariants (oracle.c), as replsim.c drives them. */
#ifndef REPLSIM_REPLSIM_H
#define REPLSIM_REPLSIM_H

#include "sim.h"

#define VOL_SIZE (UINT64_C(1) << 20)	/* at the start; resize faults grow it */
#define VOL_MAX (2 * VOL_SIZE)
#define BLOCK 4096u
#define NBLK (VOL_SIZE / BLOCK)
#define NBLK_MAX (VOL_MAX / BLOCK)

/* Runs code "on" node i: the seams need to know whose disk it is. */
#define ON(i, stmt) do { int sv_ = sim_cur; sim_cur = (i); stmt; sim_cur = sv_; } while (0)

struct node {
	int id;
	bool alive, quorate;
	unsigned incarnation;
	struct repl_engine *eng;
	struct repl_volume *vol;
};

extern struct node nodes[SIM_NODES];
extern unsigned n_replicas;
extern int side[SIM_NODES];
extern int cm_primary;
extern unsigned failovers, max_failovers;
/* --small-al: 4 KiB bitmap regions and 16 activity-log extents of 16 KiB,
 * so that the 1 MiB volume's 64 extents do not fit and writes evict
 * (the default 4 MiB extent holds the whole volume); and half of the
 * Primary's crashes are node_bounce()s. */
extern bool small_al;
extern uint64_t cm_size;	/* the volume's size as the cluster defines it */

const char *node_name(int i);
bool quorate_side(int s);
int node_start(int i);
void node_crash(int i, int mode);
void node_bounce(int i);
void node_exit(int i);
void cm_daemon_restarts(void);
void cm_set_side(int i, int s);
void cm_tick(void *a, uint64_t b);
void cluster_init(unsigned replicas);
bool cm_outdated_node(int i);
void cm_grow(void);
void cm_move(int d);

/* oracle.c */
void fail(const char *kind, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
void oracle_reset(void);
void oracle_crash(int node);
void oracle_exit(int node);
void oracle_promoted(int node);
void workload_start(void);
void workload_stop(void);
unsigned workload_pending(void);
void oracle_final(void);
void oracle_check_status(void);
void oracle_client_connect(int node);
void oracle_client_attach(int node);
void oracle_client_detach(int node);
void oracle_client_switch(int node);
int oracle_client_node(void);
void oracle_role_moved(int node);
void oracle_changed(int node);
void oracle_fork(int from, int node);
void oracle_resolved(int keep, int victim, const uint8_t *d, uint64_t size);
unsigned oracle_pending_on(int node);
extern unsigned stat_ops, stat_acked, stat_failed;

/* verify_watch.c */
void verify_fault(int node);
void verify_watch_reset(void);
bool verify_watch_busy(void);

/* split.c */
extern bool static_mode;
void split_reset(void);
bool split_busy(void);
bool split_fault(void);
void split_tick(void);

/* migrate.c */
void migrate_fault(int dest);
void migrate_reset(void);
bool migrate_active(void);
int migrate_route(unsigned inflight);

#endif
