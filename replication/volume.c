/* volume.c: one volume as this node holds it: its backing store, its
 * metadata, its worker pool and its role, opened and torn down, and the
 * table that takes what its links report (gate.c routes its I/O). */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "al.h"
#include "al_vol.h"
#include "cbt.h"
#include "linkcrypt.h"
#include "log.h"
#include "meta.h"
#include "peer.h"
#include "pread.h"
#include "repl_int.h"
#include "resize.h"
#include "sys.h"
#include "util.h"

#define DEFAULT_IO_THREADS 8
#define MAX_IO_THREADS 64

/* A link came up to carry data: the handshake's decision d starts a
 * resync either way or finds the replicas in sync. */
static void peer_up_data(struct peer *p, enum gen_decision d)
{
	switch (d) {
	case GEN_SOURCE_BITMAP:
	case GEN_SOURCE_FULL:
		repl__rs_start_source(p, d == GEN_SOURCE_FULL);
		break;
	case GEN_TARGET_BITMAP:
	case GEN_TARGET_FULL:
		repl__rs_start_target(p);
		break;
	default:
		p->link = REPL_LINK_CONNECTED;
		break;
	}
}

/* What a volume's links report, and which module takes it (peer.h): the
 * links (peer.c, peer_state.c) name none of these. */
static const struct peer_hooks engine_hooks = {
	.apply = repl__rep_apply,		/* apply.c */
	.ack = repl__rep_ack,			/* replicate.c */
	.rs_data = repl__rs_on_data,		/* resync_target.c */
	.rs_flush = repl__rs_on_flush,
	.rs_done = repl__rs_on_done,
	.rs_ack = repl__rs_on_ack,		/* resync.c */
	.rs_more = repl__rs_more,
	.rs_source = repl__rs_start_source,
	.rs_peer_state = repl__rs_on_peer_state,
	.primary_seq = repl__recent_peer_ack,	/* recent.c */
	.recent_ask = repl__recent_ask,
	.ping_acked = repl__recent_ping_acked,
	.verify_request = repl__verify_on_request,	/* verify.c */
	.verify_reply = repl__verify_on_reply,
	.takeover = repl__window_on_takeover,	/* window.c */
	.handover = repl__window_on_handover,
	.size = repl__resize_peer_size,		/* resize.c */
	.link_ok = repl__resize_link_ok,
	.ckpt = repl__cbt_on_msg,		/* cbt.c */
	.read_request = repl__pread_on_request,	/* pread.c */
	.read_answer = repl__pread_on_answer,
	.checkpoints_up = repl__cbt_peer_up,
	.up_data = peer_up_data,		/* above */
	.authed = repl__rep_gen_catch_up,	/* outdate.c */
	.outdate_confirmed = repl__rep_outdate_confirmed,
	.changed = repl__changed,		/* loop.c */
	/* A verify running over the link ends first, then the writes in
	 * flight to the peer go to its bitmap (outdate.c), then a
	 * migration window with it closes, then the reads asked of it go to
	 * another peer. */
	.down = { repl__verify_peer_down, repl__rep_peer_down, repl__window_peer_down,
		  repl__pread_peer_down },
};

/* The workers' hook before a write reaches the store (iopool.c). */
static void cbt_before_write(void *cbt, uint64_t off, uint64_t len)
{
	repl__cbt_before_write(cbt, off, len);
}

/* A new local volume is Primary from the start.  A new replica is a blank
 * Secondary, generation 0.  Over a backing file created just now it is
 * UpToDate, because a sparse new file reads as zeroes like every other new
 * replica: two blank replicas need no initial sync, a blank one joining a
 * written one gets a full one.  Over a backing that was already there (a
 * device, or a file whose metadata was lost or is looked for in the wrong
 * place) it is Inconsistent: that data may lack writes the others took, and
 * nothing here can tell.  It takes a full resync from a peer, or a person
 * vouches for it with a forced promotion (DRBD's primary --force).  A local
 * volume has no other copy to prefer: its data is current. */
static int volume_new_meta(struct repl_volume *vol, const char *path,
			   const struct repl_volume_config *cfg, bool had_data)
{
	struct meta_super sb;
	int r;

	memset(&sb, 0, sizeof(sb));
	if (cfg->uuid)
		memcpy(sb.uuid, cfg->uuid, sizeof(sb.uuid));
	else if ((r = meta_generate_uuid(sb.uuid)) < 0)
		return r;
	sb.size = vol->size;
	sb.region_shift = cfg->region_shift ? cfg->region_shift : META_REGION_SHIFT_DEFAULT;
	sb.role = cfg->n_peers ? REPL_SECONDARY : REPL_PRIMARY;
	sb.disk_state = had_data && cfg->n_peers ? META_INCONSISTENT : META_UPTODATE;
	sb.gen_current = cfg->n_peers ? 0 : meta_new_gen();
	for (unsigned i = 0; i < cfg->n_peers; i++)
		snprintf(sb.peers[i].node, sizeof(sb.peers[i].node), "%s", cfg->peers[i].node);
	if (repl__sys->boot_id(sb.boot_id) < 0)
		memset(sb.boot_id, 0, sizeof(sb.boot_id));
	r = meta_create(path, &sb, &vol->meta);
	if (r < 0)
		return r;
	plog(LOG_NOTICE, vol->name, "created metadata %s", path);
	if (had_data && cfg->n_peers)
		plog(LOG_WARNING, vol->name, "metadata %s is missing but backing %s holds data: "
		     "this replica is Inconsistent (its data may be stale) until it takes a full "
		     "resync from a peer; if this data is known to be good, say so with "
		     "'promote %s --force'", path, vol->backing, vol->name);
	else if (had_data)
		plog(LOG_NOTICE, vol->name, "new metadata over the existing data of %s",
		     vol->backing);
	return 0;
}

/* After a crash as Primary: the regions in the activity log may differ
 * between the replicas, so every peer's bitmap gets them (a bounded
 * resync instead of a full one).  The log is emptied only once the peers'
 * bits are durable: in one flush with them, a flush that failed could
 * leave the log's pages cleared on disk without the peers' (a failed
 * fdatasync may write some pages and drop others), and the next start
 * resynced neither (sim seed 5909 of the --small-al profile). */
static void intent_to_peers(struct repl_volume *vol, unsigned n_peers)
{
	uint64_t regions = meta_regions(vol->meta), n = 0;
	uint64_t rsz = UINT64_C(1) << meta_get(vol->meta)->region_shift;

	for (uint64_t r = meta_bit_next(vol->meta, META_INTENT, 0); r < regions;
	     r = meta_bit_next(vol->meta, META_INTENT, r + 1), n++)
		for (unsigned i = 0; i < n_peers; i++)
			meta_bits_set_range(vol->meta, i, r * rsz, rsz);
	if (meta_bitmap_flush(vol->meta) < 0) {
		plog(LOG_ERR, vol->name, "cannot record the activity log in the bitmaps");
		return;
	}
	meta_bits_clear_range(vol->meta, META_INTENT, 0, vol->size);
	plog(LOG_NOTICE, vol->name, "crashed as Primary: %llu region(s) of the activity "
	     "log will be resynced", (unsigned long long)n);
}

/* The reason of a failed repl_volume_add, for the caller (the log has
 * more). */
static void add_error(const struct repl_volume_config *cfg, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void add_error(const struct repl_volume_config *cfg, const char *fmt, ...)
{
	va_list ap;

	if (!cfg->error || !cfg->error_len)
		return;
	va_start(ap, fmt);
	vsnprintf(cfg->error, cfg->error_len, fmt, ap);
	va_end(ap);
}

/* After an unclean stop: is this the same boot of the host as the one
 * that last opened the replica (*kept)?  Then only the daemon died, and
 * the page cache holds every write it made: flushed now, they are as
 * durable as if it had shut down cleanly.  A zero boot id (unknown) is a
 * no.  A flush that fails may have dropped what it did not write
 * (iopool.c), and a start after this one would find nothing left to
 * flush: with peers, the power loss is recorded before the flush and
 * taken back once it worked (sim seed 3742 of the EIO profile).  0, or
 * -errno if that record failed.  *restarted: both boot ids are known and
 * differ, so the host did restart (a no that is certain,
 * META_F_HOST_RESTARTED). */
static int host_kept_writes(struct repl_volume *vol, const struct meta_super *sb,
			    const uint8_t *boot_id, unsigned n_peers, bool *kept,
			    bool *restarted)
{
	bool known = !all_zero(sb->boot_id, sizeof(sb->boot_id));
	bool same = known && !memcmp(sb->boot_id, boot_id, sizeof(sb->boot_id));
	struct meta_super pre = *sb;
	int r;

	*kept = false;
	*restarted = known && !same && !all_zero(boot_id, sizeof(sb->boot_id));
	if (!same)
		return 0;
	pre.flags |= META_F_POWER_LOST;
	if (n_peers && vol->fd >= 0 && !(sb->flags & META_F_POWER_LOST) &&
	    (r = meta_update(vol->meta, &pre)) < 0)
		return r;
	if (vol->fd >= 0 && repl__sys->fdatasync(vol->fd) < 0) {
		plog_errno(LOG_ERR, vol->name, errno, "cannot flush the backing after the "
			   "daemon's crash: taking it as a power loss");
		return 0;
	}
	*kept = true;
	return 0;
}

/* The last run lost data on this boot that its metadata could not record
 * (lossmark.c): recorded now, in upd. */
static void loss_apply(struct repl_volume *vol, struct meta_super *upd, enum repl_loss loss)
{
	static const char *const what[] = {
		[REPL_LOSS_POWER] = "writes not flushed may be lost, as with a power loss",
		[REPL_LOSS_INCONSISTENT] = "Inconsistent until resynced",
		[REPL_LOSS_BLANK] = "a blank replica (a full resync)",
	};

	plog(LOG_WARNING, vol->name, "%s says this disk lost writes on this boot that the "
	     "metadata could not record: %s", vol->loss_marker, what[loss]);
	upd->flags &= ~META_F_PARTIAL;
	if (loss == REPL_LOSS_POWER)
		upd->flags |= META_F_POWER_LOST;
	else
		upd->disk_state = META_INCONSISTENT;
	if (loss < REPL_LOSS_BLANK)
		return;
	upd->gen_current = 0;
	memset(upd->gen_history, 0, sizeof(upd->gen_history));
	for (unsigned i = 0; i < META_MAX_PEERS; i++)
		upd->peers[i].bitmap_gen = 0;
	for (unsigned i = 0; i < META_BITMAPS; i++)
		meta_bits_clear_range(vol->meta, i, 0, vol->size);
}

static int volume_open_meta(struct repl_volume *vol, const char *path,
			    const struct repl_volume_config *cfg, bool had_data)
{
	const struct meta_super *sb;
	struct meta_super upd;
	enum repl_loss loss = REPL_LOSS_NONE;
	uint64_t void_seq = 0;
	uint8_t boot_id[16];
	int r;

	if (repl__sys->access(path, F_OK) < 0 && errno == ENOENT) {
		repl__lossmark_forget(vol);	/* an old replica's */
		return volume_new_meta(vol, path, cfg, had_data);
	}
	if (repl__sys->boot_id(boot_id) < 0)
		memset(boot_id, 0, sizeof(boot_id));
	if (cfg->n_peers)
		loss = repl__lossmark_get(vol, boot_id, &void_seq);
	r = meta_open_void(path, void_seq, &vol->meta);
	if (r < 0) {
		plog_errno(LOG_ERR, vol->name, -r, "cannot read metadata %s", path);
		if (r == -EUCLEAN)
			add_error(cfg, "metadata %s is damaged or not replagent metadata "
				  "(the log says what is wrong with it)", path);
		else
			add_error(cfg, "cannot read metadata %s: %s", path, strerror(-r));
		return r;
	}
	if (meta_bad_pages(vol->meta))
		plog(LOG_ERR, vol->name, "%llu bitmap page(s) of metadata %s failed their check: "
		     "their ranges are marked out of sync and will be resynced",
		     (unsigned long long)meta_bad_pages(vol->meta), path);
	r = repl__resize_open(vol, cfg->size, cfg->error, cfg->error_len);
	if (r < 0)
		return r;
	sb = meta_get(vol->meta);
	upd = *sb;
	memcpy(upd.boot_id, boot_id, sizeof(upd.boot_id));
	if (!(sb->flags & META_F_CLEAN)) {
		bool restarted, kept;

		r = host_kept_writes(vol, sb, upd.boot_id, cfg->n_peers, &kept, &restarted);
		if (r < 0) {
			plog_errno(LOG_ERR, vol->name, -r, "cannot record the unclean stop");
			return r;
		}

		plog(LOG_WARNING, vol->name, "was not shut down cleanly%s: %s",
		     sb->role == REPL_PRIMARY ? " while Primary" : "",
		     kept ? "only the daemon stopped, the host kept every write" :
		     "the host restarted since (or it cannot tell): writes it acknowledged "
		     "and had not flushed may be lost");
		if (sb->role == REPL_PRIMARY && cfg->n_peers)
			upd.flags |= META_F_PRIMARY_CRASHED;
		if (!kept && cfg->n_peers)
			upd.flags |= META_F_POWER_LOST | (restarted ? META_F_HOST_RESTARTED : 0);
	} else if ((sb->flags & META_F_PRIMARY_CRASHED) && cfg->n_peers &&
		   all_zero(sb->boot_id, sizeof(sb->boot_id))) {
		/* A crash as Primary recorded before boot ids were: it may
		 * have lost power, as was assumed then. */
		upd.flags |= META_F_POWER_LOST;
	}
	if (upd.flags & META_F_PRIMARY_CRASHED)
		intent_to_peers(vol, cfg->n_peers);
	else	/* nothing was being written: the activity log starts empty */
		meta_bits_clear_range(vol->meta, META_INTENT, 0, vol->size);
	if (loss)
		loss_apply(vol, &upd, loss);
	/* A replica starts as Secondary; only a local volume keeps its role. */
	if (cfg->n_peers)
		upd.role = REPL_SECONDARY;
	/* A power loss may have taken writes that a partial replica (gen.h)
	 * held, as any other. */
	if (upd.flags & META_F_POWER_LOST)
		upd.flags &= ~META_F_PARTIAL;
	/* Open for business: clear the clean flag until we close cleanly. */
	upd.flags &= ~META_F_CLEAN;
	r = meta_update(vol->meta, &upd);
	if (r == 0 && loss == REPL_LOSS_BLANK)
		r = meta_bitmap_flush(vol->meta);
	if (r == 0)
		repl__lossmark_recorded(vol, loss);
	return r;
}

static int volume_check_size(const struct repl_volume_config *cfg, uint64_t size)
{
	if (size == 0 || size % 512)
		return -EINVAL;
	if (cfg->size && cfg->size != size)
		return -EINVAL;
	return 0;
}

static uint8_t disk_from_meta(uint8_t d)
{
	switch (d) {
	case META_UPTODATE: return GEN_DISK_UPTODATE;
	case META_OUTDATED: return GEN_DISK_OUTDATED;
	case META_CONSISTENT: return GEN_DISK_CONSISTENT;
	case META_DISKLESS: return GEN_DISK_DISKLESS;
	default: return GEN_DISK_INCONSISTENT;
	}
}

static int replication_setup(struct repl_volume *vol, const struct repl_volume_config *cfg)
{
	if (!cfg->n_peers)
		return 0;
	if (!cfg->node || !cfg->key || cfg->key_len == 0 || cfg->n_peers > REPL_MAX_PEERS)
		return -EINVAL;
	vol->node = strdup(cfg->node);
	vol->key = malloc(cfg->key_len);
	if (!vol->node || !vol->key)
		return -ENOMEM;
	memcpy(vol->key, cfg->key, cfg->key_len);
	vol->key_len = cfg->key_len;
	vol->link_plain = cfg->link_plain;
	if (vol->link_plain) {
		plog(LOG_WARNING, vol->name, "link-security = none: replica links are "
		     "authenticated at connection only; anyone on the path can read, "
		     "alter or inject frames after that");
	} else {
		static bool said;	/* once per process, not per volume */
		if (!said)
			plog(LOG_INFO, NULL, "replica links are sealed with AES-256-GCM by %s",
			     repl__lc_impl_name(repl__lc_impl()));
		said = true;
	}
	return repl__peers_start(vol, cfg, &engine_hooks);
}

/* The tuning a new volume starts with (local ones too, so that status
 * shows what a replica added later would use). */
static void initial_tuning(struct repl_volume *vol, const struct repl_volume_config *cfg)
{
	struct sb_config d = SB_CONFIG_DEFAULT;

	vol->outdate_timeout_ms = cfg->outdate_timeout_ms ? cfg->outdate_timeout_ms : 10000;
	vol->resync_rate_max = cfg->resync_rate_max;
	if (cfg->sb_policy_set) {
		memcpy(vol->after_sb, cfg->after_sb, sizeof(vol->after_sb));
	} else {
		vol->after_sb[0] = (uint8_t)d.after_sb_0pri;
		vol->after_sb[1] = (uint8_t)d.after_sb_1pri;
		vol->after_sb[2] = (uint8_t)d.after_sb_2pri;
	}
}

int repl_volume_set_tuning(struct repl_volume *vol, const struct repl_volume_config *cfg)
{
	unsigned timeout = cfg->outdate_timeout_ms ? cfg->outdate_timeout_ms : 10000;

	for (unsigned i = 0; cfg->sb_policy_set && i < 3; i++)
		if (!sb_policy_valid(i, (enum sb_policy)cfg->after_sb[i]))
			return -EINVAL;
	if (vol->resync_rate_max != cfg->resync_rate_max || vol->outdate_timeout_ms != timeout)
		plog(LOG_INFO, vol->name, "resync rate limit %llu bytes/s (0: none), "
		     "outdate timeout %u ms", (unsigned long long)cfg->resync_rate_max, timeout);
	if (cfg->sb_policy_set && memcmp(vol->after_sb, cfg->after_sb, sizeof(vol->after_sb)))
		plog(LOG_INFO, vol->name, "split-brain policies %s, %s, %s",
		     sb_policy_name((enum sb_policy)cfg->after_sb[0]),
		     sb_policy_name((enum sb_policy)cfg->after_sb[1]),
		     sb_policy_name((enum sb_policy)cfg->after_sb[2]));
	vol->resync_rate_max = cfg->resync_rate_max;
	vol->outdate_timeout_ms = timeout;
	if (cfg->sb_policy_set)
		memcpy(vol->after_sb, cfg->after_sb, sizeof(vol->after_sb));
	return 0;
}

int repl_volume_add(struct repl_engine *eng, const struct repl_volume_config *cfg,
		    struct repl_volume **out)
{
	struct repl_volume *vol;
	unsigned threads = cfg->io_threads ? cfg->io_threads : DEFAULT_IO_THREADS;
	bool have_meta, had_backing;
	int r;

	add_error(cfg, "%s", "");
	if (!cfg->name || !cfg->backing || !cfg->meta || threads > MAX_IO_THREADS)
		return -EINVAL;
	if (repl_volume_find(eng, cfg->name))
		return -EBUSY;
	vol = calloc(1, sizeof(*vol));
	if (!vol)
		return -ENOMEM;
	vol->eng = eng;
	vol->fd = -1;
	vol->quorate = true;
	vol->held_tail = &vol->held_head;
	vol->al_wait_tail = &vol->al_wait;
	vol->auto_promote = cfg->auto_promote && cfg->n_peers;
	vol->name = strdup(cfg->name);
	vol->backing = strdup(cfg->backing);
	vol->loss_marker = cfg->loss_marker ? strdup(cfg->loss_marker) : NULL;
	if (!vol->name || !vol->backing || (cfg->loss_marker && !vol->loss_marker) ||
	    repl__window_new(vol) < 0) {
		r = -ENOMEM;
		goto fail;
	}
	r = repl__al_open(vol, cfg->al_extents, cfg->al_extent_shift);
	if (r < 0) {
		if (r == -EINVAL)
			add_error(cfg, "al-extents %u is out of range (%u to %u)", cfg->al_extents,
				  AL_EXTENTS_MIN, AL_EXTENTS_MAX);
		goto fail;
	}
	/* Metadata without its backing means the data is gone: never make
	 * a fresh empty file that the metadata would call UpToDate. */
	have_meta = repl__sys->access(cfg->meta, F_OK) == 0;
	had_backing = repl__sys->access(cfg->backing, F_OK) == 0;
	r = repl__store_open(cfg->backing, have_meta ? 0 : cfg->size, &vol->fd,
			     &vol->size, &vol->blockdev);
	if (r == -ENOENT && have_meta) {
		plog(LOG_ERR, cfg->name, "backing %s is missing but metadata %s exists: "
		     "restore the backing, or remove the metadata to start empty",
		     cfg->backing, cfg->meta);
		add_error(cfg, "backing %s is missing but metadata %s exists", cfg->backing,
			  cfg->meta);
		goto fail;
	}
	if (r < 0) {
		plog_errno(LOG_ERR, cfg->name, -r, "cannot open backing %s", cfg->backing);
		add_error(cfg, "cannot open backing %s: %s", cfg->backing, strerror(-r));
		goto fail;
	}
	/* With metadata, resize.c checks the sizes (a replica may grow). */
	r = have_meta ? 0 : volume_check_size(cfg, vol->size);
	if (r < 0) {
		plog(LOG_ERR, cfg->name, "backing %s has %llu bytes, expected %llu "
		     "(a multiple of 512)", cfg->backing,
		     (unsigned long long)vol->size, (unsigned long long)cfg->size);
		add_error(cfg, "backing %s has %llu bytes, expected %llu", cfg->backing,
			  (unsigned long long)vol->size, (unsigned long long)cfg->size);
		goto fail;
	}
	/* A device always holds data; a file did unless we just made it. */
	r = volume_open_meta(vol, cfg->meta, cfg, had_backing || vol->blockdev);
	if (r < 0)
		goto fail;
	if (vol->al_shift < meta_get(vol->meta)->region_shift ||
	    vol->al_shift > META_REGION_SHIFT_MAX) {
		add_error(cfg, "activity-log extents of 2^%u bytes: not between the "
			  "bitmap's regions (2^%u) and 2^%u", vol->al_shift,
			  meta_get(vol->meta)->region_shift, META_REGION_SHIFT_MAX);
		r = -EINVAL;
		goto fail;
	}
	vol->role = meta_get(vol->meta)->role ? REPL_PRIMARY : REPL_SECONDARY;
	vol->disk_state = disk_from_meta(meta_get(vol->meta)->disk_state);
	r = repl__iopool_new(eng, threads, vol->fd, vol->blockdev, vol->name, &vol->pool);
	if (r < 0)
		goto fail;
	repl__iopool_set_inline(vol->pool, !cfg->no_inline_writes);
	r = repl__cbt_open(vol, cfg->meta);
	if (r < 0)
		goto fail;
	r = repl__apply_open(vol);
	if (r < 0)
		goto fail;
	repl__iopool_set_before_write(vol->pool, cbt_before_write, vol->cbt);
	initial_tuning(vol, cfg);
	r = replication_setup(vol, cfg);
	if (r < 0)
		goto fail;
	vol->opened = true;
	vol->next = eng->volumes;
	eng->volumes = vol;
	plog(LOG_INFO, vol->name, "serving %s (%llu bytes, %s)", vol->backing,
	     (unsigned long long)vol->size, vol->role == REPL_PRIMARY ? "Primary" : "Secondary");
	repl__resize_opened(vol);
	if (out)
		*out = vol;
	return 0;
fail:
	if (cfg->error && cfg->error_len && !cfg->error[0])
		add_error(cfg, "%s", strerror(-r));
	repl__volume_free(vol);
	return r;
}

/* Stops replicating: held acknowledgements go, connections close. */
void repl__volume_disconnect(struct repl_volume *vol)
{
	repl__window_stop(vol);
	repl__verify_free(vol);
	repl__recent_free(vol);
	repl__resize_stop(vol);
	repl__rep_close(vol);
	repl__peers_stop(vol);
	repl__pread_free(vol);
}

void repl__volume_quiesce(struct repl_volume *vol)
{
	repl__iopool_free(vol->pool);
	vol->pool = NULL;
}

/* Clean close: every queued I/O finishes (the pool joins its workers),
 * the data is made durable, and the metadata says the shutdown was clean. */
void repl__volume_free(struct repl_volume *vol)
{
	struct meta_super sb;
	unsigned n_peers;

	if (!vol)
		return;
	n_peers = vol->n_peers;
	repl__volume_disconnect(vol);
	repl__volume_quiesce(vol);
	if (vol->opened)
		repl__writes_check(vol, "teardown", true);
	repl__resize_free(vol);
	repl__peers_free(vol);
	/* Not after a start that failed: it wrote nothing, and a flush that
	 * fails may drop what an earlier run left unflushed (iopool.c), with
	 * no record of it.  One that fails here is recorded as a power loss,
	 * not a clean stop (sim seed 3742 of the EIO profile). */
	if (vol->opened) {
		sb = *meta_get(vol->meta);
		if (vol->fd >= 0 && repl__sys->fdatasync(vol->fd) < 0) {
			plog_errno(LOG_ERR, vol->name, errno, "fdatasync at close: "
				   "writes not flushed may be lost, as with a power loss");
			if (n_peers)
				sb.flags |= META_F_POWER_LOST;
		} else {
			sb.flags |= META_F_CLEAN;
		}
		if (meta_update(vol->meta, &sb) < 0) {
			plog(LOG_ERR, vol->name, "could not record the shutdown");
			if (sb.flags & META_F_POWER_LOST)
				repl__lossmark_set(vol, REPL_LOSS_POWER);
		}
	}
	meta_close(vol->meta);
	repl__al_free(vol);
	repl__apply_free(vol);
	repl__window_free(vol);
	repl__cbt_free(vol->cbt);
	if (vol->fd >= 0)
		repl__sys->close(vol->fd);
	free(vol->name);
	free(vol->backing);
	free(vol->loss_marker);
	free(vol->node);
	if (vol->key)
		memset(vol->key, 0, vol->key_len);
	free(vol->key);
	free(vol);
}

const char *repl_volume_name(const struct repl_volume *vol) { return vol->name; }
uint64_t repl_volume_size(const struct repl_volume *vol) { return vol->size; }
enum repl_role repl_volume_role(const struct repl_volume *vol) { return vol->role; }
bool repl_volume_handed_over(const struct repl_volume *vol)
{
	return vol->role == REPL_PRIMARY && vol->handed_over;
}
unsigned repl_volume_clients(const struct repl_volume *vol) { return vol->clients; }

/* The local client attaches and detaches as an NBD client does: it
 * counts in clients (a migration window's, auto-demote, remove). */
void repl_volume_set_local_client(struct repl_volume *vol, uint64_t size)
{
	bool was = vol->local_client_size != 0;

	vol->local_client_size = size;
	if (was == (size != 0))
		return;
	if (size)
		vol->clients++;
	else
		vol->clients--;
	repl__window_clients_changed(vol);
	repl__changed(vol);
}

void repl_volume_uuid(const struct repl_volume *vol, char out[37])
{
	uuid_format(meta_get(vol->meta)->uuid, out);
}
