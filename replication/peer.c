/* peer.c: the connections between the replicas of a volume.  Each pair of
 * replicas has one TCP connection; the node whose name sorts first opens
 * it, the other accepts on its replica address.  A connection authenticates
 * both sides (wire.h: HMAC over the shared key), exchanges VOLUME frames and
 * lets gen.c decide: in sync, who resyncs from whom, or StandAlone (split
 * brain, unrelated data, a different volume).  After that, frames are
 * dispatched by type to replicate.c and resync.c.
 *
 * The socket, the framing and the handshake are link.c's; it reports
 * through peer_link_ops.  Reconnects back off from 250 ms to 10 s; a link
 * that goes silent fails in link.c and the peer goes Disconnected here.
 * Loop thread only. */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "link.h"
#include "log.h"
#include "meta.h"
#include "nbd-protocol.h"
#include "cbt.h"
#include "peer.h"
#include "sys.h"
#include "resize.h"
#include "util.h"
#include "wire.h"

/* The generations copied between metadata, gen.c and the wire. */
_Static_assert(GEN_HISTORY == META_GEN_HISTORY && GEN_HISTORY == WIRE_GEN_HISTORY,
	       "history depths differ");

#define BACKOFF_MIN_MS 250
#define BACKOFF_MAX_MS 10000
#define RS_SEQ_BIT (UINT64_C(1) << 63)

static struct peer *peer_by_name(struct repl_volume *vol, const char *node);
static void schedule_reconnect(struct peer *p);

/* ---- small helpers ---------------------------------------------------------- */

static uint32_t node_id_of(const struct repl_volume *vol, const char *node)
{
	uint32_t id = 1;

	for (unsigned i = 0; i < vol->n_peers; i++)
		if (strcmp(vol->peers[i]->node, node) < 0)
			id++;
	if (strcmp(vol->node, node) < 0)
		id++;
	return id;
}

bool repl__peer_up(const struct peer *p)
{
	return p->conn == PC_UP;
}

/* Our generations as seen by peer idx: the bitmap generation is the one
 * of that peer's bitmap (each peer has its own, so replicas away at
 * different times each resync only what they missed).  idx < 0: none. */
void repl__peer_gen_side(const struct repl_volume *vol, int idx, struct gen_side *g)
{
	const struct meta_super *sb = meta_get(vol->meta);

	memset(g, 0, sizeof(*g));
	g->current = sb->gen_current;
	g->bitmap = idx >= 0 ? sb->peers[idx].bitmap_gen : 0;
	memcpy(g->history, sb->gen_history, sizeof(g->history));
	g->disk_state = vol->disk_state;
	g->primary = vol->role == REPL_PRIMARY;
	g->crashed_primary = sb->flags & META_F_PRIMARY_CRASHED;
	g->node_id = node_id_of(vol, vol->node);
}

/* ---- sending ---------------------------------------------------------------- */

static int send_msg(struct peer *p, const struct wire_msg *m)
{
	if (!p->l || p->conn < PC_HANDSHAKE)
		return -ENOTCONN;
	return repl__link_send(p->l, m, NULL, 0, NULL);
}

int repl__peer_send_msg(struct peer *p, const struct wire_msg *m)
{
	return send_msg(p, m);
}

/* A write larger than a frame goes as several frames with the same seq;
 * returns how many (each is acknowledged), or -errno. */
static int send_write_chunks(struct peer *p, struct vwrite *w, uint32_t fua)
{
	const struct repl_io *io = w->io;
	struct wire_msg m = { .type = WIRE_WRITE, .seq = w->seq };
	uint32_t done = 0;
	int n = 0, r;

	_Static_assert(NBD_MAX_PAYLOAD <= VWRITE_MAX_FRAMES * (uint64_t)WIRE_DATA_MAX,
		       "a guest write has more WRITE frames than vwrite keeps CRCs of");
	if (!p->l)
		return -ENOTCONN;
	while (done < io->len) {
		uint32_t len = MIN(io->len - done, WIRE_DATA_MAX);
		const uint8_t *data = (const uint8_t *)io->buf + done;
		m.u.write = (struct wire_write){ io->offset + done, len, fua, data };
		/* The payload (offset, length, flags, data) is the same for
		 * every peer, so is its CRC: sum it once per write. */
		if (n < VWRITE_MAX_FRAMES) {
			if ((unsigned)n >= w->crc_n) {
				w->crc[n] = wire_payload_crc(&m);
				w->crc_n = (unsigned)n + 1;
			}
			m.u.write.have_crc = true;
			m.u.write.payload_crc = w->crc[n];
		}
		r = repl__link_send(p->l, &m, data, len, NULL);
		if (r < 0)
			return r;
		done += len;
		n++;
	}
	return n;
}

int repl__peer_send_io(struct peer *p, struct vwrite *w)
{
	const struct repl_io *io = w->io;
	struct wire_msg m = { .seq = w->seq };
	uint32_t fua = (io->flags & REPL_IO_FUA) ? WIRE_WF_FUA : 0;
	int r;

	switch (io->op) {
	case REPL_IO_WRITE:
		return send_write_chunks(p, w, fua);
	case REPL_IO_FLUSH:
		m.type = WIRE_FLUSH;
		break;
	case REPL_IO_TRIM:
		m.type = WIRE_TRIM;
		m.u.range = (struct wire_range){ io->offset, io->len, fua };
		break;
	case REPL_IO_ZERO:
		m.type = WIRE_ZERO;
		m.u.range = (struct wire_range){ io->offset, io->len,
			fua | ((io->flags & REPL_IO_NO_HOLE) ? WIRE_WF_NO_HOLE : 0) };
		break;
	default:
		return -EINVAL;
	}
	r = send_msg(p, &m);
	return r < 0 ? r : 1;
}

int repl__peer_send_ack(struct peer *p, uint64_t seq, int result)
{
	struct wire_msg m = { .type = WIRE_WRITE_ACK };

	m.u.ack = (struct wire_ack){ seq, result < 0 ? (uint32_t)MIN(-result, 4095) : 0 };
	return send_msg(p, &m);
}

int repl__peer_send_rs_data(struct peer *p, uint64_t seq, uint64_t offset, uint32_t len,
			    void *data, bool zero)
{
	struct wire_msg m = { .seq = seq };

	if (zero) {
		m.type = WIRE_RS_ZERO;
		m.u.range = (struct wire_range){ offset, len, 0 };
		free(data);
		return send_msg(p, &m);
	}
	m.type = WIRE_RS_DATA;
	m.u.write = (struct wire_write){ offset, len, 0, data };
	if (!p->l) {
		free(data);
		return -ENOTCONN;
	}
	return repl__link_send(p->l, &m, data, len, data);
}

/* Our state; and (notice) that another replica is now Outdated, or
 * (confirm) that we recorded the notice with that token. */
static int send_state_token(struct peer *p, const struct peer *outdated, bool confirm,
			    uint64_t token)
{
	struct repl_volume *vol = p->vol;
	struct wire_msg m = { .type = WIRE_STATE };

	m.u.state.role = (uint8_t)vol->role;
	m.u.state.disk = vol->disk_state;
	m.u.state.current = meta_get(vol->meta)->gen_current;
	if (outdated) {
		m.u.state.outdate_notice = true;
		m.u.state.outdated_node = node_id_of(vol, outdated->node);
	}
	m.u.state.confirm = confirm;
	m.u.state.token = outdated || confirm ? token : 0;
	return send_msg(p, &m);
}

static int send_state(struct peer *p, const struct peer *outdated)
{
	return send_state_token(p, outdated, false, 0);
}

int repl__peer_send_state(struct peer *p, const struct peer *outdated)
{
	return send_state(p, outdated);
}

int repl__peer_send_outdate(struct peer *p, const struct peer *outdated, uint64_t token)
{
	return send_state_token(p, outdated, false, token);
}

/* A Primary other than except is connected to this replica. */
static bool has_primary(const struct repl_volume *vol, const struct peer *except)
{
	for (unsigned i = 0; i < vol->n_peers; i++) {
		const struct peer *o = vol->peers[i];
		if (o != except && repl__peer_up(o) && o->peer_role == REPL_PRIMARY)
			return true;
	}
	return false;
}

/* A Primary came (connected, or a peer promoted): a resync between this
 * Secondary and another one stops (the source would apply the Primary's
 * writes to regions it already sent); reconnected, the pair waits and the
 * target resyncs from the Primary (gen_secondaries_wait()). */
static void stop_secondary_resyncs(struct repl_volume *vol, const struct peer *primary)
{
	if (vol->role == REPL_PRIMARY)
		return;
	for (unsigned i = 0; i < vol->n_peers; i++) {
		struct peer *o = vol->peers[i];
		if (o != primary && repl__peer_up(o) && o->peer_role != REPL_PRIMARY &&
		    (o->link == REPL_LINK_SYNC_SOURCE || o->link == REPL_LINK_SYNC_TARGET))
			repl__peer_drop(o, "a Primary is connected: the resync comes from it");
	}
}

static void fill_volume(struct peer *p, struct wire_volume *v)
{
	struct repl_volume *vol = p->vol;
	const struct meta_super *sb = meta_get(vol->meta);

	memset(v, 0, sizeof(*v));
	memcpy(v->uuid, sb->uuid, sizeof(v->uuid));
	snprintf(v->name, sizeof(v->name), "%s", vol->name);
	v->size = vol->size;
	v->current = sb->gen_current;
	v->bitmap = sb->peers[p->idx].bitmap_gen;
	memcpy(v->history, sb->gen_history, sizeof(v->history));
	v->dirty = meta_bits_count(vol->meta, p->idx);
	v->node_id = node_id_of(vol, vol->node);
	v->region_size = 1u << sb->region_shift;
	v->disk = vol->disk_state;
	v->role = (uint8_t)vol->role;
	v->crashed_primary = sb->flags & META_F_PRIMARY_CRASHED;
	v->peer_disk = sb->peers[p->idx].disk_state == META_OUTDATED ? GEN_DISK_OUTDATED
								    : GEN_DISK_UNKNOWN;
	v->has_primary = p->told_has_primary = has_primary(vol, p);
	p->told_role = v->role;
	p->told_disk = v->disk;
	p->told_current = v->current;
}

int repl__peer_send_volume(struct peer *p)
{
	struct wire_msg m = { .type = WIRE_VOLUME };

	fill_volume(p, &m.u.volume);
	return send_msg(p, &m);
}

/* ---- connection state --------------------------------------------------------- */

#define LOST_CROSSING "its promotion crossed another and came second: nothing of it is taken"

#define set_reason(p, ...) snprintf((p)->reason, sizeof((p)->reason), __VA_ARGS__)

/* Ends the connection; StandAlone peers are not retried. */
/* Our Primary is gone: what we applied lately must be made to agree with
 * the next Primary (recent.c), at once if another is already connected. */
static void primary_lost(struct repl_volume *vol, struct peer *gone)
{
	vol->lost_primary = true;
	vol->lost_primary_idx = gone->idx;
	for (unsigned i = 0; i < vol->n_peers; i++) {
		struct peer *o = vol->peers[i];
		if (o != gone && repl__peer_up(o) && o->peer_role == REPL_PRIMARY) {
			vol->lost_primary = false;
			repl__recent_ask(o);
			return;
		}
	}
}

static void peer_down(struct peer *p, const char *why, bool standalone)
{
	bool was_up = p->conn == PC_UP;
	bool was_primary = was_up && p->peer_role == REPL_PRIMARY &&
			   p->vol->role != REPL_PRIMARY;

	if (p->l) {
		p->l->p = NULL;
		repl__link_close(p->l);
		p->l = NULL;
	}
	/* A connection being made goes too: left, it would become a second
	 * link of this peer once the next attempt also succeeds. */
	if (p->cfd >= 0) {
		repl__fd_del(p->vol->eng, p->cfd);
		repl__sys->close(p->cfd);
		p->cfd = -1;
	}
	p->conn = PC_IDLE;
	if (was_up) {
		repl__verify_peer_down(p);
		repl__rep_peer_down(p);
		repl__window_peer_down(p);
	}
	if (why) {
		set_reason(p, "%s", why);
		plog(standalone ? LOG_ERR : LOG_WARNING, p->vol->name, "peer %s: %s%s",
		     p->node, why, standalone ? " (StandAlone: not retrying)" : "");
	}
	p->link = standalone ? REPL_LINK_STANDALONE : REPL_LINK_DISCONNECTED;
	if (was_primary)
		primary_lost(p->vol, p);
	if (!standalone && !p->vol->eng->stopping && !p->vol->down)
		schedule_reconnect(p);
	if (was_up)
		repl__changed(p->vol);
}

void repl__peer_drop(struct peer *p, const char *why)
{
	peer_down(p, why, false);
}

static void standalone(struct peer *p, uint32_t bye, const char *why)
{
	struct wire_msg m = { .type = WIRE_BYE };

	m.u.bye_reason = bye;
	if (p->l) {
		repl__link_send(p->l, &m, NULL, 0, NULL);
		repl__link_flush(p->l);
	}
	peer_down(p, why, true);
}

/* ---- the VOLUME exchange -------------------------------------------------------- */

/* Other links compared (or are comparing) against the UUID we give up:
 * they re-decide, so that three blank replicas meeting at once end with
 * one UUID instead of two that each link agreed on separately. */
static void adopt_uuid(struct peer *from, const uint8_t *uuid)
{
	struct repl_volume *vol = from->vol;
	struct meta_super sb = *meta_get(vol->meta);

	memcpy(sb.uuid, uuid, sizeof(sb.uuid));
	if (meta_update(vol->meta, &sb) < 0)
		return;
	plog(LOG_INFO, vol->name, "joined the replica set of an existing volume");
	for (unsigned i = 0; i < vol->n_peers; i++)
		if (vol->peers[i] != from && vol->peers[i]->conn != PC_IDLE &&
		    vol->peers[i]->conn != PC_CONNECTING)
			repl__peer_drop(vol->peers[i], "re-deciding: this replica took "
					"another volume UUID");
}

/* A blank replica (never written, never connected) takes the UUID of the
 * first replica it meets; the lower UUID wins between two blanks. */
static int check_uuid(struct peer *p, const struct wire_volume *v)
{
	struct repl_volume *vol = p->vol;
	const struct meta_super *sb = meta_get(vol->meta);
	bool blank = sb->gen_current == 0, peer_blank = v->current == 0;

	if (memcmp(sb->uuid, v->uuid, WIRE_UUID_LEN) == 0)
		return 0;
	if (blank && (!peer_blank || memcmp(v->uuid, sb->uuid, WIRE_UUID_LEN) < 0)) {
		adopt_uuid(p, v->uuid);
		return 0;
	}
	if (peer_blank && blank)
		return 0;	/* the peer adopts ours */
	if (peer_blank)
		return 0;
	return -EINVAL;
}

static void peer_from_volume(struct peer *p, const struct wire_volume *v)
{
	/* A Secondary with data demoted while we were apart; a blank one
	 * may have stepped down after a crossing, which the cluster has yet
	 * to tell us about. */
	if (v->role != REPL_PRIMARY && v->current)
		p->took_primary = false;
	if (v->role != REPL_PRIMARY)
		p->lost_crossing = false;
	p->peer_role = v->role;
	p->peer_disk = v->disk;
	p->peer_crashed = v->crashed_primary;
}

/* Are we in sync with a Primary other than p?  Then p's old record that
 * we missed writes is stale: the Primary is the authority. */
static bool in_sync_with_other_primary(const struct repl_volume *vol, const struct peer *p)
{
	for (unsigned i = 0; i < vol->n_peers; i++) {
		const struct peer *o = vol->peers[i];
		if (o != p && repl__peer_up(o) && o->peer_role == REPL_PRIMARY &&
		    o->link == REPL_LINK_CONNECTED && !o->suppressed)
			return true;
	}
	return false;
}

/* Did another peer, UpToDate and still in sync with us, resync us on its
 * present connection?  Then p's record that we missed writes is older
 * than that resync (no Primary wrote since: one would be connected, and
 * p would follow it). */
static bool resynced_by_other(const struct repl_volume *vol, const struct peer *p)
{
	for (unsigned i = 0; i < vol->n_peers; i++) {
		const struct peer *o = vol->peers[i];
		if (o != p && repl__peer_up(o) && o->resynced_us && o->peer_disk == GEN_DISK_UPTODATE &&
		    o->link == REPL_LINK_CONNECTED && !o->suppressed)
			return true;
	}
	return false;
}

static void note_peer_view(struct peer *p, const struct wire_volume *v,
			   enum gen_decision d)
{
	struct repl_volume *vol = p->vol;
	struct meta_super sb;

	/* The peer says we missed writes: believe it unless we are the source
	 * or in sync with our Primary. */
	if (v->peer_disk == GEN_DISK_OUTDATED && vol->disk_state == GEN_DISK_UPTODATE &&
	    d != GEN_SOURCE_BITMAP && d != GEN_SOURCE_FULL &&
	    !in_sync_with_other_primary(vol, p) && !resynced_by_other(vol, p)) {
		sb = *meta_get(vol->meta);
		sb.disk_state = META_OUTDATED;
		if (meta_update(vol->meta, &sb) == 0) {
			vol->disk_state = GEN_DISK_OUTDATED;
			plog(LOG_WARNING, vol->name, "peer %s records this replica as Outdated",
			     p->node);
			repl__peers_tell_state(vol);
		}
	}
}

/* Two Secondaries of the same generation (rule 4: neither crashed as
 * Primary, or equal now after one resynced), both UpToDate: what we
 * recorded as missing on the peer (its unflushed regions when it
 * crashed, peer_unflushed.c; writes it missed while we were Primary) was
 * made up since by another replica's resync of it (issue 16: a resynced
 * from the Primary c, the Secondary b's bits for a stayed, out of sync
 * forever). */
static void forget_stale_bits(struct peer *p, uint8_t peer_disk)
{
	struct repl_volume *vol = p->vol;
	struct meta_super sb = *meta_get(vol->meta);
	uint64_t n = meta_bits_count(vol->meta, p->idx);

	if (!n || peer_disk != GEN_DISK_UPTODATE || vol->disk_state != GEN_DISK_UPTODATE ||
	    vol->role == REPL_PRIMARY)
		return;
	meta_bits_clear_range(vol->meta, p->idx, 0, vol->size);
	sb.peers[p->idx].bitmap_gen = 0;
	if (meta_update(vol->meta, &sb) < 0 || meta_bitmap_flush(vol->meta) < 0)
		plog(LOG_ERR, vol->name, "cannot record that %s is in sync", p->node);
	plog(LOG_INFO, vol->name, "peer %s: same generation, both UpToDate: the %llu "
	     "region(s) recorded as missing there are stale", p->node, (unsigned long long)n);
}

/* DRBD's after-sb policies, with the safe defaults: resolve only when the
 * side that loses wrote nothing since the split. */
static struct gen_verdict try_auto_recovery(struct peer *p, const struct wire_volume *v,
					    const struct gen_side *local,
					    const struct gen_side *peer, struct gen_verdict gv)
{
	struct sb_config cfg = { p->vol->after_sb[0], p->vol->after_sb[1], p->vol->after_sb[2] };
	struct sb_side ls = { local->primary, meta_bits_count(p->vol->meta, p->idx),
			      local->node_id };
	struct sb_side ps = { peer->primary, v->dirty, peer->node_id };
	struct sb_verdict sv = sb_decide(&ls, &ps, &cfg);
	struct gen_verdict after;

	if (sv.outcome == SB_STAY_STANDALONE)
		return gv;
	after = gen_after_split_brain(local, peer, sv.outcome);
	if (after.decision == GEN_SPLIT_BRAIN || after.decision == GEN_REFUSE)
		return gv;
	plog(LOG_WARNING, p->vol->name, "split brain with %s resolved automatically: %s",
	     p->node, sv.reason);
	return after;
}

/* The sizes differ and the link may not carry data yet (resize.h): both
 * sides wait and try again (the usual backoff; at once when this replica
 * grows), Disconnected, not StandAlone: a grow is going round and will
 * make them equal.  Said once in the log. */
static void size_wait(struct peer *p, const char *why, bool tell)
{
	struct wire_msg m = { .type = WIRE_BYE };
	bool said = strcmp(p->reason, why) == 0;

	if (tell && p->l) {
		m.u.bye_reason = WIRE_BYE_SIZE;
		repl__link_send(p->l, &m, NULL, 0, NULL);
		repl__link_flush(p->l);
	}
	peer_down(p, said ? NULL : why, false);
	set_reason(p, "%s", why);
}

static void on_volume(struct peer *p, const struct wire_volume *v)
{
	struct repl_volume *vol = p->vol;
	struct gen_side local, peer;
	struct gen_verdict gv;
	char sz_why[192] = "";
	const char *wait;

	if (strcmp(v->name, vol->name) != 0) {
		standalone(p, WIRE_BYE_REFUSED, "peer has a different volume name");
		return;
	}
	p->size = v->size;
	if (check_uuid(p, v) < 0) {
		standalone(p, WIRE_BYE_UNRELATED, "peer holds a different volume (UUID differs)");
		return;
	}
	repl__peer_gen_side(vol, (int)p->idx, &local);
	peer = (struct gen_side){ v->current, v->bitmap, { 0 }, v->disk,
				  v->role == REPL_PRIMARY, v->crashed_primary, v->node_id };
	memcpy(peer.history, v->history, sizeof(peer.history));
	peer_from_volume(p, v);
	p->resynced_us = false;
	if (peer.primary && p->lost_crossing) {
		repl__peer_drop(p, LOST_CROSSING);	/* no resync from it either */
		return;
	}
	/* Two Primaries: no data flows until one demotes (in a cluster, the
	 * one whose promotion came second steps down by itself), so keep
	 * trying rather than give up StandAlone. */
	if (local.primary && peer.primary) {
		repl__peer_drop(p, "the peer is Primary too: waiting for one of them to demote");
		return;
	}
	gv = gen_decide(&local, &peer);
	if (gv.decision == GEN_SPLIT_BRAIN)
		gv = try_auto_recovery(p, v, &local, &peer, gv);
	/* A crashed Primary that is the source carries its activity log in
	 * its bitmaps (merged at start); one that is the target cannot tell
	 * the source which regions it wrote alone, so it takes a full sync. */
	if (gv.decision == GEN_SOURCE_BITMAP && peer.crashed_primary)
		gv.decision = GEN_SOURCE_FULL;
	else if (gv.decision == GEN_TARGET_BITMAP && local.crashed_primary)
		gv.decision = GEN_TARGET_FULL;
	plog(LOG_INFO, vol->name, "peer %s: %s (%s%s)", p->node,
	     gen_decision_name(gv.decision), gv.reason,
	     local.crashed_primary || peer.crashed_primary ? "; a Primary crashed" : "");
	/* Two Secondaries resync each other only with no Primary about and
	 * from an UpToDate source; else they stay connected for state only
	 * and re-decide when one is promoted (it reconnects them), or resync
	 * from the Primary.  Each side decides on what both said. */
	wait = gen_secondaries_wait(gv, &local, &peer, p->told_has_primary,
				    v->has_primary);
	p->suppressed = wait != NULL;
	if (!wait && !local.primary && !peer.primary && gv.decision != GEN_NO_SYNC &&
	    has_primary(vol, p)) {
		repl__peer_drop(p, "a Primary connected meanwhile: the resync comes from it");
		return;
	}
	if (!p->suppressed && (gv.decision == GEN_SPLIT_BRAIN ||
			       gv.decision == GEN_UNRELATED || gv.decision == GEN_REFUSE)) {
		char why[sizeof(p->reason)];
		if (gv.decision == GEN_SPLIT_BRAIN)
			snprintf(why, sizeof(why), "split brain: resolve with \"replagent resolve "
				 "%s --keep NODE\" on both nodes", vol->name);
		else
			snprintf(why, sizeof(why), "%s: %s", gen_decision_name(gv.decision),
				 gv.reason);
		standalone(p, gv.decision == GEN_SPLIT_BRAIN ? WIRE_BYE_SPLIT_BRAIN
			      : WIRE_BYE_REFUSED, why);
		return;
	}
	if (!repl__resize_link_ok(p, v->size, gv.decision, sz_why, sizeof(sz_why))) {
		size_wait(p, sz_why, true);
		return;
	}
	if (v->size != vol->size)
		plog(LOG_INFO, vol->name, "peer %s: %s", p->node, sz_why);
	note_peer_view(p, v, gv.decision);
	if (!local.primary && !peer.primary && gv.rule == GEN_R_SAME)
		forget_stale_bits(p, v->disk);
	p->conn = PC_UP;
	p->conn_id++;
	p->backoff_ms = 0;
	p->reason[0] = '\0';
	/* The peer decided on our VOLUME; if our role, disk or generation
	 * moved since it was sent (our resync from a third replica ended
	 * while this link was being made), no STATE reached this peer (it
	 * was not up): without one it keeps deciding on the old state, e.g.
	 * a Secondary that still sees us Inconsistent waits for a resync
	 * nobody starts. */
	if (p->told_role != (uint8_t)vol->role || p->told_disk != vol->disk_state ||
	    p->told_current != meta_get(vol->meta)->gen_current)
		send_state(p, NULL);
	if (p->suppressed) {
		snprintf(p->reason, sizeof(p->reason), "%s between Secondaries: %s",
			 gen_decision_name(gv.decision), wait);
		p->link = REPL_LINK_CONNECTED;
		return;
	}
	repl__rep_peer_up(p, gv.decision);
	/* Same generation (rule 4), yet as Primary we recorded regions the
	 * peer may lack: it took this generation from a Secondary that had
	 * followed us only so far (rules 40, 10: a resync between
	 * Secondaries while we were cut off from both), or lost what it had
	 * not flushed.  Our data is the reference: those regions go to it. */
	if (local.primary && gv.decision == GEN_NO_SYNC && meta_bits_count(vol->meta, p->idx))
		repl__rs_start_source(p, false);
	repl__cbt_peer_up(p);
	if (peer.primary)
		stop_secondary_resyncs(vol, p);
	/* Our Primary was lost and this is a new one: our recent writes.  (The
	 * same one back needs nothing: it has them, and its bitmap.) */
	if (vol->lost_primary && peer.primary && vol->role != REPL_PRIMARY) {
		vol->lost_primary = false;
		if (p->idx != vol->lost_primary_idx)
			repl__recent_ask(p);
	}
	repl__changed(vol);
}

/* ---- receiving ---------------------------------------------------------------- */

static enum repl_io_op range_op(uint16_t type)
{
	return type == WIRE_TRIM ? REPL_IO_TRIM : REPL_IO_ZERO;
}

static unsigned io_flags(uint32_t wf)
{
	return ((wf & WIRE_WF_FUA) ? REPL_IO_FUA : 0) |
	       ((wf & WIRE_WF_NO_HOLE) ? REPL_IO_NO_HOLE : 0);
}

static bool range_ok(const struct repl_volume *vol, uint64_t off, uint64_t len)
{
	return len && off <= vol->size && len <= vol->size - off && len <= UINT32_MAX;
}

/* Is p the Primary this replica follows: it says it is Primary, and the
 * link to it carries its writes (in sync, or a resync from it), not the
 * state-only link of two Secondaries that differ? */
static bool following(const struct peer *p)
{
	return p->peer_role == REPL_PRIMARY && !p->suppressed &&
	       (p->link == REPL_LINK_CONNECTED || p->link == REPL_LINK_SYNC_TARGET);
}

/* A write (WRITE, TRIM, ZERO) is taken only from the Primary we follow: a
 * Secondary's would put data here that no Primary acknowledged and no
 * generation records.  (In a migration window the destination writes
 * only once it is Primary, and says so, in a STATE, before its first
 * write.)  Refused, the link goes; from one that lost a crossing too;
 * otherwise noted as taken from it. */
static bool take_from_primary(struct peer *p, uint16_t type)
{
	char why[192];

	if (!following(p)) {
		snprintf(why, sizeof(why), "%s from a peer that is not the Primary this "
			 "replica follows (it is %s%s): refused, nothing applied",
			 wire_type_name(type), p->peer_role == REPL_PRIMARY ? "Primary" : "Secondary",
			 p->suppressed ? ", on a link between differing Secondaries" : "");
		repl__peer_drop(p, why);
		return false;
	}
	if (p->lost_crossing) {
		repl__peer_drop(p, LOST_CROSSING);
		return false;
	}
	p->took_primary = true;
	return true;
}

/* Data frames keep their payload buffer: data points into it. */
static void on_data(struct peer *p, const struct wire_msg *m, uint8_t *payload)
{
	const struct wire_write *w = &m->u.write;

	if (!range_ok(p->vol, w->offset, w->len) || p->vol->role == REPL_PRIMARY) {
		free(payload);
		repl__peer_drop(p, "write outside the volume, or to a Primary");
		return;
	}
	if (m->type == WIRE_RS_DATA) {
		repl__rs_on_data(p, m->seq, w->offset, w->len, (void *)w->data, payload);
		return;
	}
	if (!take_from_primary(p, m->type)) {
		free(payload);
		return;
	}
	repl__rep_apply(p, m->seq, REPL_IO_WRITE, io_flags(w->flags), w->offset, w->len,
			(void *)w->data, payload);
}

static void on_range(struct peer *p, const struct wire_msg *m)
{
	const struct wire_range *r = &m->u.range;

	if (!range_ok(p->vol, r->offset, r->len) || p->vol->role == REPL_PRIMARY) {
		repl__peer_drop(p, "request outside the volume, or to a Primary");
		return;
	}
	if (m->type == WIRE_RS_ZERO) {
		repl__rs_on_data(p, m->seq, r->offset, (uint32_t)r->len, NULL, NULL);
		return;
	}
	if (!take_from_primary(p, m->type))
		return;
	repl__rep_apply(p, m->seq, range_op(m->type), io_flags(r->flags), r->offset,
			(uint32_t)r->len, NULL, NULL);
}

/* A Secondary asks for regions it may hold alone (recent.c): they join its
 * bitmap here and a resync from this Primary follows. */
static void on_rs_request(struct peer *p, const struct wire_range *r)
{
	if (p->vol->role != REPL_PRIMARY || !range_ok(p->vol, r->offset, r->len)) {
		repl__peer_drop(p, "resync request to a Secondary, or outside the volume");
		return;
	}
	meta_bits_set_range(p->vol->meta, p->idx, r->offset, r->len);
	repl__rs_more(p);
}

static struct peer *peer_by_id(struct repl_volume *vol, uint32_t id)
{
	for (unsigned i = 0; i < vol->n_peers; i++)
		if (node_id_of(vol, vol->peers[i]->node) == id)
			return vol->peers[i];
	return NULL;
}

static void on_state(struct peer *p, const struct wire_state *s)
{
	struct repl_volume *vol = p->vol;
	struct meta_super sb = *meta_get(vol->meta);
	struct peer *o = NULL;

	if (s->role == REPL_PRIMARY && p->peer_role != REPL_PRIMARY &&
	    vol->role != REPL_PRIMARY && vol->lost_primary) {
		vol->lost_primary = false;
		if (p->idx != vol->lost_primary_idx)
			repl__recent_ask(p);
	}
	if (s->role == REPL_PRIMARY && p->peer_role != REPL_PRIMARY)
		stop_secondary_resyncs(vol, p);
	if (s->role != REPL_PRIMARY) {
		if (p->peer_role == REPL_PRIMARY)
			p->took_primary = false;	/* it demoted: its writes were its own */
		p->lost_crossing = false;
	}
	p->peer_role = s->role;
	p->peer_disk = s->disk;
	/* Two Primaries connected (two promotions that crossed): the link
	 * goes, so that each side must outdate the other before it
	 * acknowledges anything, and the cluster's order picks one
	 * (clusterd.c); never two writers that each think they are alone. */
	if (s->role == REPL_PRIMARY && vol->role == REPL_PRIMARY) {
		repl__peer_drop(p, "the peer is Primary too");
		return;
	}
	/* Two Secondaries that differed are equal now (one resynced).  The
	 * peer must learn it too (our STATE), or its side of the link stays
	 * suppressed: promoted later, it would send us writes, and as our
	 * Primary's Secondary it would not follow its generations (issue 12,
	 * item 10: a false split brain later). */
	if (p->suppressed && s->disk == GEN_DISK_UPTODATE && vol->disk_state == GEN_DISK_UPTODATE &&
	    s->current == sb.gen_current) {
		p->suppressed = false;
		p->reason[0] = '\0';
		forget_stale_bits(p, s->disk);
		sb = *meta_get(vol->meta);
		send_state(p, NULL);
	}
	/* A Primary we are in sync with moved its generation: follow it. */
	if (s->role == REPL_PRIMARY && p->lost_crossing && s->current != sb.gen_current) {
		repl__peer_drop(p, LOST_CROSSING);
		return;
	}
	if (s->role == REPL_PRIMARY && p->link == REPL_LINK_CONNECTED && !p->suppressed &&
	    vol->role != REPL_PRIMARY && s->current != sb.gen_current) {
		struct gen_side g;

		repl__peer_gen_side(vol, -1, &g);
		if (gen_on_primary_moved(&g, s->current) == 0)
			repl__gen_store(&sb, -1, &g);
		sb.gen_bitmap = 0;
		p->took_primary = true;
	}
	if (s->outdate_notice && (o = peer_by_id(vol, s->outdated_node)))
		sb.peers[o->idx].disk_state = META_OUTDATED;
	/* About us: we missed writes, so we must not be promoted. */
	if (s->outdate_notice && s->outdated_node == node_id_of(vol, vol->node) &&
	    vol->role != REPL_PRIMARY && sb.disk_state == META_UPTODATE &&
	    !in_sync_with_other_primary(vol, p))
		sb.disk_state = META_OUTDATED;
	if (memcmp(&sb, meta_get(vol->meta), sizeof(sb)) != 0 && meta_update(vol->meta, &sb) < 0)
		plog(LOG_ERR, vol->name, "cannot record the state %s sent", p->node);
	if (sb.disk_state == META_OUTDATED && vol->disk_state == GEN_DISK_UPTODATE) {
		vol->disk_state = GEN_DISK_OUTDATED;
		plog(LOG_WARNING, vol->name, "%s says this replica is Outdated", p->node);
		repl__peers_tell_state(vol);
	}
	if (s->outdate_notice) {
		plog(LOG_NOTICE, vol->name, "%s says %s is Outdated", p->node,
		     o ? o->node : "this node");
		/* The confirmation the Primary waits for: of this notice, by
		 * its token, now that it is recorded. */
		send_state_token(p, NULL, true, s->token);
		/* Tell the outdated replica itself, if we can reach it. */
		if (o && o != p && repl__peer_up(o))
			send_state(o, o);
	} else if (s->confirm && vol->role == REPL_PRIMARY) {
		repl__rep_outdate_confirmed(p, s->token);
	}
}

static void dispatch(struct peer *p, struct wire_msg *m, uint8_t *payload)
{
	switch (m->type) {
	case WIRE_WRITE:
	case WIRE_RS_DATA:
		on_data(p, m, payload);
		return;
	case WIRE_TRIM:
	case WIRE_ZERO:
	case WIRE_RS_ZERO:
		on_range(p, m);
		break;
	case WIRE_FLUSH:
		if (m->seq & RS_SEQ_BIT)
			repl__rs_on_flush(p, m->seq);
		else
			repl__rep_apply(p, m->seq, REPL_IO_FLUSH, 0, 0, 0, NULL, NULL);
		break;
	case WIRE_WRITE_ACK:
	case WIRE_FLUSH_ACK:
		if (m->u.ack.seq & RS_SEQ_BIT)
			repl__rs_on_ack(p, m->u.ack.seq, -(int)m->u.ack.error);
		else
			repl__rep_ack(p, m->u.ack.seq, -(int)m->u.ack.error);
		break;
	case WIRE_STATE:
		on_state(p, &m->u.state);
		break;
	case WIRE_VOLUME:
		if (p->conn == PC_UP)
			repl__rs_on_done(p, &m->u.volume);
		else
			on_volume(p, &m->u.volume);
		break;
	case WIRE_PING: {
		struct wire_msg pong = { .type = WIRE_PING_ACK };
		if (m->seq && p->peer_role == REPL_PRIMARY)
			repl__recent_peer_ack(p->vol, m->seq);
		send_msg(p, &pong);
		break;
	}
	case WIRE_RS_REQUEST:
		on_rs_request(p, &m->u.range);
		break;
	case WIRE_PING_ACK:
		break;
	case WIRE_VERIFY_REQ:
		if (range_ok(p->vol, m->u.range.offset, m->u.range.len))
			repl__verify_on_request(p, m->seq, m->u.range.offset,
						(uint32_t)m->u.range.len);
		else
			repl__peer_drop(p, "verify request outside the volume");
		break;
	case WIRE_VERIFY_REPLY:
		repl__verify_on_reply(p, m->seq, &m->u.verify);
		break;
	case WIRE_TAKEOVER:
		repl__window_on_takeover(p, m->seq, m->u.takeover.flags);
		break;
	case WIRE_HANDOVER:
		repl__window_on_handover(p, m->seq, &m->u.handover);
		break;
	case WIRE_BYE:
		if (m->u.bye_reason == WIRE_BYE_SIZE)
			size_wait(p, "the peer waits until the sizes allow the link "
				  "(a resize is going round)", false);
		else
			peer_down(p, m->u.bye_reason == WIRE_BYE_SHUTDOWN ? "peer shut down"
				  : "peer refused the connection",
				  m->u.bye_reason == WIRE_BYE_SPLIT_BRAIN);
		break;
	case WIRE_SIZE:
		repl__resize_peer_size(p, m->u.size);
		break;
	case WIRE_CKPT:
		repl__cbt_on_msg(p, &m->u.ckpt);
		break;
	default:
		repl__peer_drop(p, "unexpected frame");
		break;
	}
	free(payload);
}

/* Ready for frames other than the handshake's? */
static bool frame_allowed(const struct peer *p, uint16_t type)
{
	if (p->conn == PC_UP)
		return type != WIRE_HELLO && type != WIRE_CHALLENGE && type != WIRE_AUTH &&
		       type != WIRE_AUTH_OK;
	return type == WIRE_VOLUME || type == WIRE_BYE;
}

static struct peer *peer_by_name(struct repl_volume *vol, const char *node)
{
	for (unsigned i = 0; i < vol->n_peers; i++)
		if (strcmp(vol->peers[i]->node, node) == 0)
			return vol->peers[i];
	return NULL;
}

/* An accepted link proved the key and named its node: it becomes that
 * peer's connection, replacing a stale one (the peer restarted). */
static int attach_accepted(struct peer_link *l)
{
	const char *node = wire_auth_peer_node(&l->auth);
	struct peer *p = node ? peer_by_name(l->vol, node) : NULL;

	if (l->vol->down) {
		snprintf(l->why, sizeof(l->why), "volume is down on this node");
		return -EACCES;
	}
	if (!p || p->initiator) {
		plog(LOG_WARNING, l->vol->name, "refusing a connection from %s: not a peer "
		     "that connects to this node", node ? node : "?");
		return -EACCES;
	}
	if (p->l)
		peer_down(p, "replaced by a new connection from the peer", false);
	repl__timer_del(l->vol->eng, &p->reconnect_timer);
	p->l = l;
	l->p = p;
	p->conn = PC_HANDSHAKE;
	return 0;
}

/* Which check the handshake failed, for the log.  Names come from the
 * peer's claim, which the handshake reads only once its proof verified:
 * before that, all we know is that the key does not fit. */
static void explain_refusal(struct peer_link *l)
{
	const struct wire_names *c;
	enum wire_refusal why = wire_auth_refusal(&l->auth, &c);
	bool init = l->auth.initiator;
	const char *them = c ? (init ? c->acceptor : c->initiator) : "?";
	const char *us = c ? (init ? c->initiator : c->acceptor) : "?";

	switch (why) {
	case WIRE_REFUSE_PROOF:
		if (l->p)
			snprintf(l->why, sizeof(l->why), "authentication failed for peer %.64s: "
				 "the key files differ", l->p->node);
		else
			snprintf(l->why, sizeof(l->why), "authentication failed: the connecting "
				 "node's proof does not fit this node's key (the key files differ)");
		break;
	case WIRE_REFUSE_NONCE:
		snprintf(l->why, sizeof(l->why), "refused: the peer sent this link's own "
			 "nonce back (a reflection)");
		break;
	case WIRE_REFUSE_SELF:
		snprintf(l->why, sizeof(l->why), "refused: the peer is this node itself "
			 "(%.64s), its connection relayed back to it", l->vol->node);
		break;
	case WIRE_REFUSE_RESOURCE:
		snprintf(l->why, sizeof(l->why), "peer %.64s offers volume \"%.64s\", "
			 "not this one", them, c ? c->resource : "?");
		break;
	case WIRE_REFUSE_NOT_US:
		snprintf(l->why, sizeof(l->why), "refused: peer %.64s expected node %.64s "
			 "at this address, not this one", them, us);
		break;
	case WIRE_REFUSE_PEER:
		if (!peer_by_name(l->vol, them))
			snprintf(l->why, sizeof(l->why), "node %.64s is not a replica of this "
				 "volume", them);
		else
			snprintf(l->why, sizeof(l->why), "refused: the node at this address is "
				 "%.64s, not %.64s", them, l->auth.expect_peer);
		break;
	case WIRE_REFUSE_NONE:
		break;
	}
}

/* ---- what the links report (link.h) --------------------------------------------- */

static int on_link_authed(struct peer_link *l)
{
	int r;

	if (!l->p && (r = attach_accepted(l)) < 0)
		return r;
	plog(LOG_INFO, l->vol->name, "peer %s authenticated", l->p->node);
	/* It holds the generation it was lost at, and may lack writes made
	 * here since: say that we are ahead of it before comparing. */
	repl__rep_gen_catch_up(l->p);
	return repl__peer_send_volume(l->p);
}

static int on_link_frame(struct peer_link *l, struct wire_msg *m, uint8_t *payload)
{
	if (!frame_allowed(l->p, m->type)) {
		free(payload);
		return -EPROTO;
	}
	dispatch(l->p, m, payload);
	return 0;
}

static void on_link_fail(struct peer_link *l, const char *why)
{
	peer_down(l->p, why, false);
}

static bool on_link_up(const struct peer_link *l)
{
	return l->p->conn == PC_UP;
}

static const struct repl_link_ops peer_link_ops = {
	.authed = on_link_authed,
	.frame = on_link_frame,
	.refused = explain_refusal,
	.fail = on_link_fail,
	.up = on_link_up,
};

/* ---- connecting ------------------------------------------------------------------- */

static void connect_done(void *arg, int fd, unsigned revents)
{
	struct peer *p = arg;
	int err;

	repl__fd_del(p->vol->eng, fd);
	p->cfd = -1;
	err = repl__sys->connect_error(fd);
	if (err) {
		repl__sys->close(fd);
		p->conn = PC_IDLE;
		set_reason(p, "cannot connect: %s", strerror(err ? err : errno));
		p->link = REPL_LINK_CONNECTING;
		schedule_reconnect(p);
		return;
	}
	p->l = repl__link_new(p->vol, fd, p, p->node, &peer_link_ops);
	if (!p->l) {
		repl__sys->close(fd);
		p->conn = PC_IDLE;
		schedule_reconnect(p);
		return;
	}
	p->conn = PC_HANDSHAKE;
	if (repl__link_start(p->l) < 0)
		peer_down(p, "handshake failed", false);
}

static int connect_start(struct peer *p)
{
	int fd, r;

	fd = repl__sys->connect(p->host, p->port);
	if (fd < 0)
		return fd;
	r = repl__fd_add(p->vol->eng, fd, POLLOUT, connect_done, p);
	if (r < 0) {
		repl__sys->close(fd);
		return r;
	}
	p->cfd = fd;
	p->conn = PC_CONNECTING;
	p->link = REPL_LINK_CONNECTING;
	return 0;
}

static void reconnect_fire(void *arg)
{
	struct peer *p = arg;
	int r;

	p->reconnect_timer = NULL;
	if (p->conn != PC_IDLE || p->link == REPL_LINK_STANDALONE || p->vol->eng->stopping ||
	    p->vol->down)
		return;
	if (!p->host || !p->port) {
		set_reason(p, "address not known yet");
		return;
	}
	r = connect_start(p);
	if (r < 0) {
		set_reason(p, "cannot connect: %s", strerror(-r));
		schedule_reconnect(p);
	}
}

static void schedule_reconnect(struct peer *p)
{
	if (!p->initiator || p->reconnect_timer)
		return;
	p->backoff_ms = p->backoff_ms ? MIN(p->backoff_ms * 2, BACKOFF_MAX_MS) : BACKOFF_MIN_MS;
	repl__timer_add(p->vol->eng, p->backoff_ms, reconnect_fire, p, &p->reconnect_timer);
}

/* ---- volume setup --------------------------------------------------------------- */

static struct peer *peer_new(struct repl_volume *vol, unsigned idx,
			     const struct repl_peer_config *pc)
{
	struct peer *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->vol = vol;
	p->idx = idx;
	snprintf(p->node, sizeof(p->node), "%s", pc->node);
	/* In cluster mode an address may not be known yet: NULL until
	 * repl__peer_set_address(). */
	p->host = pc->host ? strdup(pc->host) : NULL;
	p->port = pc->port ? strdup(pc->port) : NULL;
	if ((pc->host && !p->host) || (pc->port && !p->port)) {
		free(p->host);
		free(p->port);
		repl__unfl_free(p);
		free(p);
		return NULL;
	}
	p->cfd = -1;
	p->initiator = strcmp(vol->node, pc->node) < 0;
	p->link = p->initiator ? REPL_LINK_CONNECTING : REPL_LINK_DISCONNECTED;
	p->peer_role = REPL_SECONDARY;
	p->peer_disk = GEN_DISK_UNKNOWN;
	return p;
}

int repl__peers_start(struct repl_volume *vol, const struct repl_volume_config *cfg)
{
	int r;

	for (unsigned i = 0; i < cfg->n_peers; i++) {
		vol->peers[i] = peer_new(vol, i, &cfg->peers[i]);
		if (!vol->peers[i])
			return -ENOMEM;
		vol->n_peers = i + 1;
	}
	r = repl__link_listen(vol, cfg->listen_host, cfg->listen_port, &peer_link_ops);
	if (r < 0) {
		plog_errno(LOG_ERR, vol->name, -r, "cannot listen for replication on %s:%s",
			   cfg->listen_host, cfg->listen_port);
		return r;
	}
	for (unsigned i = 0; i < vol->n_peers; i++)
		if (vol->peers[i]->initiator)
			reconnect_fire(vol->peers[i]);
	return 0;
}

void repl__peers_stop(struct repl_volume *vol)
{
	struct wire_msg bye = { .type = WIRE_BYE };

	for (unsigned i = 0; i < vol->n_peers; i++) {
		struct peer *p = vol->peers[i];
		if (!p)
			continue;
		repl__timer_del(vol->eng, &p->reconnect_timer);
		if (p->l && p->conn >= PC_HANDSHAKE) {
			bye.u.bye_reason = WIRE_BYE_SHUTDOWN;
			repl__link_send(p->l, &bye, NULL, 0, NULL);
		}
		if (p->cfd >= 0) {
			repl__fd_del(vol->eng, p->cfd);
			repl__sys->close(p->cfd);
			p->cfd = -1;
		}
		peer_down(p, NULL, true);
	}
	repl__link_listen_stop(vol);
}

/* After repl__peers_stop() and after the volume's I/O has drained. */
void repl__peers_free(struct repl_volume *vol)
{
	for (unsigned i = 0; i < vol->n_peers; i++) {
		struct peer *p = vol->peers[i];
		if (!p)
			continue;
		free(p->host);
		free(p->port);
		repl__unfl_free(p);
		free(p);
		vol->peers[i] = NULL;
	}
	vol->n_peers = 0;
}

int repl__peer_set_address(struct peer *p, const char *host, const char *port)
{
	char *h = strdup(host), *pt = strdup(port);

	if (!h || !pt) {
		free(h);
		free(pt);
		return -ENOMEM;
	}
	if (p->host && strcmp(p->host, h) == 0 && strcmp(p->port, pt) == 0) {
		free(h);
		free(pt);
		return 0;
	}
	free(p->host);
	free(p->port);
	p->host = h;
	p->port = pt;
	if (p->initiator && p->conn == PC_IDLE && p->link != REPL_LINK_STANDALONE) {
		repl__timer_del(p->vol->eng, &p->reconnect_timer);
		p->backoff_ms = 0;
		schedule_reconnect(p);
	}
	return 0;
}

void repl__gen_store(struct meta_super *sb, int idx, const struct gen_side *g)
{
	sb->gen_current = g->current;
	memcpy(sb->gen_history, g->history, sizeof(sb->gen_history));
	if (idx >= 0)
		sb->peers[idx].bitmap_gen = g->bitmap;
}

/* Down: every link closes and none is made until up again. */
void repl__peers_set_down(struct repl_volume *vol, bool down)
{
	for (unsigned i = 0; i < vol->n_peers; i++) {
		struct peer *p = vol->peers[i];
		if (down) {
			repl__timer_del(vol->eng, &p->reconnect_timer);
			if (p->conn != PC_IDLE || p->l)
				peer_down(p, "volume is down on this node", false);
			p->link = REPL_LINK_DISCONNECTED;
			set_reason(p, "volume is down on this node");
		} else {
			p->link = p->initiator ? REPL_LINK_CONNECTING : REPL_LINK_DISCONNECTED;
			p->reason[0] = '\0';
			p->backoff_ms = 0;
			if (p->initiator)
				reconnect_fire(p);
		}
	}
}

void repl__peer_reconnect_now(struct peer *p)
{
	if (!p->initiator || p->conn != PC_IDLE || p->link == REPL_LINK_STANDALONE ||
	    p->vol->down || p->vol->eng->stopping)
		return;
	repl__timer_del(p->vol->eng, &p->reconnect_timer);
	p->backoff_ms = 0;
	reconnect_fire(p);
}

/* StandAlone no more: try to connect again (resolve). */
void repl__peer_retry(struct peer *p)
{
	if (p->link != REPL_LINK_STANDALONE)
		return;
	p->link = p->initiator ? REPL_LINK_CONNECTING : REPL_LINK_DISCONNECTED;
	p->reason[0] = '\0';
	p->backoff_ms = 0;
	if (p->initiator)
		reconnect_fire(p);
}

/* Our role or disk changed: every connected peer hears it. */
void repl__peers_tell_state(struct repl_volume *vol)
{
	for (unsigned i = 0; i < vol->n_peers; i++)
		if (repl__peer_up(vol->peers[i]))
			send_state(vol->peers[i], NULL);
}
