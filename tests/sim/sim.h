/* sim.h: what the parts of the deterministic simulator (replsim) share.
 *
 * One process, one thread, one run at a time: a simulated clock and an
 * event queue (sim_env.c), a simulated network of stream sockets and a
 * simulated disk per node (sim_net.c, sim_disk.c), all behind the engine's
 * seams (replication/sys.h, struct repl_loop_ops).  Every choice comes
 * from one seeded PRNG, so a seed replays a run exactly.  State is global:
 * replsim runs each seed in a fresh child process. */
#ifndef REPLSIM_SIM_H
#define REPLSIM_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "repl.h"

#define SIM_NODES 3		/* cluster voters; replicas are the first n */
#define SIM_MS UINT64_C(1000000)

/* ---- clock, PRNG, trace, events (sim_env.c) ---- */
extern uint64_t sim_now;		/* ns */
extern uint64_t run_seed;
extern bool sim_tracing;
extern int sim_cur;			/* node whose code runs now, -1: none */

void sim_seed(uint64_t seed);
uint64_t rnd(void);
/* splitmix64: the next value of the sequence whose state is *x (the seed
 * of rnd(), and of generators that must not draw from it). */
uint64_t sim_splitmix(uint64_t *x);
uint64_t rnd_below(uint64_t n);		/* [0, n) */
bool rnd_chance(unsigned permille);
void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

typedef void (*sim_fn)(void *a, uint64_t b);
struct sim_ev;
/* Runs fn(a, b) at time t with sim_cur = node (-1: the simulator's own). */
struct sim_ev *sim_at(uint64_t t, int node, sim_fn fn, void *a, uint64_t b);
void sim_cancel(struct sim_ev *e);
/* A node crashed: none of its events runs any more. */
void sim_cancel_node(int node);
/* Runs the next event and whatever it made ready; false: queue empty. */
bool sim_step(void);
void sim_env_reset(void);

/* The loop a node's engine gets (its fds and timers). */
extern const struct repl_loop_ops sim_loop_ops;
/* fd registered by node's engine: the readiness sweep calls it. */
void sim_fd_forget_node(int node);
/* Returns poll bits the simulated fd is ready for (sim_net.c). */
unsigned sim_net_ready(int fd);

/* ---- network (sim_net.c) ---- */
#define SIM_FD_BASE 100000
struct sim_netcfg {
	uint64_t delay_min, delay_max;	/* one-way, ns */
	unsigned dup_connect_permille;	/* a stray duplicate connection */
	unsigned short_recv_permille;	/* a recv returns fewer bytes than it
					 * could (as TCP may), by its own
					 * generator: the seeds' runs stay
					 * what they were */
};
extern struct sim_netcfg sim_netcfg;
/* Seeds the generator of the short receives (short_recv_permille). */
void sim_net_seed(uint64_t seed);
/* May node a reach node b now (alive, same side of a partition)? */
extern bool (*sim_reachable)(int a, int b);
void sim_net_reset(void);
/* Resets every connection between a and b (both ends see ECONNRESET). */
void sim_net_cut(int a, int b);
/* Connections between a and b go silent (a partition, or a crash). */
void sim_net_blackhole(int a, int b);
/* Node crashed: its sockets vanish without a FIN. */
void sim_net_crash(int node);
int simnet_listen(const char *host, const char *port);
int simnet_connect(const char *host, const char *port);
int simnet_connect_error(int fd);
int simnet_accept(int fd, struct sockaddr_storage *src);
ssize_t simnet_sendmsg(int fd, const struct msghdr *msg);
ssize_t simnet_recv(int fd, void *buf, size_t len);
bool simnet_owns(int fd);
int simnet_close(int fd);

/* ---- disk (sim_disk.c) ---- */
struct sim_diskcfg {
	unsigned eio_permille[SIM_NODES];	/* writes and flushes fail */
	bool slow[SIM_NODES];			/* the pool runs late */
	/* the backing's file system is full: its writes fail with ENOSPC
	 * (the metadata's space is allocated, and holes can be punched) */
	bool full[SIM_NODES];
	unsigned long eios;			/* EIO returned so far, any node */
	unsigned long enospc[SIM_NODES];	/* ENOSPC returned so far */
	/* unreadable sectors: reads of the backing that touch
	 * [bad_off, bad_off + bad_len) fail with EIO (bad_len 0: none) */
	uint64_t bad_off[SIM_NODES], bad_len[SIM_NODES];
	unsigned long bad_reads[SIM_NODES];	/* reads they failed so far */
};
extern struct sim_diskcfg sim_diskcfg;
void sim_disk_reset(void);
/* Called when a flush of a node's file fails, after its unflushed writes
 * were torn (the checks forget what they counted it holding). */
void sim_disk_on_torn(void (*fn)(int node, const char *path));
/* How many writes and flushes of node's backing failed (sim_disk.c). */
unsigned sim_disk_failed(int node);
/* Power loss on node: unflushed data dropped, kept in part, or torn at
 * 512 bytes (mode 0: all dropped, 1: a random subset of sectors). */
void sim_disk_power_loss(int node, int mode);
/* The current (cached) content of a node's file, for the checks. */
const uint8_t *sim_disk_view(int node, const char *path, uint64_t *size);
/* Whether a node's file holds writes no flush made durable yet. */
bool sim_disk_unflushed(int node, const char *path);
/* The path of a node's file that starts with prefix and ends with suffix
 * (the newest), or NULL. */
const char *sim_disk_find(int node, const char *prefix, const char *suffix);
const struct repl_sys_ops *sim_sys_ops(void);

/* the worker-pool seam (sim_env.c) */
struct iopool;
void sim_pool_kick(struct iopool *p);
void sim_pool_gone(struct iopool *p);
bool sim_pool_inline(struct iopool *p);
extern bool sim_inline;	/* --inline */

#endif
