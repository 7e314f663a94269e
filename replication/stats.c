/* stats.c: the counters of repl_stats.h: adding to them on the data path
 * (relaxed atomics, a few nanoseconds each) and the snapshot the agent
 * renders.  Not the rendering (agent/metrics_text.c). */
#include "config.h"

#include <string.h>

#include "peer.h"
#include "repl_int.h"
#include "stats.h"
#include "util.h"

/* 50 us .. 10 s: a page-cache read at the bottom, a stalled peer at the
 * top. */
const uint64_t repl_hist_bounds_ns[REPL_HIST_BOUNDS] = {
	50000, 100000, 250000, 500000,
	1000000, 2500000, 5000000, 10000000, 25000000, 50000000,
	100000000, 250000000, 500000000,
	1000000000, 2500000000, 5000000000, 10000000000,
};

void repl__hist_add(struct repl__hist *h, uint64_t ns)
{
	unsigned i = 0;

	while (i < REPL_HIST_BOUNDS && ns > repl_hist_bounds_ns[i])
		i++;
	atomic_fetch_add_explicit(&h->bucket[i], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
}

static int stat_op(int op)
{
	switch (op) {
	case REPL_IO_READ: return REPL_STAT_READ;
	case REPL_IO_WRITE: return REPL_STAT_WRITE;
	case REPL_IO_FLUSH: return REPL_STAT_FLUSH;
	case REPL_IO_TRIM: case REPL_IO_ZERO: return REPL_STAT_DISCARD;
	default: return -1;
	}
}

void repl__stats_io(struct repl__vstats *s, int op, uint32_t len, uint64_t start_ns,
		    int result)
{
	int k = stat_op(op);

	if (k < 0)
		return;
	repl__stats_inc(&s->requests[k]);
	if (result < 0)
		repl__stats_inc(&s->errors[k]);
	else if (k != REPL_STAT_FLUSH)
		atomic_fetch_add_explicit(&s->bytes[k], len, memory_order_relaxed);
	repl__hist_add(&s->latency[k], now_mono_ns() - start_ns);
}

static void hist_snap(const struct repl__hist *h, struct repl_hist_snap *out)
{
	out->count = 0;
	for (unsigned i = 0; i <= REPL_HIST_BOUNDS; i++) {
		out->bucket[i] = repl__stats_get(&h->bucket[i]);
		out->count += out->bucket[i];
	}
	out->sum_ns = repl__stats_get(&h->sum_ns);
}

void repl_volume_stats(const struct repl_volume *vol, struct repl_volume_stats *out)
{
	const struct repl__vstats *s = &vol->stats;

	memset(out, 0, sizeof(*out));
	for (unsigned k = 0; k < REPL_STAT_OPS; k++) {
		out->requests[k] = repl__stats_get(&s->requests[k]);
		out->errors[k] = repl__stats_get(&s->errors[k]);
		out->bytes[k] = repl__stats_get(&s->bytes[k]);
		hist_snap(&s->latency[k], &out->latency[k]);
	}
	out->al_transactions = repl__stats_get(&s->al_transactions);
	out->bitmap_writes = repl__stats_get(&s->bitmap_writes);
	out->peer_reads = repl__stats_get(&s->peer_reads);
	out->quorate = vol->quorate;
	out->n_peers = vol->n_peers;
	for (unsigned i = 0; i < vol->n_peers; i++) {
		out->peers[i].inflight = vol->peers[i]->unacked;
		hist_snap(&s->ack[i], &out->peers[i].ack);
	}
}
