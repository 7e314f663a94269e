/* stats.h: the engine-internal side of repl_stats.h: the counters each
 * volume embeds and the calls the data path makes.  Every counter is a
 * relaxed atomic: NBD replies complete on worker threads (nbd_conn.c), the
 * rest on the loop thread, and a reader may see one counter a moment ahead
 * of another, which monitoring tolerates; nothing here orders memory or
 * takes a lock. */
#ifndef REPL_STATS_H
#define REPL_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "repl_stats.h"

struct repl__hist {
	_Atomic uint64_t bucket[REPL_HIST_BOUNDS + 1];
	_Atomic uint64_t sum_ns;
};

struct repl__vstats {
	_Atomic uint64_t requests[REPL_STAT_OPS];
	_Atomic uint64_t errors[REPL_STAT_OPS];
	_Atomic uint64_t bytes[REPL_STAT_OPS];
	struct repl__hist latency[REPL_STAT_OPS];
	struct repl__hist ack[REPL_MAX_PEERS];
	_Atomic uint64_t al_transactions;
	_Atomic uint64_t bitmap_writes;
	_Atomic uint64_t peer_reads;
};

/* Any thread: one NBD request of repl_io_op op (enum in repl_int.h) of
 * len bytes, started at start_ns (now_mono_ns()), ended with result. */
void repl__stats_io(struct repl__vstats *s, int op, uint32_t len, uint64_t start_ns,
		    int result);
void repl__hist_add(struct repl__hist *h, uint64_t ns);
static inline void repl__stats_inc(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}
/* Any thread: a counter's value now (relaxed, as above). */
static inline uint64_t repl__stats_get(const _Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

#endif
