/* lossmark.c: a record of this disk's loss for when the metadata cannot
 * take one.  A flush that fails may drop writes (iopool.c); the engine
 * then records the replica Inconsistent, blank or powered off in the
 * metadata.  When that update fails too (the same disk, failing), the
 * daemon stops serving writes and is restarted on the same boot, where
 * the metadata still says what it said before the loss: UpToDate over
 * data the page cache dropped (sim seeds 796 and 1508 of the EIO and
 * --inline profiles).
 *
 * The marker is a small file in the daemon's run directory (a tmpfs,
 * /run/replagent: it is cleared by a reboot, as the page cache is, and it
 * is not on the failing disk), holding the boot id and the loss's kind.
 * volume.c reads it at a start on the same boot, applies it to the
 * superblock it writes then, and removes it once that write succeeded. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
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
}

void repl__lossmark_set(struct repl_volume *vol, enum repl_loss kind)
{
	char buf[MARK_LEN], id_hex[33];
	uint8_t id[16];
	int fd, n, err = 0;

	if (!vol->loss_marker || kind <= vol->loss_marked)
		return;
	if (repl__sys->boot_id(id) < 0 || all_zero(id, sizeof(id))) {
		plog(LOG_ERR, vol->name, "no boot id: the loss of data the metadata could not "
		     "record is not kept for a restart of the daemon");
		return;
	}
	hex(id, id_hex);
	n = snprintf(buf, sizeof(buf), "%s %d\n", id_hex, (int)kind);
	fd = repl__sys->open(vol->loss_marker, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		err = -errno;
	else
		err = repl__full_pwrite(fd, buf, (size_t)n, 0);
	if (fd >= 0)
		repl__sys->close(fd);
	if (err) {
		plog_errno(LOG_ERR, vol->name, -err, "cannot write %s: a restart of the daemon "
			   "on this boot may serve data this disk lost", vol->loss_marker);
		return;
	}
	vol->loss_marked = kind;
	plog(LOG_WARNING, vol->name, "the metadata could not record that this disk lost "
	     "writes: %s says so until it can", vol->loss_marker);
}

enum repl_loss repl__lossmark_get(struct repl_volume *vol, const uint8_t boot_id[16])
{
	char buf[MARK_LEN + 1], id_hex[33];
	int fd, kind;
	ssize_t n;

	if (!vol->loss_marker)
		return REPL_LOSS_NONE;
	fd = repl__sys->open(vol->loss_marker, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return REPL_LOSS_NONE;
	n = repl__sys->pread(fd, buf, MARK_LEN, 0);
	repl__sys->close(fd);
	buf[n > 0 ? n : 0] = '\0';
	hex(boot_id, id_hex);
	if (n < 34 || strncmp(buf, id_hex, 32) || buf[32] != ' ' ||
	    sscanf(buf + 33, "%d", &kind) != 1 || kind <= REPL_LOSS_NONE ||
	    kind > REPL_LOSS_BLANK) {
		/* another boot's (the page cache it spoke of is gone, and
		 * the restart is a power loss by the boot ids) or damaged */
		plog(LOG_INFO, vol->name, "%s is not of this boot: removed", vol->loss_marker);
		drop(vol);
		return REPL_LOSS_NONE;
	}
	vol->loss_marked = (enum repl_loss)kind;
	return (enum repl_loss)kind;
}

void repl__lossmark_forget(struct repl_volume *vol)
{
	if (vol->loss_marker)
		drop(vol);
}

void repl__lossmark_recorded(struct repl_volume *vol, enum repl_loss kind)
{
	if (vol->loss_marker && vol->loss_marked && vol->loss_marked <= kind)
		drop(vol);
}
