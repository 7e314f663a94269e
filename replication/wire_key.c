/* wire_key.c: the shared key of the link handshake, read from its file
 * (wire.h wire_key_load()): what the file must be and who may read it,
 * its length, and wiping what was read when it is refused.  The only
 * file I/O of the wire code; the handshake that uses the key is
 * wire_auth.c. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "wire.h"

static int key_refuse(int err, const char *reason, const char **why)
{
	if (why)
		*why = reason;
	return err;
}

/* Opens the key file and checks what it is and who may read it: the fd, or
 * -errno.  A symlink is followed; the file it names is what is checked. */
static int key_open(const char *path, const char **why)
{
	struct stat st;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return key_refuse(-errno, "cannot open the key file", why);
	if (fstat(fd, &st) < 0)
		err = key_refuse(-errno, "cannot stat the key file", why);
	else if (!S_ISREG(st.st_mode))
		err = key_refuse(-EINVAL, "the key file is not a regular file", why);
	else if (st.st_mode & (S_IRWXG | S_IRWXO))
		err = key_refuse(-EPERM, "the key file is accessible by group or others "
				 "(chmod 600 it)", why);
	else if (st.st_uid != geteuid() && st.st_uid != 0)
		err = key_refuse(-EPERM, "the key file is owned by another user", why);
	else
		return fd;
	close(fd);
	return err;
}

/* Reads the whole file, at most maxlen bytes: the length, or -errno. */
static ssize_t key_read(int fd, uint8_t *buf, size_t maxlen, const char **why)
{
	size_t len = 0;
	uint8_t extra;
	ssize_t n;

	for (;;) {
		if (len < maxlen)
			n = read(fd, buf + len, maxlen - len);
		else
			n = read(fd, &extra, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return key_refuse(-errno, "cannot read the key file", why);
		if (n == 0)
			return (ssize_t)len;
		if (len == maxlen) {
			OPENSSL_cleanse(&extra, sizeof(extra));
			return key_refuse(-EFBIG, "the key file is too long", why);
		}
		len += (size_t)n;
	}
}

ssize_t wire_key_load(const char *path, uint8_t *buf, size_t maxlen, const char **why)
{
	ssize_t len;
	int fd = key_open(path, why);

	if (fd < 0)
		return fd;
	len = key_read(fd, buf, maxlen, why);
	close(fd);
	if (len >= 0 && len < WIRE_KEY_MIN)
		len = key_refuse(-EINVAL, "the key is shorter than 16 bytes", why);
	if (len < 0) {
		OPENSSL_cleanse(buf, maxlen);
		return len;
	}
	if (why)
		*why = NULL;
	return len;
}
