/* resize.c: see resize.h.  The online grow of one replica (the backing on
 * a worker, then the metadata and the size on the loop thread), the sizes
 * its peers announce, the size a new NBD client gets, and the rule a link
 * follows while sizes differ.  Not here: the metadata file (meta.c), the
 * backing's system calls (store.c), what makes every replica grow (the
 * program: replagentd's cluster mode sends the new size to every node). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "al_vol.h"
#include "log.h"
#include "meta.h"
#include "peer.h"
#include "resize.h"
#include "util.h"

#define RETRY_MIN_MS 5000	/* a grow that failed is tried again this late, */
#define RETRY_MAX_MS 300000	/* twice as late each time, up to this */

/* ---- pure decisions -------------------------------------------------------- */

struct resize_open resize_open_decide(uint64_t backing, bool blockdev, uint64_t meta,
				      uint64_t want)
{
	struct resize_open o = { 0, 0, NULL };

	if (want && want < meta)
		return (struct resize_open){ -EINVAL, 0, "the metadata says the volume is "
			"larger than its configured size, and a volume never shrinks" };
	if (backing < meta)
		return (struct resize_open){ -EINVAL, 0, blockdev
			? "the device is smaller than the metadata says"
			: "the backing file is smaller than the metadata says (truncated?)" };
	if (want > meta)
		o.grow_to = want;
	/* A file is exactly the volume's size, except after a crash in a
	 * grow: extended, but the metadata not yet.  A device may be larger
	 * (LVM rounds to extents). */
	if (!blockdev && backing > (o.grow_to ? o.grow_to : meta))
		return (struct resize_open){ -EINVAL, 0, "the backing file is larger than "
			"the metadata says" };
	return o;
}

int resize_check(uint64_t cur, uint64_t want, unsigned region_shift, const char **why)
{
	uint64_t max = (uint64_t)META_BITMAP_MAX_BYTES * 8 << region_shift;

	*why = NULL;
	if (want == cur)
		return -EALREADY;
	if (!want || want % 512)
		*why = "the size must be a positive multiple of 512 bytes";
	else if (want < cur)
		*why = "the new size is smaller: a volume only grows (shrinking would "
		       "lose the data at its end)";
	else if (want > max || want > INT64_MAX)
		*why = "the size is beyond the largest the metadata can track";
	return *why ? -EINVAL : 0;
}

struct resize_link_verdict resize_link_decide(const struct resize_link_in *in)
{
	if (in->local == in->peer)
		return (struct resize_link_verdict){ false, NULL };
	if (!in->no_sync)
		return (struct resize_link_verdict){ true, "a resync is due and the sizes "
			"differ: waiting for the smaller replica to grow" };
	if (in->clients_max > in->peer)
		return (struct resize_link_verdict){ true, "NBD clients here use more than "
			"the peer has: waiting for it to grow" };
	/* Equal data, the new area zeroes on both: the smaller size governs
	 * the export until the other one grows. */
	return (struct resize_link_verdict){ false, "sizes differ, data equal: the "
		"smaller size is exported until both have grown" };
}

/* ---- state ------------------------------------------------------------------ */

struct resize {
	struct repl_volume *vol;
	struct repl_io io;		/* the backing's grow, on a worker */
	bool running;
	int fd;				/* the job's copy of what it works on */
	bool blockdev;
	uint64_t from, to;		/* of the running job */
	uint64_t dev_size;		/* set by the job: the device's size */
	uint64_t target;		/* where the grow is going; 0: nowhere */
	uint64_t export_seen;		/* the export size last logged */
	char error[160];		/* why the last attempt failed */
	void *retry_timer;
	uint64_t retry_ms;		/* the next retry's delay */
};

static struct resize *resize_get(struct repl_volume *vol)
{
	if (!vol->resize && (vol->resize = calloc(1, sizeof(*vol->resize)))) {
		vol->resize->vol = vol;
		vol->resize->export_seen = repl__volume_export_size(vol);
	}
	return vol->resize;
}

uint64_t repl__volume_export_size(const struct repl_volume *vol)
{
	uint64_t size = vol->size;

	for (unsigned i = 0; i < vol->n_peers; i++)
		if (repl__peer_up(vol->peers[i]))
			size = MIN(size, vol->peers[i]->size);
	return size;
}

void repl__resize_changed(struct repl_volume *vol)
{
	struct resize *rz = vol->resize;
	uint64_t now;
	char a[32], b[32];

	if (!rz)
		return;		/* no grow here since the start: nothing to say */
	now = repl__volume_export_size(vol);
	if (now == rz->export_seen)
		return;
	if (vol->role == REPL_PRIMARY && rz->export_seen)
		plog(LOG_NOTICE, vol->name, "NBD clients that connect from now on see %s "
		     "(was %s): %s", format_size(now, a, sizeof(a)),
		     format_size(rz->export_seen, b, sizeof(b)), now == vol->size ?
		     "every connected replica has grown" : "the smallest connected replica's size");
	rz->export_seen = now;
}

/* ---- the grow ------------------------------------------------------------------ */

static void grow_start(struct resize *rz);

static int grow_backing(void *arg)
{
	struct resize *rz = arg;

	return repl__store_grow(rz->fd, rz->blockdev, rz->from, rz->to, &rz->dev_size);
}

static void retry_fire(void *arg)
{
	struct resize *rz = arg;

	rz->retry_timer = NULL;
	if (!rz->running && rz->target > rz->vol->size)
		grow_start(rz);
}

static void grow_failed(struct resize *rz, int err, bool in_meta)
{
	struct repl_volume *vol = rz->vol;
	char a[32], b[32], c[32];

	if (rz->blockdev && err == -ENOSPC && !in_meta)
		snprintf(rz->error, sizeof(rz->error), "device %s has %s, the volume needs %s: "
			 "grow the device", vol->backing, format_size(rz->dev_size, a, sizeof(a)),
			 format_size(rz->to, b, sizeof(b)));
	else
		snprintf(rz->error, sizeof(rz->error), "cannot grow %s to %s: %s",
			 in_meta ? "the metadata" : vol->backing, format_size(rz->to, b, sizeof(b)),
			 strerror(-err));
	rz->retry_ms = rz->retry_ms ? MIN(rz->retry_ms * 2, RETRY_MAX_MS) : RETRY_MIN_MS;
	plog(LOG_ERR, vol->name, "%s; this replica stays at %s (tried again in %llu s)",
	     rz->error, format_size(vol->size, c, sizeof(c)),
	     (unsigned long long)(rz->retry_ms / 1000));
	repl__timer_add(vol->eng, rz->retry_ms, retry_fire, rz, &rz->retry_timer);
	repl__changed(vol);
}

/* The new size is ours: the peers hear it; links in their handshake start
 * again (their VOLUME had the old size); waiting ones try now. */
static void grown(struct resize *rz)
{
	struct repl_volume *vol = rz->vol;
	struct wire_msg m = { .type = WIRE_SIZE };
	char a[32], b[32];

	vol->size = rz->to;
	repl__al_grown(vol, rz->from);
	rz->error[0] = '\0';
	rz->retry_ms = 0;
	if (rz->target <= vol->size)
		rz->target = 0;
	plog(LOG_NOTICE, vol->name, "grown from %s to %s (%llu bytes): backing %s and "
	     "metadata", format_size(rz->from, a, sizeof(a)), format_size(rz->to, b, sizeof(b)),
	     (unsigned long long)rz->to, vol->backing);
	m.u.size = vol->size;
	for (unsigned i = 0; i < vol->n_peers; i++) {
		struct peer *p = vol->peers[i];
		if (repl__peer_up(p))
			repl__peer_send_msg(p, &m);
		else if (p->conn == PC_HANDSHAKE)
			repl__peer_drop(p, "this replica grew during the handshake: again");
		else
			repl__peer_reconnect_now(p);
	}
	repl__changed(vol);
}

static void grow_done(struct repl_io *io)
{
	struct resize *rz = (struct resize *)((char *)io - offsetof(struct resize, io));
	struct repl_volume *vol = rz->vol;
	int r;

	rz->running = false;
	if (vol->closing)
		return;		/* the next open grows it again */
	if (io->result < 0) {
		grow_failed(rz, io->result, false);
		return;
	}
	r = meta_grow(vol->meta, rz->to);
	if (r < 0) {
		grow_failed(rz, r, true);
		return;
	}
	grown(rz);
	if (rz->target > vol->size)
		grow_start(rz);
}

static void grow_start(struct resize *rz)
{
	struct repl_volume *vol = rz->vol;
	char a[32], b[32];

	repl__timer_del(vol->eng, &rz->retry_timer);
	rz->from = vol->size;
	rz->to = rz->target;
	rz->fd = vol->fd;
	rz->blockdev = vol->blockdev;
	rz->dev_size = 0;
	rz->running = true;
	rz->io = (struct repl_io){ .op = REPL_IO_CALL, .fn = grow_backing, .arg = rz,
				   .done = grow_done };
	plog(LOG_NOTICE, vol->name, "growing from %s to %s (%llu bytes)",
	     format_size(rz->from, a, sizeof(a)), format_size(rz->to, b, sizeof(b)),
	     (unsigned long long)rz->to);
	repl__iopool_submit(vol->pool, &rz->io);
}

int repl_volume_grow(struct repl_volume *vol, uint64_t size, char *why, size_t whylen)
{
	struct resize *rz = vol->resize;
	const char *w = NULL;
	int r;

	if (rz && rz->target >= size) {
		/* On its way there already; after a failure, try again now. */
		if (!rz->running && rz->error[0])
			grow_start(rz);
		return 0;
	}
	r = resize_check(vol->size, size, meta_get(vol->meta)->region_shift, &w);
	if (r == -EALREADY)
		return 0;
	if (r < 0) {
		snprintf(why, whylen, "%s", w);
		return r;
	}
	rz = resize_get(vol);
	if (!rz) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	rz->target = size;
	if (!rz->running)
		grow_start(rz);
	return 0;
}

/* ---- open and teardown ------------------------------------------------------- */

int repl__resize_open(struct repl_volume *vol, uint64_t want, char *err, size_t errlen)
{
	uint64_t meta = meta_get(vol->meta)->size;
	struct resize_open o = resize_open_decide(vol->size, vol->blockdev, meta, want);
	char a[32], b[32], c[32];

	if (o.err) {
		plog(LOG_ERR, vol->name, "%s: backing %s has %s, metadata %s, configured %s",
		     o.why, vol->backing, format_size(vol->size, a, sizeof(a)),
		     format_size(meta, b, sizeof(b)), want ? format_size(want, c, sizeof(c)) : "-");
		if (err && errlen)
			snprintf(err, errlen, "%s: metadata %s, configured %s", o.why, b,
				 want ? c : "-");
		return o.err;
	}
	vol->size = meta;
	if (o.grow_to && resize_get(vol)) {
		vol->resize->target = o.grow_to;
		plog(LOG_NOTICE, vol->name, "the volume is %s now, this replica %s: it grows",
		     format_size(o.grow_to, a, sizeof(a)), format_size(meta, b, sizeof(b)));
	}
	return 0;
}

void repl__resize_opened(struct repl_volume *vol)
{
	if (vol->resize && vol->resize->target > vol->size && !vol->resize->running)
		grow_start(vol->resize);
}

void repl__resize_stop(struct repl_volume *vol)
{
	if (vol->resize)
		repl__timer_del(vol->eng, &vol->resize->retry_timer);
}

void repl__resize_free(struct repl_volume *vol)
{
	free(vol->resize);
	vol->resize = NULL;
}

/* ---- peers ----------------------------------------------------------------------- */

bool repl__resize_link_ok(struct peer *p, uint64_t peer_size, enum gen_decision d,
			  char *why, size_t whylen)
{
	struct repl_volume *vol = p->vol;
	struct resize_link_in in = {
		.local = vol->size, .peer = peer_size, .no_sync = d == GEN_NO_SYNC,
		.clients_max = MAX(vol->eng->up->clients_max_size(vol),
				   vol->local_client_size),
	};
	struct resize_link_verdict v = resize_link_decide(&in);
	char a[32], b[32];

	if (v.why)
		snprintf(why, whylen, "peer has %s, this replica %s: %s",
			 format_size(peer_size, a, sizeof(a)), format_size(vol->size, b, sizeof(b)), v.why);
	return !v.wait;
}

void repl__resize_peer_size(struct peer *p, uint64_t size)
{
	struct repl_volume *vol = p->vol;
	char a[32];

	if (size < p->size) {
		repl__peer_drop(p, "peer says its replica shrank");
		return;
	}
	if (size == p->size)
		return;
	p->size = size;
	plog(LOG_INFO, vol->name, "peer %s has grown to %s", p->node, format_size(size, a, sizeof(a)));
	repl__changed(vol);
}

void repl__resize_status(const struct repl_volume *vol, struct repl_volume_status *st)
{
	const struct resize *rz = vol->resize;

	st->export_size = repl__volume_export_size(vol);
	if (!rz || rz->target <= vol->size)
		return;
	st->grow_to = rz->target;
	snprintf(st->grow_error, sizeof(st->grow_error), "%s", rz->error);
}
