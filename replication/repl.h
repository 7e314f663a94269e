/* repl.h: public API of the replication engine (libreplication).
 *
 * The engine serves block volumes over NBD and (later) replicates them.  It
 * never owns an event loop: the program hands it a struct repl_loop (an ops
 * table over its own loop: epoll in replagentd's static mode, libqb's
 * qb_loop in cluster mode, a tiny poll loop in tests).  All entry points are
 * called from the loop thread.  Blocking disk I/O runs on per-volume worker
 * threads and comes back to the loop through an eventfd.
 *
 * Error convention: functions return 0 (or a count) on success and -errno on
 * failure; none calls exit().  The engine links neither corosync nor libqb. */
#ifndef REPL_REPL_H
#define REPL_REPL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- event loop ops (events are poll(2) bits: POLLIN, POLLOUT, ...) ---- */

typedef void (*repl_fd_fn)(void *arg, int fd, unsigned revents);
typedef void (*repl_timer_fn)(void *arg);

struct repl_loop_ops {
	int (*fd_add)(void *loop, int fd, unsigned events, repl_fd_fn fn, void *arg);
	int (*fd_mod)(void *loop, int fd, unsigned events);
	void (*fd_del)(void *loop, int fd);
	/* One-shot timer; *handle identifies it for timer_del. */
	int (*timer_add)(void *loop, uint64_t after_ms, repl_timer_fn fn, void *arg,
			 void **handle);
	void (*timer_del)(void *loop, void *handle);
};

struct repl_loop {
	const struct repl_loop_ops *ops;
	void *data;
};

/* ---- engine --------------------------------------------------------- */

struct repl_engine;
struct repl_volume;

int repl_engine_new(const struct repl_loop *loop, struct repl_engine **out);
/* Frees everything at once; call repl_engine_stop() first for a clean stop.
 * repl_engine_free(NULL) is a no-op. */
void repl_engine_free(struct repl_engine *eng);

/* Clean stop: stop accepting, let in-flight requests finish and their
 * replies go out, then close every client.  The loop keeps running until
 * repl_engine_stopped() is true. */
void repl_engine_stop(struct repl_engine *eng);
bool repl_engine_stopped(const struct repl_engine *eng);

/* ---- volumes -------------------------------------------------------- */

enum repl_role { REPL_SECONDARY = 0, REPL_PRIMARY = 1 };

#define REPL_MAX_PEERS 2
#define REPL_NAME_MAX 64

struct repl_peer_config {
	const char *node;	/* the peer's node name */
	const char *host;	/* its replication address */
	const char *port;
};

struct repl_volume_config {
	const char *name;	/* NBD export name */
	const char *backing;	/* regular file (created sparse) or block device */
	const char *meta;	/* metadata file (created with the volume) */
	uint64_t size;		/* bytes; 0 = size of an existing backing */
	unsigned io_threads;	/* 0 = default */
	/* Small writes never run on the loop thread (iopool.c: by default
	 * they do when the pool is idle). */
	bool no_inline_writes;
	/* Replication (n_peers == 0: a local volume, always Primary). */
	const char *node;	/* this node's name */
	const char *listen_host;	/* this replica's address */
	const char *listen_port;
	struct repl_peer_config peers[REPL_MAX_PEERS];
	unsigned n_peers;
	const uint8_t *key;	/* shared secret proving peers are ours */
	size_t key_len;
	/* link-security = none: frames after the handshake go unsealed
	 * (linkcrypt.h); every replica must say the same. */
	bool link_plain;
	unsigned outdate_timeout_ms;	/* how long I/O waits to outdate a lost peer */
	const uint8_t *uuid;	/* 16 bytes for a new replica; NULL: random */
	uint64_t resync_rate_max;	/* bytes/s a resync may send; 0: no limit */
	/* Automatic split-brain recovery (enum sb_policy in gen.h), for 0, 1
	 * and 2 Primaries; only the safe policies are accepted. */
	bool sb_policy_set;
	uint8_t after_sb[3];
	/* Promote for the first NBD client (by the usual rules), demote
	 * after the last one: DRBD 9's auto-promote. */
	bool auto_promote;
	/* Activity-log extents of 4 MiB a Primary keeps hot (DRBD's
	 * al-extents); 0: the default, 1237. */
	unsigned al_extents;
	/* For the simulator's 1 MiB volumes (tests/sim), which would
	 * otherwise be one extent; the daemon leaves both 0: log2 of a new
	 * replica's bitmap region (0: 16, 64 KiB) and of an activity-log
	 * extent (0: 22, 4 MiB; not smaller than a region). */
	unsigned region_shift, al_extent_shift;
	/* A file in a tmpfs (replagentd: its run directory) that records a
	 * loss of data the metadata could not (lossmark.c); NULL: none. */
	const char *loss_marker;
	/* Where repl_volume_add says, for people, why it failed (the daemon
	 * shows it in status and goes on with its other volumes); NULL: only
	 * the log says. */
	char *error;
	size_t error_len;
};

/* Opens (or creates, for a file that does not exist) the volume and its
 * metadata.  A size larger than the existing metadata's grows the replica
 * (as repl_volume_grow, in the background); -EINVAL if it is smaller, or
 * if the backing's size disagrees with the metadata; -EBUSY if the name is
 * taken. */
int repl_volume_add(struct repl_engine *eng, const struct repl_volume_config *cfg,
		    struct repl_volume **out);
struct repl_volume *repl_volume_find(struct repl_engine *eng, const char *name);
/* Online grow of this replica to size bytes, while it is in use: the
 * backing (a file is extended; a block device must already be that large),
 * then the metadata, then the volume; the peers hear of it.  It runs in the
 * background and logs what happened; status shows the size, or the grow
 * going on and why it failed (a failed grow is tried again after 5 s, then
 * twice as late each time up to 5 min, and at once by another call).  A Primary's NBD clients see the new size when
 * they connect after every connected replica has grown.  0 (started, or
 * already that size), or -EINVAL (smaller: a volume never shrinks; not a
 * multiple of 512; too large) with why, -ENOMEM. */
int repl_volume_grow(struct repl_volume *vol, uint64_t size, char *why, size_t whylen);
/* A client of this replica that is not one of its NBD connections (a
 * program embedding the engine, such as the simulator's workload, that
 * calls its request path itself) uses size bytes of it; 0: none.  It
 * counts as an attached NBD client of that size does: in the rules of a
 * link between replicas of different sizes (resize.h), and as one of the
 * volume's clients (a migration window's, repl_volume_clients()). */
void repl_volume_set_local_client(struct repl_volume *vol, uint64_t size);
/* The largest volume the metadata can track with replagentd's 64 KiB
 * regions (2^31 of them): 128 TiB. */
#define REPL_VOLUME_SIZE_MAX (UINT64_C(1) << 47)
const char *repl_volume_name(const struct repl_volume *vol);
uint64_t repl_volume_size(const struct repl_volume *vol);
enum repl_role repl_volume_role(const struct repl_volume *vol);
/* Primary by a live migration's handover (not by a promotion). */
bool repl_volume_handed_over(const struct repl_volume *vol);
/* Number of NBD clients attached to the volume. */
unsigned repl_volume_clients(const struct repl_volume *vol);
void repl_volume_uuid(const struct repl_volume *vol, char out[37]);

/* ---- roles and status --------------------------------------------------- */

enum repl_link_state {
	REPL_LINK_STANDALONE,	/* refuses to connect (split brain, wrong peer) */
	REPL_LINK_DISCONNECTED,
	REPL_LINK_CONNECTING,
	REPL_LINK_CONNECTED,
	REPL_LINK_SYNC_SOURCE,
	REPL_LINK_SYNC_TARGET,
};

struct repl_peer_status {
	char node[REPL_NAME_MAX + 1];
	enum repl_link_state link;
	const char *link_name;		/* "Connected", "SyncSource", ... */
	const char *peer_role;		/* "Primary", "Secondary", "Unknown" */
	const char *peer_disk;		/* "UpToDate", "Outdated", ..., "DUnknown" */
	uint64_t out_of_sync_bytes;	/* what the peer misses */
	uint64_t resync_total_bytes;	/* of the running (or last) resync; 0 on a target */
	uint64_t resync_done_bytes;
	uint64_t resync_rate_bps;	/* recent bytes per second */
	int64_t resync_eta_s;		/* -1 when unknown */
	uint64_t resync_sent_bytes;	/* data sent by resyncs since start */
	/* "" or why the running resync waits: a region failed (a full or
	 * failing disk, ours or the peer's), tried again in a while */
	char resync_error[128];
	char reason[128];		/* why StandAlone / Disconnected, if known */
	uint64_t verify_differing;	/* regions the last verify found different */
	bool recorded_outdated;		/* our metadata says it missed writes */
	bool in_sync;			/* connected, UpToDate, receiving our writes */
	/* We are Primary, it is connected and receiving our writes (not a
	 * resync, or one that sent every region), and nothing is out of
	 * sync for it: it holds every write we acknowledged, whatever disk
	 * state it reports (UpToDate, Outdated by a record that came from
	 * elsewhere, or Inconsistent until its flush after the resync). */
	bool following_clean;
	uint64_t size;			/* its replica's size as it said (0: unknown) */
};

struct repl_volume_status {
	char name[REPL_NAME_MAX + 1];
	char uuid[37];
	uint64_t size;			/* this replica's */
	uint64_t export_size;		/* what a new NBD client gets (see resize.h) */
	uint64_t grow_to;		/* 0, or a grow to this size is going on */
	char grow_error[160];		/* "" or why that grow failed (tried again) */
	const char *role;		/* "Primary" / "Secondary" */
	const char *disk;		/* "UpToDate", ... */
	unsigned clients;
	bool io_frozen;			/* writes wait for a lost peer's outdate */
	char meta_error[160];		/* "" or why writes fail with EIO: the
					 * metadata (activity log, bitmaps)
					 * cannot be written */
	bool up;			/* false: down (a stopped resource) */
	bool auto_promote;
	const char *window;		/* "none", "open", "taking-over", "handing-over" */
	unsigned n_peers;
	struct repl_peer_status peers[REPL_MAX_PEERS];
	/* the running or last online verify (verify_total 0: none yet) */
	bool verify_running, verify_repair;
	uint64_t verify_done, verify_total, verify_region_size;
	unsigned verify_n_listed;
	uint64_t verify_listed[64];	/* offsets of the first differing regions */
	uint64_t verify_unreadable;	/* regions not compared: reads here failed */
	char verify_read_error[64];	/* "" or the last such failure */
	/* client reads this disk failed that a peer answered (pread.c), since
	 * the volume was opened: the disk is failing */
	uint64_t reads_from_peer;
	/* the tuning in force (repl_volume_set_tuning) */
	uint64_t resync_rate_max;	/* bytes/s, 0: no limit */
	unsigned outdate_timeout_ms;
	const char *after_sb[3];	/* policy names for 0, 1 and 2 Primaries */
	/* bitmap pages that failed their check when the metadata was opened
	 * (their ranges were marked out of sync) */
	uint64_t bitmap_damaged_pages;
	/* Until a resync (from a source without power_lost, for that one)
	 * or a promotion (for power_lost) makes it whole:
	 * it went down uncleanly while Primary (its activity log resyncs),
	 * and its host restarted since, or it cannot tell (writes it
	 * acknowledged unflushed may be gone: volume.c, role.c). */
	bool crashed_primary, power_lost;
	/* Cluster mode: Inconsistent only where writes of its Primary's
	 * failed, never acknowledged; it holds every other acknowledged
	 * write, and may be promoted where no UpToDate replica is
	 * connected. */
	bool partial;
};

struct repl_volume *repl_volume_first(struct repl_engine *eng);
struct repl_volume *repl_volume_next(struct repl_volume *vol);
void repl_volume_status(const struct repl_volume *vol, struct repl_volume_status *st);

/* Applies the tuning part of cfg (resync_rate_max, outdate_timeout_ms and,
 * if sb_policy_set, after_sb; nothing else is read) to a running volume: a
 * new rate limit at once, a running resync included; the outdate timeout
 * from the next lost peer on; the split-brain policies from the next
 * handshake.  0, or -EINVAL (nothing changed) for a policy that is not
 * valid for its number of Primaries. */
int repl_volume_set_tuning(struct repl_volume *vol, const struct repl_volume_config *cfg);

/* Role changes, with the rule that refused them in why (0 or -errno:
 * -EBUSY another replica is Primary / clients attached, -EPERM local disk
 * not UpToDate without force). */
int repl_volume_promote(struct repl_volume *vol, bool force, char *why, size_t whylen);
int repl_volume_demote(struct repl_volume *vol, char *why, size_t whylen);
/* Would repl_volume_promote(vol, false) succeed now?  0 or its refusal. */
int repl_volume_can_promote(const struct repl_volume *vol, char *why, size_t whylen);

/* Online verify: compares every region's checksum with the connected
 * peers (a Secondary: with its Primary) while the volume is in use; repl_volume_status() reports progress
 * and the regions that differ.  repair (Primary only) resyncs them from
 * here.  0, or -EBUSY (running), -EPERM, -ENOTCONN, with why. */
int repl_volume_verify(struct repl_volume *vol, bool repair, char *why, size_t whylen);

/* Ends a split brain: keep is the node whose data survives.  Run it on
 * both nodes; on the other one the regions it wrote since the split are
 * saved to BACKING.discarded-TIME first (that node must be Secondary).
 * 0, or -errno with why. */
int repl_volume_resolve(struct repl_volume *vol, const char *keep, char *why, size_t whylen);

/* ---- live migration ------------------------------------------------------ */

/* Opens a migration window on this Secondary (the destination): it may
 * take NBD clients while it is connected to the Primary and UpToDate, and
 * the Primary role moves here, without two Primaries, at their first write
 * (or when the Primary's own clients have left).  timeout_s: how long it
 * waits for a first client (0: 60 s).  0, or -errno with why (-EALREADY
 * Primary, -EPERM down / not UpToDate / not in sync, -ENOTCONN no
 * connected Primary, or what may_promote said). */
int repl_volume_window_open(struct repl_volume *vol, unsigned timeout_s, char *why,
			    size_t whylen);
/* Closes it (a migration that failed): its clients are dropped.  0, or
 * -ENOENT if none is open. */
int repl_volume_window_close(struct repl_volume *vol, char *why, size_t whylen);

/* ---- cluster mode ------------------------------------------------------ */

/* What the engine asks of the program embedding it (replagentd's cluster
 * mode).  All optional. */
struct repl_hooks {
	void *arg;
	/* A Primary lost node's replica of vol and will acknowledge nothing
	 * more until repl_volume_outdate_done(vol, token) says the cluster
	 * recorded it.  Return -errno to fall back to the static rules. */
	int (*outdate)(void *arg, struct repl_volume *vol, const char *node, uint64_t token);
	/* Role, disk or link state changed (for events and announcements). */
	void (*changed)(void *arg, struct repl_volume *vol);
	/* May this replica become Primary now (the cluster's rules: quorum,
	 * no other Primary; takeover: the Primary hands the role over, so it
	 * does not count)?  0, or -errno with why.  Asked before an
	 * auto-promotion and before a migration window takes the role. */
	int (*may_promote)(void *arg, struct repl_volume *vol, bool takeover, char *why,
			   size_t whylen);
};

void repl_engine_set_hooks(struct repl_engine *eng, const struct repl_hooks *hooks);
void repl_volume_outdate_done(struct repl_volume *vol, uint64_t token);
/* The cluster says this replica missed writes: refuse promotion until a
 * resync, and end any resync Outdated until the Primary says we are in
 * sync (repl_volume_uptodate_by()).  No-op on a Primary. */
void repl_volume_mark_outdated(struct repl_volume *vol);
/* The cluster says another replica is Outdated: record it. */
void repl_volume_peer_outdated(struct repl_volume *vol, const char *node);
/* The Primary says node is in sync again: forget that it was Outdated. */
void repl_volume_peer_uptodate(struct repl_volume *vol, const char *node);
/* Our Primary (primary_node) says we are in sync: the cluster's record is
 * gone; if we are connected to it and only marked Outdated, we are
 * UpToDate again. */
void repl_volume_uptodate_by(struct repl_volume *vol, const char *primary_node);
/* The cluster says node left (crashed, cut off, stopped): its link goes
 * now rather than at the ping timeout. */
void repl_volume_peer_gone(struct repl_volume *vol, const char *node);
/* Where a peer accepts replication connections (learnt late, or moved). */
int repl_volume_peer_address(struct repl_volume *vol, const char *node, const char *host,
			     const char *port);
/* Without quorum a Primary holds every new request (the guest waits, it
 * sees no error) and acknowledges nothing; with quorum back it goes on. */
void repl_volume_set_quorate(struct repl_volume *vol, bool quorate);
/* Another replica was promoted while this one was cut off: fail what it
 * holds (never acknowledged), drop its clients, become a Secondary that
 * will take a full resync. */
void repl_volume_step_down(struct repl_volume *vol);
/* The cluster says node's promotion crossed another's and came second
 * (it steps down; nothing it wrote was acknowledged).  A Secondary that
 * took writes or a generation from it starts over as a blank replica and
 * takes the Primary's data by a full resync.  No-op otherwise. */
void repl_volume_crossing_lost(struct repl_volume *vol, const char *node);
/* Down: the replica takes no part (no replication links, no NBD clients),
 * as a stopped cluster resource; up: it connects again.  Down is refused
 * while Primary or in use (-EBUSY). */
int repl_volume_set_up(struct repl_volume *vol, bool up);
bool repl_volume_is_up(const struct repl_volume *vol);
/* Removes a volume that is not Primary and has no clients: 0, -EBUSY. */
int repl_volume_remove(struct repl_volume *vol);

/* ---- NBD ------------------------------------------------------------ */

/* Listens on a Unix socket (unlinked again on stop) with the given mode
 * and group (gid (gid_t)-1: the creator's), both set before it listens. */
int repl_nbd_listen_unix(struct repl_engine *eng, const char *path, mode_t mode, gid_t gid);
/* At most max clients attached (past NBD_OPT_GO) at once; one more is
 * refused with NBD_REP_ERR_POLICY and a message.  0: the default,
 * REPL_NBD_CLIENTS_MAX_DEFAULT.  Clients still in the handshake are
 * limited apart (nbd_conn.c). */
#define REPL_NBD_CLIENTS_MAX_DEFAULT 128
void repl_nbd_set_clients_max(struct repl_engine *eng, unsigned max);
/* Listens on TCP; host NULL = all addresses. */
int repl_nbd_listen_tcp(struct repl_engine *eng, const char *host, const char *port);
/* TLS for clients over TCP (NBD_OPT_STARTTLS, nbd_tls.c): certificates in
 * dir as QEMU lays them out (ca-cert.pem, server-cert.pem, server-key.pem);
 * a client must present a certificate signed by that CA, and with allow
 * (NULL-terminated fnmatch patterns; NULL or empty: any) one whose DN
 * matches.  require: a client over TCP gets NBD_REP_ERR_TLS_REQD until it
 * starts TLS.  The Unix socket stays plain.  0, or -errno with the reason
 * in the log. */
int repl_nbd_tls_set(struct repl_engine *eng, const char *dir, const char *const *allow,
		     bool require);

#endif
