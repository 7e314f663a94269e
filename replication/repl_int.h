/* repl_int.h: what the engine's files share with each other and nobody
 * else: the engine and volume bodies, local I/O descriptors, the worker
 * pool and the NBD request checker.
 *
 * Threading rule, relied on everywhere: struct repl_engine, struct
 * repl_volume (except what iopool.c's workers touch through struct
 * repl_io) and every NBD connection are owned by the loop thread.  Workers
 * only execute a struct repl_io against a file descriptor and hand it back
 * through the pool's eventfd, so ->done runs on the loop thread; except
 * when the submitter set REPL_IO_DONE_ANY_THREAD: then the worker calls
 * ->done itself (nbd_cmd.c's replies, which lock what they share).  A
 * small write may also run on the loop thread itself, at the end of the
 * batch that submitted it, ->done after it (iopool.c: inline writes). */
#ifndef REPL_REPL_INT_H
#define REPL_REPL_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "ratelimit.h"
#include "repl.h"
#include "stats.h"

struct meta;
struct meta_super;
struct al;
struct al_clear;
struct iopool;
struct nbd_listener;
struct nbd_conn;
struct nbd_notify;
struct nbd_tls_creds;

enum repl_io_op {
	REPL_IO_READ,
	REPL_IO_WRITE,
	REPL_IO_FLUSH,
	REPL_IO_TRIM,
	REPL_IO_ZERO,
	REPL_IO_CALL,		/* run ->fn(->arg) on a worker */
	REPL_IO_CACHE,		/* read ahead into the page cache (NBD_CMD_CACHE) */
	REPL_IO_LOOKUP,		/* ->fn(->arg) on a worker, routed as a read */
};

#define REPL_IO_FUA	(1u << 0)	/* durable before completion */
#define REPL_IO_NO_HOLE	(1u << 1)	/* zero without deallocating */
#define REPL_IO_DONE_ANY_THREAD (1u << 2)	/* ->done may run on a worker */
/* READ: a region that is a hole in the store is not read; the worker sets
 * REPL_IO_WAS_HOLE instead (resync and verify: it reads as zeroes). */
#define REPL_IO_HOLE_CHECK (1u << 3)
#define REPL_IO_WAS_HOLE (1u << 4)
/* A FUA write, trim or zero that failed where its sync failed, or may
 * have: not where the file system refused the data for want of space
 * before any of it was written (the worker sets it, iopool.c reads it). */
#define REPL_IO_SYNC_FAILED (1u << 5)
/* With REPL_IO_DONE_ANY_THREAD: a failure's ->done runs on the loop thread
 * all the same (a client's read that a peer may answer: pread.c). */
#define REPL_IO_FAIL_ON_LOOP (1u << 6)

struct repl_io {
	enum repl_io_op op;
	unsigned flags;
	uint64_t offset;
	uint32_t len;
	void *buf;
	int result;			/* 0 or -errno, set before ->done */
	int (*fn)(void *arg);		/* REPL_IO_CALL */
	void *arg;
	/* loop thread, unless REPL_IO_DONE_ANY_THREAD */
	void (*done)(struct repl_io *io);
	struct repl_io *next;		/* pool queue linkage */
	uint64_t pool_mark;		/* iopool.c's, for a FLUSH or a READ */
	/* iopool.c: a FLUSH (or a FUA write, trim or zero, whose sync is
	 * one) that failed while writes done on this pool
	 * were not yet made durable by one that worked.  Linux's page cache
	 * may have dropped any of them (a failed writeback leaves the page
	 * clean, and a later fdatasync does not write it again): what the
	 * disk holds there is unknown.  False: nothing was at risk. */
	bool flush_lost;
	/* pread.c, a client's READ on a Primary: the submitter's ->done while
	 * a peer may still answer a local failure, and the volume. */
	void (*client_done)(struct repl_io *io);
	struct repl_volume *vol;
};

struct peer;

/* What the write path (replicate.c, apply.c) tells the modules above it
 * (resync.c, verify.c, recent.c, outdate.c): it names none of them.
 * engine.c's table; every entry is set. */
struct repl_write_observers {
	/* A write of this Primary's own is about to change [off, off + len)
	 * here (and on its peers). */
	void (*writing)(struct repl_volume *vol, uint64_t off, uint64_t len);
	/* This replica is about to apply a write over [off, off + len) that
	 * came from a peer: its Primary's number seq, or a resync block's
	 * (WIRE_RS_SEQ_BIT set). */
	void (*applying)(struct repl_volume *vol, uint64_t seq, uint64_t off, uint64_t len);
	/* p lacks [off, off + len) from now on, and its bitmap says so: it
	 * failed our write there, or ours failed and the range is to be
	 * resynced from us.  A resync copy of the range already sent does
	 * not make it whole. */
	void (*missed)(struct peer *p, uint64_t off, uint64_t len);
	/* p, in sync, failed a write of ours, which completes without it
	 * once this returns (outdate.c records it first). */
	void (*peer_failed)(struct peer *p);
	/* Our own disk failed a flush (or a FUA request's sync) that found
	 * writes not yet durable (repl_io.flush_lost): this replica may lack
	 * writes that were acknowledged, its own if Primary or its
	 * Primary's. */
	void (*disk_lost)(struct repl_volume *vol);
};

/* What modules low in the engine ask of those above them: the migration
 * window (window.c) takes the role and gives it up (role.c), lets the
 * writes it held go on (gate.c) and drops a volume's NBD clients
 * (nbd_conn.c); resize.c asks the NBD server for the largest size its
 * clients were told.  engine.c's table; every entry is set. */
struct repl_upcalls {
	int (*promote)(struct repl_volume *vol, bool handed_over, char *why, size_t len);
	int (*demote)(struct repl_volume *vol, char *why, size_t len);
	void (*io)(struct repl_volume *vol, struct repl_io *io);
	void (*drop_clients)(struct repl_volume *vol);
	uint64_t (*clients_max_size)(const struct repl_volume *vol);
};

struct repl_engine {
	struct repl_loop loop;
	struct repl_volume *volumes;
	struct nbd_listener *listeners;
	struct nbd_conn *conns;
	struct nbd_notify *notify;
	unsigned nbd_clients_max;	/* attached NBD clients (repl_nbd_set_clients_max) */
	uint64_t nbd_drop_log_ms;	/* rate of "dropping an NBD client" warnings */
	unsigned nbd_drops_unlogged;
	struct nbd_tls_creds *nbd_tls;	/* NULL: no TLS offered (nbd_tls.c) */
	struct repl_hooks hooks;
	/* The engine's own observer of repl__changed() (resize.c's), before
	 * the caller's hooks.changed: set by repl_engine_new. */
	void (*changed_first)(struct repl_volume *vol);
	const struct repl_write_observers *write_obs;
	const struct repl_upcalls *up;
	bool stopping;
	/* loop.c's batches: how deep, and what waits for the end */
	unsigned batch_depth;
	struct repl_deferred *deferred, *deferred_tail;
};

struct peer;
struct vwrite;
struct agree;
struct preads;
struct apply;
struct meta_flush_job;
struct vol_listener;
struct verify;
struct recent;
struct window;
struct handover;
struct resize;
struct cbt;

struct repl_volume {
	struct repl_engine *eng;
	struct repl_volume *next;
	char *name;
	char *backing;
	char *loss_marker;		/* lossmark.c's file, NULL: none */
	uint8_t loss_marked;		/* enum repl_loss it says (this run) */
	uint64_t loss_void_seq;		/* the unvoided update it names, 0: none */
	int fd;
	bool blockdev;
	uint64_t size;
	struct meta *meta;
	struct iopool *pool;
	enum repl_role role;
	bool opened;			/* fully opened: record a clean close */
	bool down;			/* no replication, no NBD (a stopped resource) */
	bool resolving;			/* saving split-brain data (resolve.c) */
	unsigned clients;
	unsigned inflight;		/* local I/Os submitted, not yet done */

	/* replication (replicate.c, peer.c, resync.c) */
	char *node;
	struct vol_listener *listener;
	struct peer *peers[REPL_MAX_PEERS];
	unsigned n_peers;
	uint8_t *key;
	size_t key_len;
	bool link_plain;		/* link-security = none (link.c) */
	unsigned outdate_timeout_ms;
	uint8_t disk_state;		/* enum gen_disk, mirrors the metadata */
	bool own_write_failed;		/* a Secondary's disk failed a write of
					 * its Primary's since it last took a
					 * resync (apply.c, resync_target.c) */
	uint64_t seq;			/* last write sequence number sent */
	uint64_t last_guest_write_ms;	/* paces resyncs (resync.c) */
	uint64_t resync_rate_max;	/* bytes/s, 0: no limit */
	uint8_t after_sb[3];		/* enum sb_policy for 0/1/2 Primaries */
	struct vwrite *writes;		/* Primary: in flight, newest first */
	struct vwrite *local_wait;	/* Primary: local writes held for order */
	struct ratelimit write_fail_log;	/* our failed writes' messages */
	struct agree *agree;		/* Primary: agree.c */
	struct preads *pread;		/* Primary: reads asked of peers (pread.c) */
	void *intent_timer;
	/* the activity log: its extent set, writes waiting for a slot in it,
	 * and trims too large for it in flight (al_vol.c, replicate.c) */
	struct al *al;
	struct al_clear *al_clear;	/* bits waiting for a data flush */
	unsigned al_shift;		/* log2 of an extent's bytes */
	struct vwrite *al_wait, **al_wait_tail;
	void *al_timer;
	unsigned al_oversize;
	uint64_t al_fail_max;		/* the last bitmap flush that failed */
	struct verify *verify;		/* the running or last online verify */
	struct verify_ans *verify_ans;	/* peers' verify requests waiting here */
	struct resize *resize;		/* a grow running or failed (resize.c) */
	uint64_t local_client_size;	/* repl_volume_set_local_client() */
	struct recent *recent;		/* Secondary: regions applied lately */
	bool lost_primary;		/* Secondary: its Primary went away */
	unsigned lost_primary_idx;	/* ... which peer that was */
	struct apply *apply;		/* Secondary: peer writes being applied (apply.c) */
	/* bitmap flushes run one at a time, numbered; a write waits for the
	 * number of the first one that covers the bits it set (replicate.c) */
	bool bm_flushing;
	bool bm_releasing;		/* answering a flush's waiters */
	uint64_t bm_started;		/* flushes begun (the running one's number) */
	uint64_t bm_done;		/* the last one that ended */
	uint64_t bm_wanted;		/* the highest number a write waits for */
	int bm_error;			/* how the last one failed, 0: it did not */
	struct repl_io bm_io;
	struct meta_flush_job *bm_job;
	/* acknowledgements held until a lost peer is recorded Outdated */
	unsigned freeze;
	bool quorate;			/* false: hold requests and acks */
	struct repl_io *held_head, **held_tail;
	uint64_t outdate_token;
	unsigned outdate_notices;	/* the cluster said Outdated (counted always) */
	/* The cluster's record that this replica is Outdated stands: from
	 * repl_volume_mark_outdated() to the Primary's "in sync"
	 * (repl_volume_uptodate_by()) or our own promotion.  A resync ends
	 * Outdated meanwhile (rs_uptodate()). */
	bool cluster_outdated;
	bool closing;
	struct vwrite *frozen;
	void *freeze_timer;

	/* live migration and auto-promote (window.c) */
	struct window *window;		/* Secondary: NBD clients allowed */
	struct handover *ho;		/* Primary: handing over, auto-demote */
	bool auto_promote;
	bool handed_over;		/* while Primary: by a HANDOVER (window.c) */

	struct repl__vstats stats;	/* monitoring counters (stats.h) */
	struct cbt *cbt;		/* checkpoints (cbt.c) */
};

/* ---- loop helpers (loop.c) ---- */
int repl__fd_add(struct repl_engine *eng, int fd, unsigned events, repl_fd_fn fn, void *arg);
int repl__fd_mod(struct repl_engine *eng, int fd, unsigned events);
void repl__fd_del(struct repl_engine *eng, int fd);

/* A listening socket in the loop that steps out of it for
 * REPL_ACCEPT_PAUSE_MS when accept(2) runs out of descriptors or memory:
 * the connection waiting in its backlog would wake the loop on every turn
 * otherwise.  fn is the socket's handler (it accepts). */
#define REPL_ACCEPT_PAUSE_MS 200
struct repl_listen {
	struct repl_engine *eng;
	int fd;
	repl_fd_fn fn;
	void *arg;
	bool accepting;		/* fd is in the loop */
	void *pause_timer;
};
/* Puts fd in the loop: 0 or -errno (ls unchanged then). */
int repl__listen_start(struct repl_engine *eng, struct repl_listen *ls, int fd, repl_fd_fn fn,
		       void *arg);
/* After accept(2) failed with err: true when that pauses the listener
 * (EMFILE, ENFILE, ENOBUFS, ENOMEM; the caller says so in its log),
 * false for an error that does not. */
bool repl__listen_pause(struct repl_listen *ls, int err);
/* Out of the loop, any pause cancelled; the fd stays open (the
 * caller's).  Harmless on one never started (zeroed). */
void repl__listen_stop(struct repl_listen *ls);

/* A batch is the work of one wake-up (an fd's handler: the requests one
 * read brought, the completions one eventfd announced).  What a module
 * defers runs once, when the outermost batch ends: link.c's sends, so that
 * the frames of a wake-up go out in one sendmsg, and nbd_cmd.c's replies.
 * Outside a batch nothing is deferred (repl__defer() says false: do it
 * now).  Loop thread only, but for repl__defer(), which says false on a
 * volume worker (a ->done that runs there, REPL_IO_DONE_ANY_THREAD). */
struct repl_deferred {
	struct repl_deferred *next;
	void (*fn)(void *arg);
	void *arg;
	bool queued;
};
void repl__batch_begin(struct repl_engine *eng);
void repl__batch_end(struct repl_engine *eng);
/* Queues d (once) for the end of the batch: true; false outside one. */
bool repl__defer(struct repl_engine *eng, struct repl_deferred *d);
/* Set on iopool.c's worker threads. */
extern __thread bool repl__on_worker;
/* d will not run (its owner goes away). */
void repl__undefer(struct repl_engine *eng, struct repl_deferred *d);

/* ---- store.c: the backing file or device ---- */
/* Opens (creating a sparse file of *size when absent and create_size>0)
 * and returns the fd and the size.  0 or -errno. */
int repl__store_open(const char *path, uint64_t create_size, int *fd,
		     uint64_t *size, bool *blockdev);
/* Worker thread: grows the store from `from` to `to` bytes: a file is
 * extended (sparse) and fsynced; a device must have at least `to` bytes
 * (-ENOSPC otherwise, *dev_size tells how many) and [from, to) is zeroed,
 * so that the new area reads as zeroes on every replica.  0 or -errno. */
int repl__store_grow(int fd, bool blockdev, uint64_t from, uint64_t to, uint64_t *dev_size);
/* Runs io synchronously (worker thread); returns 0 or -errno. */
int repl__store_exec(int fd, bool blockdev, struct repl_io *io);
/* fdatasync of the store on the loop thread, for the rare steps that must
 * not go on before this replica's data is durable (a promotion, an
 * outdate, a handover, a peer gone Inconsistent); fd < 0 (no store open):
 * nothing.  0 or -errno. */
int repl__store_sync(int fd);
/* Loop helpers for timers (loop.c). */
int repl__timer_add(struct repl_engine *eng, uint64_t ms, repl_timer_fn fn, void *arg,
		    void **handle);
void repl__timer_del(struct repl_engine *eng, void **handle);
/* Tries a READ from the page cache without blocking: 0 when done,
 * -EAGAIN when it must go to a worker, other -errno on error. */
int repl__store_read_nowait(int fd, struct repl_io *io);
/* Whether a zero without NO_HOLE is a quick deallocation here (a file on a
 * file system that punches holes), not a write of zeroes: what
 * NBD_FLAG_SEND_FAST_ZERO promises. */
bool repl__store_can_punch(int fd, bool blockdev);
/* Worker thread: true if [off, off+len) is one hole of a file store (reads
 * as zeroes, nothing allocated); false when unknown or on a device. */
bool repl__store_is_hole(int fd, bool blockdev, uint64_t off, uint64_t len);

/* ---- iopool.c: per-volume worker threads ---- */
int repl__iopool_new(struct repl_engine *eng, unsigned threads, int fd,
		     bool blockdev, const char *name, struct iopool **out);
void repl__iopool_submit(struct iopool *pool, struct repl_io *io);
/* Did a plain (not FUA) write, trim or zero of this pool end, with
 * success, after the submission of the last FLUSH that succeeded?  Then a
 * flush failing now may have lost it.  Any thread. */
bool repl__iopool_unflushed(const struct iopool *pool);
/* fdatasync of the pool's file on this thread, counted as the pool's
 * FLUSHes are.  0, or -errno with *lost as repl_io.flush_lost. */
int repl__iopool_sync(struct iopool *pool, bool *lost);
/* The plain writes, trims and zeroes done on the pool so far, and whether
 * a FLUSH submitted after that many were done has succeeded: then they
 * are durable.  Any thread. */
uint64_t repl__iopool_mark(const struct iopool *pool);
bool repl__iopool_durable(const struct iopool *pool, uint64_t mark);
/* Whether small writes may run on the loop thread when the pool is idle
 * (the default: see iopool.c). */
void repl__iopool_set_inline(struct iopool *pool, bool on);
/* Before any worker starts: fn(arg, off, len) runs before each WRITE,
 * TRIM or ZERO reaches the store, on the thread that runs it (a worker,
 * or the loop for an inline write): cbt.c marks what changes. */
void repl__iopool_set_before_write(struct iopool *pool,
				   void (*fn)(void *arg, uint64_t off, uint64_t len), void *arg);
/* Waits for queued work, stops the threads, frees.  NULL ok. */
void repl__iopool_free(struct iopool *pool);

/* ---- gate.c ---- */
/* Starts io against the volume: held, replicated or straight to the local
 * replica; io->done runs on the loop thread, possibly before this returns
 * (a read served from the page cache). */
void repl__volume_io(struct repl_volume *vol, struct repl_io *io);

/* ---- volume.c ---- */
/* Teardown in three steps, across all volumes in this order: disconnect
 * (replication stops), quiesce (queued I/O finishes, ->done runs, workers
 * stop), free. */
void repl__volume_disconnect(struct repl_volume *vol);
void repl__volume_quiesce(struct repl_volume *vol);
void repl__volume_free(struct repl_volume *vol);
/* outdate.c: forgets this replica's data history (a full resync replaces
 * it).  0 or -errno. */
int repl__volume_make_blank(struct repl_volume *vol);
/* repl_volume_promote(), saying whether the role came by a live
 * migration's HANDOVER (the cluster's claim says so). */
int repl__volume_promote(struct repl_volume *vol, bool force, bool handed_over, char *why,
			 size_t len);
/* A Secondary (or a Primary that stepped down, already Secondary) whose
 * data cannot be trusted to agree with the Primary's: its window and
 * clients go, it becomes a blank replica, and every link re-decides (why
 * is logged for each), StandAlone ones too.  It then takes a full resync. */
void repl__volume_start_over(struct repl_volume *vol, const char *why);

/* ---- lossmark.c: a loss the metadata could not record ---- */
/* How much of its data this replica may have lost, in order. */
enum repl_loss {
	REPL_LOSS_NONE,
	REPL_LOSS_POWER,	/* unflushed writes (a power loss's flag) */
	REPL_LOSS_INCONSISTENT,	/* acknowledged writes: resync its bitmap */
	REPL_LOSS_BLANK,	/* and its history: a full resync */
};
/* The metadata could not record a loss of this kind: the marker says it
 * (unless it says more already) for a restart on this boot. */
void repl__lossmark_set(struct repl_volume *vol, enum repl_loss kind);
/* At open: the kind a marker of this boot says, else REPL_LOSS_NONE (a
 * marker of another boot is removed), and in *void_seq the superblock it
 * says to pass over (meta_open_void()), else 0. */
enum repl_loss repl__lossmark_get(struct repl_volume *vol, const uint8_t boot_id[16],
				  uint64_t *void_seq);
/* meta_update_void_failed(), and when the failed update could not be
 * voided, the marker names it so that a restart on this boot does not
 * take it (sim seed 6810 of the EIO profile). */
int repl__lossmark_update_void_failed(struct repl_volume *vol, const struct meta_super *sb);
/* The metadata now records a loss of this kind, or (REPL_LOSS_BLANK) data
 * that replaced what was lost (after a successful update, so no void
 * superblock is left to pass over): a marker that says no more goes. */
void repl__lossmark_recorded(struct repl_volume *vol, enum repl_loss kind);
/* New metadata: a marker left by the replica it replaces goes. */
void repl__lossmark_forget(struct repl_volume *vol);

/* ---- window.c ---- */
/* What a Primary asked for its role (TAKEOVER) looks at. */
struct takeover_view {
	bool primary;		/* it is Primary */
	bool quorate, frozen;	/* it may acknowledge writes now */
	bool asker_in_sync;	/* connected, UpToDate, receiving every write */
	bool busy;		/* handing over already, or verifying */
	bool soft;		/* only if it has no client */
	unsigned clients;
};
/* 0: hand over; -EINVAL not Primary, -EAGAIN not now (no quorum, frozen),
 * -ESTALE the asker is not in sync, -EBUSY not now (busy, or a soft
 * request while clients are attached).  Pure. */
int repl__takeover_verdict(const struct takeover_view *v);
/* An NBD client wants a Secondary: 0 if a window is open or an
 * auto-promotion succeeded, else -errno with why. */
int repl__volume_admit(struct repl_volume *vol, char *why, size_t len);
/* A client's write, trim, zero or flush on a Secondary. */
void repl__window_io(struct repl_volume *vol, struct repl_io *io);
/* A Primary handing over keeps io (not a read) for later: true if kept. */
bool repl__handing_over(struct repl_volume *vol, struct repl_io *io);
void repl__window_clients_changed(struct repl_volume *vol);
/* window.c's state of a volume, from its opening (0 or -ENOMEM) to its
 * teardown (after repl__window_stop()). */
int repl__window_new(struct repl_volume *vol);
void repl__window_free(struct repl_volume *vol);
/* Ends a window and a handover; their held writes fail (the volume
 * closes, or starts over: outdate.c). */
void repl__window_stop(struct repl_volume *vol);
const char *repl__window_state(const struct repl_volume *vol);

/* ---- nbd_validate.c: pure request checks ---- */
enum nbd_verdict {
	NBD_V_OK,	/* run it */
	NBD_V_ERROR,	/* reply with .error, keep the connection */
	NBD_V_CLOSE,	/* the stream cannot be trusted: close */
};

struct nbd_check {
	enum nbd_verdict verdict;
	uint32_t error;		/* NBD_E* for NBD_V_ERROR */
	const char *why;	/* for the log */
};

struct nbd_export_view {
	uint64_t size;
	bool read_only;
	bool structured;	/* structured replies negotiated */
	bool fast_zero;		/* NBD_FLAG_SEND_FAST_ZERO advertised */
	unsigned contexts;	/* metadata contexts selected (nbd_meta.c) */
};

struct nbd_check repl__nbd_check_request(uint32_t magic, uint16_t flags,
					 uint16_t type, uint64_t offset,
					 uint32_t count,
					 const struct nbd_export_view *exp);
/* Transmission flags advertised for an export, to a client that did or
 * did not negotiate structured replies. */
uint16_t repl__nbd_export_flags(const struct repl_volume *vol, bool structured);
/* NBD_OPT_INFO / NBD_OPT_GO data: 0 with the export name in name (which
 * holds NBD_MAX_NAME_LEN + 1 bytes), or an NBD_REP_ERR_* and *why. */
uint32_t repl__nbd_parse_info_go(const uint8_t *d, uint32_t len, char *name,
				 const char **why);

/* ---- nbd_server.c / nbd_conn.c ---- */
void repl__nbd_listeners_close(struct repl_engine *eng);
/* Where a client comes from, for the per-source handshake limit: its pid
 * on a Unix socket (SO_PEERCRED), its address over TCP; all zero when
 * unknown. */
struct nbd_source {
	uint8_t b[20];
};
int repl__nbd_conn_new(struct repl_engine *eng, int fd, const struct nbd_source *src);
void repl__nbd_conns_stop(struct repl_engine *eng);
void repl__nbd_conns_free(struct repl_engine *eng);
/* Ends every client of vol (their requests still finish). */
void repl__nbd_conns_drop_volume(struct repl_engine *eng, struct repl_volume *vol);
/* The largest size an NBD client of vol negotiated (0: none attached). */
uint64_t repl__nbd_clients_max_size(const struct repl_engine *eng,
				    const struct repl_volume *vol);
/* Tells the embedding program that vol's state changed. */
void repl__changed(struct repl_volume *vol);	/* loop.c */
int repl__nbd_notify_new(struct repl_engine *eng);
void repl__nbd_notify_free(struct repl_engine *eng);

#endif
