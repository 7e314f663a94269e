/* sim_disk.c: each node's simulated file system (the backing and the
 * metadata file), and the table of seams (sys.h) the simulator installs.
 *
 * A file keeps what is durable apart from what was written since the last
 * flush (the page cache and the disk's volatile cache in one): a read sees
 * both, fsync/fdatasync make it durable (a FUA write its own range), and a
 * power loss drops it, or keeps a random subset of its 512-byte sectors (a
 * torn write); so does a flush that fails, as Linux's page cache may drop
 * pages whose writeback failed, and a FUA write that fails (its sync met
 * the failed writeback of what was pending).  As Linux's errseq, each open
 * file description reports each such failure once, at its next flush or
 * FUA write: the one that tore it, or the first after it.  Size changes,
 * renames and unlinks are durable at once (the engine fsyncs the directory
 * after each anyway).  A node's disk can fail writes and flushes with EIO,
 * at a seeded rate, and be full: writes to its backing fail with ENOSPC,
 * tearing nothing (a buffered write reserves its blocks first); and a
 * range of its backing can be unreadable for a while (reads that touch it
 * fail with EIO; the data comes back when the fault ends, as after a
 * transient media error).  Reads fail in no other way.  Files under
 * /run/ are a tmpfs: in memory, never failing, kept when only the daemon
 * stops, gone at a power loss. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "sim.h"
#include "sys.h"

struct sim_diskcfg sim_diskcfg;

struct pend {
	struct pend *next;
	uint64_t off, len;
	uint8_t data[];
};

struct vfile {
	struct vfile *next;
	int node;
	char *path;		/* NULL once unlinked */
	bool dir;
	bool tmpfs;		/* under /run/ */
	uint8_t *cache, *durable;
	uint64_t size;
	struct pend *pend, **pend_tail;
	/* Linux's errseq: writebacks that failed (pending writes torn by a
	 * flush or a RWF_DSYNC write that failed); each open file
	 * description reports each once, at its next fdatasync or RWF_DSYNC
	 * write (a dup shares its description's). */
	unsigned wb_err;
};

struct vfd {
	struct vfile *f;
	bool open;
	int desc;		/* the vfd whose seen counts for this one */
	unsigned seen;		/* wb_err reported through this description */
};

#define DISK_FD_BASE (SIM_FD_BASE + 200000)
#define MAX_VFDS 16384
static struct vfd vfds[MAX_VFDS];
static int next_vfd;
static struct vfile *files;
static unsigned tmp_counter;

static void pend_clear(struct vfile *f)
{
	while (f->pend) {
		struct pend *p = f->pend;
		f->pend = p->next;
		free(p);
	}
	f->pend_tail = &f->pend;
}

static void (*on_torn)(int node, const char *path);
static unsigned failed[SIM_NODES];	/* EIO or ENOSPC on the backing */

unsigned sim_disk_failed(int node)
{
	return failed[node];
}

void sim_disk_on_torn(void (*fn)(int node, const char *path))
{
	on_torn = fn;
}

/* Every power loss boots the node again (its boot id changes). */
static unsigned boots[SIM_NODES];

void sim_disk_reset(void)
{
	memset(boots, 0, sizeof(boots));
	memset(failed, 0, sizeof(failed));
	while (files) {
		struct vfile *f = files;
		files = f->next;
		pend_clear(f);
		free(f->cache);
		free(f->durable);
		free(f->path);
		free(f);
	}
	memset(vfds, 0, sizeof(vfds[0]) * (size_t)next_vfd);
	next_vfd = 0;
	tmp_counter = 0;
	memset(&sim_diskcfg, 0, sizeof(sim_diskcfg));
}

static struct vfile *lookup(int node, const char *path)
{
	for (struct vfile *f = files; f; f = f->next)
		if (f->node == node && f->path && !strcmp(f->path, path))
			return f;
	return NULL;
}

static struct vfile *vf(int fd)
{
	if (fd < DISK_FD_BASE || fd >= DISK_FD_BASE + next_vfd || !vfds[fd - DISK_FD_BASE].open)
		return NULL;
	return vfds[fd - DISK_FD_BASE].f;
}

static int fd_for(struct vfile *f)
{
	if (next_vfd >= MAX_VFDS) {
		errno = EMFILE;
		return -1;
	}
	vfds[next_vfd] = (struct vfd){ .f = f, .open = true, .desc = next_vfd,
				       .seen = f->wb_err };
	return DISK_FD_BASE + next_vfd++;
}

static struct vfile *file_new(int node, const char *path, bool dir)
{
	struct vfile *f = calloc(1, sizeof(*f));

	if (!f || !(f->path = strdup(path)))
		exit(2);
	/* Never NULL, not even empty: copying a file of size 0 (a flush or a
	 * power loss of a file nothing was written to) passes its buffers to
	 * memcpy, which must not get NULL even for 0 bytes (UBSan). */
	f->cache = calloc(1, 1);
	f->durable = calloc(1, 1);
	if (!f->cache || !f->durable)
		exit(2);
	f->node = node;
	f->dir = dir;
	f->tmpfs = !strncmp(path, "/run/", 5);
	f->pend_tail = &f->pend;
	f->next = files;
	files = f;
	return f;
}

static void resize(struct vfile *f, uint64_t size)
{
	if (!f->size && size) {
		/* a new file's zeroes: calloc, whose large blocks are fresh
		 * pages touched only when written (the suite's sim time) */
		free(f->cache);
		free(f->durable);
		f->cache = calloc(1, size);
		f->durable = calloc(1, size);
	} else {
		f->cache = realloc(f->cache, size ? size : 1);
		f->durable = realloc(f->durable, size ? size : 1);
	}
	if (!f->cache || !f->durable)
		exit(2);
	if (size > f->size && f->size) {
		memset(f->cache + f->size, 0, size - f->size);
		memset(f->durable + f->size, 0, size - f->size);
	}
	f->size = size;
}

static bool eio(const struct vfile *f)
{
	if (sim_cur < 0 || f->tmpfs || !rnd_chance(sim_diskcfg.eio_permille[sim_cur]))
		return false;
	sim_diskcfg.eios++;
	if (f->path && !strcmp(f->path, "/d/v.img"))
		failed[f->node]++;
	return true;
}

/* A write into the backing of a node whose file system is full (the
 * model: every block of it would need allocating). */
static bool full(const struct vfile *f)
{
	if (sim_cur < 0 || f->tmpfs || !sim_diskcfg.full[sim_cur] || !f->path ||
	    strcmp(f->path, "/d/v.img"))
		return false;
	/* a write the disk failed, for the checks as an EIO is */
	sim_diskcfg.enospc[sim_cur]++;
	sim_diskcfg.eios++;
	failed[f->node]++;
	return true;
}

/* Pending write p reaches the durable copy (what of it lies within the
 * file: a shrink may have cut it). */
static void to_durable(struct vfile *f, const struct pend *p)
{
	if (p->off < f->size)
		memcpy(f->durable + p->off, p->data,
		       p->off + p->len <= f->size ? p->len : f->size - p->off);
}

/* The durable copy is the cache less the writes pending since the last
 * flush (write_at(), the only writer of either besides a resize and a
 * power loss, which keep them equal): applied in order, they make it the
 * cache again. */
static void make_durable(struct vfile *f)
{
	if (f->pend)
		trace("disk: %s durable", f->path ? f->path : "(unlinked)");
	for (struct pend *p = f->pend; p; p = p->next)
		to_durable(f, p);
	pend_clear(f);
}

/* A write with RWF_DSYNC (the last one pending): its own range is on the
 * disk now, and what was pending there before is no longer in the page
 * cache to come back over it later.  Other ranges stay pending. */
static void make_last_durable(struct vfile *f)
{
	struct pend **pp = &f->pend, *w;

	while ((*pp)->next)
		pp = &(*pp)->next;
	w = *pp;
	for (struct pend *q = f->pend; q != w; q = q->next) {
		uint64_t lo = q->off > w->off ? q->off : w->off;
		uint64_t hi = q->off + q->len < w->off + w->len ? q->off + q->len : w->off + w->len;
		if (lo < hi)
			memcpy(q->data + (lo - q->off), w->data + (lo - w->off), hi - lo);
	}
	to_durable(f, w);
	*pp = NULL;
	f->pend_tail = pp;
	free(w);
}

static int write_at(struct vfile *f, const void *buf, uint64_t len, uint64_t off)
{
	struct pend *p;

	if (off + len > f->size)
		resize(f, off + len);
	p = malloc(sizeof(*p) + len);
	if (!p)
		exit(2);
	p->next = NULL;
	p->off = off;
	p->len = len;
	if (buf)
		memcpy(p->data, buf, len);
	else
		memset(p->data, 0, len);
	memcpy(f->cache + off, p->data, len);
	*f->pend_tail = p;
	f->pend_tail = &p->next;
	if (f->tmpfs)	/* nothing of it is written back anywhere */
		make_durable(f);
	return 0;
}

static int d_boot_id(uint8_t id[16])
{
	if (sim_cur < 0)
		return -EINVAL;
	memset(id, 0, 16);
	id[0] = 's';
	id[1] = (uint8_t)('0' + sim_cur);
	memcpy(id + 4, &boots[sim_cur], sizeof(boots[0]));
	return 0;
}

/* What a file keeps of the writes pending since its last flush: none
 * (keep false) or a random subset of their sectors; either way the cache
 * and the durable copy agree after it. */
static void tear(struct vfile *f, bool keep)
{
	memcpy(f->cache, f->durable, f->size);
	for (struct pend *p = keep ? f->pend : NULL; p; p = p->next) {
		for (uint64_t s = 0; s < p->len; s += 512) {
			uint64_t n = p->len - s < 512 ? p->len - s : 512;
			if (rnd_chance(500) && p->off + s + n <= f->size)
				memcpy(f->cache + p->off + s, p->data + s, n);
		}
	}
	memcpy(f->durable, f->cache, f->size);
	pend_clear(f);
}

void sim_disk_power_loss(int node, int mode)
{
	boots[node]++;
	for (struct vfile *f = files; f; f = f->next) {
		if (f->node == node && f->tmpfs) {
			free(f->path);	/* the tmpfs is empty at the boot */
			f->path = NULL;
		} else if (f->node == node && !f->dir) {
			tear(f, mode);
		}
	}
}

const uint8_t *sim_disk_view(int node, const char *path, uint64_t *size)
{
	struct vfile *f = lookup(node, path);

	*size = f ? f->size : 0;
	return f ? f->cache : NULL;
}

bool sim_disk_unflushed(int node, const char *path)
{
	struct vfile *f = lookup(node, path);

	return f && f->pend;
}

const char *sim_disk_find(int node, const char *prefix, const char *suffix)
{
	size_t pl = strlen(prefix), sl = strlen(suffix);

	for (struct vfile *f = files; f; f = f->next) {
		size_t l = f->path ? strlen(f->path) : 0;
		if (f->node == node && !f->dir && l >= pl + sl && !strncmp(f->path, prefix, pl) &&
		    !strcmp(f->path + l - sl, suffix))
			return f->path;
	}
	return NULL;
}

/* ---- the seams ---- */

static uint64_t sim_now_ns(void)
{
	return sim_now;
}

/* A wall clock that starts at 2026-12-05 00:00 UTC with every run. */
static uint64_t sim_wall_s(void)
{
	return UINT64_C(1796428800) + sim_now / 1000000000u;
}

static int sim_random(void *buf, size_t len)
{
	uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)rnd();
	return 0;
}

static int d_open(const char *path, int flags, mode_t mode)
{
	struct vfile *f;

	(void)mode;
	if (flags & O_DIRECTORY)
		return fd_for(file_new(sim_cur, path, true));
	f = lookup(sim_cur, path);
	if (f && (flags & O_CREAT) && (flags & O_EXCL)) {
		errno = EEXIST;
		return -1;
	}
	if (!f && !(flags & O_CREAT)) {
		errno = ENOENT;
		return -1;
	}
	if (!f)
		f = file_new(sim_cur, path, false);
	return fd_for(f);
}

static int d_close(int fd)
{
	if (simnet_owns(fd))
		return simnet_close(fd);
	if (!vf(fd)) {
		errno = EBADF;
		return -1;
	}
	vfds[fd - DISK_FD_BASE].open = false;
	return 0;
}

static int d_dup(int fd)
{
	struct vfile *f = vf(fd);
	int r;

	if (!f) {
		errno = EBADF;
		return -1;
	}
	r = fd_for(f);
	if (r >= 0)
		vfds[r - DISK_FD_BASE].desc = vfds[fd - DISK_FD_BASE].desc;
	return r;
}

/* The writeback failures of fd's file that its description has not
 * reported yet: reported now (true), once. */
static bool wb_err_unseen(int fd)
{
	struct vfd *d = &vfds[vfds[fd - DISK_FD_BASE].desc];

	if (d->seen == d->f->wb_err)
		return false;
	d->seen = d->f->wb_err;
	return true;
}

/* What was pending failed to reach the disk (flush, or fd's RWF_DSYNC
 * write): torn, and fd's description reports it; the others will. */
static void wb_failed(int fd, struct vfile *f)
{
	trace("disk: %s flush failed: unflushed writes torn",
	      f->path ? f->path : "(unlinked)");
	tear(f, true);
	if (on_torn && f->path)
		on_torn(f->node, f->path);
	f->wb_err++;
	(void)wb_err_unseen(fd);
}

static int d_flock(int fd, int op)
{
	(void)op;
	return vf(fd) ? 0 : -1;
}

static int d_fstat(int fd, struct stat *st)
{
	struct vfile *f = vf(fd);

	if (!f) {
		errno = EBADF;
		return -1;
	}
	memset(st, 0, sizeof(*st));
	st->st_mode = f->dir ? S_IFDIR | 0700 : S_IFREG | 0600;
	st->st_size = (off_t)f->size;
	return 0;
}

/* A read of [off, off + len) that touches the node's unreadable sectors. */
static bool bad_sector(const struct vfile *f, uint64_t off, uint64_t len)
{
	int n = f->node;

	if (n < 0 || n >= SIM_NODES || !sim_diskcfg.bad_len[n] || !f->path ||
	    strcmp(f->path, "/d/v.img") || off >= sim_diskcfg.bad_off[n] + sim_diskcfg.bad_len[n] ||
	    off + len <= sim_diskcfg.bad_off[n])
		return false;
	sim_diskcfg.bad_reads[n]++;
	sim_diskcfg.eios++;
	return true;
}

static ssize_t d_pread(int fd, void *buf, size_t len, off_t off)
{
	struct vfile *f = vf(fd);

	if (!f) {
		errno = EBADF;
		return -1;
	}
	if (bad_sector(f, (uint64_t)off, len)) {
		errno = EIO;
		return -1;
	}
	if ((uint64_t)off >= f->size)
		return 0;
	if ((uint64_t)off + len > f->size)
		len = (size_t)(f->size - (uint64_t)off);
	memcpy(buf, f->cache + off, len);
	return (ssize_t)len;
}

static ssize_t d_preadv2(int fd, void *buf, size_t len, off_t off, int rwflags)
{
	if (rwflags & RWF_NOWAIT) {
		errno = EAGAIN;	/* never cached: every read goes to the pool */
		return -1;
	}
	return d_pread(fd, buf, len, off);
}

static ssize_t d_pwritev2(int fd, const void *buf, size_t len, off_t off, int rwflags)
{
	struct vfile *f = vf(fd);

	if (!f) {
		errno = EBADF;
		return -1;
	}
	if (full(f)) {
		errno = ENOSPC;
		return -1;
	}
	if (eio(f)) {
		/* With RWF_DSYNC, the failure may be the writeback of what
		 * was pending (this description reports it). */
		if ((rwflags & RWF_DSYNC) && f->pend)
			wb_failed(fd, f);
		errno = EIO;
		return -1;
	}
	write_at(f, buf, len, (uint64_t)off);
	if (!strcmp(f->path ? f->path : "", "/d/v.img"))
		trace("disk: write %s at %jd+%zu", f->path, (intmax_t)off, len);
	if (rwflags & RWF_DSYNC) {
		make_last_durable(f);
		if (wb_err_unseen(fd)) {	/* written, but it reports that */
			errno = EIO;
			return -1;
		}
	}
	return (ssize_t)len;
}

static int d_sync(int fd)
{
	struct vfile *f = vf(fd);

	if (!f) {
		errno = EBADF;
		return -1;
	}
	if (f->dir)
		return 0;
	if (eio(f)) {
		/* As Linux's page cache after a failed writeback: what was
		 * pending may have reached the disk or not, sector by sector,
		 * and a later flush will not write it again. */
		if (f->pend)
			wb_failed(fd, f);
		else
			(void)wb_err_unseen(fd);
		errno = EIO;
		return -1;
	}
	make_durable(f);
	if (wb_err_unseen(fd)) {	/* another description's failure */
		errno = EIO;
		return -1;
	}
	return 0;
}

static int d_fallocate(int fd, int mode, off_t off, off_t len)
{
	struct vfile *f = vf(fd);
	uint64_t end = (uint64_t)off + (uint64_t)len;

	if (!f) {
		errno = EBADF;
		return -1;
	}
	if (!(mode & FALLOC_FL_PUNCH_HOLE) && full(f)) {
		errno = ENOSPC;
		return -1;
	}
	if (eio(f)) {
		errno = EIO;
		return -1;
	}
	if ((mode & FALLOC_FL_KEEP_SIZE) && end > f->size)
		end = f->size;
	if (end > (uint64_t)off)
		write_at(f, NULL, end - (uint64_t)off, (uint64_t)off);
	return 0;
}

static int d_ftruncate(int fd, off_t len)
{
	struct vfile *f = vf(fd);

	if (!f) {
		errno = EBADF;
		return -1;
	}
	/* what was written beyond the new end is gone with it */
	make_durable(f);
	resize(f, (uint64_t)len);
	return 0;
}

static int d_ioctl(int fd, unsigned long req, void *arg)
{
	(void)fd;
	(void)req;
	(void)arg;
	errno = ENOTTY;
	return -1;
}

static int d_renameat2(const char *from, const char *to, unsigned flags)
{
	struct vfile *f = lookup(sim_cur, from), *t = lookup(sim_cur, to);

	if (!f) {
		errno = ENOENT;
		return -1;
	}
	if (t && (flags & RENAME_NOREPLACE)) {
		errno = EEXIST;
		return -1;
	}
	if (t) {
		free(t->path);
		t->path = NULL;
	}
	free(f->path);
	if (!(f->path = strdup(to)))
		exit(2);
	return 0;
}

static int d_link(const char *from, const char *to)
{
	(void)from;
	(void)to;
	errno = EPERM;
	return -1;
}

static int d_unlink(const char *path)
{
	struct vfile *f = lookup(sim_cur, path);

	if (!f) {
		errno = ENOENT;
		return -1;
	}
	free(f->path);
	f->path = NULL;
	return 0;
}

static int d_access(const char *path, int mode)
{
	(void)mode;
	if (lookup(sim_cur, path))
		return 0;
	errno = ENOENT;
	return -1;
}

static int d_mkostemp(char *tmpl, int flags)
{
	size_t n = strlen(tmpl);

	(void)flags;
	if (n < 6) {
		errno = EINVAL;
		return -1;
	}
	snprintf(tmpl + n - 6, 7, "%06u", tmp_counter++ % 1000000);
	return d_open(tmpl, O_RDWR | O_CREAT | O_EXCL, 0600);
}

static const struct repl_sys_ops sim_ops = {
	.now_ns = sim_now_ns,
	.wall_s = sim_wall_s,
	.random = sim_random,
	.boot_id = d_boot_id,
	.listen = simnet_listen,
	.connect = simnet_connect,
	.connect_error = simnet_connect_error,
	.accept = simnet_accept,
	.sendmsg = simnet_sendmsg,
	.recv = simnet_recv,
	.open = d_open,
	.close = d_close,
	.dup = d_dup,
	.flock = d_flock,
	.fstat = d_fstat,
	.pread = d_pread,
	.preadv2 = d_preadv2,
	.pwritev2 = d_pwritev2,
	.fsync = d_sync,
	.fdatasync = d_sync,
	.fallocate = d_fallocate,
	.ftruncate = d_ftruncate,
	.ioctl_blk = d_ioctl,
	.renameat2 = d_renameat2,
	.link = d_link,
	.unlink = d_unlink,
	.access = d_access,
	.mkostemp = d_mkostemp,
	.pool_kick = sim_pool_kick,
	.pool_gone = sim_pool_gone,
	.pool_inline = sim_pool_inline,
};

const struct repl_sys_ops *sim_sys_ops(void)
{
	return &sim_ops;
}
