/* stats-cost.c: what the metrics counters cost one NBD request on this
 * machine: the two clock reads (start and end) and repl__stats_io()'s
 * relaxed atomic adds (request, bytes, histogram bucket and sum), per call,
 * from 1 and from 2 threads adding to the same volume's counters at once
 * (the worker threads that complete requests do that).  Prints wall
 * nanoseconds per call per thread; compare with a request's latency (a 4k
 * write at QD1 takes 100+ us through replagentd).
 *
 *   make bench/stats-cost && bench/stats-cost */
#include "config.h"

#include <pthread.h>
#include <stdio.h>

#include "repl_int.h"
#include "stats.h"
#include "util.h"

#define CALLS 10000000u
#define THREADS_MAX 2

static struct repl__vstats stats;

static void *count_requests(void *arg)
{
	for (unsigned i = 0; i < CALLS; i++)
		repl__stats_io(&stats, REPL_IO_WRITE, 4096, now_mono_ns(), 0);
	return arg;
}

static void *read_clock(void *arg)
{
	volatile uint64_t sink = 0;

	for (unsigned i = 0; i < CALLS; i++)
		sink += now_mono_ns() + now_mono_ns();
	return arg;
}

static double ns_per_call(void *(*fn)(void *), int threads)
{
	pthread_t t[THREADS_MAX];
	uint64_t t0 = now_mono_ns();

	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, fn, NULL);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return (double)(now_mono_ns() - t0) / CALLS;
}

int main(void)
{
	for (int th = 1; th <= THREADS_MAX; th++) {
		double all = ns_per_call(count_requests, th), clk = ns_per_call(read_clock, th);

		printf("%d thread(s): %.0f ns per request counted, of which %.0f ns the two clock reads\n",
		       th, all, clk);
	}
	return 0;
}
