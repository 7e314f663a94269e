/* resync_target.c: the target's side of a resync (resync.c is the
 * source's).  A resync to us begins at a handshake (repl__rs_start_target)
 * or, on a connected Secondary, with the first RS_DATA of a new Primary
 * making recent writes agree; each region is applied like a write of the
 * Primary (apply.c); a FLUSH from the source is answered once our
 * fdatasync is done; the source's VOLUME at the end gives us its
 * generations, and our own flush after it makes us UpToDate (or Outdated,
 * if the source or the cluster says so).  A resync that only makes
 * regions agree, on a replica that held every acknowledged write, keeps it
 * UpToDate throughout.  Loop thread only. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "meta.h"
#include "peer.h"
#include "util.h"

/* A resync that only makes regions agree (its own failed write,
 * replicate.c; a lost Primary's recent writes, recent.c), started by our
 * Primary on a link where we held every write it acknowledged (held_all):
 * guest writes reach us as usual and no region is read for the resync
 * while a guest write to it is in flight, so we hold every acknowledged
 * write throughout and stay UpToDate.  Inconsistent, we lost them: the
 * Primary lost power, came back without its unflushed ones and resynced
 * its data over ours (sim seed 12664 of the EIO profile). */
static bool rs_agreement(const struct peer *p)
{
	const struct repl_volume *vol = p->vol;

	return p->held_all && p->peer_role == REPL_PRIMARY && vol->role != REPL_PRIMARY &&
	       vol->disk_state == GEN_DISK_UPTODATE &&
	       meta_get(vol->meta)->disk_state == META_UPTODATE;
}

/* One source at a time: a resync from p ends one from another replica,
 * whose frames still coming would land over p's newer data (sim seed
 * 38631: a stale Primary's, delayed, after the new one's full resync). */
static void rs_one_source(struct peer *p)
{
	for (unsigned i = 0; i < p->vol->n_peers; i++) {
		struct peer *q = p->vol->peers[i];
		if (q != p && repl__peer_up(q) && q->link == REPL_LINK_SYNC_TARGET)
			repl__peer_drop(q, "a resync from another replica started");
	}
}

/* The link becomes a resync from p, of either kind. */
static void rs_target_begin(struct peer *p, bool agreement)
{
	repl__rs_stop(p);
	rs_one_source(p);
	p->link = REPL_LINK_SYNC_TARGET;
	p->rs_agreement = agreement;
	p->rs_recv_bytes = 0;
	p->rs_recv_started_ms = now_mono_ms();
	p->rs_fail_mark = repl__apply_failures(p->vol);
}

static void rs_start_agreement(struct peer *p)
{
	rs_target_begin(p, true);
	plog(LOG_NOTICE, p->vol->name, "resync from %s started (regions to make agree; this "
	     "replica holds every acknowledged write: UpToDate through it)", p->node);
}

void repl__rs_start_target(struct peer *p)
{
	struct repl_volume *vol = p->vol;
	struct meta_super sb = *meta_get(vol->meta);
	/* Partial (gen.h) through it only if the source is our Primary on a
	 * link in sync, making our failed writes' regions agree: other
	 * sources may lack writes we hold, and their data replaces ours. */
	bool keep = p->peer_role == REPL_PRIMARY && p->link == REPL_LINK_CONNECTED;

	rs_target_begin(p, false);
	if (sb.disk_state != META_INCONSISTENT ||
	    (!keep && (sb.flags & META_F_PARTIAL))) {
		sb.disk_state = META_INCONSISTENT;
		if (!keep)
			sb.flags &= ~META_F_PARTIAL;
		if (meta_update(vol->meta, &sb) < 0) {
			plog(LOG_ERR, vol->name, "cannot record the resync start");
			meta_assume(vol->meta, &sb);
			repl__lossmark_set(vol, REPL_LOSS_INCONSISTENT);
		}
	}
	vol->disk_state = GEN_DISK_INCONSISTENT;
	plog(LOG_NOTICE, vol->name, "resync from %s started", p->node);
}

void repl__rs_on_data(struct peer *p, uint64_t seq, uint64_t offset, uint32_t len,
		      void *data, void *mem)
{
	/* A new Primary making recent writes agree (recent.c) starts a
	 * resync on a connected Secondary without a new handshake. */
	if (p->link == REPL_LINK_CONNECTED && p->peer_role == REPL_PRIMARY) {
		if (rs_agreement(p))
			rs_start_agreement(p);
		else
			repl__rs_start_target(p);
	}
	if (p->link != REPL_LINK_SYNC_TARGET) {
		free(mem);
		repl__peer_drop(p, "resync data while not a sync target");
		return;
	}
	p->rs_recv_bytes += len;
	repl__rep_apply(p, seq, data ? REPL_IO_WRITE : REPL_IO_ZERO, 0, offset, len,
			data, mem);
}

/* Target: a flush of the resynced data, the source's (seq: its FLUSH, to
 * acknowledge) or our own before we say UpToDate (seq 0). */
struct rs_sync {
	struct repl_io io;
	struct peer *p;
	uint64_t conn_id;
	uint64_t seq;
};

static void rs_uptodate(struct peer *p, bool same, int result);

static void rs_sync_done(struct repl_io *io)
{
	struct rs_sync *y = (struct rs_sync *)io;
	struct peer *p = y->p;
	bool same = repl__peer_up(p) && p->conn_id == y->conn_id;
	struct wire_msg m = { .type = WIRE_FLUSH_ACK };

	if (io->result < 0)
		plog_errno(LOG_ERR, p->vol->name, -io->result, "flushing the data resynced from %s",
			   p->node);
	/* Writes not yet durable here may be gone with it, the Primary's
	 * that this replica acknowledged among them: Inconsistent before
	 * anything else happens, as for any other flush (sim seed 13282 of
	 * the --small-al profile: a target of a resync of only what failed
	 * on its Primary stayed UpToDate without one). */
	if (io->result < 0 && io->flush_lost) {
		p->vol->eng->write_obs->disk_lost(p->vol);
		same = same && repl__peer_up(p);	/* apply.c may drop it */
	}
	if (y->seq && same) {
		m.u.ack = (struct wire_ack){ y->seq,
			io->result < 0 ? (uint32_t)MIN(-io->result, 4095) : 0 };
		/* Every failed write acknowledged so far went out before this
		 * FLUSH_ACK: the source knows of them when it reads it. */
		p->rs_fail_mark = repl__apply_failures(p->vol);
		repl__peer_send_msg(p, &m);
	} else if (!y->seq) {
		rs_uptodate(p, same, io->result);
	}
	free(y);
}

static void rs_sync(struct peer *p, uint64_t seq)
{
	struct rs_sync *y = calloc(1, sizeof(*y));

	if (!y) {
		repl__peer_drop(p, "out of memory");
		return;
	}
	y->p = p;
	y->conn_id = p->conn_id;
	y->seq = seq;
	y->io = (struct repl_io){ .op = REPL_IO_FLUSH, .done = rs_sync_done };
	repl__iopool_submit(p->vol->pool, &y->io);
}

/* Every resync write we acknowledged before it is done: fdatasync, then
 * FLUSH_ACK.  (Guest writes in flight meanwhile are not covered: their
 * durability is their own FLUSH's or FUA's business.) */
void repl__rs_on_flush(struct peer *p, uint64_t seq)
{
	rs_sync(p, seq);
}

void repl__rs_on_done(struct peer *p, const struct wire_volume *v)
{
	struct repl_volume *vol = p->vol;
	struct meta_super sb = *meta_get(vol->meta);

	if (p->link != REPL_LINK_SYNC_TARGET || !gen_disk_consistent(v->disk)) {
		repl__peer_drop(p, "unexpected VOLUME from the peer");
		return;
	}
	/* Regions made to agree, and still UpToDate (no write failed here,
	 * no Outdated record came): our generations and bitmaps are those
	 * of a replica in sync; the flush makes the copies durable. */
	p->rs_agreement = p->rs_agreement && vol->disk_state == GEN_DISK_UPTODATE &&
			  sb.disk_state == META_UPTODATE && v->current == sb.gen_current;
	if (p->rs_agreement) {
		p->link = REPL_LINK_CONNECTED;
		p->peer_disk = v->disk;
		p->rs_src_disk = v->disk;
		p->rs_outdate_mark = vol->outdate_notices;
		plog(LOG_INFO, vol->name, "resync from %s: every region received; flushing",
		     p->node);
		rs_sync(p, 0);
		repl__changed(vol);
		return;
	}
	sb.gen_current = v->current;
	sb.gen_bitmap = 0;
	memcpy(sb.gen_history, v->history, sizeof(sb.gen_history));
	/* Inconsistent until our own flush is done (rs_uptodate()). */
	sb.disk_state = META_INCONSISTENT;
	sb.flags &= ~(META_F_PRIMARY_CRASHED | META_F_POWER_LOST | META_F_HOST_RESTARTED |
		      META_F_PARTIAL);
	/* What the source may lack, we lack now too: a source that lost
	 * power (a Secondary, rule 42 of gen.c) passes that on, or a replica
	 * made of its data would count as whole and be promoted without the
	 * writes another replica still holds (sim seed 4552). */
	if (v->lost_power)
		sb.flags |= META_F_POWER_LOST | (v->host_restarted ? META_F_HOST_RESTARTED : 0);
	/* Our data is the source's now: our activity log described data we
	 * no longer have, and the bitmaps no longer go with a generation.
	 * Their bits stay: a region we had marked as maybe differing on a
	 * third replica may differ between it and the source's data too,
	 * which nobody else tracks (a Secondary keeps no bitmaps): sim seed
	 * 1374, where the data of a failed write reached only the source, and
	 * a later bitmap resync to the third replica, without our bits, left
	 * the replicas different.  A bit too many only resyncs a region more.
	 * With the source itself we are equal now. */
	for (unsigned i = 0; i < META_MAX_PEERS; i++)
		sb.peers[i].bitmap_gen = 0;
	/* Nor is the source Outdated by us any more: a record of ours from
	 * before, left standing, let a later power loss here pass it by as
	 * holding nothing we lost (role.c, power_holder(); sim seed 50247). */
	sb.peers[p->idx].disk_state = META_UPTODATE;
	meta_bits_clear_range(vol->meta, META_INTENT, 0, vol->size);
	meta_bits_clear_range(vol->meta, p->idx, 0, vol->size);
	if (meta_update(vol->meta, &sb) < 0 || meta_bitmap_flush(vol->meta) < 0) {
		/* Nothing would ask again while connected: the link goes, and
		 * the next handshake resyncs (or waits for a restart, if the
		 * metadata broke). */
		plog(LOG_ERR, vol->name, "cannot record the end of the resync");
		repl__peer_disk_drop(p, "cannot record the end of the resync");
		return;
	}
	p->link = REPL_LINK_CONNECTED;
	p->peer_disk = v->disk;
	vol->own_write_failed = false;	/* what failed is the source's data now */
	p->rs_src_disk = v->disk;
	p->rs_outdate_mark = vol->outdate_notices;
	plog(LOG_INFO, vol->name, "resync from %s: every region received; flushing", p->node);
	rs_sync(p, 0);
	repl__changed(vol);
}

/* Our flush after the resync is done: every region and every write of
 * the source's since is on our disk.  We are UpToDate (Outdated, if the
 * source was), unless something made that untrue meanwhile; then we stay
 * Inconsistent and the next handshake gives a full resync.
 * - A write of the source's that failed here after our last FLUSH_ACK
 *   (or, with none, after the start) may be one the source did not know
 *   of when it said we were done: our disk lacks it, so we stay
 *   Inconsistent, say so, and the source, told by the failed
 *   acknowledgement, resyncs the range again (sim seed 324).
 * - The link went before the flush ended: as for any replica in sync
 *   whose link goes, our data is whole up to the source's last write we
 *   received, and the cluster records us Outdated if the source writes on
 *   without us; if it did that already, we are Outdated.  Staying
 *   Inconsistent here lost writes: a Primary that crashed with its power
 *   right after our resync, and came back without its unflushed writes,
 *   was then the only consistent replica and full-resynced over ours,
 *   which held them (sim seed 2725 --no-eio).
 * - A new connection came meanwhile: its handshake decided with us
 *   Inconsistent; that stands.
 * - The cluster's record that we are Outdated stands (it goes with the
 *   Primary's "in sync", which it says of us once we are connected with
 *   nothing out of sync): a source is not always the Primary the cluster
 *   knows.  A stale Primary, stepping down soon, resynced us to its
 *   generation; UpToDate, we were a split brain with the real one that
 *   nothing resolved (sim seed 4049 --no-eio); Outdated, we take its data
 *   (gen.c rule 23). */
static void rs_uptodate(struct peer *p, bool same, int result)
{
	struct repl_volume *vol = p->vol;
	struct meta_super sb = *meta_get(vol->meta);
	bool gone = !same && !repl__peer_up(p);
	bool outdated = p->rs_src_disk == GEN_DISK_OUTDATED || vol->cluster_outdated ||
			(gone && vol->outdate_notices != p->rs_outdate_mark);

	if (p->rs_agreement) {
		/* We were UpToDate throughout; a failed flush leaves us as a
		 * failed flush of a guest write would (the source resends
		 * what it did not see acknowledged). */
		p->rs_agreement = false;
		plog(result < 0 ? LOG_WARNING : LOG_NOTICE, vol->name, "resync from %s %s",
		     p->node, result < 0 ? "not complete here (the flush failed)" : "done");
		if (result < 0 && same) {
			repl__peer_disk_drop(p, "cannot make the resynced data durable");
			return;
		}
		p->resynced_us = same;
		/* The source counts us in sync again once it hears this. */
		if (same)
			repl__peer_send_state(p, NULL);
		return;
	}

	if ((same || gone) && result == 0 && repl__apply_failures(vol) != p->rs_fail_mark) {
		plog(LOG_WARNING, vol->name, "the resync from %s is not complete here (a "
		     "write failed here since): staying Inconsistent", p->node);
		if (same)
			repl__peers_tell_state(vol);
		return;
	}
	if (result < 0 || (!same && !gone) || (same && p->link != REPL_LINK_CONNECTED) ||
	    vol->role == REPL_PRIMARY || sb.disk_state != META_INCONSISTENT) {
		plog(LOG_WARNING, vol->name, "the resync from %s is not complete here (%s): "
		     "staying Inconsistent", p->node, result < 0 ? "the flush failed" :
		     "the link or the state changed before the data was flushed");
		if (result < 0 && same)
			repl__peer_disk_drop(p, "cannot make the resynced data durable");
		return;
	}
	sb.disk_state = outdated ? META_OUTDATED : META_UPTODATE;
	if (meta_update(vol->meta, &sb) < 0) {
		plog(LOG_ERR, vol->name, "cannot record the end of the resync");
		if (same)
			repl__peer_disk_drop(p, "cannot record the end of the resync");
		return;
	}
	repl__lossmark_recorded(vol, REPL_LOSS_BLANK);	/* the data is the source's */
	vol->disk_state = outdated ? GEN_DISK_OUTDATED : GEN_DISK_UPTODATE;
	p->resynced_us = same;
	/* From here on this link is as one whose handshake found nothing
	 * to resync: a later resync of ranges the Primary's own disk failed
	 * leaves us UpToDate (rs_agreement()).  Inconsistent through it, a
	 * Primary whose disk then tore unflushed writes had no replica to
	 * take them back from (sim seed 8415 of the --small-al profile). */
	p->held_all = same && !outdated;
	plog(LOG_NOTICE, vol->name, "resync from %s done: %s%s", p->node,
	     gen_disk_name(vol->disk_state), gone ? " (the link went before our flush ended)" : "");
	repl__peers_tell_state(vol);
	repl__changed(vol);
}
