/* meta_io.c: the open metadata file behind a struct meta (meta.h): its
 * allocation, its lock, its syncs (a failed one breaks it for good), and
 * the durable writing of bitmap pages, whole or by flush (in one call, or
 * in two halves: a copy on the caller's thread and a job run on any
 * thread).  Not the format (meta_format.c) nor the open, create and
 * update of the superblock (meta.c). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "log.h"
#include "meta.h"
#include "meta_int.h"
#include "sys.h"
#include "util.h"

/* ---- struct meta life cycle ------------------------------------------ */

void repl__meta_free(struct meta *m)
{
	if (!m)
		return;
	if (m->fd >= 0)
		repl__sys->close(m->fd);
	for (unsigned i = 0; i < META_BITMAPS; i++) {
		free(m->bm[i]);
		free(m->pstate[i]);
		free(m->pflush[i]);
	}
	free(m->path);
	free(m);
}

/* Allocates a struct meta for sb's geometry with clear bitmaps; takes fd. */
int repl__meta_alloc(const char *path, int fd, const struct meta_super *sb,
		     struct meta **out)
{
	struct meta *m = calloc(1, sizeof(*m));

	if (!m) {
		repl__sys->close(fd);
		return -ENOMEM;
	}
	m->fd = fd;
	m->sb = *sb;
	m->regions = repl__meta_regions_of(sb->size, sb->region_shift);
	m->stride = repl__meta_stride_of(m->regions);
	m->npages = repl__meta_pages_of(m->regions);
	m->path = strdup(path);
	if (!m->path)
		goto nomem;
	for (unsigned i = 0; i < META_BITMAPS; i++) {
		m->bm[i] = calloc(m->npages, PG_BITS);
		m->pstate[i] = calloc(m->npages, 1);
		m->pflush[i] = calloc(m->npages, 1);
		if (!m->bm[i] || !m->pstate[i] || !m->pflush[i])
			goto nomem;
	}
	*out = m;
	return 0;
nomem:
	repl__meta_free(m);
	return -ENOMEM;
}

int repl__meta_lock_fd(const char *path, int fd)
{
	if (repl__sys->flock(fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	if (errno == EWOULDBLOCK) {
		log_err("meta %s: in use (locked by another opener)", path);
		return -EBUSY;
	}
	log_err_errno(errno, "meta %s: flock", path);
	return -errno;
}

int repl__meta_sync_fd(struct meta *m, const char *what)
{
	if (repl__sys->fdatasync(m->fd) == 0)
		return 0;
	log_err_errno(errno, "meta %s: fdatasync after %s; refusing further writes",
		      m->path, what);
	m->broken = -EIO;
	return -EIO;
}

/* ---- bitmap pages on disk ------------------------------------------------ */

/* Writes pages [first, end) of bitmap bm to fd, a few at a time. */
static int pages_write(const struct meta *m, int fd, unsigned bm, size_t first, size_t end)
{
	uint8_t *buf = malloc(PAGES_PER_WRITE * META_BITMAP_PAGE);
	int err = 0;

	if (!buf)
		return -ENOMEM;
	while (first < end && !err) {
		size_t n = MIN(end - first, (size_t)PAGES_PER_WRITE);

		repl__meta_pages_encode(m, bm, first, first + n, buf);
		err = repl__full_pwrite(fd, buf, n * META_BITMAP_PAGE,
					repl__meta_page_offset(m, bm, first));
		first += n;
	}
	free(buf);
	return err;
}

/* Every page of every bitmap: a new file, or one that replaces another. */
int repl__meta_bitmaps_write_all(const struct meta *m, int fd)
{
	int err = 0;

	for (unsigned i = 0; i < META_BITMAPS && !err; i++)
		err = pages_write(m, fd, i, 0, m->npages);
	return err;
}

int repl__meta_fsync_dir_of(const char *path)
{
	int err = repl__fsync_dir_of(path);

	if (err)
		log_err_errno(-err, "meta %s: fsync of its directory", path);
	return err;
}

/* ---- bitmap flushes -------------------------------------------------------- */

/* A flush in two halves, so that only the copy runs on the loop thread and
 * the writing on a worker.  Jobs must run one at a time, in the order they
 * were begun: a later job's pages supersede an earlier one's.  So does a
 * flush in one call (meta_bitmap_flush()) made while a job runs: it marks
 * the pages it writes in the job's runs (skip), under the job's lock,
 * and the job, which writes under that lock, leaves them alone.  Written
 * after it, the job's older copy of a page took back bits the one-call
 * flush had made durable, and a write that waited for them went on
 * without them on disk (sim seed 2885 of the --small-al profile: an
 * activity-log extent the crash then did not resync). */
struct meta_flush_run {
	unsigned peer;
	size_t first;		/* its first page */
	off_t off;
	size_t len;
	char *data;
	uint8_t *skip;		/* per page: superseded, not to be written */
};

struct meta_flush_job {
	struct meta *m;			/* whose m->job this is */
	int fd;
	const char *path;
	size_t n, cap;
	struct meta_flush_run *runs;
	pthread_mutex_t lock;
};

/* Pages [p, q) of bitmap peer are written by a flush in one call: the
 * running job must not write its older copy of them.  Its lock held. */
static void job_supersede(struct meta_flush_job *j, unsigned peer, size_t p, size_t q)
{
	for (size_t i = 0; i < j->n; i++) {
		struct meta_flush_run *r = &j->runs[i];
		size_t end = r->first + r->len / META_BITMAP_PAGE;

		if (r->peer != peer)
			continue;
		for (size_t k = MAX(p, r->first); k < MIN(q, end); k++)
			r->skip[k - r->first] = 1;
	}
}

/* Writes one peer's dirty pages, a run of consecutive pages at a time. */
static int flush_peer(struct meta *m, unsigned peer)
{
	const uint8_t *ps = m->pstate[peer];
	size_t p = 0;

	while (p < m->npages) {
		size_t q;
		int err;

		if (ps[p] == PAGE_CLEAN) {
			p++;
			continue;
		}
		for (q = p + 1; q < m->npages && ps[q] != PAGE_CLEAN; q++)
			;
		if (m->job)
			job_supersede(m->job, peer, p, q);
		err = pages_write(m, m->fd, peer, p, q);
		if (err) {
			log_err_errno(-err, "meta %s: writing bitmap %u", m->path, peer);
			return err;
		}
		p = q;
	}
	return 0;
}

int meta_bitmap_flush(struct meta *m)
{
	int err = 0;

	if (m->broken)
		return m->broken;
	if (!m->pages_dirty)
		return 0;
	if (m->job)
		pthread_mutex_lock(&m->job->lock);
	for (unsigned i = 0; i < META_BITMAPS && !err; i++)
		err = flush_peer(m, i);
	if (m->job)
		pthread_mutex_unlock(&m->job->lock);
	if (err)
		return err;
	err = repl__meta_sync_fd(m, "a bitmap flush");
	if (err)
		return err;
	for (unsigned i = 0; i < META_BITMAPS; i++)
		memset(m->pstate[i], PAGE_CLEAN, m->npages);
	m->pages_set = 0;
	m->pages_dirty = 0;
	return 0;
}


/* Pages [p, q) of bitmap peer, encoded, as the job's next run. */
static int job_add(struct meta_flush_job *j, const struct meta *m, unsigned peer,
		   size_t p, size_t q)
{
	struct meta_flush_run *r;
	size_t len = (q - p) * META_BITMAP_PAGE;

	if (j->n == j->cap) {
		size_t cap = j->cap ? j->cap * 2 : 8;
		r = realloc(j->runs, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		j->runs = r;
		j->cap = cap;
	}
	r = &j->runs[j->n];
	r->data = malloc(len);
	r->skip = calloc(q - p, 1);
	if (!r->data || !r->skip) {
		free(r->data);
		free(r->skip);
		return -ENOMEM;
	}
	repl__meta_pages_encode(m, peer, p, q, (uint8_t *)r->data);
	r->peer = peer;
	r->first = p;
	r->len = len;
	r->off = repl__meta_page_offset(m, peer, p);
	j->n++;
	return 0;
}

static int job_add_peer(struct meta *m, struct meta_flush_job *j, unsigned peer)
{
	const uint8_t *ps = m->pstate[peer];
	size_t p = 0, q;
	int err;

	while (p < m->npages) {
		if (ps[p] == PAGE_CLEAN) {
			p++;
			continue;
		}
		for (q = p + 1; q < m->npages && ps[q] != PAGE_CLEAN; q++)
			;
		err = job_add(j, m, peer, p, q);
		if (err)
			return err;
		p = q;
	}
	return 0;
}

int meta_bitmap_flush_begin(struct meta *m, struct meta_flush_job **out)
{
	struct meta_flush_job *j;
	int err = 0;

	*out = NULL;
	if (m->broken)
		return m->broken;
	if (!m->pages_dirty)
		return 0;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	pthread_mutex_init(&j->lock, NULL);
	j->m = m;
	/* The job's own descriptor: meta_grow() may replace the file (and
	 * close m->fd) while the job runs.  Its writes then reach the old
	 * file, harmlessly: the new one was made from memory, which has
	 * every bit the job carries. */
	j->fd = repl__sys->dup(m->fd);
	j->path = m->path;
	if (j->fd < 0) {
		err = -errno;
		log_err_errno(-err, "meta %s: dup for a bitmap flush", m->path);
		pthread_mutex_destroy(&j->lock);
		free(j);
		return err;
	}
	for (unsigned i = 0; i < META_BITMAPS && !err; i++)
		err = job_add_peer(m, j, i);
	if (err) {
		meta_flush_job_free(j);
		return err;
	}
	for (unsigned i = 0; i < META_BITMAPS; i++) {
		for (size_t p = 0; p < m->npages; p++)
			m->pflush[i][p] = m->pstate[i][p] == PAGE_SET;
		memset(m->pstate[i], PAGE_CLEAN, m->npages);
	}
	m->pages_set = 0;
	m->pages_dirty = 0;
	m->job = j;
	*out = j;
	return 0;
}

/* The pages of run r not superseded, a stretch at a time.  The job's
 * lock held. */
static int run_write(struct meta_flush_job *j, const struct meta_flush_run *r)
{
	size_t pages = r->len / META_BITMAP_PAGE, p = 0, q;
	int err;

	while (p < pages) {
		if (r->skip[p]) {
			p++;
			continue;
		}
		for (q = p + 1; q < pages && !r->skip[q]; q++)
			;
		err = repl__full_pwrite(j->fd, r->data + p * META_BITMAP_PAGE,
					(q - p) * META_BITMAP_PAGE,
					r->off + (off_t)(p * META_BITMAP_PAGE));
		if (err)
			return err;
		p = q;
	}
	return 0;
}

int meta_flush_job_run(struct meta_flush_job *j)
{
	int err = 0;

	pthread_mutex_lock(&j->lock);
	for (size_t i = 0; i < j->n && !err; i++)
		err = run_write(j, &j->runs[i]);
	pthread_mutex_unlock(&j->lock);
	if (err) {
		log_err_errno(-err, "meta %s: writing bitmap", j->path);
		return err;
	}
	if (repl__sys->fdatasync(j->fd) < 0) {
		err = -errno;
		log_err_errno(errno, "meta %s: fdatasync of the bitmap", j->path);
		return err;
	}
	return 0;
}

void meta_flush_job_free(struct meta_flush_job *j)
{
	if (!j)
		return;
	if (j->m && j->m->job == j)
		j->m->job = NULL;
	if (j->fd >= 0)
		repl__sys->close(j->fd);
	for (size_t i = 0; i < j->n; i++) {
		free(j->runs[i].data);
		free(j->runs[i].skip);
	}
	free(j->runs);
	pthread_mutex_destroy(&j->lock);
	free(j);
}

void meta_flush_job_end(struct meta *m, struct meta_flush_job *j, int result)
{
	if (j && result < 0 && !m->broken) {
		log_err("meta %s: a bitmap flush failed; refusing further writes", m->path);
		m->broken = -EIO;
	}
	if (j)
		for (unsigned i = 0; i < META_BITMAPS; i++)
			memset(m->pflush[i], 0, m->npages);
	meta_flush_job_free(j);
}
