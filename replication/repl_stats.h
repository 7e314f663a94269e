/* repl_stats.h: the engine's counters for monitoring, as a snapshot.
 *
 * Each volume counts its NBD requests (per operation: requests, errors,
 * bytes, a latency histogram), its peers' acknowledgements of replicated
 * writes (a latency histogram per peer) and its metadata writes.  The data
 * path only adds to relaxed atomic counters (stats.c); repl_volume_stats()
 * copies them, with the loop-owned values next to them (writes in flight
 * per peer, quorum), into plain numbers.  Nothing here knows a wire format
 * for monitoring: the agent renders (agent/metrics_text.c). */
#ifndef REPL_REPL_STATS_H
#define REPL_REPL_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "repl.h"

enum repl_stat_op {
	REPL_STAT_READ,
	REPL_STAT_WRITE,
	REPL_STAT_FLUSH,
	REPL_STAT_DISCARD,	/* TRIM and WRITE_ZEROES */
	REPL_STAT_OPS
};

/* Upper bounds of the latency buckets, in nanoseconds, ascending; one more
 * bucket (+Inf) follows the last. */
#define REPL_HIST_BOUNDS 17
extern const uint64_t repl_hist_bounds_ns[REPL_HIST_BOUNDS];

struct repl_hist_snap {
	uint64_t bucket[REPL_HIST_BOUNDS + 1];	/* per bucket, not cumulative */
	uint64_t count;				/* the sum of bucket[] */
	uint64_t sum_ns;
};

struct repl_peer_stats {
	unsigned inflight;		/* writes sent, not yet acknowledged */
	struct repl_hist_snap ack;	/* send to last acknowledgement */
};

struct repl_volume_stats {
	uint64_t requests[REPL_STAT_OPS];
	uint64_t errors[REPL_STAT_OPS];
	uint64_t bytes[REPL_STAT_OPS];	/* flushes: 0 */
	struct repl_hist_snap latency[REPL_STAT_OPS];
	/* Writes that waited for their activity-log bits to be written (a
	 * region entering the log), and bitmap write jobs (each writes the
	 * changed pages and fdatasyncs). */
	uint64_t al_transactions;
	uint64_t bitmap_writes;
	/* Client reads this replica's disk failed that a peer answered. */
	uint64_t peer_reads;
	bool quorate;			/* false: requests are held */
	unsigned n_peers;		/* in the order of repl_volume_status's peers */
	struct repl_peer_stats peers[REPL_MAX_PEERS];
};

/* Loop thread, like every entry point. */
void repl_volume_stats(const struct repl_volume *vol, struct repl_volume_stats *out);

#endif
