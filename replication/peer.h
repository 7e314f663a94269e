/* peer.h: engine-internal view of the other replicas of a volume: the
 * connection to each (peer.c), what is in flight to it, the table of
 * hooks through which the connection reports to the volume's replication
 * logic (struct peer_hooks), and that logic's entry points (replicate.c,
 * resync.c and the others, which volume.c puts in the table).  Loop
 * thread only. */
#ifndef REPL_PEER_H
#define REPL_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gen.h"
#include "meta.h"
#include "repl_int.h"
#include "wire.h"

struct peer;
struct vwrite;

enum peer_conn {
	PC_IDLE,		/* no socket; reconnect timer may be armed */
	PC_CONNECTING,		/* TCP connect in progress (initiator) */
	PC_HANDSHAKE,		/* hello, authentication, volume exchange */
	PC_UP,			/* replicating */
};

struct peer {
	struct repl_volume *vol;
	unsigned idx;			/* slot in the metadata */
	char node[REPL_NAME_MAX + 1];
	char *host, *port;
	bool initiator;			/* we connect, they accept */
	enum peer_conn conn;
	int cfd;			/* socket while PC_CONNECTING */
	uint64_t conn_id;		/* increases with every connection */
	bool suppressed;		/* Secondary pair that differs: no data */
	bool told_has_primary;		/* our VOLUME's has_primary on this link */
	/* Our VOLUME's role, disk and current on this link: what the peer
	 * decides on.  If ours changed before the link came up (a resync
	 * finished meanwhile), repl__peers_tell_state() did not reach this
	 * peer yet, so the handshake's end tells it (peer.c). */
	uint8_t told_role, told_disk;
	uint64_t told_current;
	bool resynced_us;		/* a resync from it made us UpToDate, on
					 * this connection */
	/* We hold every write it acknowledged on this connection: its
	 * handshake found us equal (no resync, nothing in its bitmap for
	 * us, both UpToDate), or its resync made us UpToDate.  A resync it
	 * starts on the link then only makes regions agree (its own failed
	 * write, recent.c), and we stay UpToDate through it (resync_target.c). */
	bool held_all;
	bool rs_agreement;		/* the resync to us is such a one */
	enum repl_link_state link;
	char reason[128];
	struct peer_link *l;		/* socket, buffers, handshake (link.c) */
	const struct peer_hooks *hooks;	/* the engine above (repl__peers_start) */
	uint64_t backoff_ms;
	void *reconnect_timer;
	/* Links dropped because a disk failed what they carried (BYE_DISK,
	 * either side's): the delay before the next, and when the last. */
	uint64_t disk_backoff_ms, disk_drop_ms;
	bool disk_wait;			/* the next reconnect waits disk_backoff_ms */
	/* what the peer told us */
	uint64_t size;			/* its replica's size (VOLUME, SIZE) */
	uint8_t peer_role;		/* REPL_PRIMARY / REPL_SECONDARY */
	uint8_t peer_disk;		/* enum gen_disk */
	bool peer_crashed;		/* it crashed as Primary, not resynced since */
	bool peer_lost_power;		/* it may lack writes it acknowledged (gen.h) */
	bool peer_partial;		/* Inconsistent, partial (gen.h) */
	/* The last handshake made this replica its sync target (gen.c):
	 * its data is the reference, whether or not the resync runs yet. */
	bool hs_target;
	/* The last handshake found our generation newer than its (gen.c
	 * rules 9 and 10: its current is our bitmap or history): it
	 * stopped taking our writes before our data moved on. */
	bool hs_newer;
	/* We applied its writes or followed its generation while it was
	 * Primary, and it has not demoted since (a crossing, clusterd.c). */
	bool took_primary;
	/* We were promoted after losing our Primary with it connected: what
	 * it applied last from that Primary comes as its asks (recent.c),
	 * in memory on both sides until its PING after them arrives. */
	bool asks_owed;
	/* The cluster says it lost a crossing and is stepping down: until it
	 * says it is Secondary, none of its writes or generations is taken. */
	bool lost_crossing;
	/* Outdate notices sent on this link and not yet confirmed (each
	 * counts in vol->freeze), and the token of the last: its
	 * confirmation covers the earlier ones (frames keep their order). */
	unsigned outdate_waits;
	uint64_t outdate_wait_token;
	/* Lost while we were Primary and the outdate is not confirmed yet:
	 * the new generation for it (drawn at the loss) waits for that
	 * (replicate.c); 0: none waits. */
	uint64_t gen_pending;
	/* status (role.c) said it holds every write since it was last
	 * recorded Outdated: the cluster, told what status says, may have
	 * withdrawn its record although ours stands (ask_outdate() clears
	 * it).  Our record then covers no later failed write. */
	bool said_clean;
	/* writes sent and not acknowledged, oldest first */
	struct vwrite *unacked_head, *unacked_tail;
	unsigned unacked;
	/* resync */
	struct resync *rs;
	uint64_t resync_sent_bytes;
	/* as a target: bytes received by the running resync, since when */
	uint64_t rs_recv_bytes, rs_recv_started_ms;
	/* as a target: repl__apply_failures() when we last told the source
	 * where we stand (the resync's start, each FLUSH_ACK of it) */
	uint64_t rs_fail_mark;
	/* repl_volume_resolve() kept this node's data: a split brain with it
	 * is retried, not StandAlone, until a link comes up (handshake.h) */
	bool keeping;
	/* as a target at the end of a resync: the source's disk state, and
	 * the volume's outdate_notices then (rs_uptodate()) */
	enum gen_disk rs_src_disk;
	unsigned rs_outdate_mark;
	/* regions it acknowledged and may not have flushed (peer_unflushed.c) */
	struct peer_unflushed *unfl;
};

/* A write (or trim, zero, flush) of the Primary on its way to every
 * replica.  It completes when every part is done: local I/O, each peer's
 * acknowledgement, and the bitmap flush that records what an absent peer
 * misses. */
/* WRITE frames of one guest write: NBD_MAX_PAYLOAD / WIRE_DATA_MAX. */
#define VWRITE_MAX_FRAMES 8

struct vwrite {
	struct repl_volume *vol;
	struct repl_io *io;		/* the caller's request */
	struct repl_io local;		/* our own copy of it, for the store */
	uint64_t seq;
	unsigned pending;
	int result;
	int peer_error[REPL_MAX_PEERS];	/* a peer failed a frame of it */
	bool on_peer[REPL_MAX_PEERS];
	unsigned acks_left[REPL_MAX_PEERS];	/* frames not yet acknowledged */
	struct vwrite *pnext[REPL_MAX_PEERS], *pprev[REPL_MAX_PEERS];
	struct vwrite *vnext, *vprev;	/* volume's in-flight list */
	struct vwrite *wnext;		/* acks held (vol->frozen) */
	struct vwrite *lnext;		/* waiting for an overlapping local write */
	struct vwrite *bnext;		/* being released by a bitmap flush */
	/* The bitmap flush it waits for (0: none).  One number, raised when
	 * more bits must be durable: a write waits for one flush at most, and
	 * holds one reference for it. */
	uint64_t bm_epoch;
	bool local_pending;		/* its local write is to come or running */
	bool local_busy;		/* its local write is running */
	bool peers_only;		/* nothing to do here (unfl_flush()) */
	bool start_after_flush;		/* its activity-log bits are being written */
	unsigned local_tries;		/* local writes that failed (local_done()) */
	bool al_held;			/* holds its extents in the activity log */
	bool al_oversize;		/* too large for it: bits set directly */
	struct vwrite *anext;		/* waiting for an activity-log slot */
	uint64_t sent_ns;		/* sent to the peers (stats.h) */
	/* The payload CRC of each of its WRITE frames, computed while sending
	 * to the first peer and reused for the others (crc_n known so far). */
	uint32_t crc[VWRITE_MAX_FRAMES];
	unsigned crc_n;
	/* a FLUSH: its number on each peer it was sent to (peer_unflushed.c) */
	uint64_t flush_no[REPL_MAX_PEERS];
};

/* What the links of a volume report to the engine above them.  peer.c and
 * peer_state.c check a frame (its range, its sender, the link's state)
 * and then call one of these: they name none of the modules above them
 * (replicate.c, apply.c, outdate.c, resync.c, recent.c, verify.c,
 * window.c, resize.c, cbt.c).  The engine's table is volume.c's, given to
 * repl__peers_start(); every entry is set. */
#define PEER_DOWN_OBSERVERS 4
struct peer_hooks {
	/* Frames, once checked.  apply: WRITE, TRIM, ZERO or FLUSH of the
	 * Primary this replica follows (data points into mem, freed when
	 * applied, or both NULL); ack: of a write or flush we sent. */
	void (*apply)(struct peer *p, uint64_t seq, enum repl_io_op op, unsigned flags,
		      uint64_t offset, uint32_t len, void *data, void *mem);
	void (*ack)(struct peer *p, uint64_t seq, int result);
	/* A resync: a block (data NULL: zeroes), the source's FLUSH, an ack
	 * of our block, the source's state at the end; rs_more: regions
	 * joined p's bitmap, send them; rs_source: start one to p. */
	void (*rs_data)(struct peer *p, uint64_t seq, uint64_t offset, uint32_t len,
			void *data, void *mem);
	void (*rs_flush)(struct peer *p, uint64_t seq);
	void (*rs_ack)(struct peer *p, uint64_t seq, int result);
	void (*rs_done)(struct peer *p, const struct wire_volume *v);
	void (*rs_more)(struct peer *p);
	void (*rs_source)(struct peer *p, bool full);
	/* p's STATE, recorded (p->peer_disk is what it said): a resync to
	 * it that sent everything ends when it says it recorded that. */
	void (*rs_peer_state)(struct peer *p);
	/* The Primary's PING: its writes up to seq are on every replica. */
	void (*primary_seq)(struct repl_volume *vol, uint64_t seq);
	/* Our Primary was lost and new_primary is another: our recent writes. */
	void (*recent_ask)(struct peer *new_primary);
	/* The peer answered our PING whose seq was seq (echoed). */
	void (*ping_acked)(struct peer *p, uint64_t seq);
	void (*verify_request)(struct peer *p, uint64_t seq, uint64_t off, uint32_t len);
	void (*verify_reply)(struct peer *p, uint64_t seq, const struct wire_verify *r);
	void (*takeover)(struct peer *p, uint64_t seq, uint32_t flags);
	void (*handover)(struct peer *p, uint64_t seq, const struct wire_handover *h);
	void (*size)(struct peer *p, uint64_t size);
	void (*ckpt)(struct peer *p, const struct wire_ckpt *m);
	/* READ_REQ (in the volume), and the answer to ours: READ_DATA (w)
	 * or READ_FAIL (w NULL, err < 0). */
	void (*read_request)(struct peer *p, uint64_t seq, uint64_t off, uint32_t len);
	void (*read_answer)(struct peer *p, uint64_t seq, const struct wire_write *w, int err);
	/* The handshake: may the link come up with a peer of peer_size bytes
	 * after the generations decided d (false: wait, why filled)?  authed:
	 * p proved the key (it holds the generation it was lost at); up: the
	 * link carries data now (after up_data, checkpoints_up). */
	bool (*link_ok)(struct peer *p, uint64_t peer_size, enum gen_decision d, char *why,
			size_t whylen);
	void (*authed)(struct peer *p);
	void (*up_data)(struct peer *p, enum gen_decision d);
	void (*checkpoints_up)(struct peer *p);
	/* A STATE from p confirmed our outdate notice token. */
	void (*outdate_confirmed)(struct peer *p, uint64_t token);
	/* Something the status shows changed. */
	void (*changed)(struct repl_volume *vol);
	/* A link that was up went: each observer, in order. */
	void (*down[PEER_DOWN_OBSERVERS])(struct peer *p);
};

/* peer.c */
int repl__peers_start(struct repl_volume *vol, const struct repl_volume_config *cfg,
		      const struct peer_hooks *hooks);
/* Says goodbye and closes every connection; the peers stay allocated
 * until repl__peers_free(), since I/O still draining refers to them. */
void repl__peers_stop(struct repl_volume *vol);
void repl__peers_free(struct repl_volume *vol);
void repl__peers_set_down(struct repl_volume *vol, bool down);
bool repl__peer_up(const struct peer *p);
/* peer_send.c.  Sends w's request; returns the number of frames
 * (acknowledgements to expect) or -errno. */
int repl__peer_send_io(struct peer *p, struct vwrite *w);
int repl__peer_send_ack(struct peer *p, uint64_t seq, int result);
/* Our role, disk and generation; with outdated, a notice that it is now
 * Outdated (the receiver records it and confirms with a STATE). */
int repl__peer_send_state(struct peer *p, const struct peer *outdated);
/* What our STATE and VOLUME say of us: Inconsistent only where writes of
 * our Primary's failed here (gen.h's partial, apply.c), with no record or
 * power loss since that says otherwise. */
bool repl__partial(const struct repl_volume *vol);
/* The notice with its token: the receiver's confirmation echoes it. */
int repl__peer_send_outdate(struct peer *p, const struct peer *outdated, uint64_t token);
/* RS_DATA (data is freed once sent) or RS_ZERO (data NULL). */
int repl__peer_send_rs_data(struct peer *p, uint64_t seq, uint64_t offset, uint32_t len,
			    void *data, bool zero);
/* A read of this replica that answers a peer's request seq (verify.c's
 * checksums, pread.c's bytes), and the link it came on.  A caller's
 * struct may begin with one. */
struct peer_answer {
	struct repl_io io;
	struct peer *p;
	uint64_t conn_id, seq;
};
/* size bytes (a struct that begins with a peer_answer), zeroed, whose io
 * reads [off, off + len) into a buffer of its own and then calls done;
 * NULL without memory (and the link dropped). */
void *repl__peer_answer_new(struct peer *p, size_t size, uint64_t seq, uint64_t off,
			    uint32_t len, unsigned flags, void (*done)(struct repl_io *io));
/* Is the link it came on still up, to take the answer? */
bool repl__peer_answer_live(const struct peer_answer *a);
/* Did p's HELLO offer to answer READ_REQ (WIRE_FEAT_READ)? */
bool repl__peer_answers_reads(const struct peer *p);
/* READ_DATA answering READ_REQ seq (data is freed once sent). */
int repl__peer_send_read_data(struct peer *p, uint64_t seq, uint64_t offset, uint32_t len,
			      void *data);
/* Our full state: after the handshake, it ends a resync we were source of. */
int repl__peer_send_volume(struct peer *p);
/* peer.c: the link goes and is tried again (drop), or goes with a BYE of
 * reason bye and is not retried (standalone); size_wait: a BYE_SIZE
 * first if tell, and the reason is logged only once. */
void repl__peer_drop(struct peer *p, const char *why);
void repl__peer_standalone(struct peer *p, uint32_t bye, const char *why);
void repl__peer_size_wait(struct peer *p, const char *why, bool tell);
/* Our disk failed what the link carried (a flush of the peer's writes, a
 * resync's end): the link goes with a BYE saying so, and both sides make
 * it again only after a delay that grows while this goes on. */
void repl__peer_disk_drop(struct peer *p, const char *why);
int repl__peer_set_address(struct peer *p, const char *host, const char *port);
void repl__peer_retry(struct peer *p);
/* An idle link we open tries again now, not after its backoff. */
void repl__peer_reconnect_now(struct peer *p);
void repl__peers_tell_state(struct repl_volume *vol);
/* peer_send.c: our generations as gen.c sees them, for peer idx (< 0:
 * none). */
void repl__peer_gen_side(const struct repl_volume *vol, int idx, struct gen_side *out);
/* Writes g back into sb: current, history and peer idx's bitmap generation. */
void repl__gen_store(struct meta_super *sb, int idx, const struct gen_side *g);

/* replicate.c: called by peer.c */
void repl__rep_ack(struct peer *p, uint64_t seq, int result);
/* outdate.c: called by peer.c */
void repl__rep_peer_down(struct peer *p);
/* A STATE from p confirmed our outdate notice token. */
void repl__rep_outdate_confirmed(struct peer *p, uint64_t token);
/* p is back before its outdate was confirmed: its new generation now. */
void repl__rep_gen_catch_up(struct peer *p);
/* outdate.c: replicate.c's observer (repl_write_observers.peer_failed).
 * p, in sync, failed a write of ours that we acknowledge without it. */
void repl__rep_peer_failed_write(struct peer *p);
/* outdate.c: the write path's observer (repl_write_observers.disk_lost).
 * Our disk failed a flush and may have dropped acknowledged writes. */
void repl__rep_disk_lost(struct repl_volume *vol);
/* outdate.c: called by role.c.  Just promoted: the peers away now are
 * outdated as a lost peer is (here, and by the cluster or the connected
 * peers), before any write is acknowledged. */
void repl__rep_outdate_absent(struct repl_volume *vol);
/* outdate.c: called by volume.c.  Shutting down: a peer lost now is not
 * outdated; held writes go. */
void repl__rep_close(struct repl_volume *vol);
/* replicate.c: called by gate.c (reads also by resync.c and verify.c) */
void repl__rep_io(struct repl_volume *vol, struct repl_io *io);
void repl__rep_read(struct repl_volume *vol, struct repl_io *io);
bool repl__writes_overlap(const struct repl_volume *vol, uint64_t off, uint64_t len);
/* Starts the periodic sweep of the activity log (a Primary's). */
void repl__rep_intent_start(struct repl_volume *vol);
/* A Primary with peers but without quorum keeps io (true) until quorum
 * returns (or the volume steps down), when gate.c takes them all back, in
 * order; false: io may go on. */
bool repl__rep_hold(struct repl_volume *vol, struct repl_io *io);
struct repl_io *repl__rep_take_held(struct repl_volume *vol);

/* peer_unflushed.c: regions p acknowledged since the last flush it
 * confirmed.  note: p acknowledged a plain write of the range; true when
 * the Primary should send a FLUSH to bound the set.  flush_sent numbers a
 * FLUSH sent to p, flush_done says how p answered it.  lost: the link is gone,
 * the regions go to p's bitmap (in memory; the caller makes it durable). */
bool repl__unfl_note(struct peer *p, uint64_t offset, uint64_t len);
uint64_t repl__unfl_flush_sent(struct peer *p);
void repl__unfl_flush_done(struct peer *p, uint64_t flush_no, int result);
size_t repl__unfl_count(const struct peer *p);
void repl__unfl_lost(struct peer *p);
void repl__unfl_free(struct peer *p);

/* writecheck.c: does the Primary's write accounting add up?  Every write
 * in flight holds exactly one reference per thing it waits for (its local
 * write, each peer it was sent to, one bitmap flush), writes at 0 are
 * held for acks, and, with idle, nothing is in flight at all.  Logs each
 * problem (LOG_CRIT) and returns how many; with --enable-debug-checks it
 * aborts instead (when names the moment: "step down", "demote"...). */
unsigned repl__writes_check(const struct repl_volume *vol, const char *when, bool idle);

/* resync.c (the source's side; the target's is resync_target.c) */
void repl__rs_start_source(struct peer *p, bool full);
void repl__rs_more(struct peer *p);
void repl__rs_stop(struct peer *p);
void repl__rs_on_ack(struct peer *p, uint64_t seq, int result);
void repl__rs_on_peer_state(struct peer *p);
/* A resync to p sent every region; p has not said it recorded the end. */
bool repl__rs_sent_all(const struct peer *p);
/* A resync to p that only makes regions agree: p, in sync with us and
 * UpToDate when it began, holds every write we acknowledged and stays
 * UpToDate (resync_target.c). */
bool repl__rs_target_holds_all(const struct peer *p);
/* A guest write to the range failed on p: resync copies of it are not
 * counted done (resync.c). */
void repl__rs_note_failed(struct peer *p, uint64_t offset, uint64_t len);
/* resync_target.c */
void repl__rs_start_target(struct peer *p);
/* Target: a resync block (data NULL: zeroes). */
void repl__rs_on_data(struct peer *p, uint64_t seq, uint64_t offset, uint32_t len,
		      void *data, void *mem);
/* Target: the source's FLUSH of the resync (acknowledged once durable). */
void repl__rs_on_flush(struct peer *p, uint64_t seq);
/* Target: the source's state at the end of the resync. */
void repl__rs_on_done(struct peer *p, const struct wire_volume *v);
void repl__rs_note_write(struct repl_volume *vol, uint64_t offset, uint64_t len);
void repl__rs_status(const struct peer *p, struct repl_peer_status *st);

/* recent.c */
void repl__recent_note(struct repl_volume *vol, uint64_t seq, uint64_t off, uint64_t len);
void repl__recent_peer_ack(struct repl_volume *vol, uint64_t seq);
void repl__recent_after_promotion(struct repl_volume *vol);
void repl__recent_ask(struct peer *new_primary);
void repl__recent_ping_acked(struct peer *p, uint64_t seq);
void repl__recent_free(struct repl_volume *vol);

/* verify.c */
void repl__verify_on_reply(struct peer *p, uint64_t seq, const struct wire_verify *r);
void repl__verify_on_request(struct peer *p, uint64_t seq, uint64_t off, uint32_t len);
void repl__verify_peer_down(struct peer *p);
void repl__verify_note_write(struct repl_volume *vol, uint64_t off, uint64_t len);
void repl__verify_status(const struct repl_volume *vol, struct repl_volume_status *st);
void repl__verify_free(struct repl_volume *vol);
bool repl__verify_running(const struct repl_volume *vol);

/* window.c */
void repl__window_on_takeover(struct peer *p, uint64_t seq, uint32_t flags);
void repl__window_on_handover(struct peer *p, uint64_t seq, const struct wire_handover *h);
void repl__window_peer_down(struct peer *p);
/* replicate.c: called by outdate.c.  thaw: held acknowledgements go out
 * if nothing holds them any more; fail_frozen: they fail with err, and so
 * do the requests held for quorum; al_fail_waiting: writes waiting for an
 * activity-log slot fail (a stop).  unfl_lost: what p acknowledged and
 * may not have flushed goes to its bitmap (flushed soon); unacked_lost:
 * what p never acknowledged goes to its bitmap, and p's references go. */
void repl__rep_thaw(struct repl_volume *vol);
void repl__rep_fail_frozen(struct repl_volume *vol, int err);
void repl__rep_al_fail_waiting(struct repl_volume *vol);
void repl__rep_unfl_lost(struct peer *p);
void repl__rep_unacked_lost(struct peer *p);
/* apply.c: a Secondary applies a frame of its Primary; data points into
 * mem (freed when applied), or both NULL. */
void repl__rep_apply(struct peer *p, uint64_t seq, enum repl_io_op op,
		     unsigned flags, uint64_t offset, uint32_t len, void *data, void *mem);
/* Is an apply in flight or waiting that overlaps io (a write), or the
 * range (any but a flush, of nonzero length)? */
bool repl__apply_overlaps(const struct repl_volume *vol, const struct repl_io *io);
bool repl__apply_overlaps_range(const struct repl_volume *vol, uint64_t off, uint64_t len);
/* Our own write ended: data that waits for it may go (apply.c). */
void repl__apply_unblock(struct repl_volume *vol);
/* How many of the Primary's writes (and flushes) failed here, ever: a
 * count that only grows, so that resync.c can tell whether one failed
 * after a point (apply.c). */
uint64_t repl__apply_failures(const struct repl_volume *vol);
/* Our disk failed a write or flush of the Primary's data: Inconsistent.
 * what: the failure, for the log ("a write failed here"); lost: a flush
 * that found writes not yet durable (the links of peers whose writes it
 * may have dropped go, unless our STATE tells them). */
void repl__apply_disk_failed(struct repl_volume *vol, const char *what, bool lost);
/* apply.c's state (vol->apply), from volume.c; and who is told when an
 * apply ends (replicate.c: a write of its own may wait behind it). */
int repl__apply_open(struct repl_volume *vol);
void repl__apply_free(struct repl_volume *vol);
void repl__apply_set_observer(struct repl_volume *vol, void (*fn)(struct repl_volume *vol));
/* peer_send.c: any frame */
int repl__peer_send_msg(struct peer *p, const struct wire_msg *m);
/* peer_send.c: the confirmation of an outdate notice (its token), the
 * node id of a replica of vol (its rank by name, from 1), and whether a
 * connected peer other than except is Primary. */
int repl__peer_send_confirm(struct peer *p, uint64_t token);
uint32_t repl__peer_node_id(const struct repl_volume *vol, const char *node);
bool repl__peer_has_primary(const struct repl_volume *vol, const struct peer *except);
/* peer_state.c: a peer's VOLUME frame during the handshake, a STATE frame
 * once up. */
void repl__peer_on_volume(struct peer *p, const struct wire_volume *v);
void repl__peer_on_state(struct peer *p, const struct wire_state *s);
/* Has our role, disk or generation moved since the VOLUME we sent on p's
 * link (what the peer decides on)? */
bool repl__peer_told_stale(const struct peer *p);

#endif
