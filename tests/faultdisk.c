/* faultdisk.c: an LD_PRELOAD shim for the tests that injects disk faults
 * into one process without changing it: a volatile write cache that a
 * kill -9 loses (as a power loss loses a disk's cache), EIO on flush (which
 * drops what that cache held, as the page cache may drop pages whose
 * writeback failed), write or read, slow flushes and slow writes.  It is
 * driven at run time by the directory
 * named in FAULTDISK_DIR: each rule is a file there ("cache", "eio-flush",
 * "eio-write", "eio-read", "slow-flush", "slow-write") holding one path
 * substring a line ("SUBSTRING MILLISECONDS" for slow-flush and slow-write:
 * the call sleeps that long first), re-read at most every 50 ms,
 * so a test switches faults while the process runs.  A descriptor matches
 * when the path it refers to (/proc/self/fd/N, so dup'd descriptors match
 * too) contains a substring.  Every fault that fires appends a line to
 * FAULTDISK_DIR/log.  Only the positional calls the engine makes are
 * intercepted (pread/pwrite and their vector and 64-bit forms, fsync,
 * fdatasync, sync_file_range, fallocate, ftruncate, open for O_TRUNC and
 * O_EXCL); read(2), write(2) and mmap pass through untouched, and fstat
 * does not see the size of cached writes beyond the end of a file.  It is
 * built without sanitizers (it may be preloaded into an ASan build, with
 * ASAN_OPTIONS=verify_asan_link_order=0) and it is not part of the engine.
 * Without FAULTDISK_DIR, or with no rule and nothing cached, every call
 * goes straight to the next definition (dlsym RTLD_NEXT).  With it, the
 * process reads a boot id of its own (/proc/sys/kernel/random/boot_id): a
 * kill -9 under the shim plays a power loss, so each start is a new boot,
 * unless FAULTDISK_DIR/boot-id holds one (a test restarting a daemon on
 * the same boot writes it there). */
#undef _FORTIFY_SOURCE		/* the fortified inline open/pread clash with ours */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum kind { K_CACHE, K_EIO_FLUSH, K_EIO_WRITE, K_EIO_READ, K_SLOW_FLUSH, K_SLOW_WRITE, K_KINDS };
static const char *const kind_name[K_KINDS] = {
	"cache", "eio-flush", "eio-write", "eio-read", "slow-flush", "slow-write",
};
#define BIT(k) (1u << (k))

#define MAX_RULES 64
#define RELOAD_MS 50

struct rule {
	enum kind kind;
	unsigned ms;
	char sub[512];
};

/* One cached (unwritten) range of a file. */
struct range {
	off64_t off;
	size_t len;
	char *data;
	struct range *next;		/* sorted by off, never overlapping */
};

/* The cache of one file, by inode: every descriptor of it shares it. */
struct inode {
	dev_t dev;
	ino_t ino;
	char path[PATH_MAX];		/* as last seen, for the log */
	struct range *ranges;
	size_t bytes;
	struct inode *next;
};

/* What one call found out about its descriptor. */
struct ctx {
	char path[PATH_MAX];
	unsigned match;			/* BIT(kind) of the rules that match */
	unsigned ms;			/* slow-flush delay */
	unsigned write_ms;		/* slow-write delay */
	bool have_ino;
	dev_t dev;
	ino_t ino;
};

/* One mutex guards the rules and the cache; the real I/O on a file with
 * cached data is done under it too, so that a read never sees a range
 * between its write-back and its removal from the cache. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *fd_dir;			/* FAULTDISK_DIR, NULL: shim off */
static struct rule rules[MAX_RULES];
static int nrules;			/* read unlocked (atomically) on the fast path */
static int ncached;			/* inodes with cached data, likewise */
static long long loaded_ms = -1000000;
static struct inode *inodes;

/* ---- the next definitions ------------------------------------------------ */

static void *real_open, *real_open64, *real_openat, *real_openat64;
static void *real_pread, *real_pread64, *real_preadv, *real_preadv64;
static void *real_preadv2, *real_preadv64v2;
static void *real_pwrite, *real_pwrite64, *real_pwritev, *real_pwritev64;
static void *real_pwritev2, *real_pwritev64v2;
static void *real_fsync, *real_fdatasync, *real_sync_file_range;
static void *real_fallocate, *real_fallocate64, *real_ftruncate, *real_ftruncate64;

static void *real_sym(void **slot, const char *name)
{
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (!p) {
		p = dlsym(RTLD_NEXT, name);
		if (!p) {
			static const char msg[] = "faultdisk: a libc function is missing\n";
			(void)!write(2, msg, sizeof(msg) - 1);
			abort();
		}
		__atomic_store_n(slot, p, __ATOMIC_RELEASE);
	}
	return p;
}
#define REAL(name) ((__typeof__(&name))real_sym(&real_##name, #name))

/* ---- rules and the log ----------------------------------------------------- */

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	char path[PATH_MAX], line[PATH_MAX + 128];
	va_list ap;
	int fd, n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	snprintf(path, sizeof(path), "%s/log", fd_dir);
	fd = REAL(open)(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	/* One write: lines of several threads (and processes) do not mix. */
	(void)!write(fd, line, (size_t)n);
	close(fd);
}

static void load_kind(enum kind k)
{
	char path[PATH_MAX], line[512], *sp;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", fd_dir, kind_name[k]);
	f = fopen(path, "re");
	if (!f)
		return;
	while (nrules < MAX_RULES && fgets(line, sizeof(line), f)) {
		struct rule *r = &rules[nrules];

		n = strcspn(line, "\r\n");
		line[n] = '\0';
		if (n == 0 || line[0] == '#')
			continue;
		r->kind = k;
		r->ms = 0;
		if ((k == K_SLOW_FLUSH || k == K_SLOW_WRITE) && (sp = strrchr(line, ' ')) != NULL) {
			*sp = '\0';
			r->ms = (unsigned)strtoul(sp + 1, NULL, 10);
		}
		snprintf(r->sub, sizeof(r->sub), "%s", line);
		nrules++;
	}
	fclose(f);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Re-reads the rule files when the last reading is RELOAD_MS old: a rule
 * written by a test is in force for every call that starts RELOAD_MS
 * after it. */
static void maybe_reload(void)
{
	long long now = now_ms();
	int k;

	if (now - __atomic_load_n(&loaded_ms, __ATOMIC_RELAXED) < RELOAD_MS)
		return;
	pthread_mutex_lock(&lock);
	if (now - loaded_ms >= RELOAD_MS) {
		nrules = 0;
		for (k = 0; k < K_KINDS; k++)
			load_kind((enum kind)k);
		__atomic_store_n(&loaded_ms, now, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&lock);
}

/* Fills C for FD; false when the call is none of our business (no rule
 * matches FD and its file has nothing cached), the fast path. */
static bool engage(int fd, struct ctx *c)
{
	char link[64];
	struct stat st;
	ssize_t n;
	int i, saved = errno;

	if (!fd_dir || fd < 0)
		return false;
	maybe_reload();
	if (!__atomic_load_n(&nrules, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&ncached, __ATOMIC_RELAXED))
		return false;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, c->path, sizeof(c->path) - 1);
	c->path[n < 0 ? 0 : n] = '\0';
	c->have_ino = fstat(fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode));
	c->dev = c->have_ino ? st.st_dev : 0;
	c->ino = c->have_ino ? st.st_ino : 0;
	c->match = 0;
	c->ms = 0;
	c->write_ms = 0;
	pthread_mutex_lock(&lock);
	for (i = 0; n > 0 && i < nrules; i++) {
		if (!strstr(c->path, rules[i].sub))
			continue;
		c->match |= BIT(rules[i].kind);
		if (rules[i].kind == K_SLOW_FLUSH && rules[i].ms > c->ms)
			c->ms = rules[i].ms;
		if (rules[i].kind == K_SLOW_WRITE && rules[i].ms > c->write_ms)
			c->write_ms = rules[i].ms;
	}
	pthread_mutex_unlock(&lock);
	errno = saved;
	return c->match || (c->have_ino && __atomic_load_n(&ncached, __ATOMIC_RELAXED));
}

/* ---- the cache (all under lock) -------------------------------------------- */

static struct inode *inode_find(const struct ctx *c, bool create)
{
	struct inode *i;

	for (i = inodes; i; i = i->next)
		if (i->dev == c->dev && i->ino == c->ino)
			break;
	if (!i && create && (i = calloc(1, sizeof(*i))) != NULL) {
		i->dev = c->dev;
		i->ino = c->ino;
		i->next = inodes;
		inodes = i;
	}
	if (i && create)
		snprintf(i->path, sizeof(i->path), "%s", c->path);
	return i;
}

/* Forgets an inode without cached data. */
static void inode_put(struct inode *i)
{
	struct inode **pp;

	if (i->ranges)
		return;
	for (pp = &inodes; *pp != i; pp = &(*pp)->next)
		;
	*pp = i->next;
	free(i);
}

static void inode_update_count(bool was_dirty, struct inode *i)
{
	bool dirty = i->ranges != NULL;

	if (was_dirty != dirty)
		__atomic_add_fetch(&ncached, dirty ? 1 : -1, __ATOMIC_RELAXED);
}

/* Drops what the cache of I holds in [off, end); 0 or -ENOMEM. */
static int trim(struct inode *i, off64_t off, off64_t end)
{
	struct range **pp = &i->ranges, *r, *tail;
	bool was_dirty = i->ranges != NULL;

	while ((r = *pp) != NULL) {
		off64_t rend = r->off + (off64_t)r->len;

		if (rend <= off || r->off >= end) {
			pp = &r->next;
			continue;
		}
		if (r->off < off && rend > end) {	/* split in two */
			tail = malloc(sizeof(*tail));
			if (!tail || !(tail->data = malloc((size_t)(rend - end)))) {
				free(tail);
				return -ENOMEM;
			}
			tail->off = end;
			tail->len = (size_t)(rend - end);
			memcpy(tail->data, r->data + (end - r->off), tail->len);
			tail->next = r->next;
			r->next = tail;
			i->bytes -= (size_t)(end - off);
			r->len = (size_t)(off - r->off);
			break;
		}
		if (r->off < off) {			/* keep the head */
			i->bytes -= (size_t)(rend - off);
			r->len = (size_t)(off - r->off);
			pp = &r->next;
		} else if (rend > end) {		/* keep the tail */
			i->bytes -= (size_t)(end - r->off);
			memmove(r->data, r->data + (end - r->off), (size_t)(rend - end));
			r->len = (size_t)(rend - end);
			r->off = end;
			pp = &r->next;
		} else {				/* all of it */
			i->bytes -= r->len;
			*pp = r->next;
			free(r->data);
			free(r);
		}
	}
	inode_update_count(was_dirty, i);
	return 0;
}

/* Keeps DATA (LEN bytes, taken over) as the content of [off, off+len). */
static int cache_put(struct inode *i, off64_t off, char *data, size_t len)
{
	struct range *r, **pp;
	bool was_dirty = i->ranges != NULL, trimmed_dirty;
	int err = trim(i, off, off + (off64_t)len);

	if (err < 0 || !(r = malloc(sizeof(*r))))
		return err < 0 ? err : -ENOMEM;
	trimmed_dirty = i->ranges != NULL;	/* trim() counted up to here */
	r->off = off;
	r->len = len;
	r->data = data;
	for (pp = &i->ranges; *pp && (*pp)->off < off; pp = &(*pp)->next)
		;
	r->next = *pp;
	*pp = r;
	i->bytes += len;
	if (!was_dirty)
		note("cache %s", i->path);
	inode_update_count(trimmed_dirty, i);
	return 0;
}

/* Writes the cached data of I to FD and forgets it; 0 or -errno (what
 * could not be written stays cached). */
static int write_back(struct inode *i, int fd)
{
	size_t done = 0;
	struct range *r;

	while ((r = i->ranges) != NULL) {
		size_t pos = 0;

		while (pos < r->len) {
			ssize_t n = REAL(pwrite64)(fd, r->data + pos, r->len - pos,
						   r->off + (off64_t)pos);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				int err = n < 0 ? errno : EIO;
				note("cache-flush-failed %s errno %d", i->path, err);
				return -err;
			}
			pos += (size_t)n;
		}
		i->ranges = r->next;
		i->bytes -= r->len;
		done += r->len;
		free(r->data);
		free(r);
	}
	note("cache-flush %s %zu", i->path, done);
	__atomic_sub_fetch(&ncached, 1, __ATOMIC_RELAXED);
	inode_put(i);
	return 0;
}

static int flush_cached(const struct ctx *c, int fd)
{
	struct inode *i;
	int r = 0;

	if (!c->have_ino)
		return 0;
	pthread_mutex_lock(&lock);
	i = inode_find(c, false);
	if (i && i->ranges)
		r = write_back(i, fd);
	pthread_mutex_unlock(&lock);
	return r;
}

/* ---- I/O ----------------------------------------------------------------- */

enum op { P, P64, PV, PV64, PV2, PV64V2 };

static size_t iov_total(const struct iovec *iov, int cnt)
{
	size_t t = 0;
	int k;

	for (k = 0; k < cnt; k++)
		t += iov[k].iov_len;
	return t;
}

static ssize_t next_write(enum op op, int fd, const struct iovec *iov, int cnt,
			  off64_t off, int flags)
{
	switch (op) {
	case P:
		return REAL(pwrite)(fd, iov->iov_base, iov->iov_len, (off_t)off);
	case P64:
		return REAL(pwrite64)(fd, iov->iov_base, iov->iov_len, off);
	case PV:
		return REAL(pwritev)(fd, iov, cnt, (off_t)off);
	case PV64:
		return REAL(pwritev64)(fd, iov, cnt, off);
	case PV2:
		return REAL(pwritev2)(fd, iov, cnt, (off_t)off, flags);
	case PV64V2:
		return REAL(pwritev64v2)(fd, iov, cnt, off, flags);
	}
	errno = EINVAL;
	return -1;
}

static ssize_t next_read(enum op op, int fd, const struct iovec *iov, int cnt,
			 off64_t off, int flags)
{
	switch (op) {
	case P:
		return REAL(pread)(fd, iov->iov_base, iov->iov_len, (off_t)off);
	case P64:
		return REAL(pread64)(fd, iov->iov_base, iov->iov_len, off);
	case PV:
		return REAL(preadv)(fd, iov, cnt, (off_t)off);
	case PV64:
		return REAL(preadv64)(fd, iov, cnt, off);
	case PV2:
		return REAL(preadv2)(fd, iov, cnt, (off_t)off, flags);
	case PV64V2:
		return REAL(preadv64v2)(fd, iov, cnt, off, flags);
	}
	errno = EINVAL;
	return -1;
}

/* A write that must reach the file now: RWF_DSYNC/RWF_SYNC, or a
 * descriptor opened O_DSYNC/O_SYNC (O_SYNC includes the O_DSYNC bit). */
static bool write_through(int fd, int flags)
{
	int fl;

	if (flags & (RWF_DSYNC | RWF_SYNC | RWF_APPEND))
		return true;
	fl = fcntl(fd, F_GETFL);
	return fl >= 0 && (fl & (O_DSYNC | O_APPEND));
}

static ssize_t cache_write(const struct ctx *c, const struct iovec *iov, int cnt,
			   off64_t off)
{
	size_t len = iov_total(iov, cnt), pos = 0;
	struct inode *i;
	char *data;
	int k, r = -ENOMEM;

	data = malloc(len ? len : 1);
	if (!data) {
		errno = ENOMEM;
		return -1;
	}
	for (k = 0; k < cnt; k++) {
		memcpy(data + pos, iov[k].iov_base, iov[k].iov_len);
		pos += iov[k].iov_len;
	}
	pthread_mutex_lock(&lock);
	i = inode_find(c, true);
	if (i && len)
		r = cache_put(i, off, data, len);
	else if (i)
		r = 0;
	if (r < 0 || !len)
		free(data);
	if (i)
		inode_put(i);
	pthread_mutex_unlock(&lock);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return (ssize_t)len;
}

static ssize_t do_write(enum op op, int fd, const struct iovec *iov, int cnt,
			off64_t off, int flags)
{
	struct inode *i;
	struct ctx c;
	ssize_t n;
	int saved;

	if (!engage(fd, &c))
		return next_write(op, fd, iov, cnt, off, flags);
	if ((c.match & BIT(K_SLOW_WRITE)) && c.write_ms) {
		struct timespec ts = { c.write_ms / 1000, (long)(c.write_ms % 1000) * 1000000 };

		note("slow-write %s %u", c.path, c.write_ms);
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	if (c.match & BIT(K_EIO_WRITE)) {
		note("eio-write %s", c.path);
		errno = EIO;
		return -1;
	}
	if ((c.match & BIT(K_CACHE)) && c.have_ino && off >= 0 && !write_through(fd, flags))
		return cache_write(&c, iov, cnt, off);
	if (!c.have_ino || !__atomic_load_n(&ncached, __ATOMIC_RELAXED))
		return next_write(op, fd, iov, cnt, off, flags);
	/* Written now: what the cache held for the range is older. */
	pthread_mutex_lock(&lock);
	n = next_write(op, fd, iov, cnt, off, flags);
	saved = errno;
	if (n > 0 && off >= 0 && c.have_ino && (i = inode_find(&c, false)) != NULL) {
		trim(i, off, off + n);
		inode_put(i);
	}
	pthread_mutex_unlock(&lock);
	errno = saved;
	return n;
}

static void scatter(const char *buf, size_t len, const struct iovec *iov, int cnt)
{
	int k;

	for (k = 0; k < cnt && len > 0; k++) {
		size_t n = iov[k].iov_len < len ? iov[k].iov_len : len;

		memcpy(iov[k].iov_base, buf, n);
		buf += n;
		len -= n;
	}
}

/* Reads [off, off+len) of the file into BUF as a process would see it
 * with the cache: the file, zeroes up to the end of cached data past its
 * end, the cached ranges on top.  Under lock; -1 with errno. */
static ssize_t read_cached(const struct inode *i, int fd, char *buf, size_t len, off64_t off)
{
	const struct range *r;
	off64_t end = off + (off64_t)len, cend = 0;
	ssize_t n = REAL(pread64)(fd, buf, len, off);

	if (n < 0)
		return -1;
	for (r = i->ranges; r; r = r->next)
		if (r->off + (off64_t)r->len > cend)
			cend = r->off + (off64_t)r->len;
	if (cend > off + n) {
		off64_t e = cend < end ? cend : end;
		memset(buf + n, 0, (size_t)(e - off - n));
		n = (ssize_t)(e - off);
	}
	for (r = i->ranges; r; r = r->next) {
		off64_t a = r->off > off ? r->off : off;
		off64_t b = r->off + (off64_t)r->len;

		if (b > off + n)
			b = off + n;
		if (a < b)
			memcpy(buf + (a - off), r->data + (a - r->off), (size_t)(b - a));
	}
	return n;
}

static ssize_t do_read(enum op op, int fd, const struct iovec *iov, int cnt,
		       off64_t off, int flags)
{
	struct inode *i;
	struct ctx c;
	ssize_t n;
	size_t len;
	char *buf;
	int saved;

	if (!engage(fd, &c))
		return next_read(op, fd, iov, cnt, off, flags);
	if (c.match & BIT(K_EIO_READ)) {
		note("eio-read %s", c.path);
		errno = EIO;
		return -1;
	}
	if (!c.have_ino || off < 0)
		return next_read(op, fd, iov, cnt, off, flags);
	len = iov_total(iov, cnt);
	pthread_mutex_lock(&lock);
	i = inode_find(&c, false);
	if (!i) {
		pthread_mutex_unlock(&lock);
		return next_read(op, fd, iov, cnt, off, flags);
	}
	/* A RWF_NOWAIT read is served too (blocking briefly): the engine
	 * otherwise falls back to a worker, which would read the same. */
	buf = malloc(len ? len : 1);
	if (!buf) {
		pthread_mutex_unlock(&lock);
		errno = ENOMEM;
		return -1;
	}
	n = read_cached(i, fd, buf, len, off);
	saved = errno;
	pthread_mutex_unlock(&lock);
	if (n > 0)
		scatter(buf, (size_t)n, iov, cnt);
	free(buf);
	errno = saved;
	return n;
}

/* Under lock: everything the cache of I holds goes, logged, and I with it. */
static void drop_locked(struct inode *i)
{
	note("cache-drop %s %zu", i->path, i->bytes);
	trim(i, 0, INT64_MAX);
	inode_put(i);
}

/* A flush that fails drops what the cache held unflushed, as Linux's
 * page cache may drop pages whose writeback failed (they are left clean,
 * and a later fsync does not write them). */
static void drop_failed(const struct ctx *c)
{
	struct inode *i;

	if (!c->have_ino)
		return;
	pthread_mutex_lock(&lock);
	if ((i = inode_find(c, false)) != NULL && i->ranges)
		drop_locked(i);
	pthread_mutex_unlock(&lock);
}

static int do_flush(int fd, bool datasync)
{
	struct ctx c;
	int r;

	if (engage(fd, &c)) {
		if ((c.match & BIT(K_SLOW_FLUSH)) && c.ms) {
			struct timespec ts = { c.ms / 1000, (long)(c.ms % 1000) * 1000000 };

			note("slow-flush %s %u", c.path, c.ms);
			while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
				;
		}
		if (c.match & BIT(K_EIO_FLUSH)) {
			note("eio-flush %s", c.path);
			drop_failed(&c);
			errno = EIO;
			return -1;
		}
		r = flush_cached(&c, fd);
		if (r < 0) {
			errno = -r;
			return -1;
		}
	}
	return datasync ? REAL(fdatasync)(fd) : REAL(fsync)(fd);
}

/* The calls that change data without writing it: fallocate (punching a
 * hole or zeroing a range) and ftruncate. */
enum change { FALLOC, FALLOC64, TRUNC, TRUNC64 };

static int next_change(enum change op, int fd, int mode, off64_t off, off64_t len)
{
	switch (op) {
	case FALLOC:
		return REAL(fallocate)(fd, mode, (off_t)off, (off_t)len);
	case FALLOC64:
		return REAL(fallocate64)(fd, mode, off, len);
	case TRUNC:
		return REAL(ftruncate)(fd, (off_t)off);
	case TRUNC64:
		return REAL(ftruncate64)(fd, off);
	}
	errno = EINVAL;
	return -1;
}

/* Drops the cache of [from, to) and changes the file, under lock: what
 * the cache held there is older than the change.  A hole or zeroes are
 * writes for eio-write. */
static int do_change(enum change op, int fd, int mode, off64_t off, off64_t len,
		     off64_t from, off64_t to)
{
	struct inode *i;
	struct ctx c;
	int r, saved;

	if (!engage(fd, &c))
		return next_change(op, fd, mode, off, len);
	if ((op == FALLOC || op == FALLOC64) && (c.match & BIT(K_EIO_WRITE))) {
		note("eio-write %s", c.path);
		errno = EIO;
		return -1;
	}
	if (!c.have_ino || !__atomic_load_n(&ncached, __ATOMIC_RELAXED))
		return next_change(op, fd, mode, off, len);
	pthread_mutex_lock(&lock);
	if ((i = inode_find(&c, false)) != NULL) {
		trim(i, from, to);
		inode_put(i);
	}
	r = next_change(op, fd, mode, off, len);
	saved = errno;
	pthread_mutex_unlock(&lock);
	errno = saved;
	return r;
}

/* A new or truncated file: whatever the cache held for its inode (a
 * deleted file's, whose inode number came back) is not its content. */
static int opened(int fd, int flags)
{
	struct inode *i;
	struct ctx c;

	if (fd < 0 || !(flags & (O_TRUNC | O_EXCL)) || !engage(fd, &c) || !c.have_ino)
		return fd;
	pthread_mutex_lock(&lock);
	if ((i = inode_find(&c, false)) != NULL)
		drop_locked(i);
	pthread_mutex_unlock(&lock);
	return fd;
}

/* The host's boot id, as this process sees it: a kill -9 loses the cache
 * as a power loss would, so every start of a process under the shim is a
 * new boot of its "host" (the engine tells a crash of its daemon alone by
 * an unchanged boot id, volume.c). */
#define BOOT_ID_PATH "/proc/sys/kernel/random/boot_id"
static char boot_id[40];

static int boot_id_fd(void)
{
	int fd = memfd_create("faultdisk-boot-id", MFD_CLOEXEC);
	size_t len = strlen(boot_id);

	if (fd < 0)
		return -1;
	if (write(fd, boot_id, len) != (ssize_t)len || lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		errno = EIO;
		return -1;
	}
	return fd;
}

static bool is_boot_id(const char *path)
{
	return fd_dir && path && !strcmp(path, BOOT_ID_PATH);
}

/* ---- the interposed functions -------------------------------------------- */

#define OPEN_MODE(flags, mode)                                           \
	do {                                                                   \
		va_list ap_;                                                   \
		mode = 0;                                                      \
		if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {   \
			va_start(ap_, flags);                                  \
			mode = va_arg(ap_, mode_t);                            \
			va_end(ap_);                                           \
		}                                                              \
	} while (0)

int open(const char *path, int flags, ...)
{
	mode_t mode;

	OPEN_MODE(flags, mode);
	if (is_boot_id(path))
		return boot_id_fd();
	return opened(REAL(open)(path, flags, mode), flags);
}

int open64(const char *path, int flags, ...)
{
	mode_t mode;

	OPEN_MODE(flags, mode);
	if (is_boot_id(path))
		return boot_id_fd();
	return opened(REAL(open64)(path, flags, mode), flags);
}

int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode;

	OPEN_MODE(flags, mode);
	if (is_boot_id(path))
		return boot_id_fd();
	return opened(REAL(openat)(dirfd, path, flags, mode), flags);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
	mode_t mode;

	OPEN_MODE(flags, mode);
	if (is_boot_id(path))
		return boot_id_fd();
	return opened(REAL(openat64)(dirfd, path, flags, mode), flags);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	struct iovec v = { (void *)buf, n };

	return do_write(P, fd, &v, 1, off, 0);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
	struct iovec v = { (void *)buf, n };

	return do_write(P64, fd, &v, 1, off, 0);
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	return do_write(PV, fd, iov, cnt, off, 0);
}

ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
	return do_write(PV64, fd, iov, cnt, off, 0);
}

ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	return do_write(PV2, fd, iov, cnt, off, flags);
}

ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
	return do_write(PV64V2, fd, iov, cnt, off, flags);
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	struct iovec v = { buf, n };

	return do_read(P, fd, &v, 1, off, 0);
}

ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
	struct iovec v = { buf, n };

	return do_read(P64, fd, &v, 1, off, 0);
}

ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
	return do_read(PV, fd, iov, cnt, off, 0);
}

ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
	return do_read(PV64, fd, iov, cnt, off, 0);
}

ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	return do_read(PV2, fd, iov, cnt, off, flags);
}

ssize_t preadv64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
	return do_read(PV64V2, fd, iov, cnt, off, flags);
}

int fsync(int fd)
{
	return do_flush(fd, false);
}

int fdatasync(int fd)
{
	return do_flush(fd, true);
}

int sync_file_range(int fd, off64_t off, off64_t n, unsigned int flags)
{
	struct ctx c;
	int r;

	if ((flags & SYNC_FILE_RANGE_WAIT_AFTER) && engage(fd, &c) &&
	    (r = flush_cached(&c, fd)) < 0) {
		errno = -r;
		return -1;
	}
	return REAL(sync_file_range)(fd, off, n, flags);
}

static bool changes_data(int mode)
{
	return mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE);
}

int fallocate(int fd, int mode, off_t off, off_t len)
{
	if (!changes_data(mode))
		return REAL(fallocate)(fd, mode, off, len);
	return do_change(FALLOC, fd, mode, off, len, off, off + len);
}

int fallocate64(int fd, int mode, off64_t off, off64_t len)
{
	if (!changes_data(mode))
		return REAL(fallocate64)(fd, mode, off, len);
	return do_change(FALLOC64, fd, mode, off, len, off, off + len);
}

int ftruncate(int fd, off_t len)
{
	return do_change(TRUNC, fd, 0, len, 0, len, INT64_MAX);
}

int ftruncate64(int fd, off64_t len)
{
	return do_change(TRUNC64, fd, 0, len, 0, len, INT64_MAX);
}

/* ---- load and exit --------------------------------------------------------- */

__attribute__((constructor)) static void faultdisk_init(void)
{
	const char *d = getenv("FAULTDISK_DIR");

	struct timespec now;
	unsigned long long x;

	if (d && *d)
		fd_dir = strdup(d);
	clock_gettime(CLOCK_REALTIME, &now);
	x = (unsigned long long)now.tv_sec * 1000000007ull ^ (unsigned long long)now.tv_nsec ^
	    (unsigned long long)getpid() << 40;
	snprintf(boot_id, sizeof(boot_id), "%08x-%04x-%04x-%04x-%012llx\n",
		 (unsigned)(x >> 32), (unsigned)(x >> 16) & 0xffff, (unsigned)x & 0xffff,
		 (unsigned)getpid() & 0xffff, x & 0xffffffffffffull);
	if (fd_dir) {
		char path[PATH_MAX], id[sizeof(boot_id)];
		FILE *f;

		snprintf(path, sizeof(path), "%s/boot-id", fd_dir);
		f = fopen(path, "re");
		if (f && fgets(id, sizeof(id), f) && strlen(id) == 37 && id[36] == '\n')
			memcpy(boot_id, id, sizeof(id));
		if (f)
			fclose(f);
	}
}

/* An exit without a flush loses the cache, as a power loss would; say so
 * (a kill -9 runs nothing, of course). */
__attribute__((destructor)) static void faultdisk_fini(void)
{
	struct timespec until;
	struct inode *i;

	if (!fd_dir)
		return;
	/* Bounded: a thread still doing I/O at exit must not hang it. */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 1;
	if (pthread_mutex_timedlock(&lock, &until) != 0)
		return;
	for (i = inodes; i; i = i->next)
		if (i->ranges)
			note("cache-drop %s %zu", i->path, i->bytes);
	pthread_mutex_unlock(&lock);
}
