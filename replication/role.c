/* role.c: the rules for changing a replica's role, and the status report.
 *
 * Promotion is refused while another replica we are connected to is
 * Primary, and, without force, unless the local disk is UpToDate (an
 * Outdated or Inconsistent replica must not serve a guest: it lacks
 * acknowledged writes).  Demotion is refused while NBD clients are
 * attached.  A promotion with no peer connected starts a new generation, so
 * that the replicas can later tell who wrote.  Loop thread only. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "al_vol.h"
#include "log.h"
#include "meta.h"
#include "peer.h"
#include "resize.h"
#include "util.h"

static const char *const link_names[] = {
	[REPL_LINK_STANDALONE] = "StandAlone",
	[REPL_LINK_DISCONNECTED] = "Disconnected",
	[REPL_LINK_CONNECTING] = "Connecting",
	[REPL_LINK_CONNECTED] = "Connected",
	[REPL_LINK_SYNC_SOURCE] = "SyncSource",
	[REPL_LINK_SYNC_TARGET] = "SyncTarget",
};

static const char *role_name(unsigned role)
{
	return role == REPL_PRIMARY ? "Primary" : "Secondary";
}

static void peer_status(struct peer *p, struct repl_peer_status *ps)
{
	const struct repl_volume *vol = p->vol;
	uint64_t rsz = UINT64_C(1) << meta_get(vol->meta)->region_shift;

	memset(ps, 0, sizeof(*ps));
	snprintf(ps->node, sizeof(ps->node), "%s", p->node);
	ps->link = p->link;
	ps->link_name = link_names[p->link];
	ps->peer_role = repl__peer_up(p) ? role_name(p->peer_role) : "Unknown";
	if (repl__peer_up(p))
		ps->peer_disk = gen_disk_name(p->peer_disk);
	else if (meta_get(vol->meta)->peers[p->idx].disk_state == META_OUTDATED)
		ps->peer_disk = "Outdated";
	else
		ps->peer_disk = "DUnknown";
	ps->out_of_sync_bytes = MIN(meta_bits_count(vol->meta, p->idx) * rsz, vol->size);
	snprintf(ps->reason, sizeof(ps->reason), "%s", p->reason);
	ps->size = p->size;
	ps->recorded_outdated = meta_get(vol->meta)->peers[p->idx].disk_state == META_OUTDATED;
	ps->in_sync = repl__peer_up(p) && p->link == REPL_LINK_CONNECTED && !p->suppressed &&
		      p->peer_disk == GEN_DISK_UPTODATE && vol->role == REPL_PRIMARY;
	/* A resync that sent everything counts: the target holds every
	 * write too, and the cluster's record that it is Outdated must go
	 * before its own flush ends, or it ends Outdated and waits for the
	 * record to go after all (one more superblock write, which a
	 * failing disk may refuse: sim EIO seed 58). */
	ps->following_clean = repl__peer_up(p) && !p->suppressed && vol->role == REPL_PRIMARY &&
			      ((p->link == REPL_LINK_CONNECTED &&
				(p->peer_disk == GEN_DISK_UPTODATE ||
				 p->peer_disk == GEN_DISK_OUTDATED)) || repl__rs_sent_all(p)) &&
			      ps->out_of_sync_bytes == 0;
	if (ps->in_sync || ps->following_clean)
		p->said_clean = true;
	repl__rs_status(p, ps);
}

/* Writes fail when the activity log or a bitmap cannot be recorded. */
static void meta_status(const struct repl_volume *vol, struct repl_volume_status *st)
{
	const char *err = strerror(vol->bm_error ? -vol->bm_error : EIO);

	if (meta_broken(vol->meta))
		snprintf(st->meta_error, sizeof(st->meta_error), "metadata failing (%s): "
			 "every write fails with EIO until the daemon is restarted on a "
			 "working disk", err);
	else if (vol->bm_error)
		snprintf(st->meta_error, sizeof(st->meta_error), "the last bitmap flush "
			 "failed (%s): the writes waiting for it failed with EIO", err);
}

/* A partial replica (gen.h) holds every write acknowledged outside its
 * own failed writes' regions, which no replica was told are written: in
 * cluster mode the Primary acknowledges nothing without us before the
 * cluster records us Outdated (outdate.c), and that record voids the
 * partial (apply.c).  It may be promoted where no UpToDate peer is
 * connected (promote_check(), uptodate_peer()); the regions it lacks are
 * in its bitmaps for every peer, which resync them from it.  Without a
 * cluster the Primary's own record, after a timeout, may release writes
 * we lack: never then. */
static bool partial_promotable(const struct repl_volume *vol)
{
	return repl__partial(vol) && vol->eng->hooks.outdate;
}

void repl_volume_status(const struct repl_volume *vol, struct repl_volume_status *st)
{
	memset(st, 0, sizeof(*st));
	snprintf(st->name, sizeof(st->name), "%s", vol->name);
	uuid_format(meta_get(vol->meta)->uuid, st->uuid);
	st->size = vol->size;
	st->role = role_name(vol->role);
	st->disk = gen_disk_name(vol->disk_state);
	st->clients = vol->clients;
	st->io_frozen = vol->freeze > 0 || (!vol->quorate && vol->role == REPL_PRIMARY);
	meta_status(vol, st);
	st->up = !vol->down;
	st->auto_promote = vol->auto_promote;
	st->window = repl__window_state(vol);
	st->n_peers = vol->n_peers;
	for (unsigned i = 0; i < vol->n_peers; i++)
		peer_status(vol->peers[i], &st->peers[i]);
	repl__verify_status(vol, st);
	st->resync_rate_max = vol->resync_rate_max;
	st->outdate_timeout_ms = vol->outdate_timeout_ms;
	for (unsigned i = 0; i < 3; i++)
		st->after_sb[i] = sb_policy_name((enum sb_policy)vol->after_sb[i]);
	repl__resize_status(vol, st);
	st->bitmap_damaged_pages = meta_bad_pages(vol->meta);
	st->reads_from_peer = repl__stats_get(&vol->stats.peer_reads);
	st->crashed_primary = meta_get(vol->meta)->flags & META_F_PRIMARY_CRASHED;
	st->power_lost = meta_get(vol->meta)->flags & META_F_POWER_LOST;
	st->partial = partial_promotable(vol);
}

#define refuse(why, len, err, ...) (snprintf((why), (len), __VA_ARGS__), (err))

static bool all_peers_up(const struct repl_volume *vol)
{
	for (unsigned i = 0; i < vol->n_peers; i++)
		if (!repl__peer_up(vol->peers[i]))
			return false;
	return true;
}

static void tell_peers(struct repl_volume *vol)
{
	for (unsigned i = 0; i < vol->n_peers; i++)
		if (repl__peer_up(vol->peers[i]))
			repl__peer_send_state(vol->peers[i], NULL);
}

/* New generation for a promotion: always when alone (the others may have
 * moved on), and for a blank volume (generation 0 cannot be tracked). */
static void promote_generation(struct repl_volume *vol, struct meta_super *sb, bool force)
{
	struct gen_side g;

	/* Peers away from now on miss what this Primary writes: their
	 * bitmaps start at the present generation, blind to what they may
	 * have lost with their power before (meta.h, META_PF_BLIND). */
	for (unsigned i = 0; i < vol->n_peers; i++)
		if (!repl__peer_up(vol->peers[i]) && !sb->peers[i].bitmap_gen) {
			sb->peers[i].bitmap_gen = sb->gen_current;
			sb->peers[i].flags |= META_PF_BLIND;
		}
	repl__peer_gen_side(vol, -1, &g);
	if (force) {
		gen_on_force_uptodate(&g, meta_new_gen());
	} else if (!all_peers_up(vol)) {
		/* A new era, so that the replicas away can tell they missed it;
		 * connected ones follow (STATE); the old current stays in the
		 * history. */
		if (g.current) {
			memmove(&g.history[1], &g.history[0],
				sizeof(g.history) - sizeof(g.history[0]));
			g.history[0] = g.current;
		}
		g.current = meta_new_gen();
	} else if (!g.current) {
		g.current = meta_new_gen();
	}
	repl__gen_store(sb, -1, &g);
}

/* After an unclean stop that lost power (META_F_POWER_LOST: the host
 * restarted, or the replica cannot tell), until a resync or a promotion:
 * a peer that may hold writes this replica acknowledged and lost with its
 * power (plain writes are acknowledged before they are flushed, on both
 * sides, and on a Primary or a Secondary alike): one not recorded
 * Outdated here that is away, or connected, UpToDate (or partial, gen.h)
 * and either with its power kept or our sync source by the last
 * handshake (one recorded Outdated holds nothing we could have lost: our
 * data was flushed before the record, replicate.c).  NULL when there is
 * none.  Promoting this replica would make its older data the reference
 * and outdate that peer (sim seed 3435: a Secondary that lost power was
 * promoted while the old Primary, whose daemon alone had crashed, still
 * held the writes); the cluster promotes the peer instead, or this
 * replica waits for it and resyncs from it (gen.c rules 5 and 14; fully,
 * as nobody can know which regions it lost). */
static const struct peer *power_holder(const struct repl_volume *vol)
{
	const struct meta_super *sb = meta_get(vol->meta);

	if (!(sb->flags & META_F_POWER_LOST))
		return NULL;
	for (unsigned i = 0; i < vol->n_peers; i++) {
		const struct peer *p = vol->peers[i];
		if (sb->peers[p->idx].disk_state == META_OUTDATED)
			continue;
		/* A peer whose generation is older than ours holds
		 * nothing we did not flush when our data moved on (a
		 * Primary flushes before it outdates a peer, replicate.c).
		 * A peer that lost power too holds no more than we do...
		 * unless the handshake with it made us its target: then it
		 * is the reference, and promoting us would serve our older
		 * data (sim seed 2109: our own promotion had failed after its
		 * superblock reached the page cache, so we restarted
		 * "crashed as Primary" without ever serving). */
		if (repl__peer_up(p) && ((p->peer_disk != GEN_DISK_UPTODATE && !p->peer_partial) ||
					 p->hs_newer || (p->peer_lost_power && !p->hs_target)))
			continue;
		return p;
	}
	return NULL;
}

/* After a crash as Primary that kept its writes (only the daemon died):
 * a connected peer that holds every acknowledged write too and did not
 * crash (UpToDate, and neither crashed as Primary nor lost power).
 * Promoting it keeps every replica in sync at once; promoting this one
 * makes every peer resync its activity log, and if its metadata is what
 * failed, a promotion that fails half-way can leave a generation nobody
 * wrote in that looks like a split brain later (sim seed 2402).  NULL
 * when there is none: then this replica is promoted as it is. */
static const struct peer *uncrashed_peer(const struct repl_volume *vol)
{
	const struct meta_super *sb = meta_get(vol->meta);

	if (!(sb->flags & META_F_PRIMARY_CRASHED))
		return NULL;
	for (unsigned i = 0; i < vol->n_peers; i++) {
		const struct peer *p = vol->peers[i];
		/* Not one behind us: its last handshake found our data
		 * newer, or we recorded it Outdated (it says UpToDate until
		 * it hears it): promoting it would lose what it lacks, and
		 * refusing ourselves for it left no replica the cluster could
		 * promote (sim seed 7682 of the EIO profile). */
		if (repl__peer_up(p) && p->peer_disk == GEN_DISK_UPTODATE && !p->peer_crashed &&
		    !p->peer_lost_power && p->peer_role != REPL_PRIMARY && !p->hs_newer &&
		    sb->peers[p->idx].disk_state != META_OUTDATED)
			return p;
	}
	return NULL;
}

/* A connected peer that is UpToDate and kept its power: it holds the
 * regions a partial replica lacks, and is the one to promote. */
static const struct peer *uptodate_peer(const struct repl_volume *vol)
{
	for (unsigned i = 0; i < vol->n_peers; i++) {
		const struct peer *p = vol->peers[i];
		if (repl__peer_up(p) && p->peer_disk == GEN_DISK_UPTODATE && !p->peer_lost_power)
			return p;
	}
	return NULL;
}

/* The engine's promotion rules (the cluster's are its hook's). */
static int promote_check(const struct repl_volume *vol, bool force, char *why, size_t len)
{
	const struct peer *holder = force ? NULL : power_holder(vol);
	const struct peer *other = force ? NULL : uncrashed_peer(vol);

	if (vol->down)
		return refuse(why, len, -EPERM, "the volume is down on this node: "
			      "bring it up first%s", "");
	for (unsigned i = 0; i < vol->n_peers; i++) {
		struct peer *p = vol->peers[i];
		if (repl__peer_up(p) && p->peer_role == REPL_PRIMARY)
			return refuse(why, len, -EBUSY, "%s is Primary: demote it first", p->node);
		if (p->link == REPL_LINK_SYNC_TARGET && !force)
			return refuse(why, len, -EPERM, "resync from %s is still running",
				      p->node);
	}
	if (vol->disk_state != GEN_DISK_UPTODATE && !force) {
		const struct peer *up = uptodate_peer(vol);

		if (!partial_promotable(vol))
			return refuse(why, len, -EPERM, "the local disk is %s: it may lack "
				      "acknowledged writes (--force overrides)",
				      gen_disk_name(vol->disk_state));
		if (up)
			return refuse(why, len, -EPERM, "the local disk is Inconsistent where "
				      "its own writes failed, and %s is UpToDate: promote %s",
				      up->node, up->node);
	}
	if (holder)
		return refuse(why, len, -EPERM, "this replica went down uncleanly with its "
			      "host (a power loss, or it cannot tell) and may lack writes it "
			      "acknowledged that %s holds: promote %s, or connect to it first "
			      "and resync (--force overrides)", holder->node, holder->node);
	if (other)
		return refuse(why, len, -EPERM, "this replica crashed as Primary and %s, "
			      "connected and UpToDate, did not: promote %s, which needs no "
			      "resync (--force promotes this one, which resyncs its activity "
			      "log to the others)", other->node, other->node);
	return 0;
}

int repl_volume_can_promote(const struct repl_volume *vol, char *why, size_t len)
{
	return vol->role == REPL_PRIMARY ? 0 : promote_check(vol, false, why, len);
}

int repl_volume_promote(struct repl_volume *vol, bool force, char *why, size_t len)
{
	return repl__volume_promote(vol, force, false, why, len);
}

int repl__volume_promote(struct repl_volume *vol, bool force, bool handed_over, char *why,
			 size_t len)
{
	struct meta_super sb = *meta_get(vol->meta);
	bool lost;
	int r;

	if (vol->role == REPL_PRIMARY)
		return 0;
	r = promote_check(vol, force, why, len);
	if (r < 0)
		return r;
	if (force && vol->disk_state != GEN_DISK_UPTODATE)
		plog(LOG_CRIT, vol->name, "FORCED promotion of a %s replica: writes "
		     "acknowledged elsewhere may be lost", gen_disk_name(vol->disk_state));
	else if (vol->disk_state != GEN_DISK_UPTODATE)
		plog(LOG_WARNING, vol->name, "promoting a replica Inconsistent only where "
		     "its own writes failed, never acknowledged (no replica UpToDate is "
		     "connected): its peers take those regions from it");
	/* As a Secondary it acknowledged writes before they were durable (as
	 * the old Primary did): from now on its data is the reference, and a
	 * power loss must not take those writes with it when the replica
	 * that also had them is away or outdated by this promotion.  Rare
	 * enough to wait for here, as meta_update() below does. */
	if ((r = repl__iopool_sync(vol->pool, &lost)) < 0) {
		if (lost)
			vol->eng->write_obs->disk_lost(vol);
		return refuse(why, len, r, "cannot flush the backing: %s", strerror(-r));
	}
	/* Peers that differ from us were only exchanging state: reconnect
	 * them (still as a Secondary, so nothing is outdated) to resync.  So
	 * are those on a link that carries writes but that are not UpToDate
	 * (a write failed there, or the old Primary outdated them): what
	 * they lack is in the old Primary's bitmap, not ours, and a resync
	 * of only what fails from now on would end with them UpToDate
	 * without it (sim seed 1985 of the EIO profile, a live migration
	 * right after a failed write); the handshake decides what they take. */
	for (unsigned i = 0; i < vol->n_peers; i++) {
		struct peer *p = vol->peers[i];
		if (repl__peer_up(p) && (p->suppressed || (p->link == REPL_LINK_CONNECTED &&
							    p->peer_disk != GEN_DISK_UPTODATE)))
			repl__peer_drop(p, "reconnecting to resync after promotion");
	}
	promote_generation(vol, &sb, force);
	sb.role = REPL_PRIMARY;
	sb.disk_state = META_UPTODATE;
	sb.flags &= ~(META_F_POWER_LOST | META_F_HOST_RESTARTED);	/* the reference now */
	/* Refused, it must not come back at a restart (issue 13): with its
	 * role Primary and a generation no peer is told of, it would make
	 * a split brain with the replica promoted instead. */
	r = repl__lossmark_update_void_failed(vol, &sb);
	if (r < 0)
		return refuse(why, len, r, "cannot write the metadata%s", "");
	repl__lossmark_recorded(vol, REPL_LOSS_BLANK);	/* the reference now */
	vol->role = REPL_PRIMARY;
	vol->handed_over = handed_over;
	vol->disk_state = GEN_DISK_UPTODATE;
	vol->cluster_outdated = false;	/* the reference now: the record is void */
	plog(LOG_NOTICE, vol->name, "promoted to Primary%s", force ? " (forced)" : "");
	repl__rep_intent_start(vol);
	tell_peers(vol);
	if (vol->lost_primary) {
		vol->lost_primary = false;
		for (unsigned i = 0; i < vol->n_peers; i++)
			vol->peers[i]->asks_owed = repl__peer_up(vol->peers[i]);
		repl__recent_after_promotion(vol);
	}
	repl__changed(vol);
	/* after the cluster heard of the role (changed): its outdate
	 * requests come from the Primary it knows */
	repl__rep_outdate_absent(vol);
	return 0;
}

int repl_volume_demote(struct repl_volume *vol, char *why, size_t len)
{
	struct meta_super sb;
	char n[16];
	bool lost;
	int r;

	if (vol->role != REPL_PRIMARY)
		return 0;
	if (vol->clients) {
		snprintf(n, sizeof(n), "%u", vol->clients);
		return refuse(why, len, -EBUSY, "%s NBD client(s) still attached", n);
	}
	if (vol->writes) {
		repl__writes_check(vol, "demote", false);
		return refuse(why, len, -EBUSY, "writes still in flight%s", "");
	}
	repl__writes_check(vol, "demote", true);
	/* What it acknowledged as Primary goes to disk first: as a
	 * Secondary it keeps no activity log, and the Primary promoted next
	 * tracks only what it sends itself (peer_unflushed.c).  A power
	 * loss after the demote took such writes with nothing to resync
	 * them (tests/repl-demote-powerloss.sh).  A flush that lost writes
	 * makes this replica step down for one that holds them all, if any
	 * does (repl__rep_disk_lost()). */
	if ((r = repl__iopool_sync(vol->pool, &lost)) < 0) {
		if (lost)
			vol->eng->write_obs->disk_lost(vol);
		if (vol->role != REPL_PRIMARY)
			return 0;
		return refuse(why, len, r, "cannot flush the backing: %s", strerror(-r));
	}
	sb = *meta_get(vol->meta);	/* the step-down's, if any */
	sb.role = REPL_SECONDARY;
	r = meta_update(vol->meta, &sb);
	if (r < 0)
		return refuse(why, len, r, "cannot write the metadata%s", "");
	vol->role = REPL_SECONDARY;
	repl__al_reset(vol);
	plog(LOG_NOTICE, vol->name, "demoted to Secondary");
	tell_peers(vol);
	repl__changed(vol);
	return 0;
}

void repl_volume_mark_outdated(struct repl_volume *vol)
{
	struct meta_super sb = *meta_get(vol->meta);
	bool was_partial;

	/* counted even when it changes nothing now: a resync that ends
	 * after its source went must not make this replica UpToDate then */
	vol->outdate_notices++;
	if (vol->role == REPL_PRIMARY)
		return;
	was_partial = repl__partial(vol);
	vol->cluster_outdated = true;
	if (vol->disk_state != GEN_DISK_UPTODATE) {
		if (was_partial)	/* its Primary acknowledges writes without it */
			repl__peers_tell_state(vol);
		return;
	}
	sb.disk_state = META_OUTDATED;
	/* Outdated even if the metadata cannot say so: the cluster's record
	 * does (and says it again at a restart).  Left UpToDate here, the
	 * peers took this replica for the one to promote, the cluster
	 * refused it, and neither was promoted (EIO seed 31556). */
	if (meta_update(vol->meta, &sb) < 0)
		plog(LOG_ERR, vol->name, "cannot record this replica as Outdated in its "
		     "metadata: Outdated in memory, as the cluster records it");
	vol->disk_state = GEN_DISK_OUTDATED;
	plog(LOG_WARNING, vol->name, "the cluster says this replica is Outdated");
	repl__peers_tell_state(vol);
	/* A split brain found while we still said UpToDate may be one the
	 * Primary resolves now (gen.c rule 23): ask again. */
	for (unsigned i = 0; i < vol->n_peers; i++)
		repl__peer_retry(vol->peers[i]);
	repl__changed(vol);
}

static struct peer *peer_named(struct repl_volume *vol, const char *node)
{
	for (unsigned i = 0; i < vol->n_peers; i++)
		if (strcmp(vol->peers[i]->node, node) == 0)
			return vol->peers[i];
	return NULL;
}

void repl_volume_peer_outdated(struct repl_volume *vol, const char *node)
{
	struct peer *p = peer_named(vol, node);
	struct meta_super sb = *meta_get(vol->meta);

	if (!p || sb.peers[p->idx].disk_state == META_OUTDATED || repl__peer_up(p))
		return;
	sb.peers[p->idx].disk_state = META_OUTDATED;
	if (meta_update(vol->meta, &sb) < 0)
		plog(LOG_ERR, vol->name, "cannot record %s as Outdated", node);
}

void repl_volume_peer_gone(struct repl_volume *vol, const char *node)
{
	struct peer *p = peer_named(vol, node);

	if (p && p->conn != PC_IDLE)
		repl__peer_drop(p, "the node left the cluster");
}

void repl_volume_crossing_lost(struct repl_volume *vol, const char *node)
{
	struct peer *p = peer_named(vol, node);

	if (!p || vol->role == REPL_PRIMARY)
		return;
	if (!p->took_primary) {
		p->lost_crossing = true;	/* and nothing it sends from now on */
		return;
	}
	/* Its writes may have overwritten, here, writes the other Primary
	 * had acknowledged, and its generation is one nobody continues: no
	 * bitmap or generation tells which regions to take back. */
	plog(LOG_WARNING, vol->name, "%s was promoted at the same time as another replica "
	     "and its claim came second: what this replica took from it was never "
	     "acknowledged; starting over as a blank replica (a full resync from the "
	     "Primary follows)", node);
	repl__volume_start_over(vol, "re-deciding after a crossed promotion");
}

int repl_volume_peer_address(struct repl_volume *vol, const char *node, const char *host,
			     const char *port)
{
	struct peer *p = peer_named(vol, node);

	return p ? repl__peer_set_address(p, host, port) : -ENOENT;
}

int repl_volume_remove(struct repl_volume *vol)
{
	struct repl_engine *eng = vol->eng;

	if (vol->role == REPL_PRIMARY || vol->clients)
		return -EBUSY;
	for (struct repl_volume **pp = &eng->volumes; *pp; pp = &(*pp)->next)
		if (*pp == vol) {
			*pp = vol->next;
			break;
		}
	plog(LOG_NOTICE, vol->name, "removed (its backing and metadata stay on disk)");
	repl__volume_free(vol);
	return 0;
}

int repl_volume_set_up(struct repl_volume *vol, bool up)
{
	if (vol->down == !up)
		return 0;
	if (!up && (vol->role == REPL_PRIMARY || vol->clients))
		return -EBUSY;
	vol->down = !up;
	repl__peers_set_down(vol, !up);
	plog(LOG_NOTICE, vol->name, "%s", up ? "up: connecting to its peers" : "down");
	repl__changed(vol);
	return 0;
}

bool repl_volume_is_up(const struct repl_volume *vol)
{
	return !vol->down;
}

void repl_volume_peer_uptodate(struct repl_volume *vol, const char *node)
{
	struct peer *p = peer_named(vol, node);
	struct meta_super sb = *meta_get(vol->meta);

	if (!p || sb.peers[p->idx].disk_state != META_OUTDATED)
		return;
	sb.peers[p->idx].disk_state = META_UPTODATE;
	if (meta_update(vol->meta, &sb) == 0)
		plog(LOG_INFO, vol->name, "%s is in sync again", node);
}

void repl_volume_uptodate_by(struct repl_volume *vol, const char *primary_node)
{
	struct peer *p = peer_named(vol, primary_node);
	struct meta_super sb = *meta_get(vol->meta);

	vol->cluster_outdated = false;	/* the cluster's record is gone */
	if (!p || !repl__peer_up(p) || p->peer_role != REPL_PRIMARY ||
	    p->link != REPL_LINK_CONNECTED || p->suppressed ||
	    vol->disk_state != GEN_DISK_OUTDATED || vol->role == REPL_PRIMARY)
		return;
	sb.disk_state = META_UPTODATE;
	if (meta_update(vol->meta, &sb) < 0)
		return;
	vol->disk_state = GEN_DISK_UPTODATE;
	plog(LOG_NOTICE, vol->name, "the Primary %s says this replica is in sync: UpToDate",
	     primary_node);
	repl__peers_tell_state(vol);
	repl__changed(vol);
}
