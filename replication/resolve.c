/* resolve.c: ending a split brain by hand, "replagent resolve VOL --keep
 * NODE", run on both nodes.  On the kept node it only lets the link
 * connect again.  On the other one (it must be Secondary by then) the
 * regions it wrote since the split - its bitmap for the kept node - are
 * first copied, at their offsets, into a sparse file next to its backing
 * (BACKING.discarded-TIME, with a .regions list), so that nothing written
 * is lost without a person's say; then the replica becomes blank and takes
 * a full resync from the kept node.  The copy runs on a worker. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "meta.h"
#include "peer.h"
#include "sys.h"
#include "util.h"

struct discard_job {
	struct repl_io io;
	struct repl_volume *vol;
	struct peer *keep;
	int src_fd;
	char path[4096];
	uint64_t region_size;
	uint64_t *offsets;
	size_t n;
	uint64_t size;
};

/* Worker: the regions into the sparse file, their list beside it, both
 * on disk (and their names in the directory) before the replica goes
 * blank.  Through the engine's seams (sys.h), as every other file I/O. */
static int discard_copy(void *arg)
{
	const struct repl_sys_ops *sys = repl__sys;
	struct discard_job *j = arg;
	char list[4200], *text = NULL;
	void *buf = malloc(j->region_size);
	size_t used = 0, cap = 64 * (j->n + 1);
	int fd = -1, lfd = -1, r = 0;

	if (!buf || !(text = malloc(cap))) {
		r = -ENOMEM;
		goto out;
	}
	fd = sys->open(j->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || sys->ftruncate(fd, (off_t)j->size) < 0) {
		r = -errno;
		goto out;
	}
	for (size_t i = 0; i < j->n && r == 0; i++) {
		size_t len = (size_t)MIN(j->region_size, j->size - j->offsets[i]);
		r = repl__full_pread(j->src_fd, buf, len, (off_t)j->offsets[i]);
		if (r == 0)
			r = repl__full_pwrite(fd, buf, len, (off_t)j->offsets[i]);
		used += (size_t)snprintf(text + used, cap - used, "%" PRIu64 " %" PRIu64 "\n",
					 j->offsets[i], j->region_size);
	}
	if (r == 0 && sys->fsync(fd) < 0)
		r = -errno;
	snprintf(list, sizeof(list), "%s.regions", j->path);
	if (r == 0 && (lfd = sys->open(list, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
		r = -errno;
	if (r == 0)
		r = repl__full_pwrite(lfd, text, used, 0);
	if (r == 0 && sys->fsync(lfd) < 0)
		r = -errno;
	if (r == 0)
		r = repl__fsync_dir_of(j->path);
out:
	if (fd >= 0)
		sys->close(fd);
	if (lfd >= 0)
		sys->close(lfd);
	free(text);
	free(buf);
	return r;
}

/* Loop: the copy is safe on disk; forget our side and resync. */
static void discard_done(struct repl_io *io)
{
	struct discard_job *j = (struct discard_job *)io;
	struct repl_volume *vol = j->vol;
	if (io->result < 0) {
		plog_errno(LOG_ERR, vol->name, -io->result, "cannot save the discarded "
			   "regions to %s: split brain left as it is", j->path);
		goto out;
	}
	plog(LOG_WARNING, vol->name, "split brain: %zu region(s) this node wrote are kept "
	     "in %s (list in %s.regions); taking %s's data", j->n, j->path, j->path,
	     j->keep->node);
	if (repl__volume_make_blank(vol) < 0) {
		plog(LOG_ERR, vol->name, "cannot record the resolution");
		goto out;
	}
	for (unsigned i = 0; i < vol->n_peers; i++)
		repl__peer_retry(vol->peers[i]);
	repl__changed(vol);
out:
	vol->resolving = false;
	free(j->offsets);
	free(j);
}

static int discard_start(struct repl_volume *vol, struct peer *keep)
{
	struct discard_job *j = calloc(1, sizeof(*j));
	uint64_t regions = meta_regions(vol->meta);

	if (!j)
		return -ENOMEM;
	j->vol = vol;
	j->keep = keep;
	j->src_fd = vol->fd;
	j->size = vol->size;
	j->region_size = UINT64_C(1) << meta_get(vol->meta)->region_shift;
	j->offsets = calloc((size_t)meta_bits_count(vol->meta, keep->idx) + 1,
			    sizeof(*j->offsets));
	if (!j->offsets) {
		free(j);
		return -ENOMEM;
	}
	for (uint64_t r = meta_bit_next(vol->meta, keep->idx, 0); r < regions;
	     r = meta_bit_next(vol->meta, keep->idx, r + 1))
		j->offsets[j->n++] = r * j->region_size;
	snprintf(j->path, sizeof(j->path), "%s.discarded-%lld", vol->backing,
		 (long long)repl__sys->wall_s());
	j->io = (struct repl_io){ .op = REPL_IO_CALL, .fn = discard_copy, .arg = j,
				  .done = discard_done };
	vol->resolving = true;
	repl__iopool_submit(vol->pool, &j->io);
	return 0;
}

int repl_volume_resolve(struct repl_volume *vol, const char *keep, char *why, size_t len)
{
	struct peer *p = NULL;

	if (vol->resolving) {
		snprintf(why, len, "a resolution is already running");
		return -EBUSY;
	}
	if (strcmp(keep, vol->node ? vol->node : "") == 0) {
		for (unsigned i = 0; i < vol->n_peers; i++) {
			if (vol->peers[i]->link == REPL_LINK_STANDALONE)
				vol->peers[i]->keeping = true;
			repl__peer_retry(vol->peers[i]);
		}
		plog(LOG_NOTICE, vol->name, "resolve: keeping this node's data, reconnecting");
		return 0;
	}
	for (unsigned i = 0; i < vol->n_peers; i++)
		if (strcmp(vol->peers[i]->node, keep) == 0)
			p = vol->peers[i];
	if (!p) {
		snprintf(why, len, "%s is not a replica of this volume", keep);
		return -ENOENT;
	}
	if (p->link != REPL_LINK_STANDALONE) {
		snprintf(why, len, "the link to %s is not StandAlone: nothing to resolve", keep);
		return -EINVAL;
	}
	if (vol->role == REPL_PRIMARY || vol->clients) {
		snprintf(why, len, "this node's data is to be discarded: demote it first");
		return -EBUSY;
	}
	return discard_start(vol, p);
}
