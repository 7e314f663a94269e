/* cbt.c: changed-block tracking.  Each checkpoint of a volume is a side
 * file next to the metadata, META.cbt.NAME: a 4096-byte header (magic,
 * name, size, region size, complete or not and why, CRC32C) and a bitmap,
 * one bit per metadata region, set when a region is written after the
 * checkpoint was made.  It is not a dirty bitmap for resync (meta.c keeps
 * those) and nothing here decides roles or who syncs from whom.
 *
 * Why a replica's bitmap can be trusted (and when it says it cannot):
 * - Every WRITE, TRIM and ZERO that reaches this replica's store goes
 *   through repl__cbt_before_write() on the worker, whoever sent it (the
 *   Primary's clients, the Primary's replication stream, a resync, a
 *   migration window): its bits are on disk (pwrite + fdatasync of the
 *   side file) before the data write starts, hence before any
 *   acknowledgement.  No activity-log replay is needed after a crash.
 *   Bits only go from 0 to 1, so a torn page write never loses a bit
 *   that was durable before it.
 * - Checkpoints are made by the Primary and sent as a CKPT frame on each
 *   connected link in the order of its writes: every replica starts
 *   tracking at the same point of the write stream, with no window in
 *   which one of them misses a write (a command that asked each node
 *   through the cluster could not promise that).
 * - A replica that was away when a checkpoint was made hears of it when
 *   its link comes up (CKPT HAVE) and records it as incomplete; one that
 *   forgets its data (make_blank: a full resync follows) marks all of its
 *   checkpoints incomplete; a file that fails its check loads as
 *   incomplete.  An incomplete checkpoint answers BLOCK_STATUS with an
 *   error, never with a bitmap that might miss a change.
 * - A replica that was away and comes back takes a resync of what it
 *   missed: those writes reach its store through the same hook.
 *
 * Threads: the list and the bits are guarded by lock (workers set bits,
 * BLOCK_STATUS reads them); flush serialises writes of the side files, so
 * that a page written later always holds a superset of one written before.
 * Creation, deletion and marking incomplete run on the loop thread and do
 * their (small, rare) file I/O synchronously. */
#include "config.h"

#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cbt.h"
#include "crc32c.h"
#include "log.h"
#include "meta.h"
#include "nbd_meta.h"
#include "peer.h"
#include "repl_int.h"
#include "sys.h"
#include "util.h"
#include "wire.h"

#define HDR_SIZE 4096u
#define HDR_CRC_AT 508u			/* CRC32C of bytes 0..507 */
#define CBT_MAGIC "REPLCBT1"
#define CBT_VERSION 1u
#define F_INCOMPLETE 1u

struct ckpt {
	struct ckpt *next;
	char name[CBT_NAME_MAX + 1];
	char *path;
	int fd;				/* -1: no file (incomplete) */
	bool complete;
	bool seen;			/* named by the Primary since its last END */
	char why[128];
	uint64_t size;			/* the volume's size when it was made */
	uint32_t shift;
	uint64_t regions;
	size_t bytes;			/* bitmap bytes, a multiple of 4096 */
	uint64_t *mem, *disk, *snap;	/* set / durable / being written */
};

struct cbt {
	struct repl_volume *vol;
	char *prefix;			/* META.cbt. */
	pthread_mutex_t lock;
	pthread_mutex_t flush;
	struct ckpt *list;
};

bool repl_checkpoint_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > CBT_NAME_MAX || name[0] == '.' || name[0] == '-' ||
	    (n >= 4 && !strcmp(name + n - 4, ".tmp")))	/* a file being made */
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == '.' || *p == '-'))
			return false;
	return true;
}

/* ---- one checkpoint and its file ------------------------------------------- */

static void ckpt_free(struct ckpt *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		repl__sys->close(c->fd);
	free(c->path);
	free(c->mem);
	free(c->disk);
	free(c->snap);
	free(c);
}

static struct ckpt *ckpt_new(struct cbt *cbt, const char *name, uint64_t size, uint32_t shift)
{
	struct ckpt *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->fd = -1;
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->size = size;
	c->shift = shift;
	c->regions = DIV_ROUND_UP(size, UINT64_C(1) << shift);
	c->bytes = DIV_ROUND_UP(DIV_ROUND_UP(c->regions, 8), HDR_SIZE) * HDR_SIZE;
	c->mem = calloc(1, c->bytes);
	c->disk = calloc(1, c->bytes);
	c->snap = calloc(1, c->bytes);
	if (asprintf(&c->path, "%s%s", cbt->prefix, name) < 0)
		c->path = NULL;
	if (!c->mem || !c->disk || !c->snap || !c->path) {
		ckpt_free(c);
		return NULL;
	}
	return c;
}

static void hdr_encode(const struct ckpt *c, uint8_t *h)
{
	uint32_t v;
	uint64_t w;

	memset(h, 0, HDR_SIZE);
	memcpy(h, CBT_MAGIC, 8);
	v = htole32(CBT_VERSION);
	memcpy(h + 8, &v, 4);
	v = htole32(c->complete ? 0 : F_INCOMPLETE);
	memcpy(h + 12, &v, 4);
	w = htole64(c->size);
	memcpy(h + 16, &w, 8);
	v = htole32(c->shift);
	memcpy(h + 24, &v, 4);
	memcpy(h + 32, c->name, strlen(c->name));
	memcpy(h + 96, c->why, strnlen(c->why, sizeof(c->why) - 1));
	v = htole32(crc32c(0, h, HDR_CRC_AT));
	memcpy(h + HDR_CRC_AT, &v, 4);
}

/* 0, or -EUCLEAN with why for a header that is not this checkpoint's. */
static int hdr_decode(const uint8_t *h, const char *name, uint64_t *size, uint32_t *shift,
		      bool *complete, char *why, size_t len)
{
	uint32_t v, crc, flags;

	memcpy(&crc, h + HDR_CRC_AT, 4);
	if (memcmp(h, CBT_MAGIC, 8) || le32toh(crc) != crc32c(0, h, HDR_CRC_AT)) {
		snprintf(why, len, "its file is damaged (bad magic or checksum)");
		return -EUCLEAN;
	}
	memcpy(&v, h + 8, 4);
	memcpy(&flags, h + 12, 4);
	memcpy(size, h + 16, 8);
	memcpy(shift, h + 24, 4);
	*size = le64toh(*size);
	*shift = le32toh(*shift);
	if (le32toh(v) != CBT_VERSION || strncmp((const char *)h + 32, name, 64) ||
	    *shift < META_REGION_SHIFT_MIN || *shift > META_REGION_SHIFT_MAX || !*size) {
		snprintf(why, len, "its file is not this checkpoint's (version, name or geometry)");
		return -EUCLEAN;
	}
	*complete = !(le32toh(flags) & F_INCOMPLETE);
	snprintf(why, len, "%.127s", (const char *)h + 96);
	return 0;
}

static int write_all(int fd, const void *buf, size_t len, uint64_t off)
{
	ssize_t n = repl__sys->pwritev2(fd, buf, len, (off_t)off, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/* A new file for c (header, an all-clear bitmap), made whole before it
 * appears under its name. */
static int ckpt_create_file(struct ckpt *c)
{
	uint8_t *h = malloc(HDR_SIZE);
	char *tmp = NULL;
	int fd = -1, r;

	if (!h || asprintf(&tmp, "%s.tmp", c->path) < 0) {
		free(h);
		return -ENOMEM;
	}
	hdr_encode(c, h);
	(void)repl__sys->unlink(tmp);	/* left by a crash */
	fd = repl__sys->open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	r = fd < 0 ? -errno : 0;
	if (!r)
		r = write_all(fd, h, HDR_SIZE, 0);
	if (!r && repl__sys->ftruncate(fd, (off_t)(HDR_SIZE + c->bytes)) < 0)
		r = -errno;
	if (!r && repl__sys->fsync(fd) < 0)
		r = -errno;
	if (!r && repl__sys->renameat2(tmp, c->path, 0) < 0)
		r = -errno;
	/* Renamed but maybe not durably: it must not come back as complete
	 * after a restart, since nothing marks it meanwhile. */
	if (!r && (r = repl__fsync_dir_of(c->path)) < 0)
		(void)repl__sys->unlink(c->path);
	if (r && fd >= 0)
		(void)repl__sys->unlink(tmp);
	if (r && fd >= 0)
		repl__sys->close(fd);
	else
		c->fd = fd;
	free(tmp);
	free(h);
	return r;
}

/* The loop thread, with flush held: c becomes incomplete, durably (its
 * header says so), or its file goes (a missing file is incomplete too). */
static void ckpt_incomplete(struct cbt *cbt, struct ckpt *c, const char *why)
{
	uint8_t h[HDR_SIZE];

	pthread_mutex_lock(&cbt->lock);
	c->complete = false;
	snprintf(c->why, sizeof(c->why), "%s", why);
	pthread_mutex_unlock(&cbt->lock);
	hdr_encode(c, h);
	if (c->fd >= 0 && write_all(c->fd, h, HDR_SIZE, 0) == 0 &&
	    repl__sys->fdatasync(c->fd) == 0)
		return;
	plog(LOG_ERR, cbt->vol->name, "checkpoint %s: cannot record that it is incomplete: "
	     "removing %s", c->name, c->path);
	(void)repl__sys->unlink(c->path);
}

/* ---- the volume's set -------------------------------------------------------- */

static struct ckpt *find(struct cbt *cbt, const char *name)
{
	for (struct ckpt *c = cbt->list; c; c = c->next)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

static unsigned count(const struct cbt *cbt)
{
	unsigned n = 0;

	for (const struct ckpt *c = cbt->list; c; c = c->next)
		n++;
	return n;
}

/* Workers walk the list holding either lock: a change takes both. */
static void link_ckpt(struct cbt *cbt, struct ckpt *c)
{
	pthread_mutex_lock(&cbt->flush);
	pthread_mutex_lock(&cbt->lock);
	c->next = cbt->list;
	cbt->list = c;
	pthread_mutex_unlock(&cbt->lock);
	pthread_mutex_unlock(&cbt->flush);
}

/* Makes a checkpoint here: complete (tracking starts now) or, for one this
 * replica did not see being made, incomplete with why. */
static int local_create(struct cbt *cbt, const char *name, const char *why)
{
	struct repl_volume *vol = cbt->vol;
	struct ckpt *c = ckpt_new(cbt, name, vol->size, meta_get(vol->meta)->region_shift);
	int r;

	if (!c)
		return -ENOMEM;
	c->complete = !why;
	if (why)
		snprintf(c->why, sizeof(c->why), "%s", why);
	r = ckpt_create_file(c);
	if (r < 0) {
		plog_errno(LOG_ERR, vol->name, -r, "checkpoint %s: cannot create %s", name, c->path);
		ckpt_free(c);
		return r;
	}
	link_ckpt(cbt, c);
	plog(LOG_NOTICE, vol->name, "checkpoint %s created%s%s", name, why ? ", incomplete: " : "",
	     why ? why : "");
	return 0;
}

static int local_delete(struct cbt *cbt, const char *name)
{
	struct ckpt **pp, *c = NULL;
	int r = 0;

	pthread_mutex_lock(&cbt->flush);
	pthread_mutex_lock(&cbt->lock);
	for (pp = &cbt->list; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->name, name)) {
			c = *pp;
			*pp = c->next;
			break;
		}
	pthread_mutex_unlock(&cbt->lock);
	pthread_mutex_unlock(&cbt->flush);
	if (!c)
		return -ENOENT;
	if (repl__sys->unlink(c->path) < 0 && errno != ENOENT)
		r = -errno;
	else
		(void)repl__fsync_dir_of(c->path);
	plog(LOG_NOTICE, cbt->vol->name, "checkpoint %s deleted", name);
	ckpt_free(c);
	return r;
}

static int load_one(struct cbt *cbt, const char *name)
{
	struct repl_volume *vol = cbt->vol;
	uint8_t h[HDR_SIZE];
	char why[128];
	uint64_t size;
	uint32_t shift;
	bool complete;
	struct ckpt *c;
	char *path;
	int fd, r;

	if (asprintf(&path, "%s%s", cbt->prefix, name) < 0)
		return -ENOMEM;
	fd = repl__sys->open(path, O_RDWR | O_CLOEXEC, 0);
	free(path);
	if (fd < 0 || repl__sys->pread(fd, h, HDR_SIZE, 0) != HDR_SIZE)
		r = -EIO;
	else
		r = hdr_decode(h, name, &size, &shift, &complete, why, sizeof(why));
	if (r < 0) {
		size = vol->size;
		shift = meta_get(vol->meta)->region_shift;
		complete = false;
		if (r == -EIO)
			snprintf(why, sizeof(why), "its file cannot be read");
	}
	c = ckpt_new(cbt, name, size, shift);
	if (!c) {
		if (fd >= 0)
			repl__sys->close(fd);
		return -ENOMEM;
	}
	c->fd = fd;
	c->complete = complete;
	snprintf(c->why, sizeof(c->why), "%s", why);
	if (complete && repl__sys->pread(fd, c->mem, c->bytes, HDR_SIZE) != (ssize_t)c->bytes) {
		c->complete = false;
		snprintf(c->why, sizeof(c->why), "its bitmap cannot be read (short file)");
	}
	memcpy(c->disk, c->mem, c->bytes);
	if (!c->complete)
		plog(LOG_WARNING, vol->name, "checkpoint %s is incomplete here: %s", name, c->why);
	link_ckpt(cbt, c);
	return 0;
}

int repl__cbt_open(struct repl_volume *vol, const char *meta_path)
{
	struct cbt *cbt = calloc(1, sizeof(*cbt));
	char *dcopy = strdup(meta_path), *bcopy = strdup(meta_path);
	const char *base;
	struct dirent *de;
	size_t blen;
	DIR *d;
	int r = 0;

	if (!cbt || !dcopy || !bcopy || asprintf(&cbt->prefix, "%s.cbt.", meta_path) < 0) {
		free(cbt);
		free(dcopy);
		free(bcopy);
		return -ENOMEM;
	}
	cbt->vol = vol;
	pthread_mutex_init(&cbt->lock, NULL);
	pthread_mutex_init(&cbt->flush, NULL);
	vol->cbt = cbt;
	base = basename(bcopy);
	blen = strlen(base);
	d = opendir(dirname(dcopy));
	while (d && (de = readdir(d)) && r == 0) {
		const char *n = de->d_name;
		if (strncmp(n, base, blen) || strncmp(n + blen, ".cbt.", 5) ||
		    !repl_checkpoint_name_ok(n + blen + 5) || count(cbt) == CBT_MAX)
			continue;	/* not ours, or a NAME.tmp left by a crash */
		r = load_one(cbt, n + blen + 5);
	}
	if (d)
		closedir(d);
	free(dcopy);
	free(bcopy);
	return r;
}

void repl__cbt_free(struct cbt *cbt)
{
	if (!cbt)
		return;
	while (cbt->list) {
		struct ckpt *c = cbt->list;
		cbt->list = c->next;
		ckpt_free(c);
	}
	pthread_mutex_destroy(&cbt->lock);
	pthread_mutex_destroy(&cbt->flush);
	free(cbt->prefix);
	free(cbt);
}

/* ---- the write path ------------------------------------------------------------ */

static bool bit(const uint64_t *b, uint64_t r)
{
	return b[r / 64] >> (r % 64) & 1;
}

/* lock held: sets the bits of [off, off+len) in c; true if one is not
 * durable yet. */
static bool mark(struct ckpt *c, uint64_t off, uint64_t len)
{
	uint64_t r0, r1;
	bool need = false;

	if (!c->complete || off >= c->size || len == 0)
		return false;	/* past the checkpoint's size: changed anyway */
	r0 = off >> c->shift;
	r1 = MIN(off + len - 1, c->size - 1) >> c->shift;
	for (uint64_t r = r0; r <= r1; r++) {
		c->mem[r / 64] |= UINT64_C(1) << (r % 64);
		need |= !bit(c->disk, r);
	}
	return need;
}

/* flush held: writes the pages of c that changed since its last flush. */
static int flush_one(struct cbt *cbt, struct ckpt *c)
{
	bool any = false;
	int r = 0;

	pthread_mutex_lock(&cbt->lock);
	memcpy(c->snap, c->mem, c->bytes);
	pthread_mutex_unlock(&cbt->lock);
	for (size_t p = 0; p < c->bytes && r == 0; p += HDR_SIZE) {
		if (!memcmp((uint8_t *)c->snap + p, (uint8_t *)c->disk + p, HDR_SIZE))
			continue;
		r = write_all(c->fd, (uint8_t *)c->snap + p, HDR_SIZE, HDR_SIZE + p);
		any = true;
	}
	if (r == 0 && any && repl__sys->fdatasync(c->fd) < 0)
		r = -errno;
	if (r == 0) {
		pthread_mutex_lock(&cbt->lock);
		memcpy(c->disk, c->snap, c->bytes);	/* snap holds every durable bit */
		pthread_mutex_unlock(&cbt->lock);
	}
	return r;
}

void repl__cbt_before_write(struct cbt *cbt, uint64_t off, uint64_t len)
{
	bool need = false;

	if (!cbt)
		return;
	pthread_mutex_lock(&cbt->lock);
	for (struct ckpt *c = cbt->list; c; c = c->next)
		need |= mark(c, off, len);
	pthread_mutex_unlock(&cbt->lock);
	if (!need)
		return;
	pthread_mutex_lock(&cbt->flush);
	for (struct ckpt *c = cbt->list; c; c = c->next) {
		int r;
		if (!c->complete)
			continue;
		r = flush_one(cbt, c);
		if (r == 0)
			continue;
		/* The write must not go on while its checkpoint claims to
		 * know: the header says incomplete, or the file goes. */
		plog_errno(LOG_ERR, cbt->vol->name, -r, "checkpoint %s: cannot write %s", c->name,
			   c->path);
		ckpt_incomplete(cbt, c, "its bitmap could not be written");
	}
	pthread_mutex_unlock(&cbt->flush);
}

void repl__cbt_forget(struct repl_volume *vol, const char *why)
{
	struct cbt *cbt = vol->cbt;

	if (!cbt)
		return;
	pthread_mutex_lock(&cbt->flush);
	for (struct ckpt *c = cbt->list; c; c = c->next)
		if (c->complete) {
			ckpt_incomplete(cbt, c, why);
			plog(LOG_WARNING, vol->name, "checkpoint %s is incomplete now: %s",
			     c->name, why);
		}
	pthread_mutex_unlock(&cbt->flush);
}

/* ---- commands and the wire ------------------------------------------------------- */

static void send_ckpt(struct repl_volume *vol, struct peer *only, uint32_t op, const char *name)
{
	struct wire_msg m = { .type = WIRE_CKPT };

	m.u.ckpt.op = op;
	snprintf(m.u.ckpt.name, sizeof(m.u.ckpt.name), "%s", name);
	for (unsigned i = 0; i < vol->n_peers; i++) {
		struct peer *p = vol->peers[i];
		if ((!only || p == only) && repl__peer_up(p))
			repl__peer_send_msg(p, &m);
	}
}

int repl_checkpoint_create(struct repl_volume *vol, const char *name, char *why, size_t len)
{
	int r;

	if (!repl_checkpoint_name_ok(name)) {
		snprintf(why, len, "invalid checkpoint name \"%.40s\": 1 to %d letters, digits, "
			 "'_', '.' or '-', not starting with '.' or '-', not ending in .tmp",
			 name, CBT_NAME_MAX);
		return -EINVAL;
	}
	if (vol->n_peers && vol->role != REPL_PRIMARY) {
		snprintf(why, len, "this replica is Secondary: make checkpoints on the Primary "
			 "(it starts them on every replica in the order of its writes)");
		return -EPERM;
	}
	if (find(vol->cbt, name)) {
		snprintf(why, len, "checkpoint \"%s\" exists already", name);
		return -EEXIST;
	}
	if (count(vol->cbt) >= CBT_MAX) {
		snprintf(why, len, "volume %s has %d checkpoints already: delete one first",
			 vol->name, CBT_MAX);
		return -ENOSPC;
	}
	r = local_create(vol->cbt, name, NULL);
	if (r < 0) {
		snprintf(why, len, "cannot create its file beside the metadata: %s", strerror(-r));
		return r;
	}
	send_ckpt(vol, NULL, WIRE_CKPT_CREATE, name);
	repl__changed(vol);
	return 0;
}

int repl_checkpoint_delete(struct repl_volume *vol, const char *name, char *why, size_t len)
{
	int r;

	if (!find(vol->cbt, name)) {
		snprintf(why, len, "no checkpoint \"%.40s\" on volume %s", name, vol->name);
		return -ENOENT;
	}
	r = local_delete(vol->cbt, name);
	if (r < 0)
		snprintf(why, len, "cannot remove its file: %s", strerror(-r));
	if (vol->role == REPL_PRIMARY)
		send_ckpt(vol, NULL, WIRE_CKPT_DELETE, name);
	repl__changed(vol);
	return r;
}

unsigned repl_checkpoint_list(struct repl_volume *vol, struct repl_checkpoint_info *out,
			      unsigned max)
{
	struct cbt *cbt = vol->cbt;
	unsigned n = 0;

	pthread_mutex_lock(&cbt->lock);
	for (struct ckpt *c = cbt->list; c; c = c->next, n++) {
		uint64_t bits = 0;
		if (n >= max)
			continue;
		for (size_t w = 0; c->complete && w < c->bytes / 8; w++)
			bits += (uint64_t)__builtin_popcountll(c->mem[w]);
		memset(&out[n], 0, sizeof(out[n]));
		snprintf(out[n].name, sizeof(out[n].name), "%s", c->name);
		out[n].complete = c->complete;
		snprintf(out[n].why, sizeof(out[n].why), "%s", c->complete ? "" : c->why);
		out[n].changed = bits << c->shift;
	}
	pthread_mutex_unlock(&cbt->lock);
	return n;
}

/* Without checkpoints nothing is sent: a link stays as it was before
 * checkpoints existed (a peer keeps one deleted while it was away, still
 * a true bitmap, until the next HAVE list or a delete on it). */
void repl__cbt_peer_up(struct peer *p)
{
	struct repl_volume *vol = p->vol;

	if (vol->role != REPL_PRIMARY || !vol->cbt || !vol->cbt->list)
		return;
	for (struct ckpt *c = vol->cbt->list; c; c = c->next)
		send_ckpt(vol, p, WIRE_CKPT_HAVE, c->name);
	send_ckpt(vol, p, WIRE_CKPT_END, "");
}

void repl__cbt_on_msg(struct peer *p, const struct wire_ckpt *m)
{
	struct repl_volume *vol = p->vol;
	struct cbt *cbt = vol->cbt;
	struct ckpt *c, *next;

	if (!cbt || vol->role == REPL_PRIMARY || p->peer_role != REPL_PRIMARY ||
	    (m->op != WIRE_CKPT_END && !repl_checkpoint_name_ok(m->name))) {
		plog(LOG_WARNING, vol->name, "peer %s: checkpoint message ignored (we are %s, "
		     "it is %s)", p->node, vol->role == REPL_PRIMARY ? "Primary" : "Secondary",
		     p->peer_role == REPL_PRIMARY ? "Primary" : "Secondary");
		return;
	}
	c = find(cbt, m->name);
	switch (m->op) {
	case WIRE_CKPT_CREATE:
		if (c)	/* an old one of the same name: this one starts now */
			local_delete(cbt, m->name);
		if (count(cbt) < CBT_MAX)
			local_create(cbt, m->name, NULL);
		break;
	case WIRE_CKPT_HAVE:
		if (!c && count(cbt) < CBT_MAX)
			local_create(cbt, m->name, "this replica was not connected to the "
				     "Primary when the checkpoint was made");
		if ((c = find(cbt, m->name)))
			c->seen = true;
		break;
	case WIRE_CKPT_END:
		for (c = cbt->list; c; c = next) {
			next = c->next;
			if (!c->seen)
				local_delete(cbt, c->name);	/* deleted while we were away */
			else
				c->seen = false;
		}
		break;
	case WIRE_CKPT_DELETE:
		if (c)
			local_delete(cbt, m->name);
		break;
	}
	repl__changed(vol);
}

/* ---- NBD ---------------------------------------------------------------------------- */

void repl__cbt_contexts(struct repl_volume *vol, void (*add)(void *ctx, const char *name),
			void *ctx)
{
	char n[sizeof(CBT_CONTEXT_PREFIX) + CBT_NAME_MAX];

	if (!vol->cbt)
		return;
	for (struct ckpt *c = vol->cbt->list; c; c = c->next) {
		snprintf(n, sizeof(n), "%s%s", CBT_CONTEXT_PREFIX, c->name);
		add(ctx, n);
	}
}

/* Appends [len bytes with flags] to e, merging with the last one: false
 * when e is full. */
static bool push(struct nbd_extent *e, unsigned *n, unsigned max, uint32_t len,
		 uint32_t flags)
{
	if (*n && e[*n - 1].flags == flags) {
		e[*n - 1].len += len;
		return true;
	}
	if (*n == max)
		return false;
	e[(*n)++] = (struct nbd_extent){ len, flags };
	return true;
}

int repl__cbt_extents(struct repl_volume *vol, const char *name, uint64_t off, uint32_t len,
		      struct nbd_extent *e, unsigned max, unsigned *n)
{
	const char *cn = name + strlen(CBT_CONTEXT_PREFIX);
	struct cbt *cbt = vol->cbt;
	uint64_t pos = off, end = off + len;
	struct ckpt *c;
	int r = 0;

	*n = 0;
	pthread_mutex_lock(&cbt->lock);
	c = find(cbt, cn);
	if (!c || !c->complete) {
		r = c ? -EIO : -ENOENT;
		plog(LOG_WARNING, vol->name, "block status of %s refused: %s", name,
		     c ? c->why : "the checkpoint is gone");
	}
	while (r == 0 && pos < end) {
		uint64_t reg = pos >> c->shift;
		uint64_t stop = pos >= c->size ? end : MIN(end, (reg + 1) << c->shift);
		uint32_t flags = pos >= c->size || bit(c->mem, reg) ? 1 : 0;
		if (!push(e, n, max, (uint32_t)(stop - pos), flags))
			break;	/* full: the client asks for the rest */
		pos = stop;
	}
	pthread_mutex_unlock(&cbt->lock);
	return r;
}
