/* meta_grow.c: replacing the metadata file whole (meta.h meta_grow()), for
 * a larger volume and for the upgrade of a format version 2 file at open:
 * the new file is written beside the old one, made durable and renamed
 * over it.  Not the in-place updates of the superblock (meta.c) nor the
 * bitmap flushes (meta_io.c). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "meta.h"
#include "meta_int.h"
#include "sys.h"

/* ---- growing ----------------------------------------------------------------
 *
 * A larger size moves the second and third bitmaps (the stride grows), so
 * the file cannot change in place safely.  Instead a whole new file is
 * written beside it (PATH.grow: both slots, every bitmap from memory),
 * made durable, locked, and renamed over PATH; rename is atomic, so a crash
 * leaves either the old file or the new one, both complete.  A PATH.grow
 * left by a crash is removed by the next meta_open(). */

static char *grow_path_of(const char *path)
{
	char *p;

	return asprintf(&p, "%s.grow", path) < 0 ? NULL : p;
}

/* Slot 0 current (seq of n), slot 1 an older copy, the bitmaps of n. */
static int write_grown_file(struct meta *n, uint64_t old_seq)
{
	uint8_t *buf = calloc(2, META_SLOT_SIZE);
	struct meta_super copy = n->sb;
	int err;

	if (!buf)
		return -ENOMEM;
	/* Through the seam (sys.h), not posix_fallocate(): in the simulator
	 * the fd is not the kernel's, and every grow failed with EBADF. */
	err = repl__sys->fallocate(n->fd, 0, 0, (off_t)repl__meta_file_size_of(n)) < 0 ? errno : 0;
	if (err == EOPNOTSUPP || err == EINVAL)
		err = repl__sys->ftruncate(n->fd, (off_t)repl__meta_file_size_of(n)) < 0 ? errno : 0;
	err = -err;
	repl__meta_slot_encode(&n->sb, buf);
	copy.seq = old_seq;
	repl__meta_slot_encode(&copy, buf + META_SLOT_SIZE);
	if (!err)
		err = repl__full_pwrite(n->fd, buf, 2 * META_SLOT_SIZE, 0);
	free(buf);
	if (!err)
		err = repl__meta_bitmaps_write_all(n, n->fd);
	if (!err && repl__sys->fsync(n->fd) < 0)
		err = -errno;
	return err;
}

/* The new file, complete and durable at tmp, locked; *out owns its fd. */
static int build_grown(struct meta *m, const char *tmp, const struct meta_super *sb,
		       struct meta **out)
{
	struct meta *n = NULL;
	int fd, err;

	repl__sys->unlink(tmp);
	fd = repl__sys->open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	err = repl__meta_alloc(m->path, fd, sb, &n);	/* takes fd */
	if (err)
		return err;
	err = repl__meta_lock_fd(tmp, n->fd);
	/* Every bit of the old size keeps its place; the new ones are clear. */
	for (unsigned i = 0; i < META_BITMAPS && !err; i++)
		memcpy(n->bm[i], m->bm[i], m->npages * PG_BITS);
	if (!err)
		err = write_grown_file(n, m->sb.seq);
	if (err) {
		repl__meta_free(n);
		return err;
	}
	*out = n;
	return 0;
}

/* m takes n's file and geometry; n's shell is freed. */
static void adopt_grown(struct meta *m, struct meta *n)
{
	repl__sys->close(m->fd);
	m->fd = n->fd;
	n->fd = -1;
	m->sb = n->sb;
	m->cur_slot = 0;
	m->regions = n->regions;
	m->stride = n->stride;
	m->npages = n->npages;
	for (unsigned i = 0; i < META_BITMAPS; i++) {
		free(m->bm[i]);
		free(m->pstate[i]);
		free(m->pflush[i]);
		m->bm[i] = n->bm[i];
		m->pstate[i] = n->pstate[i];
		/* (clear: the new file was written whole and synced) */
		m->pflush[i] = n->pflush[i];
		n->bm[i] = NULL;
		n->pstate[i] = NULL;
		n->pflush[i] = NULL;
	}
	m->pages_set = 0;
	m->pages_dirty = 0;
	repl__meta_free(n);
}

/* Replaces m's file by a new one with superblock sb and m's bitmaps (see
 * meta_grow()).  0, or -errno with m unchanged, or -EIO with m on the new
 * file but broken. */
static int replace_file(struct meta *m, const struct meta_super *sb)
{
	struct meta *n = NULL;
	char *tmp;
	int err;

	tmp = grow_path_of(m->path);
	if (!tmp)
		return -ENOMEM;
	err = build_grown(m, tmp, sb, &n);
	if (err) {
		log_err_errno(-err, "meta %s: writing the new metadata %s", m->path, tmp);
		repl__sys->unlink(tmp);
		free(tmp);
		return err;
	}
	if (repl__sys->renameat2(tmp, m->path, 0) < 0) {
		err = -errno;
		log_err_errno(-err, "meta %s: renaming %s over it", m->path, tmp);
		repl__sys->unlink(tmp);
		repl__meta_free(n);
		free(tmp);
		return err;
	}
	free(tmp);
	adopt_grown(m, n);
	/* Without the directory on disk a crash could bring back the old
	 * file, without the bits set from now on: write nothing more. */
	err = repl__meta_fsync_dir_of(m->path);
	if (err) {
		log_err("meta %s: replaced, but not durably; refusing further writes", m->path);
		m->broken = -EIO;
		return -EIO;
	}
	return 0;
}

int meta_grow(struct meta *m, uint64_t size)
{
	struct meta_super sb = m->sb;
	const char *why;

	if (m->broken)
		return m->broken;
	sb.size = size;
	sb.seq = m->sb.seq + 1;
	why = size <= m->sb.size ? "the new size is not larger" : repl__meta_super_invalid(&sb);
	if (why) {
		log_err("meta %s: cannot grow to %" PRIu64 " bytes: %s", m->path, size, why);
		return -EINVAL;
	}
	return replace_file(m, &sb);
}

/* A version 2 file, read into memory, becomes a version 3 one holding the
 * same (seq + 1), replaced as a grow replaces it: a crash leaves one or
 * the other, each complete. */
int repl__meta_upgrade(struct meta *m)
{
	struct meta_super sb = m->sb;
	int err;

	sb.seq = m->sb.seq + 1;
	err = replace_file(m, &sb);
	if (err)
		log_err_errno(-err, "meta %s: cannot upgrade it from format version %u to %u",
			      m->path, META_VERSION_BARE, META_VERSION);
	else
		log_notice("meta %s: upgraded from format version %u to %u (checked bitmap "
			   "pages)", m->path, META_VERSION_BARE, META_VERSION);
	return err;
}

/* A grow interrupted by a crash left PATH.grow; PATH itself is intact
 * (the rename never happened).  Called with PATH locked. */
void repl__meta_remove_stale_grow(const char *path)
{
	char *tmp = grow_path_of(path);

	if (tmp && repl__sys->unlink(tmp) == 0)
		log_warn("meta %s: removed %s, left by a grow that did not finish", path, tmp);
	free(tmp);
}
