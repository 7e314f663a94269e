/* sys.h: the engine's seams for everything that is not deterministic:
 * the replica links' sockets, the backing's and the metadata file's I/O,
 * the worker pool, time and randomness.  Production uses repl__sys_posix
 * (libc, the same calls as before, one indirect call more); the
 * deterministic simulator (tests/sim) installs its own table with
 * repl_sys_set() before it creates an engine, so that its simulated
 * network, disk, clock and seeded PRNG stand in for the kernel's.  The
 * calls keep libc's conventions (-1 and errno) so that a call site changes
 * by its name only.  The event loop is the other seam (struct
 * repl_loop_ops in repl.h). */
#ifndef REPL_SYS_H
#define REPL_SYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>

struct repl_io;
struct iopool;

struct repl_sys_ops {
	/* time and randomness (UUIDs, generation ids, nonces) */
	uint64_t (*now_ns)(void);			/* monotonic */
	uint64_t (*wall_s)(void);	/* seconds since 1970, for names people read */
	int (*random)(void *buf, size_t len);		/* 0 or -errno */
	/* The host's boot id, 16 bytes that change at every boot (production:
	 * /proc/sys/kernel/random/boot_id): 0 or -errno. */
	int (*boot_id)(uint8_t id[16]);
	/* replica links: non-blocking stream sockets */
	int (*listen)(const char *host, const char *port);	/* fd or -errno */
	/* Starts a connection: fd (writable when it is done) or -errno. */
	int (*connect)(const char *host, const char *port);
	int (*connect_error)(int fd);			/* SO_ERROR: 0 or errno */
	int (*accept)(int fd, struct sockaddr_storage *src);
	ssize_t (*sendmsg)(int fd, const struct msghdr *msg);
	ssize_t (*recv)(int fd, void *buf, size_t len);
	/* files: the backing store and the metadata (and its directory) */
	int (*open)(const char *path, int flags, mode_t mode);
	int (*close)(int fd);
	int (*dup)(int fd);
	int (*flock)(int fd, int op);
	int (*fstat)(int fd, struct stat *st);
	ssize_t (*pread)(int fd, void *buf, size_t len, off_t off);
	/* rwflags: RWF_DSYNC for FUA, RWF_NOWAIT for a cached read */
	ssize_t (*preadv2)(int fd, void *buf, size_t len, off_t off, int rwflags);
	ssize_t (*pwritev2)(int fd, const void *buf, size_t len, off_t off, int rwflags);
	int (*fsync)(int fd);
	int (*fdatasync)(int fd);
	int (*fallocate)(int fd, int mode, off_t off, off_t len);
	int (*ftruncate)(int fd, off_t len);
	int (*ioctl_blk)(int fd, unsigned long req, void *arg);
	int (*renameat2)(const char *from, const char *to, unsigned flags);
	int (*link)(const char *from, const char *to);
	int (*unlink)(const char *path);
	int (*access)(const char *path, int mode);
	int (*mkostemp)(char *tmpl, int flags);
	/* The worker pool: NULL runs I/O on threads (iopool.c).  Otherwise
	 * the pool keeps its queue and calls pool_kick on every submit; the
	 * program runs the queued I/O when it likes, in the order it likes,
	 * on the loop thread, with repl__iopool_step(); pool_gone says the
	 * pool was freed. */
	void (*pool_kick)(struct iopool *pool);
	void (*pool_gone)(struct iopool *pool);
	/* With pool_kick: whether the writes a batch submitted to an idle
	 * pool run at its end, on the loop thread (iopool.c), this time;
	 * NULL: never. */
	bool (*pool_inline)(struct iopool *pool);
	/* The links' sockets drop a peer that has gone silent by themselves
	 * within this many ms (production: TCP keepalive and user timeout);
	 * 0: only the engine's pings notice (peer.c then pings every second,
	 * otherwise every 5 s). */
	unsigned link_dead_ms;
};

extern const struct repl_sys_ops repl__sys_posix;
/* The table in force (never NULL). */
extern const struct repl_sys_ops *repl__sys;

/* Installs ops for the whole process (NULL: back to repl__sys_posix),
 * clock and randomness of common/util.c included.  Call it before any
 * engine exists. */
void repl_sys_set(const struct repl_sys_ops *ops);

/* full_pread / full_pwrite over repl__sys: 0 or -errno (-EIO short). */
int repl__full_pread(int fd, void *buf, size_t len, off_t off);
int repl__full_pwrite(int fd, const void *buf, size_t len, off_t off);
/* The same with pwritev2 flags (RWF_DSYNC for a FUA write). */
int repl__full_pwritev2(int fd, const void *buf, size_t len, off_t off, int rwflags);
/* fsync of the directory that holds path (after a rename or create in
 * it), over repl__sys: 0 or -errno. */
int repl__fsync_dir_of(const char *path);

/* Simulator pools (pool_kick set): how many I/Os are queued; run the one
 * at index i of the queue, as a worker would (its ->done waits for
 * repl__iopool_deliver(), unless it may run on any thread: true when it
 * is the first completion waiting, the loop's wake-up); and run the
 * ->done of every completion waiting, as the loop's dispatch does. */
unsigned repl__iopool_queued(const struct iopool *pool);
bool repl__iopool_step(struct iopool *pool, unsigned i);
void repl__iopool_deliver(struct iopool *pool);
/* A FLUSH (or FUA request) that lost writes has run and its ->done has
 * not yet: until then a sync fails as lost (a promotion's among them). */
bool repl__iopool_loss_unheard(const struct iopool *pool);

#endif
