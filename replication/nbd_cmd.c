/* nbd_cmd.c: the transmission phase of an NBD connection.  A request
 * header is checked (nbd_validate.c) and started on the volume, or answered
 * at once with an error; its reply, simple or structured (an error chunk,
 * the data, NBD_CMD_BLOCK_STATUS's extents built by nbd_meta.c on a
 * worker), is queued by ->done on whatever thread finished it, under
 * c->lock; and the window bounds what one client has in flight.  Reading
 * the bytes, the handshake and the connection's lifetime are not here
 * (nbd_conn.c, nbd_opt.c). */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "bufpool.h"
#include "log.h"
#include "nbd-protocol.h"
#include "nbd_cmd.h"
#include "nbd_conn_int.h"
#include "nbd_meta.h"
#include "nbd_notify.h"
#include "nbd_out.h"
#include "repl_int.h"
#include "util.h"

#define MAX_INFLIGHT	512
#define MAX_INFLIGHT_BYTES (128u * 1024 * 1024)
#define OUT_BACKLOG_MAX	(64u * 1024)

static uint32_t errno_to_nbd(int err)
{
	switch (err) {
	case 0: return 0;
	case EPERM: case EACCES: case EROFS: return NBD_EPERM;
	case ENOMEM: return NBD_ENOMEM;
	case EINVAL: return NBD_EINVAL;
	case ENOSPC: case EDQUOT: case EFBIG: return NBD_ENOSPC;
	case EOVERFLOW: return NBD_EOVERFLOW;
	case EOPNOTSUPP: return NBD_ENOTSUP;
	case ESHUTDOWN: return NBD_ESHUTDOWN;
	default: return NBD_EIO;
	}
}

static void req_free(struct nbd_req *req)
{
	repl__buf_put(req->io.buf);
	free(req);
}

/* Called with c->lock held, or when no other thread can hold it. */
void repl__nbd_req_out_free(struct outmsg *m)
{
	struct nbd_req *req = (struct nbd_req *)((char *)m - offsetof(struct nbd_req, out));
	struct nbd_conn *c = req->conn;

	c->inflight--;
	c->inflight_bytes -= req->buflen;
	req_free(req);
}

static struct nbd_req *req_new(struct nbd_conn *c, uint64_t cookie, uint16_t type,
			       size_t buflen)
{
	struct nbd_req *req = calloc(1, sizeof(*req));

	if (!req)
		return NULL;
	if (buflen && !(req->io.buf = repl__buf_get(buflen))) {
		free(req);
		return NULL;
	}
	req->conn = c;
	req->buflen = buflen;
	req->cookie = cookie;
	req->type = type;
	req->out.free = repl__nbd_req_out_free;
	req->io.flags = REPL_IO_DONE_ANY_THREAD;
	pthread_mutex_lock(&c->lock);
	c->inflight++;
	c->inflight_bytes += buflen;
	pthread_mutex_unlock(&c->lock);
	return req;
}

/* Fills req->hdr (and the data iovec for a successful read) and queues it.
 * Called with c->lock held. */
static void req_reply(struct nbd_req *req, uint32_t error)
{
	struct nbd_conn *c = req->conn;
	uint8_t *h = req->hdr;
	bool data = req->type == NBD_CMD_READ && !error;
	size_t hlen;

	if (!c->structured) {
		struct nbd_simple_reply r = {
			.magic = htobe32(NBD_SIMPLE_REPLY_MAGIC),
			.error = htobe32(error),
			.cookie = htobe64(req->cookie),
		};
		memcpy(h, &r, sizeof(r));
		hlen = sizeof(r);
	} else {
		struct nbd_structured_reply r = {
			.magic = htobe32(NBD_STRUCTURED_REPLY_MAGIC),
			.flags = htobe16(NBD_REPLY_FLAG_DONE),
			.cookie = htobe64(req->cookie),
		};
		hlen = sizeof(r);
		if (error) {
			uint32_t e = htobe32(error);
			uint16_t msglen = 0;
			r.type = htobe16(NBD_REPLY_TYPE_ERROR);
			r.length = htobe32(6);
			memcpy(h + hlen, &e, 4);
			memcpy(h + hlen + 4, &msglen, 2);
			hlen += 6;
		} else if (data) {
			uint64_t off = htobe64(req->io.offset);
			r.type = htobe16(NBD_REPLY_TYPE_OFFSET_DATA);
			r.length = htobe32(8 + req->io.len);
			memcpy(h + hlen, &off, 8);
			hlen += 8;
		} else {
			r.type = htobe16(NBD_REPLY_TYPE_NONE);
		}
		memcpy(h, &r, sizeof(r));
	}
	req->out.iov[0] = (struct iovec){ h, hlen };
	req->out.niov = 1;
	if (req->type == NBD_CMD_BLOCK_STATUS && !error)	/* built whole */
		req->out.iov[0] = (struct iovec){ req->io.buf, req->reply_len };
	if (data)
		req->out.iov[req->out.niov++] = (struct iovec){ req->io.buf, req->io.len };
	repl__nbd_out_push(c, &req->out);
}

bool repl__nbd_window_open_locked(const struct nbd_conn *c)
{
	return c->inflight < MAX_INFLIGHT && c->inflight_bytes < MAX_INFLIGHT_BYTES &&
	       c->out_backlog <= OUT_BACKLOG_MAX;
}

/* Sends what the socket takes of the queued replies, and leaves the loop
 * what is left to do (a full socket, room in the window, a close).
 * Called with c->lock held. */
static void replies_flush_locked(struct nbd_conn *c)
{
	bool was_closed = !repl__nbd_window_open_locked(c);

	repl__nbd_flush_locked(c);
	if ((c->out_head && !(c->events & POLLOUT)) ||
	    (was_closed && repl__nbd_window_open_locked(c)) ||
	    (c->read_closed && c->inflight == 0) || c->dead)
		repl__nbd_conn_notify_locked(c);
}

void repl__nbd_replies_send(void *conn)
{
	struct nbd_conn *c = conn;

	pthread_mutex_lock(&c->lock);
	if (!c->dead)
		replies_flush_locked(c);
	pthread_mutex_unlock(&c->lock);
}

#define FAIL_LOG_MS 10000

/* Under c->lock: a failing disk fails every request, a message per 10 s. */
static void log_failed(struct nbd_conn *c, const struct repl_io *io)
{
	unsigned skipped;
	char more[64];

	if (!ratelimit_ok(&c->fail_log, now_mono_ms(), FAIL_LOG_MS, &skipped))
		return;
	plog_errno(LOG_WARNING, c->vol->name, -io->result, "request at offset %llu failed%s",
		   (unsigned long long)io->offset, ratelimit_more(skipped, more, sizeof(more)));
}

/* Any thread: answers the request (or drops it on a dead connection).  In
 * a batch on the loop thread (the acknowledgements one read of a replica
 * link brought, the writes done inline) the reply goes out with the
 * batch's others, at its end: one sendmsg for all of them. */
static void req_done(struct repl_io *io)
{
	struct nbd_req *req = (struct nbd_req *)io;
	struct nbd_conn *c = req->conn;

	repl__stats_io(&c->vol->stats, io->op, io->len, req->start_ns, io->result);
	pthread_mutex_lock(&c->lock);
	if (io->result < 0)
		log_failed(c, io);
	if (c->dead) {
		repl__nbd_req_out_free(&req->out);
		if (c->inflight == 0)
			repl__nbd_conn_notify_locked(c);
	} else {
		req_reply(req, errno_to_nbd(-io->result));
		if (!repl__defer(c->eng, &c->replies))
			replies_flush_locked(c);
	}
	pthread_mutex_unlock(&c->lock);
}

/* Worker thread: the block status reply, built in io.buf. */
static int block_status(void *arg)
{
	struct nbd_req *req = arg;
	struct nbd_conn *c = req->conn;

	return repl__nbd_meta_reply(c->vol, c->meta, req->cookie, req->io.offset, req->io.len,
				    req->cmd_flags & NBD_CMD_FLAG_REQ_ONE, &req->io.buf,
				    &req->reply_len);
}

void repl__nbd_req_start(struct nbd_conn *c, struct nbd_req *req)
{
	req->io.done = req_done;
	req->start_ns = now_mono_ns();
	repl__volume_io(c->vol, &req->io);
}

static int reply_now(struct nbd_conn *c, uint64_t cookie, uint16_t type, uint32_t error)
{
	struct nbd_req *req = req_new(c, cookie, type, 0);

	if (!req)
		return -ENOMEM;
	pthread_mutex_lock(&c->lock);
	req_reply(req, error);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

static const enum repl_io_op cmd_ops[] = {
	[NBD_CMD_READ] = REPL_IO_READ,
	[NBD_CMD_WRITE] = REPL_IO_WRITE,
	[NBD_CMD_FLUSH] = REPL_IO_FLUSH,
	[NBD_CMD_TRIM] = REPL_IO_TRIM,
	[NBD_CMD_WRITE_ZEROES] = REPL_IO_ZERO,
	[NBD_CMD_CACHE] = REPL_IO_CACHE,
	[NBD_CMD_BLOCK_STATUS] = REPL_IO_LOOKUP,
};

/* Parses one request header at p; returns bytes consumed or -errno
 * (-EPROTO: close the connection). */
int repl__nbd_handle_request(struct nbd_conn *c, const uint8_t *p)
{
	struct nbd_request r;
	struct nbd_export_view exp = {
		.size = c->size,
		.read_only = c->vol->role != REPL_PRIMARY && !c->vol->window,
		.structured = c->structured,
		.contexts = c->meta ? c->meta->n : 0,
	};
	struct nbd_check chk;
	struct nbd_req *req;
	uint16_t flags, type;
	uint64_t offset;
	uint32_t count;

	memcpy(&r, p, sizeof(r));
	flags = be16toh(r.flags);
	type = be16toh(r.type);
	offset = be64toh(r.offset);
	count = be32toh(r.count);
	exp.fast_zero = (flags & NBD_CMD_FLAG_FAST_ZERO) &&
			repl__store_can_punch(c->vol->fd, c->vol->blockdev);
	chk = repl__nbd_check_request(be32toh(r.magic), flags, type, offset, count, &exp);
	if (chk.verdict == NBD_V_CLOSE) {
		plog(LOG_WARNING, c->vol->name, "closing client: %s", chk.why);
		return -EPROTO;
	}
	if (chk.verdict == NBD_V_ERROR) {
		plog(LOG_DEBUG, c->vol->name, "refused request type %u: %s", type, chk.why);
		if (type == NBD_CMD_WRITE)
			c->discard_left = count;
		return reply_now(c, be64toh(r.cookie), type, chk.error) < 0 ? -ENOMEM
									   : (int)sizeof(r);
	}
	if (type == NBD_CMD_DISC) {
		repl__nbd_conn_close_side(c, false);
		return (int)sizeof(r);
	}
	req = req_new(c, be64toh(r.cookie), type,
		      type == NBD_CMD_READ || type == NBD_CMD_WRITE ? count : 0);
	if (!req)
		return -ENOMEM;
	req->io.op = cmd_ops[type];
	req->io.offset = offset;
	req->io.len = type == NBD_CMD_FLUSH ? 0 : count;
	req->cmd_flags = flags;
	if (type == NBD_CMD_BLOCK_STATUS) {
		req->io.fn = block_status;
		req->io.arg = req;
	}
	req->io.flags |= ((flags & NBD_CMD_FLAG_FUA) ? REPL_IO_FUA : 0) |
			 ((flags & NBD_CMD_FLAG_NO_HOLE) ? REPL_IO_NO_HOLE : 0);
	if (type == NBD_CMD_WRITE) {
		c->rx = req;
		c->rx_have = 0;
	} else {
		repl__nbd_req_start(c, req);
	}
	return (int)sizeof(r);
}
