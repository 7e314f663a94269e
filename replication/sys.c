/* sys.c: the production table of the engine's seams (sys.h): libc and the
 * kernel, exactly the calls the engine made before the seams existed. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "sys.h"
#include "util.h"

static int posix_random(void *buf, size_t len)
{
	return random_bytes(buf, len);
}

/* A UUID and a newline -> 16 bytes. */
static int posix_boot_id(uint8_t id[16])
{
	char text[64];
	ssize_t len;
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	len = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (len < 0)
		return -EIO;
	text[len] = '\0';
	text[strcspn(text, "\n")] = '\0';
	return parse_uuid(text, id) < 0 ? -EPROTO : 0;
}

static int posix_listen(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *res;
	int fd, r, one = 1;

	r = getaddrinfo(host && *host ? host : NULL, port, &hints, &res);
	if (r)
		return -EADDRNOTAVAIL;
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		freeaddrinfo(res);
		return -errno;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	r = bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 16) < 0 ? -errno : 0;
	freeaddrinfo(res);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

static void nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* A peer that went silent (host down, cable out) is dropped by the kernel
 * within LINK_DEAD_MS, idle link or not: keepalive probes after 1 s of
 * silence, and TCP_USER_TIMEOUT ends the connection once nothing (data or
 * probe answered) came back for LINK_DEAD_MS, also with data unacknowledged.
 * That is the dead-peer detection time the engine's pings gave when they ran
 * every second on every link; now they need not (peer.c, issue 16). */
#define LINK_DEAD_MS 3000

static void keepalive(int fd)
{
	int one = 1, idle = 1, intvl = 1, cnt = LINK_DEAD_MS / 1000;
	unsigned int user = LINK_DEAD_MS;

	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user, sizeof(user));
}

static int posix_connect(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	int fd, r;

	r = getaddrinfo(host, port, &hints, &res);
	if (r)
		return -EHOSTUNREACH;
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		freeaddrinfo(res);
		return -errno;
	}
	r = connect(fd, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	if (r < 0 && errno != EINPROGRESS) {
		r = -errno;
		close(fd);
		return r;
	}
	nodelay(fd);
	keepalive(fd);
	return fd;
}

static int posix_connect_error(int fd)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		return errno;
	return err;
}

static int posix_accept(int fd, struct sockaddr_storage *src)
{
	socklen_t slen = sizeof(*src);
	int c = accept4(fd, (struct sockaddr *)src, &slen, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (c >= 0) {
		nodelay(c);
		keepalive(c);
	}
	return c;
}

static ssize_t posix_sendmsg(int fd, const struct msghdr *msg)
{
	return sendmsg(fd, msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static ssize_t posix_recv(int fd, void *buf, size_t len)
{
	return recv(fd, buf, len, MSG_DONTWAIT);
}

static int posix_open(const char *path, int flags, mode_t mode)
{
	return open(path, flags, mode);
}

static int posix_dup(int fd)
{
	return fcntl(fd, F_DUPFD_CLOEXEC, 0);
}

static ssize_t posix_preadv2(int fd, void *buf, size_t len, off_t off, int rwflags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return preadv2(fd, &iov, 1, off, rwflags);
}

static ssize_t posix_pwritev2(int fd, const void *buf, size_t len, off_t off, int rwflags)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return pwritev2(fd, &iov, 1, off, rwflags);
}

static int posix_ioctl_blk(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg);
}

static int posix_renameat2(const char *from, const char *to, unsigned flags)
{
	return renameat2(AT_FDCWD, from, AT_FDCWD, to, flags);
}

static uint64_t posix_wall_s(void)
{
	return (uint64_t)time(NULL);
}

const struct repl_sys_ops repl__sys_posix = {
	.now_ns = now_mono_ns,
	.wall_s = posix_wall_s,
	.random = posix_random,
	.boot_id = posix_boot_id,
	.listen = posix_listen,
	.connect = posix_connect,
	.connect_error = posix_connect_error,
	.accept = posix_accept,
	.sendmsg = posix_sendmsg,
	.recv = posix_recv,
	.open = posix_open,
	.close = close,
	.dup = posix_dup,
	.flock = flock,
	.fstat = fstat,
	.pread = pread,
	.preadv2 = posix_preadv2,
	.pwritev2 = posix_pwritev2,
	.fsync = fsync,
	.fdatasync = fdatasync,
	.fallocate = fallocate,
	.ftruncate = ftruncate,
	.ioctl_blk = posix_ioctl_blk,
	.renameat2 = posix_renameat2,
	.link = link,
	.unlink = unlink,
	.access = access,
	.mkostemp = mkostemp,
	.link_dead_ms = LINK_DEAD_MS,
};

const struct repl_sys_ops *repl__sys = &repl__sys_posix;

void repl_sys_set(const struct repl_sys_ops *ops)
{
	bool sim = ops && ops != &repl__sys_posix;

	repl__sys = sim ? ops : &repl__sys_posix;
	util_set_sources(sim ? ops->now_ns : NULL, sim ? ops->random : NULL);
}

int repl__fsync_dir_of(const char *path)
{
	char *copy = strdup(path);
	int fd, err = 0;

	if (!copy)
		return -ENOMEM;
	fd = repl__sys->open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0 || repl__sys->fsync(fd) < 0)
		err = -errno;
	if (fd >= 0)
		repl__sys->close(fd);
	free(copy);
	return err;
}

int repl__full_pread(int fd, void *buf, size_t len, off_t off)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = repl__sys->pread(fd, p, len, off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

int repl__full_pwritev2(int fd, const void *buf, size_t len, off_t off, int rwflags)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = repl__sys->pwritev2(fd, p, len, off, rwflags);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

int repl__full_pwrite(int fd, const void *buf, size_t len, off_t off)
{
	return repl__full_pwritev2(fd, buf, len, off, 0);
}
