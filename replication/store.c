/* store.c: the local backing store of a volume, a regular file or a block
 * device, accessed with buffered positional I/O.  FLUSH is fdatasync; FUA is
 * a write with RWF_DSYNC.  Deallocation punches holes in files so that a
 * trimmed range reads back as zeroes on every replica (online verify relies
 * on that); on block devices it is fallocate(PUNCH_HOLE) too, which the
 * kernel turns into a discard or unmapping write-zeroes that reads back as
 * zeroes, or refuses (then TRIM does nothing and WRITE_ZEROES uses
 * BLKZEROOUT).  BLKDISCARD is not used: it does not promise zeroes.  A grow
 * extends a file, or zeroes the new area of a device.  Holes are also asked
 * about (SEEK_DATA) for NBD block status and to skip reading them in a
 * resync or verify.  No metadata lives here: see meta.c. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "log.h"
#include "repl_int.h"
#include "sys.h"
#include "util.h"

static int store_size(int fd, bool *blockdev, uint64_t *size)
{
	struct stat st;

	if (repl__sys->fstat(fd, &st) < 0)
		return -errno;
	if (S_ISBLK(st.st_mode)) {
		*blockdev = true;
		return repl__sys->ioctl_blk(fd, BLKGETSIZE64, size) < 0 ? -errno : 0;
	}
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	*blockdev = false;
	*size = (uint64_t)st.st_size;
	return 0;
}

int repl__store_open(const char *path, uint64_t create_size, int *fdp,
		     uint64_t *size, bool *blockdev)
{
	int fd, r;

	fd = repl__sys->open(path, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0 && errno == ENOENT && create_size > 0) {
		fd = repl__sys->open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd >= 0 && repl__sys->ftruncate(fd, (off_t)create_size) < 0) {
			r = -errno;
			repl__sys->close(fd);
			repl__sys->unlink(path);
			return r;
		}
	}
	if (fd < 0)
		return -errno;
	r = store_size(fd, blockdev, size);
	if (r < 0) {
		repl__sys->close(fd);
		return r;
	}
	*fdp = fd;
	return 0;
}

/* Did a write that failed put any of its data in the page cache?  Linux
 * copies a write's data in order, from its first byte, before the sync
 * of RWF_DSYNC runs, and runs that sync only when some of it was copied:
 * where the first bytes read back different, none was, and nothing was
 * synced.  Where they read the same (or cannot be read), maybe. */
static bool landed(int fd, const struct repl_io *io)
{
	uint8_t head[512];
	size_t n = MIN(sizeof(head), (size_t)io->len);

	return repl__full_pread(fd, head, n, (off_t)io->offset) < 0 || !memcmp(head, io->buf, n);
}

static int store_write(int fd, struct repl_io *io)
{
	bool fua = io->flags & REPL_IO_FUA;
	int r = repl__full_pwritev2(fd, io->buf, io->len, (off_t)io->offset, fua ? RWF_DSYNC : 0);

	/* A full file system refuses a write before it copies anything
	 * (ENOSPC, EDQUOT): no sync ran, and no writeback failed.  Any other
	 * failure of a FUA write may be its sync's, which reports the failed
	 * writebacks of other writes too. */
	if (r < 0 && fua && !((r == -ENOSPC || r == -EDQUOT) && !landed(fd, io)))
		io->flags |= REPL_IO_SYNC_FAILED;
	return r;
}

static int store_write_zero_buf(int fd, uint64_t off, uint64_t len)
{
	static const char zero[64 * 1024];
	int r;

	while (len > 0) {
		size_t n = (size_t)MIN(len, sizeof(zero));
		r = repl__full_pwrite(fd, zero, n, (off_t)off);
		if (r < 0)
			return r;
		off += n;
		len -= n;
	}
	return 0;
}

static int store_zero(int fd, bool blockdev, struct repl_io *io)
{
	int mode;

	if (blockdev) {
		uint64_t range[2] = { io->offset, io->len };
		if (!(io->flags & REPL_IO_NO_HOLE) &&
		    repl__sys->fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					 (off_t)io->offset, (off_t)io->len) == 0)
			return 0;
		if (repl__sys->ioctl_blk(fd, BLKZEROOUT, range) == 0)
			return 0;
		return store_write_zero_buf(fd, io->offset, io->len);
	}
	mode = (io->flags & REPL_IO_NO_HOLE) ? FALLOC_FL_ZERO_RANGE
					      : FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
	if (repl__sys->fallocate(fd, mode, (off_t)io->offset, (off_t)io->len) == 0)
		return 0;
	if (errno != EOPNOTSUPP && errno != ENOSYS && errno != EINVAL)
		return -errno;
	return store_write_zero_buf(fd, io->offset, io->len);
}

static int store_trim(int fd, bool blockdev, struct repl_io *io)
{
	if (repl__sys->fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)io->offset, (off_t)io->len) == 0)
		return 0;
	/* A device that can neither discard nor unmap keeps its data, as it
	 * always did (a hint): writing zeroes over a large trim costs more
	 * than a trim is worth. */
	if (blockdev)
		return 0;
	/* Trim is a hint: a file system that cannot punch holes just keeps
	 * the data.  Zero it instead so every replica reads the same. */
	return store_write_zero_buf(fd, io->offset, io->len);
}

int repl__store_sync(int fd)
{
	return fd >= 0 && repl__sys->fdatasync(fd) < 0 ? -errno : 0;
}

int repl__store_exec(int fd, bool blockdev, struct repl_io *io)
{
	int r;

	switch (io->op) {
	case REPL_IO_READ:
		if ((io->flags & REPL_IO_HOLE_CHECK) &&
		    repl__store_is_hole(fd, blockdev, io->offset, io->len)) {
			io->flags |= REPL_IO_WAS_HOLE;
			return 0;
		}
		return repl__full_pread(fd, io->buf, io->len, (off_t)io->offset);
	case REPL_IO_CACHE:
		/* the advice is best effort: a failure is no error of the data */
		(void)posix_fadvise(fd, (off_t)io->offset, (off_t)io->len, POSIX_FADV_WILLNEED);
		return 0;
	case REPL_IO_LOOKUP:
		return io->fn(io->arg);
	case REPL_IO_WRITE:
		return store_write(fd, io);
	case REPL_IO_FLUSH:
		return repl__sys->fdatasync(fd) < 0 ? -errno : 0;
	case REPL_IO_CALL:
		return io->fn(io->arg);
	case REPL_IO_TRIM:
		r = store_trim(fd, blockdev, io);
		break;
	case REPL_IO_ZERO:
		r = store_zero(fd, blockdev, io);
		break;
	default:
		return -EINVAL;
	}
	if (r == 0 && (io->flags & REPL_IO_FUA) && repl__sys->fdatasync(fd) < 0) {
		r = -errno;
		io->flags |= REPL_IO_SYNC_FAILED;
	}
	return r;
}

/* A grow's new area on a device: whatever was there before is not ours,
 * and every replica must read the same there (a file's reads as zeroes). */
static int store_grow_device(int fd, uint64_t from, uint64_t to, uint64_t *dev_size)
{
	uint64_t range[2] = { from, to - from };
	int r;

	if (repl__sys->ioctl_blk(fd, BLKGETSIZE64, dev_size) < 0)
		return -errno;
	if (*dev_size < to)
		return -ENOSPC;
	if (repl__sys->ioctl_blk(fd, BLKZEROOUT, range) < 0 &&
	    (r = store_write_zero_buf(fd, from, to - from)) < 0)
		return r;
	return repl__sys->fdatasync(fd) < 0 ? -errno : 0;
}

int repl__store_grow(int fd, bool blockdev, uint64_t from, uint64_t to, uint64_t *dev_size)
{
	struct stat st;

	*dev_size = 0;
	if (blockdev)
		return store_grow_device(fd, from, to, dev_size);
	if (repl__sys->fstat(fd, &st) < 0)
		return -errno;
	/* Larger already: a grow a crash interrupted extended it. */
	if ((uint64_t)st.st_size < to && repl__sys->ftruncate(fd, (off_t)to) < 0)
		return -errno;
	/* The size on disk before the metadata says it: after a crash the
	 * backing is never smaller than the metadata. */
	return repl__sys->fsync(fd) < 0 ? -errno : 0;
}

bool repl__store_can_punch(int fd, bool blockdev)
{
	struct stat st;

	/* A device may discard or not, fast or not, and says so only in
	 * sysfs: not promised. */
	if (blockdev || repl__sys->fstat(fd, &st) < 0)
		return false;
	/* Past the end of the file a punch changes nothing, and fails the
	 * same way as anywhere when the file system cannot punch. */
	return repl__sys->fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, st.st_size, 4096) == 0;
}

bool repl__store_is_hole(int fd, bool blockdev, uint64_t off, uint64_t len)
{
	off_t d;

	if (blockdev || len == 0)
		return false;
	d = lseek(fd, (off_t)off, SEEK_DATA);
	if (d < 0)
		return errno == ENXIO;	/* no data from off to the end */
	return (uint64_t)d >= off + len;
}

int repl__store_read_nowait(int fd, struct repl_io *io)
{
	ssize_t n;

	if (io->flags & REPL_IO_HOLE_CHECK)
		return -EAGAIN;	/* the worker asks about holes first */
	n = repl__sys->preadv2(fd, io->buf, io->len, (off_t)io->offset, RWF_NOWAIT);
	if (n == (ssize_t)io->len)
		return 0;
	if (n >= 0 || errno == EAGAIN || errno == EOPNOTSUPP || errno == EINTR)
		return -EAGAIN;	/* partly cached, or no support: use a worker */
	return -errno;
}
