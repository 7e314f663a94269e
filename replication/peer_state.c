/* peer_state.c: what this replica learns about a peer, and does about
 * it.  At connect time, the peer's VOLUME frame: handshake.c decides, from
 * what this file gathers, whether it is the same volume (a blank replica
 * adopts the first UUID it meets) and whether the link comes up, in sync
 * or resyncing, or goes (StandAlone, or to try again); this file carries
 * that out (the metadata, the link, the resync).
 * Later, STATE frames: role and disk changes, outdate notices and their
 * confirmations, a Primary that moved its generation.  Not here: the
 * sockets and frame dispatch (peer.c), the frames we send (peer_send.c).
 * Loop thread only. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "handshake.h"
#include "log.h"
#include "meta.h"
#include "peer.h"
#include "wire.h"

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
	p->peer_lost_power = v->lost_power;
	p->peer_partial = v->partial && v->disk == GEN_DISK_INCONSISTENT;
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

/* The peer says we missed writes, and we believe it (handshake.c). */
static void record_outdated(struct peer *p)
{
	struct repl_volume *vol = p->vol;
	struct meta_super sb;

	sb = *meta_get(vol->meta);
	sb.disk_state = META_OUTDATED;
	if (meta_update(vol->meta, &sb) == 0) {
		vol->disk_state = GEN_DISK_OUTDATED;
		plog(LOG_WARNING, vol->name, "peer %s records this replica as Outdated",
		     p->node);
		repl__peers_tell_state(vol);
		/* As in repl_volume_mark_outdated(): a split brain found while
		 * we still said UpToDate may be one the Primary resolves now
		 * (gen.c rule 23; EIO seed 80185, where it waited StandAlone
		 * for good). */
		for (unsigned i = 0; i < vol->n_peers; i++)
			repl__peer_retry(vol->peers[i]);
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

/* What handshake.c decides on: both sides' generations and what this
 * replica sees of its other peers now (after any UUID adoption, which
 * may have dropped some). */
static void hs_gather(struct peer *p, const struct wire_volume *v, struct hs_in *in)
{
	struct repl_volume *vol = p->vol;

	memset(in, 0, sizeof(*in));
	in->volume = vol->name;
	repl__peer_gen_side(vol, (int)p->idx, &in->local);
	in->peer = (struct gen_side){ .current = v->current, .bitmap = v->bitmap,
				      .disk_state = v->disk, .primary = v->role == REPL_PRIMARY,
				      .crashed_primary = v->crashed_primary,
				      .lost_power = v->lost_power,
				      .host_restarted = v->host_restarted, .partial = v->partial,
				      .node_id = v->node_id };
	memcpy(in->peer.history, v->history, sizeof(in->peer.history));
	in->local_dirty = meta_bits_count(vol->meta, p->idx);
	in->bitmap_blind = meta_get(vol->meta)->peers[p->idx].bitmap_gen &&
			   (meta_get(vol->meta)->peers[p->idx].flags & META_PF_BLIND);
	in->peer_dirty = v->dirty;
	in->after_sb = (struct sb_config){ vol->after_sb[0], vol->after_sb[1], vol->after_sb[2] };
	in->lost_crossing = p->lost_crossing;
	in->told_has_primary = p->told_has_primary;
	in->peer_has_primary = v->has_primary;
	in->other_primary = repl__peer_has_primary(vol, p);
	in->peer_says_outdated = v->peer_disk == GEN_DISK_OUTDATED;
	in->in_sync_with_primary = in_sync_with_other_primary(vol, p);
	in->resynced_by_other = resynced_by_other(vol, p);
	in->keeping = p->keeping;
	in->quorate = vol->quorate;
	in->peer_quorate = !v->no_quorum;
}

bool repl__peer_told_stale(const struct peer *p)
{
	const struct repl_volume *vol = p->vol;

	return p->told_role != (uint8_t)vol->role || p->told_disk != vol->disk_state ||
	       p->told_current != meta_get(vol->meta)->gen_current;
}

/* hs_decide()'s reasons become the peer's, uncut. */
_Static_assert(sizeof(((struct peer *)0)->reason) == HS_WHY_MAX, "reason lengths differ");

void repl__peer_on_volume(struct peer *p, const struct wire_volume *v)
{
	struct repl_volume *vol = p->vol;
	const struct meta_super *sb = meta_get(vol->meta);
	struct hs_in in;
	struct hs_verdict hv;
	const struct gen_side *local = &in.local, *peer = &in.peer;
	struct gen_verdict gv;
	char sz_why[192] = "";
	const char *wait;

	switch (hs_identity(strcmp(v->name, vol->name) == 0, sb->gen_current == 0,
			    v->current == 0, memcmp(v->uuid, sb->uuid, WIRE_UUID_LEN))) {
	case HS_ID_NAME_DIFFERS:
		repl__peer_standalone(p, WIRE_BYE_REFUSED, "peer has a different volume name");
		return;
	case HS_ID_UUID_DIFFERS:
		p->size = v->size;
		repl__peer_standalone(p, WIRE_BYE_UNRELATED,
				      "peer holds a different volume (UUID differs)");
		return;
	case HS_ID_ADOPT:
		p->size = v->size;
		adopt_uuid(p, v->uuid);
		break;
	case HS_ID_SAME:
	case HS_ID_KEEP:
		p->size = v->size;
		break;
	}
	peer_from_volume(p, v);
	p->resynced_us = false;
	p->held_all = false;
	p->rs_agreement = false;
	hs_gather(p, v, &in);
	hs_decide(&in, &hv);
	gv = hv.gv;
	wait = hv.wait;
	p->hs_target = hv.decided && (gv.decision == GEN_TARGET_BITMAP ||
				       gv.decision == GEN_TARGET_FULL);
	p->hs_newer = hv.decided && (gv.rule == GEN_R_BITMAP || gv.rule == GEN_R_HISTORY) &&
		      (gv.decision == GEN_SOURCE_BITMAP || gv.decision == GEN_SOURCE_FULL);
	if (hv.auto_resolved)
		plog(LOG_WARNING, vol->name, "split brain with %s resolved automatically: %s",
		     p->node, hv.auto_resolved);
	if (hv.decided) {
		plog(LOG_INFO, vol->name, "peer %s: %s (%s%s%s)", p->node,
		     gen_decision_name(gv.decision), gv.reason,
		     local->crashed_primary || peer->crashed_primary ? "; a Primary crashed" : "",
		     local->lost_power || peer->lost_power ? "; a replica lost power" : "");
		p->suppressed = wait != NULL;
	}
	if (hv.action == HS_DROP) {
		repl__peer_drop(p, hv.why);
		return;
	}
	/* StandAlone stops this side for good, but the peer decided on the
	 * VOLUME we sent: if our role, disk or generation moved since (we
	 * demoted while the link was being made), it may have dropped the
	 * link to try again before our BYE could reach it, and, being the
	 * acceptor, wait for us forever: two Primaries met, one demoted
	 * meanwhile, and only it saw the split brain (sim seed 2953 of
	 * --split-brain).  Try again: the next handshake is on what we are
	 * now, on both sides. */
	if (hv.action == HS_STANDALONE && repl__peer_told_stale(p)) {
		repl__peer_drop(p, "our state changed while the link was made: connecting again");
		return;
	}
	if (hv.action == HS_STANDALONE) {
		repl__peer_standalone(p, hv.bye, hv.why);
		return;
	}
	if (!p->hooks->link_ok(p, v->size, gv.decision, sz_why, sizeof(sz_why))) {
		repl__peer_size_wait(p, sz_why, true);
		return;
	}
	if (v->size != vol->size)
		plog(LOG_INFO, vol->name, "peer %s: %s", p->node, sz_why);
	if (hv.outdated)
		record_outdated(p);
	if (hv.forget_stale)
		forget_stale_bits(p, v->disk);
	p->held_all = gv.decision == GEN_NO_SYNC && !p->suppressed && v->dirty == 0 &&
		      v->disk == GEN_DISK_UPTODATE && vol->disk_state == GEN_DISK_UPTODATE;
	p->keeping = false;
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
	if (repl__peer_told_stale(p))
		repl__peer_send_state(p, NULL);
	if (p->suppressed) {
		snprintf(p->reason, sizeof(p->reason), "%s between Secondaries: %s",
			 gen_decision_name(gv.decision), wait);
		p->link = REPL_LINK_CONNECTED;
		return;
	}
	p->hooks->up_data(p, gv.decision);
	/* Same generation (rule 4), yet as Primary we recorded regions the
	 * peer may lack: it took this generation from a Secondary that had
	 * followed us only so far (rules 40, 10: a resync between
	 * Secondaries while we were cut off from both), or lost what it had
	 * not flushed.  Our data is the reference: those regions go to it. */
	if (local->primary && gv.decision == GEN_NO_SYNC && meta_bits_count(vol->meta, p->idx))
		p->hooks->rs_source(p, false);
	p->hooks->checkpoints_up(p);
	if (peer->primary)
		stop_secondary_resyncs(vol, p);
	/* Our Primary was lost and a Primary is here: our recent writes
	 * (recent.c asks the same one back only for asks it never answered). */
	if (vol->lost_primary && peer->primary && vol->role != REPL_PRIMARY) {
		vol->lost_primary = false;
		p->hooks->recent_ask(p);
	}
	p->hooks->changed(vol);
}

static struct peer *peer_by_id(struct repl_volume *vol, uint32_t id)
{
	for (unsigned i = 0; i < vol->n_peers; i++)
		if (repl__peer_node_id(vol, vol->peers[i]->node) == id)
			return vol->peers[i];
	return NULL;
}

void repl__peer_on_state(struct peer *p, const struct wire_state *s)
{
	struct repl_volume *vol = p->vol;
	struct meta_super sb = *meta_get(vol->meta);
	struct peer *o = NULL;
	bool unrecorded = false, lost, went_inconsistent = false;
	int r;

	if (s->role == REPL_PRIMARY && p->peer_role != REPL_PRIMARY &&
	    vol->role != REPL_PRIMARY && vol->lost_primary) {
		vol->lost_primary = false;
		p->hooks->recent_ask(p);
	}
	if (s->role == REPL_PRIMARY && p->peer_role != REPL_PRIMARY)
		stop_secondary_resyncs(vol, p);
	if (s->role != REPL_PRIMARY) {
		if (p->peer_role == REPL_PRIMARY)
			p->took_primary = false;	/* it demoted: its writes were its own */
		p->lost_crossing = false;
	}
	/* A peer in sync that went Inconsistent (a write failed there,
	 * apply.c) no longer counts as holding what we acknowledged: a
	 * resync will overwrite its copy.  Those writes are made durable here
	 * first, as outdate_peer() does for a peer lost, or a power loss here
	 * would take writes whose only other copy is no longer trusted (sim
	 * seed 2463: the crashed Primary then resynced its stale data over
	 * the one copy left, and was promoted).  Rare enough to wait for.
	 * And what it acknowledged and had not flushed goes to its bitmap: a
	 * flush of its own may be what failed (a migration client's), and
	 * its disk may have dropped any of those writes (sim seed 13640 of
	 * the EIO profile: a later bitmap resync left one out).  The same
	 * for the target of a resync that only makes copies agree, UpToDate
	 * through it (resync.c's agreement: full-disk sim seed 78123, whose
	 * torn TRIM no resync brought back). */
	if (vol->role == REPL_PRIMARY &&
	    (p->link == REPL_LINK_CONNECTED || p->link == REPL_LINK_SYNC_SOURCE) &&
	    p->peer_disk == GEN_DISK_UPTODATE && s->disk == GEN_DISK_INCONSISTENT) {
		if ((r = repl__iopool_sync(vol->pool, &lost)) < 0) {
			plog_errno(LOG_ERR, vol->name, -r, "flushing the backing after %s "
				   "went Inconsistent", p->node);
			if (lost)
				vol->eng->write_obs->disk_lost(vol);
			if (vol->role != REPL_PRIMARY)
				return;	/* it stepped down: p's link is gone */
		}
		repl__unfl_lost(p);
		went_inconsistent = true;
	}
	p->peer_role = s->role;
	p->peer_disk = s->disk;
	p->peer_partial = s->partial && s->disk == GEN_DISK_INCONSISTENT;
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
		repl__peer_send_state(p, NULL);
	}
	/* A Primary we are in sync with moved its generation: follow it. */
	if (s->role == REPL_PRIMARY && p->lost_crossing && s->current != sb.gen_current) {
		repl__peer_drop(p, HS_LOST_CROSSING);
		return;
	}
	/* Not after a write of its failed here, until a resync: the
	 * Primary's new generation is the one that says we lack it
	 * (outdate.c). */
	if (s->role == REPL_PRIMARY && p->link == REPL_LINK_CONNECTED && !p->suppressed &&
	    vol->role != REPL_PRIMARY && s->current != sb.gen_current &&
	    !vol->own_write_failed) {
		struct gen_side g;

		repl__peer_gen_side(vol, -1, &g);
		if (gen_on_primary_moved(&g, s->current) == 0)
			repl__gen_store(&sb, -1, &g);
		sb.gen_bitmap = 0;
		/* Our bitmaps of the replicas away said what they lack since
		 * their generation; the writes of this Primary's era are not
		 * in them (a Secondary keeps no bitmaps).  Promoted later, a
		 * bitmap resync from them would leave those writes out (sim
		 * seed 16787: a migration back while the third replica was
		 * away): without a bitmap generation, such a replica takes a
		 * full resync from us (gen.c rule 10), or a bitmap one from
		 * the Primary that has its bits. */
		for (unsigned i = 0; i < vol->n_peers; i++)
			if (i != p->idx)
				sb.peers[i].bitmap_gen = 0;
		p->took_primary = true;
	}
	if (s->outdate_notice && (o = peer_by_id(vol, s->outdated_node)))
		sb.peers[o->idx].disk_state = META_OUTDATED;
	/* About us: we missed writes, so we must not be promoted. */
	if (s->outdate_notice && s->outdated_node == repl__peer_node_id(vol, vol->node) &&
	    vol->role != REPL_PRIMARY && sb.disk_state == META_UPTODATE &&
	    !in_sync_with_other_primary(vol, p))
		sb.disk_state = META_OUTDATED;
	/* Unrecorded, a generation we followed would be missing here: in
	 * sync by the link but not by the metadata, a promotion later finds
	 * a split brain where nothing diverged (sim seed 78).  The link goes:
	 * the Primary outdates us, and the next handshake starts from what
	 * the metadata holds. */
	if (memcmp(&sb, meta_get(vol->meta), sizeof(sb)) != 0 && meta_update(vol->meta, &sb) < 0) {
		plog(LOG_ERR, vol->name, "cannot record the state %s sent", p->node);
		unrecorded = true;
	}
	if (sb.disk_state == META_OUTDATED && vol->disk_state == GEN_DISK_UPTODATE) {
		vol->disk_state = GEN_DISK_OUTDATED;
		plog(LOG_WARNING, vol->name, "%s says this replica is Outdated", p->node);
		repl__peers_tell_state(vol);
	}
	if (unrecorded) {
		repl__peer_disk_drop(p, "cannot record the state it sent");
		return;
	}
	p->hooks->rs_peer_state(p);
	/* Nothing else starts its resync when no write of ours failed there
	 * (a flush of its own lost writes, a migration client's): it stayed
	 * Inconsistent for good (sim seed 91016 of the EIO profile).  Only
	 * with regions to copy: on a link in sync, the target learns of a
	 * resync from its first block (resync_target.c), so an empty one
	 * would end with a VOLUME it does not expect (a failed write's
	 * acknowledgement, which follows this STATE, starts its own:
	 * tests/repl-write-eio.sh). */
	if (went_inconsistent && vol->role == REPL_PRIMARY && repl__peer_up(p) &&
	    p->link == REPL_LINK_CONNECTED && meta_bits_count(vol->meta, p->idx))
		p->hooks->rs_more(p);
	if (s->outdate_notice) {
		plog(LOG_NOTICE, vol->name, "%s says %s is Outdated", p->node,
		     o ? o->node : "this node");
		/* The confirmation the Primary waits for: of this notice, by
		 * its token, now that it is recorded. */
		repl__peer_send_confirm(p, s->token);
		/* Tell the outdated replica itself, if we can reach it. */
		if (o && o != p && repl__peer_up(o))
			repl__peer_send_state(o, o);
	} else if (s->confirm && vol->role == REPL_PRIMARY) {
		p->hooks->outdate_confirmed(p, s->token);
	}
}
