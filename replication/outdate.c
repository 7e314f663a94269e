/* outdate.c: what a Primary does when it loses a peer, and what any
 * replica does when it must give up being Primary.  A peer that was in
 * sync is recorded Outdated here and on the other replicas (or by the
 * cluster) before any further write is acknowledged; the new generation
 * for it waits for that confirmation, or for the timeout.  Stepping down
 * (another replica was promoted while this one was cut off) fails what is
 * in flight and starts over blank.  The write path itself (sending,
 * acknowledging, the bitmap flushes, holding and releasing the
 * acknowledgements) is replicate.c's, which this file calls down into
 * and which calls nothing here.  Loop thread only. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cbt.h"
#include "agree.h"
#include "log.h"
#include "meta.h"
#include "peer.h"
#include "util.h"

/* p receives every write: connected, in sync or our resync's target. */
static bool link_in_sync(const struct peer *p)
{
	return p->link == REPL_LINK_CONNECTED || p->link == REPL_LINK_SYNC_SOURCE;
}

/* The lost peer p gets a new generation here (its bitmap generation is
 * what it holds): from now on this replica's data is ahead of it.  0, or
 * -EIO: not recorded, and nothing more may be acknowledged (gen_failed()). */
static int new_gen_for(struct peer *p)
{
	struct repl_volume *vol = p->vol;
	struct meta_super sb = *meta_get(vol->meta);
	struct gen_side g;
	uint64_t id = p->gen_pending;

	p->gen_pending = 0;
	repl__peer_gen_side(vol, (int)p->idx, &g);
	g.primary = true;
	if (gen_on_disconnect_primary(&g, id) < 0)
		return 0;
	repl__gen_store(&sb, (int)p->idx, &g);
	/* Lost before its asks arrived: what it applied last from our old
	 * Primary is in no bitmap here, and if it also lost its power it
	 * may differ there (sim seed 7629 of the --small-al profile: a TRIM
	 * the old Primary sent to it alone): a blind bitmap (handshake.c). */
	if (p->asks_owed)
		sb.peers[p->idx].flags |= META_PF_BLIND;
	/* Failed, it is not told to the others: it must not come back at a
	 * restart either (issue 13: a split brain with a replica promoted
	 * meanwhile). */
	if (repl__lossmark_update_void_failed(vol, &sb) < 0) {
		plog(LOG_ERR, vol->name, "cannot record a new generation for %s", p->node);
		return -EIO;
	}
	repl__peers_tell_state(vol);
	return 0;
}

/* A write acknowledged without the lost peer and without its new
 * generation on disk would be one that peer lacks while the generations
 * say it holds everything: a third replica that later takes our data by
 * a full resync has no bitmap for it, and resyncs it by its own empty
 * one (sim seed 1929 of the EIO profile, with the migration fault: a
 * write lost that way).  So the writes in flight and held fail, and so
 * does every later one, until the daemon opens the volume again (status
 * says the metadata fails: the cluster restarts it). */
/* No confirmation is awaited any more; one that comes late is ignored. */
static void freeze_clear(struct repl_volume *vol)
{
	vol->freeze = 0;
	for (unsigned i = 0; i < vol->n_peers; i++)
		vol->peers[i]->outdate_waits = 0;
}

static void gen_failed(struct repl_volume *vol)
{
	meta_refuse(vol->meta, "a new generation for a lost peer could not be recorded");
	for (struct vwrite *w = vol->writes; w; w = w->vnext)
		w->result = -EIO;
	freeze_clear(vol);
	repl__rep_fail_frozen(vol, -EIO);
}

/* The generations the outdates deferred; 0, or -EIO if one failed. */
static int new_gens_pending(struct repl_volume *vol)
{
	int r = 0;

	for (unsigned i = 0; i < vol->n_peers; i++)
		if (vol->peers[i]->gen_pending && new_gen_for(vol->peers[i]) < 0)
			r = -EIO;
	return r;
}

/* The outdates are confirmed (or the wait for them timed out): the
 * generations they deferred are made, before any held write is
 * acknowledged; if one cannot be, none is (gen_failed()). */
static void new_gens_pending_then_thaw(struct repl_volume *vol)
{
	if (new_gens_pending(vol) < 0)
		gen_failed(vol);
	else
		repl__rep_thaw(vol);
}

void repl__rep_gen_catch_up(struct peer *p)
{
	if (p->gen_pending && new_gen_for(p) < 0)
		gen_failed(p->vol);
}

static void freeze_timeout(void *arg)
{
	struct repl_volume *vol = arg;

	vol->freeze_timer = NULL;
	if (!vol->freeze)
		return;
	plog(LOG_WARNING, vol->name, "other replicas did not confirm the outdate "
	     "within %u ms: continuing on the local record alone",
	     vol->outdate_timeout_ms);
	freeze_clear(vol);
	new_gens_pending_then_thaw(vol);
}

/* The record of p Outdated goes to the cluster (cluster mode: the group
 * records it; that alone releases the acks, with no timeout: a partition
 * without quorum never confirms), or to the other connected replicas,
 * each confirming its notice (else the timeout releases them).  The
 * acknowledgements wait (freeze) meanwhile; none to wait for: at once. */
static void ask_outdate(struct repl_volume *vol, struct peer *p)
{
	p->said_clean = false;
	if (vol->eng->hooks.outdate &&
	    vol->eng->hooks.outdate(vol->eng->hooks.arg, vol, p->node, ++vol->outdate_token) == 0) {
		vol->freeze++;
		for (unsigned i = 0; i < vol->n_peers; i++) {
			struct peer *o = vol->peers[i];
			if (o != p && repl__peer_up(o))
				repl__peer_send_outdate(o, p, vol->outdate_token);
		}
		return;
	}
	/* Each notice has its token; only its confirmation counts (any
	 * other STATE of the peer says nothing about this record). */
	for (unsigned i = 0; i < vol->n_peers; i++) {
		struct peer *o = vol->peers[i];
		if (o == p || !repl__peer_up(o) ||
		    repl__peer_send_outdate(o, p, ++vol->outdate_token) < 0)
			continue;
		vol->freeze++;
		o->outdate_waits++;
		o->outdate_wait_token = vol->outdate_token;
	}
	if (vol->freeze && !vol->freeze_timer)
		repl__timer_add(vol->eng, vol->outdate_timeout_ms, freeze_timeout, vol,
				&vol->freeze_timer);
}

/* The peer will not see writes from now on: say so durably, here and on
 * the other connected replicas, before acknowledging anything further.
 * The new generation waits for that confirmation, as DRBD's new current
 * UUID waits for the fence-peer handler with I/O suspended: a Primary cut
 * off without quorum acknowledges nothing more, and if it crashes so, it
 * comes back with the generation the others hold, its data a prefix of
 * theirs plus writes nobody was told of (the activity log resyncs them
 * away), not in a split brain with the Primary promoted meanwhile. */
static void outdate_peer(struct peer *p, const char *what)
{
	struct repl_volume *vol = p->vol;
	struct meta_super sb = *meta_get(vol->meta);
	bool lost;
	int r;

	/* Our data first: the peer holds every write acknowledged until now,
	 * durable here or not; a record of it Outdated lets a crashed
	 * Primary be promoted without asking it (role.c), so nothing it
	 * holds may be lost with our power after the record.  Rare enough to
	 * wait for here, as promotion does. */
	if ((r = repl__iopool_sync(vol->pool, &lost)) < 0)
		plog_errno(LOG_ERR, vol->name, -r, "flushing the backing before "
			   "recording %s Outdated", p->node);
	if (lost) {
		/* p holds writes that this disk may have lost: it is the
		 * one to promote, not to outdate.  Unless no replica holds
		 * them all and we stay Primary: then p misses what we
		 * acknowledge from now on, and is outdated as any lost peer
		 * (sim seed 10899 of the EIO profile: writes acknowledged
		 * without it while it stayed UpToDate). */
		repl__rep_disk_lost(vol);
		if (vol->role != REPL_PRIMARY)
			return;
		/* Not to write back a copy older than what disk_lost
		 * may have recorded. */
		sb = *meta_get(vol->meta);
	}
	p->gen_pending = meta_new_gen();
	sb.peers[p->idx].disk_state = META_OUTDATED;
	r = meta_update(vol->meta, &sb);
	if (r < 0)
		plog_errno(LOG_ERR, vol->name, -r, "cannot record %s as Outdated", p->node);
	else
		plog(LOG_WARNING, vol->name, "peer %s %s: recorded as Outdated", p->node, what);
	ask_outdate(vol, p);
	if (!vol->freeze && new_gen_for(p) < 0)	/* nobody to confirm: at once */
		gen_failed(vol);
}

/* p, in sync, failed one of our writes (its disk did): we are about to
 * acknowledge a write it lacks.  It knows that it is Inconsistent, but if
 * its metadata failed too it knows it only until it restarts, and then
 * says UpToDate with the generation we hold: the cluster could promote it
 * without that write, or a handshake after our crash with power lost take
 * its data as the reference (sim seeds 3315 and 6986 of the EIO profile).
 * So it is outdated as a lost peer is, before the write completes (the
 * acknowledgements wait for the record): recorded here, by the cluster or
 * the other peers, and a new generation, which it does not follow until
 * it is resynced (peer_state.c, own_write_failed): every later handshake
 * finds it behind.  As DRBD's Primary makes a new current UUID when a
 * peer's disk fails.  The link stays, and the range is resynced over it
 * (replicate.c); the end of that resync records it UpToDate again
 * (resync.c), and the cluster hears it from the Primary.  Once: a record
 * that stands covers later failures.  Ours may stand where the cluster's
 * was withdrawn: a resync that sent everything says the peer is clean
 * (role.c), and a region that goes out of sync before it ends starts
 * another pass instead of recording the end (full-disk sim seed 23812:
 * a write the peer failed then, acknowledged with no record anywhere but
 * ours); then it is recorded again. */
void repl__rep_peer_failed_write(struct peer *p)
{
	struct repl_volume *vol = p->vol;

	if (vol->role != REPL_PRIMARY || vol->closing || !link_in_sync(p) ||
	    (meta_get(vol->meta)->peers[p->idx].disk_state == META_OUTDATED &&
	     !p->said_clean))
		return;
	outdate_peer(p, "failed a write");
}

/* A new Primary acknowledges writes without the peers that are away:
 * they are recorded Outdated, here and by the cluster (or the connected
 * peers), before the first acknowledgement, as a peer lost while Primary
 * is (outdate_peer(); the promotion made the new generation already).
 * Without it nothing told a replica that was away at a promotion that it
 * missed the new Primary's writes: with that Primary gone, it could be
 * promoted and serve data without them (the simulator's cluster manager
 * recorded such replicas itself, which replagentd's does not: with that
 * taken out, 35 of 300 seeds lost writes). */
void repl__rep_outdate_absent(struct repl_volume *vol)
{
	struct meta_super sb = *meta_get(vol->meta);
	bool any = false;
	int r;

	for (unsigned i = 0; i < vol->n_peers; i++) {
		struct peer *p = vol->peers[i];
		if (repl__peer_up(p) && link_in_sync(p))
			continue;
		any = true;
		sb.peers[p->idx].disk_state = META_OUTDATED;
	}
	if (!any)
		return;
	r = meta_update(vol->meta, &sb);
	if (r < 0)
		plog_errno(LOG_ERR, vol->name, -r, "cannot record the replicas away as Outdated");
	for (unsigned i = 0; i < vol->n_peers; i++) {
		struct peer *p = vol->peers[i];
		if (repl__peer_up(p) && link_in_sync(p))
			continue;
		plog(LOG_NOTICE, vol->name, "peer %s is away at the promotion: recorded as "
		     "Outdated", p->node);
		ask_outdate(vol, p);
	}
}

/* Held acknowledgements are failed, not given: a stop must not turn a
 * write the cluster has not secured into a success. */
void repl__rep_close(struct repl_volume *vol)
{
	vol->closing = true;
	repl__timer_del(vol->eng, &vol->freeze_timer);
	repl__timer_del(vol->eng, &vol->intent_timer);
	repl__timer_del(vol->eng, &vol->al_timer);
	repl__agree_free(vol);
	repl__rep_al_fail_waiting(vol);
	/* The held writes are on this disk: a stop without the confirmation
	 * keeps this replica ahead of the lost peer, as it is. */
	(void)new_gens_pending(vol);
	freeze_clear(vol);
	repl__rep_fail_frozen(vol, -ESHUTDOWN);
}

void repl_volume_outdate_done(struct repl_volume *vol, uint64_t token)
{
	const struct meta_super *sb = meta_get(vol->meta);

	/* A peer we went StandAlone with (split brain) while it still said
	 * UpToDate is Outdated for the cluster now, and told so: the next
	 * handshake makes us its source (gen.c rule 23; sim seed 9248 of the
	 * EIO profile, where it waited StandAlone for good). */
	for (unsigned i = 0; i < vol->n_peers && vol->role == REPL_PRIMARY; i++)
		if (sb->peers[vol->peers[i]->idx].disk_state == META_OUTDATED)
			repl__peer_retry(vol->peers[i]);
	if (!vol->freeze)
		return;
	plog(LOG_INFO, vol->name, "the cluster recorded the outdate (%llu)",
	     (unsigned long long)token);
	if (--vol->freeze == 0)
		new_gens_pending_then_thaw(vol);
}

/* p confirmed the notice with this token: it, and the notices sent to p
 * before it (p handles them in order), are recorded there. */
void repl__rep_outdate_confirmed(struct peer *p, uint64_t token)
{
	struct repl_volume *vol = p->vol;

	if (vol->eng->hooks.outdate)
		return;		/* the group confirms, not the peers */
	if (!p->outdate_waits || token != p->outdate_wait_token)
		return;		/* not the last notice we sent it: wait for that one */
	vol->freeze -= MIN(vol->freeze, p->outdate_waits);
	p->outdate_waits = 0;
	if (vol->freeze == 0) {
		repl__timer_del(vol->eng, &vol->freeze_timer);
		new_gens_pending_then_thaw(vol);
	}
}

void repl__rep_peer_down(struct peer *p)
{
	struct repl_volume *vol = p->vol;
	bool was_in_sync = link_in_sync(p);

	repl__rs_stop(p);
	/* Its confirmations cannot come any more (a new link confirms only
	 * its own notices): what it owed stays held until the timeout. */
	p->outdate_waits = 0;
	/* What it acknowledged and may have lost with its power goes to its
	 * bitmap, written out with the record below or the next flush. */
	repl__rep_unfl_lost(p);
	/* The record comes first: no write may complete before it. */
	if (vol->role == REPL_PRIMARY && was_in_sync && !vol->closing)
		outdate_peer(p, "is gone");
	repl__rep_unacked_lost(p);
	p->peer_role = REPL_SECONDARY;
	p->peer_disk = GEN_DISK_UNKNOWN;
}

static void step_down(struct repl_volume *vol, const char *why)
{
	unsigned nw = 0, nf = 0, nh = 0, nl = 0;

	for (struct vwrite *w = vol->writes; w; w = w->vnext)
		nw++;
	for (struct vwrite *w = vol->frozen; w; w = w->wnext)
		nf++;
	for (struct repl_io *io = vol->held_head; io; io = io->next)
		nh++;
	for (struct vwrite *w = vol->local_wait; w; w = w->lnext)
		nl++;
	plog(LOG_WARNING, vol->name, "%s: stepping down; %u write(s) in flight, %u held "
	     "for acks, %u request(s) held, %u waiting locally: failed, never "
	     "acknowledged", why, nw, nf, nh, nl);
	repl__writes_check(vol, "step down", false);
	/* Whenever what is in flight ends, it is answered with an error;
	 * what has not started yet never starts (replicate.c). */
	for (struct vwrite *w = vol->writes; w; w = w->vnext)
		w->result = -ESHUTDOWN;
	repl__rep_al_fail_waiting(vol);
	repl__timer_del(vol->eng, &vol->freeze_timer);
	freeze_clear(vol);
	repl__rep_fail_frozen(vol, -ESHUTDOWN);
	/* Nothing this replica wrote since a cut was acknowledged (or its
	 * disk dropped what was), and writes in flight may be on this disk
	 * alone: it starts over as a blank replica and takes the data of
	 * the Primary promoted next. */
	repl__volume_start_over(vol, "re-deciding after stepping down");
	repl__writes_check(vol, "step down", false);
}

void repl_volume_step_down(struct repl_volume *vol)
{
	if (vol->role == REPL_PRIMARY)
		step_down(vol, "another replica was promoted while this one was cut off");
}

/* Does p hold every write this Primary acknowledged?  Every write acked
 * without a peer in sync waited for its record Outdated (outdate_peer()),
 * so one connected in sync and not recorded Outdated does, even if a
 * write failed there just now (that one is not acknowledged yet); also
 * the target of a resync of only what failed here; a resync's target
 * that was sent everything, with nothing failed there since (its bitmap
 * empty); and one just lost, UpToDate, being recorded Outdated now.
 * Recorded Outdated: lost, away at our promotion, or it failed a write
 * that we acknowledged. */
static bool holds_acked(const struct repl_volume *vol, const struct peer *p)
{
	if (repl__rs_sent_all(p))
		return !meta_bits_count(vol->meta, p->idx);
	if (meta_get(vol->meta)->peers[p->idx].disk_state == META_OUTDATED)
		return false;
	if (!repl__peer_up(p))
		return p->peer_disk == GEN_DISK_UPTODATE;
	return p->link == REPL_LINK_CONNECTED || repl__rs_target_holds_all(p);
}

/* Our own disk failed a flush while writes were not yet durable: it may
 * have dropped any of them (iopool.c).  A Secondary's are its Primary's
 * acknowledged writes: it goes Inconsistent (apply.c).  A Primary's are
 * writes the client was told are written: with a peer that holds them
 * (holds_acked()) this data is no longer the reference, and the Primary
 * steps down as one cut off does (blank, resynced in full from the one
 * promoted next); the cluster promotes a replica that holds every write
 * and the guest fails over, having seen I/O errors.  DRBD detaches the
 * disk instead and serves the guest through its peer, which needs a
 * Diskless mode we do not have.  Without such a peer no replica holds
 * more than this disk: it stays Primary, the FLUSH that failed tells the
 * client, the writes in flight fail, and every peer is resynced in full
 * from it. */
void repl__rep_disk_lost(struct repl_volume *vol)
{
	if (vol->closing)
		return;
	if (vol->role != REPL_PRIMARY) {
		repl__apply_disk_failed(vol, "a flush here lost writes not yet durable", true);
		return;
	}
	for (unsigned i = 0; i < vol->n_peers; i++)
		if (holds_acked(vol, vol->peers[i])) {
			step_down(vol, "this disk failed a flush and may have dropped "
				  "writes it acknowledged, which another replica holds");
			return;
		}
	plog(LOG_ERR, vol->name, "this disk failed a flush and may have dropped writes it "
	     "acknowledged; no other replica holds them all: each takes a full resync");
	/* A restart on this boot must not read this data as all there (it
	 * would read "only the daemon stopped"): as after a power loss, a
	 * replica that kept those writes is the better source then (sim
	 * seed 28061 of the EIO profile: one acknowledged write held by the
	 * peer alone, the restarted Primary UpToDate without it). */
	repl__lossmark_set(vol, REPL_LOSS_POWER);
	/* Those in flight may be among them: none is acknowledged now. */
	for (struct vwrite *w = vol->writes; w; w = w->vnext)
		if (!w->result)
			w->result = -EIO;
	/* Where this data went back is unknown, and a peer may hold the
	 * newer data there (sent before, or by a resync from the page cache
	 * this flush lost): this data is the reference now, everywhere. */
	for (unsigned i = 0; i < vol->n_peers; i++) {
		struct peer *p = vol->peers[i];

		meta_bits_set_all(vol->meta, p->idx);
		vol->eng->write_obs->missed(p, 0, UINT64_MAX);	/* copies read before */
		if (repl__peer_up(p) && link_in_sync(p))
			p->hooks->rs_more(p);
	}
}

void repl__volume_start_over(struct repl_volume *vol, const char *why)
{
	repl__window_stop(vol);
	repl__nbd_conns_drop_volume(vol->eng, vol);
	if (repl__volume_make_blank(vol) < 0)
		plog(LOG_ERR, vol->name, "cannot record that this replica starts over");
	for (unsigned i = 0; i < vol->n_peers; i++) {
		vol->peers[i]->took_primary = false;
		vol->peers[i]->gen_pending = 0;	/* blank now */
		if (vol->peers[i]->conn != PC_IDLE)
			repl__peer_drop(vol->peers[i], why);
		repl__peer_retry(vol->peers[i]);
	}
	repl__changed(vol);
}

/* Forgets this replica's data history: no generations, no bitmaps (the
 * activity log included), Secondary and Inconsistent, so that the next
 * connection gives it a full resync.  For data that is to be replaced
 * (a step down, the loser of a split brain).  0 or -errno. */
int repl__volume_make_blank(struct repl_volume *vol)
{
	struct meta_super sb = *meta_get(vol->meta);
	int r;

	sb.role = REPL_SECONDARY;
	sb.gen_current = 0;
	memset(sb.gen_history, 0, sizeof(sb.gen_history));
	for (unsigned i = 0; i < META_MAX_PEERS; i++)
		sb.peers[i].bitmap_gen = 0;
	sb.disk_state = META_INCONSISTENT;
	sb.flags &= ~META_F_PARTIAL;
	for (unsigned i = 0; i < META_BITMAPS; i++)
		meta_bits_clear_range(vol->meta, i, 0, vol->size);
	r = meta_update(vol->meta, &sb);
	if (r == 0)
		r = meta_bitmap_flush(vol->meta);
	else	/* blank here all the same: with the old generations a peer
		 * would resync only its own bitmap onto data that holds writes
		 * it never had (a stepped-down Primary's, never acknowledged) */
		meta_assume(vol->meta, &sb);
	if (r < 0)
		repl__lossmark_set(vol, REPL_LOSS_BLANK);
	else
		repl__lossmark_recorded(vol, REPL_LOSS_BLANK);
	repl__cbt_forget(vol, "this replica forgot its data (a full resync replaces it)");
	vol->role = REPL_SECONDARY;
	vol->disk_state = GEN_DISK_INCONSISTENT;
	return r;
}
