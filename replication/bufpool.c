/* bufpool.c: reuse of the large buffers of the data path (an NBD request's
 * payload, a replication frame's payload).  glibc serves a malloc of more
 * than its mmap threshold with a fresh mmap, and free() gives it back with
 * munmap: every 1 MiB write then costs two syscalls and 256 page faults on
 * each node.  Here buffers of BUF_MIN bytes or more are rounded up to a
 * BUF_STEP multiple (a 1 MiB NBD write and its 1 MiB + 16 frame share a
 * size) and, when given back, kept in a small list (at most BUF_KEEP of
 * them and BUF_KEEP_BYTES in all) for the next request that fits.  Buffers
 * are plain malloc() memory, so a path that still calls free() on one is
 * correct, it only does not recycle it.  One mutex: buffers are taken on
 * the loop thread and given back on whichever thread completes the I/O,
 * and the lock is held for a few compares.  Not an allocator for small
 * objects, and it never shrinks below what the last burst used except at
 * repl__buf_drain(). */
#include "config.h"

#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>

#include "bufpool.h"

#define BUF_MIN (64u * 1024)
#define BUF_STEP (128u * 1024)
#define BUF_KEEP 32
#define BUF_KEEP_BYTES (96u << 20)

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static void *kept[BUF_KEEP];
static size_t kept_size[BUF_KEEP];
static unsigned n_kept;
static size_t kept_bytes;

void *repl__buf_get(size_t len)
{
	unsigned best = BUF_KEEP;
	void *p = NULL;

	if (len < BUF_MIN)
		return malloc(len ? len : 1);
	/* Slack for the frame's fixed part, then whole steps. */
	len = (len + 4096 + BUF_STEP - 1) / BUF_STEP * BUF_STEP;
	pthread_mutex_lock(&pool_lock);
	for (unsigned i = 0; i < n_kept; i++)
		if (kept_size[i] >= len && (best == BUF_KEEP || kept_size[i] < kept_size[best]))
			best = i;
	if (best < BUF_KEEP) {
		p = kept[best];
		kept_bytes -= kept_size[best];
		n_kept--;
		kept[best] = kept[n_kept];
		kept_size[best] = kept_size[n_kept];
	}
	pthread_mutex_unlock(&pool_lock);
	return p ? p : malloc(len);
}

void repl__buf_put(void *p)
{
	size_t size;

	if (!p)
		return;
	size = malloc_usable_size(p);
	if (size >= BUF_MIN) {
		pthread_mutex_lock(&pool_lock);
		if (n_kept < BUF_KEEP && kept_bytes + size <= BUF_KEEP_BYTES) {
			kept[n_kept] = p;
			kept_size[n_kept++] = size;
			kept_bytes += size;
			p = NULL;
		}
		pthread_mutex_unlock(&pool_lock);
	}
	free(p);
}

void repl__buf_drain(void)
{
	pthread_mutex_lock(&pool_lock);
	while (n_kept)
		free(kept[--n_kept]);
	kept_bytes = 0;
	pthread_mutex_unlock(&pool_lock);
}
