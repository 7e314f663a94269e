/* fuzz-nbd.c: what an NBD client sends (replication/nbd_conn.c, nbd_opt.c
 * and nbd_validate.c).  The first input byte chooses:
 *   0: the rest is the client's byte stream after the server's greeting
 *      (client flags, options), fed through a socket pair into a real
 *      connection of an engine without volumes (so the option parsing,
 *      LIST, INFO/GO refusals and EXPORT_NAME run; transmission needs a
 *      volume and is left to the request check below);
 *   1: an export view (1 flag byte: read-only, structured, fast zero,
 *      a context selected; 8 bytes size) and a 28-byte request header for
 *      repl__nbd_check_request(), which must never let a request past the
 *      end of the export or a write into a read-only one;
 *   2: the data of an INFO/GO option for repl__nbd_parse_info_go(). */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#include "nbd-protocol.h"
#include "repl_int.h"

/* ---- a loop that only remembers what was registered ---------------------- */

#define FDS_MAX 8

static struct reg {
	int fd;
	unsigned events;
	repl_fd_fn fn;
	void *arg;
} regs[FDS_MAX];

static int fd_add(void *loop, int fd, unsigned events, repl_fd_fn fn, void *arg)
{
	for (unsigned i = 0; i < FDS_MAX; i++)
		if (!regs[i].fn) {
			regs[i] = (struct reg){ fd, events, fn, arg };
			return 0;
		}
	return -ENOSPC;
}

static struct reg *reg_of(int fd)
{
	for (unsigned i = 0; i < FDS_MAX; i++)
		if (regs[i].fn && regs[i].fd == fd)
			return &regs[i];
	return NULL;
}

static int fd_mod(void *loop, int fd, unsigned events)
{
	struct reg *r = reg_of(fd);

	if (!r)
		return -ENOENT;
	r->events = events;
	return 0;
}

static void fd_del(void *loop, int fd)
{
	struct reg *r = reg_of(fd);

	if (r)
		memset(r, 0, sizeof(*r));
}

static int timer_add(void *loop, uint64_t after_ms, repl_timer_fn fn, void *arg, void **handle)
{
	*handle = NULL;
	return 0;
}

static void timer_del(void *loop, void *handle)
{
}

static const struct repl_loop_ops ops = { fd_add, fd_mod, fd_del, timer_add, timer_del };

static void drain(int fd)
{
	static uint8_t buf[65536];

	while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

static void handshake(const uint8_t *data, size_t size)
{
	struct repl_loop loop = { &ops, NULL };
	struct repl_engine *eng;
	size_t sent = 0;
	int sv[2];

	memset(regs, 0, sizeof(regs));
	if (repl_engine_new(&loop, &eng) < 0)
		return;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		repl_engine_free(eng);
		return;
	}
	if (repl__nbd_conn_new(eng, sv[0], &(const struct nbd_source){ { 0 } }) < 0) {
		close(sv[0]);
		close(sv[1]);
		repl_engine_free(eng);
		return;
	}
	for (unsigned round = 0; round < 1000; round++) {
		struct reg *r = reg_of(sv[0]);

		if (sent < size) {
			ssize_t n = send(sv[1], data + sent, size - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n > 0)
				sent += (size_t)n;
		}
		if (sent == size)
			shutdown(sv[1], SHUT_WR);
		drain(sv[1]);
		if (!r)
			break;
		r->fn(r->arg, sv[0], r->events & (POLLIN | POLLOUT));
	}
	/* Whatever is still open is closed the way a stopping daemon does. */
	repl_engine_free(eng);
	close(sv[1]);
}

static void check_request(const uint8_t *data, size_t size)
{
	struct nbd_export_view exp = { 0 };
	struct nbd_request r;
	struct nbd_check chk;
	uint64_t size_be;
	uint16_t type;
	uint64_t offset;
	uint32_t count;

	if (size < 1 + 8 + sizeof(r))
		return;
	exp.read_only = data[0] & 1;
	exp.structured = data[0] & 2;
	exp.fast_zero = data[0] & 4;
	exp.contexts = (data[0] >> 3) & 1;
	memcpy(&size_be, data + 1, 8);
	exp.size = be64toh(size_be);
	memcpy(&r, data + 9, sizeof(r));
	type = be16toh(r.type);
	offset = be64toh(r.offset);
	count = be32toh(r.count);
	chk = repl__nbd_check_request(be32toh(r.magic), be16toh(r.flags), type, offset,
				      count, &exp);
	FUZZ_ASSERT(chk.verdict == NBD_V_OK || chk.verdict == NBD_V_ERROR ||
		    chk.verdict == NBD_V_CLOSE);
	if (chk.verdict != NBD_V_OK)
		FUZZ_ASSERT(chk.why != NULL);
	if (chk.verdict == NBD_V_ERROR)
		FUZZ_ASSERT(chk.error != 0);
	if (chk.verdict != NBD_V_OK || type == NBD_CMD_DISC)
		return;
	FUZZ_ASSERT(be32toh(r.magic) == NBD_REQUEST_MAGIC);
	if (type == NBD_CMD_FLUSH) {
		FUZZ_ASSERT(!exp.read_only && offset == 0 && count == 0);
		return;
	}
	FUZZ_ASSERT(type == NBD_CMD_READ || type == NBD_CMD_CACHE ||
		    type == NBD_CMD_BLOCK_STATUS || !exp.read_only);
	if (type == NBD_CMD_BLOCK_STATUS)
		FUZZ_ASSERT(exp.contexts);
	if (be16toh(r.flags) & NBD_CMD_FLAG_FAST_ZERO)
		FUZZ_ASSERT(exp.fast_zero && type == NBD_CMD_WRITE_ZEROES);
	FUZZ_ASSERT(count > 0 && offset <= exp.size && count <= exp.size - offset);
	if (type == NBD_CMD_READ || type == NBD_CMD_WRITE)
		FUZZ_ASSERT(count <= NBD_MAX_PAYLOAD);
}

static void info_go(const uint8_t *data, size_t size)
{
	char name[NBD_MAX_NAME_LEN + 1];
	const char *why = NULL;
	uint32_t namelen;

	if (size > NBD_MAX_OPTION_LEN)
		return;
	if (repl__nbd_parse_info_go(data, (uint32_t)size, name, &why) != 0) {
		FUZZ_ASSERT(why != NULL);
		return;
	}
	memcpy(&namelen, data, 4);
	FUZZ_ASSERT(strlen(name) == be32toh(namelen));
	FUZZ_ASSERT(memcmp(name, data + 4, strlen(name)) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_quiet();
	if (size < 1 || size > 4 * NBD_MAX_OPTION_LEN)
		return 0;
	switch (data[0] % 3) {
	case 0:
		handshake(data + 1, size - 1);
		break;
	case 1:
		check_request(data + 1, size - 1);
		break;
	default:
		info_go(data + 1, size - 1);
		break;
	}
	return 0;
}
