/* lossmark.c: a record of this disk's loss for when the metadata cannot
 * take one.  A flush that fails may drop writes (iopool.c); the engine
 * then records the replica Inconsistent, blank or powered off in the
 * metadata.  When that update fails too (the same disk, failing), the
 * daemon stops serving writes and is restarted on the same boot, where
 * the metadata still says what it said before the loss: UpToDate over
 * data the page cache dropped (sim seeds 796 and 1508 of the EIO and
 * --inline profiles).  A Primary that keeps its role after such a flush
 * (no other replica holds every write: outdate.c) records no loss in its
 * metadata at all; it writes the marker too (sim seed 28061).
 *
 * The marker is a small file in the daemon's run directory (a tmpfs,
 * /run/replagent: it is cleared by a reboot, as the page cache is, and it
 * is not on the failing disk), holding the boot id and the loss's kind.
 * volume.c reads it at a start on the same boot, applies it to the
 * superblock it writes then, and removes it once that write succeeded.
 *
 * It also names a superblock update that failed and that the metadata
 * could not void (meta_unvoided()): a new generation the engine acted as
 * if it was never made.  Read at a restart, it would fork this replica
 * from one promoted meanwhile (a split brain of a generation under which
 * nothing was written: sim seed 6810 of the EIO profile).
 *
 * The file's one line: the boot id in hex, the kind, and the seq of that
 * superblock (0: none; left out by the first version). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "meta.h"
#include "repl_int.h"
#include "sys.h"
#include "util.h"

#define MARK_LEN 64

static void hex(const uint8_t *id, char *out)
{
	for (unsigned i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", id[i]);
}

static void drop(struct repl_volume *vol)
{
	if (repl__sys->unlink(vol->loss_marker) < 0 && errno != ENOENT)
		plog_errno(LOG_ERR, vol->name, errno, "cannot remove %s", vol->loss_marker);
	vol->loss_marked = REPL_LOSS_NONE;
	vol->loss_void_seq = 0;
}

static int write_marker(struct repl_volume *vol, enum repl_loss kind, uint64_t void_seq)
{
	char buf[MARK_LEN], id_hex[33];
	uint8_t id[16];
	int fd, n, err = 0;

	if (repl__sys->boot_id(id) < 0 || all_zero(id, sizeof(id))) {
		plog(LOG_ERR, vol->name, "no boot id: what the metadata could not record is "
		     "not kept for a restart of the daemon");
		return -ENOENT;
	}
	hex(id, id_hex);
	n = snprintf(buf, sizeof(buf), "%s %d %" PRIu64 "\n", id_hex, (int)kind, void_seq);
	fd = repl__sys->open(vol->loss_marker, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		err = -errno;
	else
		err = repl__full_pwrite(fd, buf, (size_t)n, 0);
	if (fd >= 0)
		repl__sys->close(fd);
	if (err) {
		plog_errno(LOG_ERR, vol->name, -err, "cannot write %s: a restart of the daemon "
			   "on this boot may not know what the metadata could not record",
			   vol->loss_marker);
		return err;
	}
	vol->loss_marked = kind;
	vol->loss_void_seq = void_seq;
	return 0;
}

void repl__lossmark_set(struct repl_volume *vol, enum repl_loss kind)
{
	if (!vol->loss_marker || kind <= vol->loss_marked)
		return;
	if (write_marker(vol, kind, vol->loss_void_seq) == 0)
		plog(LOG_WARNING, vol->name, "this disk lost writes its metadata does not "
		     "record: %s says so for a restart on this boot", vol->loss_marker);
}

int repl__lossmark_update_void_failed(struct repl_volume *vol, const struct meta_super *sb)
{
	int r = meta_update_void_failed(vol->meta, sb);
	uint64_t seq = meta_unvoided(vol->meta);

	if (r < 0 && seq && vol->loss_marker && seq != vol->loss_void_seq &&
	    write_marker(vol, vol->loss_marked, seq) == 0)
		plog(LOG_WARNING, vol->name, "%s says to pass over the superblock update "
		     "that failed (seq %" PRIu64 ") at a restart on this boot",
		     vol->loss_marker, seq);
	return r;
}

enum repl_loss repl__lossmark_get(struct repl_volume *vol, const uint8_t boot_id[16],
				  uint64_t *void_seq)
{
	char buf[MARK_LEN + 1], id_hex[33];
	unsigned long long seq = 0;
	int fd, kind, f;
	ssize_t n;

	*void_seq = 0;
	if (!vol->loss_marker)
		return REPL_LOSS_NONE;
	fd = repl__sys->open(vol->loss_marker, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return REPL_LOSS_NONE;
	n = repl__sys->pread(fd, buf, MARK_LEN, 0);
	repl__sys->close(fd);
	buf[n > 0 ? n : 0] = '\0';
	hex(boot_id, id_hex);
	f = n < 34 || strncmp(buf, id_hex, 32) || buf[32] != ' ' ? 0 :
		sscanf(buf + 33, "%d %llu", &kind, &seq);
	if (f < 1 || kind < REPL_LOSS_NONE || kind > REPL_LOSS_BLANK ||
	    (kind == REPL_LOSS_NONE && !seq)) {
		/* another boot's (the page cache it spoke of is gone, and
		 * the restart is a power loss by the boot ids) or damaged */
		plog(LOG_INFO, vol->name, "%s is not of this boot: removed", vol->loss_marker);
		drop(vol);
		return REPL_LOSS_NONE;
	}
	vol->loss_marked = (enum repl_loss)kind;
	vol->loss_void_seq = seq;
	*void_seq = seq;
	return (enum repl_loss)kind;
}

void repl__lossmark_forget(struct repl_volume *vol)
{
	if (vol->loss_marker)
		drop(vol);
}

void repl__lossmark_recorded(struct repl_volume *vol, enum repl_loss kind)
{
	if (vol->loss_marker && (vol->loss_marked || vol->loss_void_seq) &&
	    vol->loss_marked <= kind)
		drop(vol);
}
