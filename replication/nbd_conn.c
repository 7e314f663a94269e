/* nbd_conn.c: one NBD client connection, from the fixed newstyle handshake
 * through the transmission phase, on the loop thread.  Requests are read
 * without blocking, checked (nbd_validate.c), started on the volume, and
 * answered in the order they finish (out of order is allowed by the
 * protocol), with structured replies when the client asked for them.
 *
 * Lifetime: a connection is freed only by conn_maybe_close(), on the loop
 * thread, once nothing references it: no request in flight, nothing left to
 * send (or the peer is gone), and no event handler running for it (busy).
 * A request's ->done may run inside conn_read() (a read from the page
 * cache), which is why the busy guard exists.
 *
 * Threads: a request's ->done may also run on a volume worker, which then
 * sends the reply itself (no trip through the loop).  c->lock guards what
 * both sides touch: the output queue and the socket's send side, dead,
 * the in-flight counters and notified.  A worker that leaves something for
 * the loop (a full socket, a connection to close, room in the window)
 * queues the connection on the engine's notify list, under c->lock, so the
 * loop cannot free it in between.
 *
 * Limits, since anyone who can open the socket can connect: a client has
 * HANDSHAKE_TIMEOUT_MS from its connection to NBD_OPT_GO (qemu-nbd's
 * --handshake-limit is the same 10 s); at most HANDSHAKES_MAX clients are
 * in the handshake at once, HANDSHAKES_PER_SOURCE of them from one source
 * (a pid on the Unix socket, an address over TCP), and one more pushes out
 * another (of its source first, see victim_rank): first a client that
 * does not read its replies, then one that never sent an option, then the
 * one idle longest.  A real client sends its options one after the other
 * and reads the answers, so a flood pushes out its own connections.  A client that does not read its option
 * replies is not read from while more than OUT_BACKLOG_MAX bytes of them
 * wait (in transmission the in-flight window bounds the replies).  Attached
 * clients are limited by eng->nbd_clients_max, refused at NBD_OPT_GO with a
 * message. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bufpool.h"
#include "log.h"
#include "nbd-protocol.h"
#include "nbd_meta.h"
#include "nbd_tls.h"
#include "repl_int.h"
#include "resize.h"
#include "util.h"

#define IN_CAP		(NBD_MAX_OPTION_LEN + 64 * 1024)
#define MAX_INFLIGHT	512
#define MAX_INFLIGHT_BYTES (128u * 1024 * 1024)
#define MAX_IOV		64
#define HANDSHAKE_TIMEOUT_MS 10000
#define HANDSHAKES_MAX	64
#define HANDSHAKES_PER_SOURCE 16
#define OUT_BACKLOG_MAX	(64u * 1024)
#define UNREAD_MAX	4096		/* replies a real client leaves unread */
#define DROP_LOG_MS	1000

enum conn_state { CS_CLIENT_FLAGS, CS_OPTIONS, CS_TRANSMISSION };

struct outmsg {
	struct outmsg *next;
	struct iovec iov[2];
	unsigned niov;
	size_t backlog;			/* bytes counted in the conn's out_backlog */
	void (*free)(struct outmsg *m);
};

struct nbd_req {
	struct repl_io io;		/* first: container_of by cast */
	struct outmsg out;
	struct nbd_conn *conn;
	uint64_t cookie;
	size_t buflen;			/* counted in inflight_bytes */
	uint16_t type;
	uint16_t cmd_flags;
	size_t reply_len;		/* BLOCK_STATUS: the reply in io.buf */
	uint8_t hdr[32];
	uint64_t start_ns;		/* for the latency histogram (stats.h) */
};

struct nbd_conn {
	struct repl_engine *eng;
	struct nbd_conn *next, *prev;
	int fd;
	enum conn_state state;
	unsigned events;
	uint8_t *in;
	size_t in_start, in_end;
	struct repl_volume *vol;
	uint64_t size;			/* negotiated: the export's size for good */
	bool structured;
	bool no_zeroes;
	struct nbd_meta_sel *meta;	/* selected metadata contexts (nbd_meta.c) */
	struct nbd_req *rx;		/* write whose payload is arriving */
	size_t rx_have;
	uint64_t discard_left;		/* payload of a refused write */
	struct outmsg *out_head, **out_tail;
	size_t out_backlog;		/* option replies queued, not sent */
	struct nbd_source src;
	void *hs_timer;			/* the handshake's deadline */
	uint64_t active_ms;		/* connected, or last option handled */
	bool sent_option;
	unsigned inflight;
	size_t inflight_bytes;
	unsigned busy;
	pthread_mutex_t lock;
	bool notified;			/* on the engine's notify list */
	struct nbd_conn *notify_next;
	bool registered;		/* fd is in the loop */
	bool read_closed;		/* EOF, DISC, ABORT or stopping */
	bool dead;			/* socket unusable: send nothing more */
	struct nbd_tls *tls;		/* after NBD_OPT_STARTTLS (nbd_tls.c) */
};

static void conn_update(struct nbd_conn *c);
static void conn_maybe_close(struct nbd_conn *c);
static void conn_notify_locked(struct nbd_conn *c);
static void flush_locked(struct nbd_conn *c);
static void conn_close_side(struct nbd_conn *c, bool dead);

static void conn_flush(struct nbd_conn *c)
{
	pthread_mutex_lock(&c->lock);
	flush_locked(c);
	pthread_mutex_unlock(&c->lock);
}
static void conn_read(struct nbd_conn *c);
static bool may_read(struct nbd_conn *c);

/* ---- output ---------------------------------------------------------- */

static void out_push(struct nbd_conn *c, struct outmsg *m)
{
	m->next = NULL;
	*c->out_tail = m;
	c->out_tail = &m->next;
}

static void out_pop(struct nbd_conn *c)
{
	struct outmsg *m = c->out_head;

	c->out_head = m->next;
	if (!c->out_head)
		c->out_tail = &c->out_head;
	c->out_backlog -= m->backlog;
	m->free(m);
}

/* Sends what the socket takes now; the rest waits for POLLOUT.  Called
 * with c->lock held. */
static void flush_locked(struct nbd_conn *c)
{
	struct iovec iov[MAX_IOV];
	struct msghdr msg = { .msg_iov = iov };
	ssize_t n;

	while (c->out_head && !c->dead) {
		size_t cnt = 0;
		for (struct outmsg *m = c->out_head; m && cnt + 2 <= MAX_IOV; m = m->next)
			for (unsigned i = 0; i < m->niov; i++)
				iov[cnt++] = m->iov[i];
		msg.msg_iovlen = cnt;
		n = repl__nbd_sendmsg(c->tls, c->fd, &msg);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				c->dead = true;
			return;
		}
		while (c->out_head && n > 0) {
			struct outmsg *m = c->out_head;
			for (unsigned i = 0; i < m->niov && n > 0; i++) {
				size_t take = MIN((size_t)n, m->iov[i].iov_len);
				m->iov[i].iov_base = (char *)m->iov[i].iov_base + take;
				m->iov[i].iov_len -= take;
				n -= (ssize_t)take;
			}
			if (m->iov[m->niov - 1].iov_len != 0)
				break;
			out_pop(c);
		}
	}
}

static void outmsg_free_plain(struct outmsg *m) { free(m); }

/* A handshake-phase message: copied, freed once sent. */
static int send_bytes(struct nbd_conn *c, const void *a, size_t alen,
		      const void *b, size_t blen)
{
	struct outmsg *m = malloc(sizeof(*m) + alen + blen);

	if (!m)
		return -ENOMEM;
	memcpy(m + 1, a, alen);
	if (blen)
		memcpy((char *)(m + 1) + alen, b, blen);
	m->iov[0] = (struct iovec){ m + 1, alen + blen };
	m->niov = 1;
	m->free = outmsg_free_plain;
	m->backlog = alen + blen;
	pthread_mutex_lock(&c->lock);
	c->out_backlog += m->backlog;
	out_push(c, m);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

static int opt_reply(struct nbd_conn *c, uint32_t opt, uint32_t reply,
		     const void *data, uint32_t len)
{
	struct nbd_option_reply r = {
		.magic = htobe64(NBD_REP_MAGIC),
		.option = htobe32(opt),
		.reply = htobe32(reply),
		.length = htobe32(len),
	};
	return send_bytes(c, &r, sizeof(r), data, len);
}

static int opt_error(struct nbd_conn *c, uint32_t opt, uint32_t reply, const char *msg)
{
	return opt_reply(c, opt, reply, msg, (uint32_t)strlen(msg));
}

/* ---- requests ---------------------------------------------------------- */

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
static void req_out_free(struct outmsg *m)
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
	req->out.free = req_out_free;
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
	out_push(c, &req->out);
}

static bool window_open_locked(const struct nbd_conn *c)
{
	return c->inflight < MAX_INFLIGHT && c->inflight_bytes < MAX_INFLIGHT_BYTES &&
	       c->out_backlog <= OUT_BACKLOG_MAX;
}

/* Any thread: answers the request (or drops it on a dead connection). */
static void req_done(struct repl_io *io)
{
	struct nbd_req *req = (struct nbd_req *)io;
	struct nbd_conn *c = req->conn;
	bool was_closed, wake;

	if (io->result < 0)
		plog_errno(LOG_WARNING, c->vol->name, -io->result,
			   "request at offset %llu failed",
			   (unsigned long long)io->offset);
	repl__stats_io(&c->vol->stats, io->op, io->len, req->start_ns, io->result);
	pthread_mutex_lock(&c->lock);
	was_closed = !window_open_locked(c);
	if (c->dead) {
		req_out_free(&req->out);
		wake = c->inflight == 0;
	} else {
		req_reply(req, errno_to_nbd(-io->result));
		flush_locked(c);
		wake = (c->out_head && !(c->events & POLLOUT)) ||
		       (was_closed && window_open_locked(c)) ||
		       (c->read_closed && c->inflight == 0) || c->dead;
	}
	if (wake)
		conn_notify_locked(c);
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

static void req_start(struct nbd_conn *c, struct nbd_req *req)
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
static int handle_request(struct nbd_conn *c, const uint8_t *p)
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
		conn_close_side(c, false);
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
		req_start(c, req);
	}
	return (int)sizeof(r);
}

/* ---- handshake ------------------------------------------------------- */

/* A client gets the size every connected replica has (resize.h), and
 * keeps it: NBD has no way to tell it of a new one. */
static int send_export_info(struct nbd_conn *c, uint32_t opt, struct repl_volume *vol,
			    uint64_t size)
{
	struct __attribute__((packed)) { uint16_t type; uint64_t size; uint16_t flags; } ie = {
		htobe16(NBD_INFO_EXPORT), htobe64(size),
		htobe16(repl__nbd_export_flags(vol, c->structured)),
	};
	struct __attribute__((packed)) { uint16_t type; uint32_t min, pref, max; } bs = {
		htobe16(NBD_INFO_BLOCK_SIZE), htobe32(1), htobe32(4096),
		htobe32(NBD_MAX_PAYLOAD),
	};
	int r = opt_reply(c, opt, NBD_REP_INFO, &ie, sizeof(ie));

	return r < 0 ? r : opt_reply(c, opt, NBD_REP_INFO, &bs, sizeof(bs));
}

static unsigned attached_clients(const struct repl_engine *eng)
{
	unsigned n = 0;

	for (const struct repl_volume *v = eng->volumes; v; v = v->next)
		n += v->clients;
	return n;
}

/* Which volume a client may open (go: and use now, which may auto-promote
 * it), or an NBD_REP_ERR_* with a message. */
static struct repl_volume *export_lookup(struct nbd_conn *c, const char *name, bool go,
					 uint32_t *err, char *msg, size_t msglen)
{
	struct repl_volume *vol = repl_volume_find(c->eng, name);

	if (!vol) {
		*err = NBD_REP_ERR_UNKNOWN;
		snprintf(msg, msglen, "no volume named \"%s\" on this node", name);
		return NULL;
	}
	if (vol->down) {
		*err = NBD_REP_ERR_POLICY;
		snprintf(msg, msglen, "volume \"%s\" is down on this node", name);
		return NULL;
	}
	if (vol->role != REPL_PRIMARY && !vol->window && !vol->auto_promote) {
		*err = NBD_REP_ERR_POLICY;
		snprintf(msg, msglen, "volume \"%s\" is Secondary on this node: "
			 "only the Primary serves I/O", name);
		return NULL;
	}
	if (go && attached_clients(c->eng) >= c->eng->nbd_clients_max) {
		*err = NBD_REP_ERR_POLICY;
		snprintf(msg, msglen, "too many NBD clients on this node (nbd-clients-max = %u)",
			 c->eng->nbd_clients_max);
		log_warn("NBD client refused for \"%s\": %u clients attached "
			 "(nbd-clients-max)", name, c->eng->nbd_clients_max);
		return NULL;
	}
	if (go && vol->role != REPL_PRIMARY) {
		char why[160];
		if (repl__volume_admit(vol, why, sizeof(why)) < 0) {
			*err = NBD_REP_ERR_POLICY;
			snprintf(msg, msglen, "volume \"%s\" is Secondary on this node and "
				 "cannot be promoted: %s", name, why);
			return NULL;
		}
	}
	return vol;
}

static void enter_transmission(struct nbd_conn *c, struct repl_volume *vol, uint64_t size)
{
	/* Contexts were chosen for one export: they do not carry over. */
	if (c->meta && strcmp(c->meta->export, vol->name)) {
		plog(LOG_INFO, vol->name, "metadata contexts of export \"%s\" dropped",
		     c->meta->export);
		c->meta->n = 0;
	}
	c->vol = vol;
	c->size = size;
	repl__timer_del(c->eng, &c->hs_timer);
	vol->clients++;
	repl__window_clients_changed(vol);
	c->state = CS_TRANSMISSION;
	plog(LOG_INFO, vol->name, "client attached (%s replies)",
	     c->structured ? "structured" : "simple");
}

static int opt_info_go(struct nbd_conn *c, uint32_t opt, const uint8_t *d, uint32_t len)
{
	char name[NBD_MAX_NAME_LEN + 1], msg[NBD_MAX_NAME_LEN + 128];
	struct repl_volume *vol;
	const char *why;
	uint32_t err;
	uint64_t size;

	err = repl__nbd_parse_info_go(d, len, name, &why);
	if (err)
		return opt_error(c, opt, err, why);
	vol = export_lookup(c, name, opt == NBD_OPT_GO, &err, msg, sizeof(msg));
	if (!vol)
		return opt_error(c, opt, err, msg);
	size = repl__volume_export_size(vol);
	if (send_export_info(c, opt, vol, size) < 0 ||
	    opt_reply(c, opt, NBD_REP_ACK, NULL, 0) < 0)
		return -ENOMEM;
	if (opt == NBD_OPT_GO)
		enter_transmission(c, vol, size);
	return 0;
}

static int opt_export_name(struct nbd_conn *c, const uint8_t *d, uint32_t len)
{
	char name[NBD_MAX_NAME_LEN + 1], msg[NBD_MAX_NAME_LEN + 128];
	struct repl_volume *vol;
	uint32_t err;
	uint8_t reply[8 + 2 + 124] = { 0 };
	uint64_t size, be;
	uint16_t flags;

	if (len > NBD_MAX_NAME_LEN)
		return -EPROTO;
	memcpy(name, d, len);
	name[len] = '\0';
	vol = export_lookup(c, name, true, &err, msg, sizeof(msg));
	if (!vol) {
		/* This old option has no error reply: closing is the answer. */
		log_warn("NBD client refused: %s", msg);
		return -EPROTO;
	}
	size = repl__volume_export_size(vol);
	be = htobe64(size);
	flags = htobe16(repl__nbd_export_flags(vol, c->structured));
	memcpy(reply, &be, 8);
	memcpy(reply + 8, &flags, 2);
	if (send_bytes(c, reply, c->no_zeroes ? 10 : sizeof(reply), NULL, 0) < 0)
		return -ENOMEM;
	enter_transmission(c, vol, size);
	return 0;
}

static int opt_list(struct nbd_conn *c, uint32_t len)
{
	if (len)
		return opt_error(c, NBD_OPT_LIST, NBD_REP_ERR_INVALID, "LIST takes no data");
	for (struct repl_volume *v = c->eng->volumes; v; v = v->next) {
		uint32_t n = (uint32_t)strlen(v->name), be = htobe32(n);
		uint8_t buf[4 + 256];
		if (n > sizeof(buf) - 4)
			continue;
		memcpy(buf, &be, 4);
		memcpy(buf + 4, v->name, n);
		if (opt_reply(c, NBD_OPT_LIST, NBD_REP_SERVER, buf, 4 + n) < 0)
			return -ENOMEM;
	}
	return opt_reply(c, NBD_OPT_LIST, NBD_REP_ACK, NULL, 0);
}

static bool is_tcp(const struct nbd_conn *c)
{
	return c->src.b[0] == '4' || c->src.b[0] == '6';
}

/* The ACK goes out in clear before the session exists; a client sends its
 * ClientHello only once it has read it, so bytes already buffered behind
 * the option (injected before TLS) close the connection. */
static int opt_starttls(struct nbd_conn *c, const uint8_t *d, uint32_t len)
{
	int r;

	if (len)
		return opt_error(c, NBD_OPT_STARTTLS, NBD_REP_ERR_INVALID, "option takes no data");
	if (c->tls)
		return opt_error(c, NBD_OPT_STARTTLS, NBD_REP_ERR_INVALID, "TLS already started");
	if (!repl__nbd_tls_offered(c->eng, is_tcp(c)))
		return opt_error(c, NBD_OPT_STARTTLS, NBD_REP_ERR_POLICY,
				 is_tcp(c) ? "TLS is not configured on this server (nbd-tls = off)"
				 : "no TLS on the Unix socket");
	if (d + len != c->in + c->in_end) {
		log_warn("NBD client sent data after NBD_OPT_STARTTLS before its reply");
		return -EPROTO;
	}
	if (opt_reply(c, NBD_OPT_STARTTLS, NBD_REP_ACK, NULL, 0) < 0)
		return -ENOMEM;
	conn_flush(c);
	if (c->out_head) {
		log_warn("NBD client does not read its option replies: closing at STARTTLS");
		return -EPROTO;
	}
	c->structured = false;		/* nothing negotiated in clear survives */
	if (c->meta)
		c->meta->n = 0;
	r = repl__nbd_tls_new(c->eng, c->fd, &c->tls);
	return r < 0 ? r : 0;
}

static int meta_reply(void *arg, uint32_t opt, uint32_t type, const void *d, uint32_t len)
{
	return opt_reply(arg, opt, type, d, len);
}

static int handle_option(struct nbd_conn *c, uint32_t opt, const uint8_t *d, uint32_t len)
{
	switch (repl__nbd_tls_gate(repl__nbd_tls_required(c->eng, is_tcp(c)), c->tls, opt)) {
	case NBD_TLS_PASS:
		break;
	case NBD_TLS_REFUSE:
		return opt_error(c, opt, NBD_REP_ERR_TLS_REQD,
				 "TLS is required: NBD_OPT_STARTTLS first (nbd-tls = require)");
	case NBD_TLS_CLOSE:
		log_warn("NBD client refused: NBD_OPT_EXPORT_NAME without TLS (nbd-tls = require)");
		return -EPROTO;
	}
	switch (opt) {
	case NBD_OPT_STARTTLS:
		return opt_starttls(c, d, len);
	case NBD_OPT_EXPORT_NAME:
		return opt_export_name(c, d, len);
	case NBD_OPT_ABORT:
		conn_close_side(c, false);
		return opt_reply(c, opt, NBD_REP_ACK, NULL, 0);
	case NBD_OPT_LIST:
		return opt_list(c, len);
	case NBD_OPT_INFO:
	case NBD_OPT_GO:
		return opt_info_go(c, opt, d, len);
	case NBD_OPT_STRUCTURED_REPLY:
		if (len)
			return opt_error(c, opt, NBD_REP_ERR_INVALID, "option takes no data");
		c->structured = true;
		return opt_reply(c, opt, NBD_REP_ACK, NULL, 0);
	case NBD_OPT_LIST_META_CONTEXT:
	case NBD_OPT_SET_META_CONTEXT:
		return repl__nbd_meta_option(c->eng, opt, d, len, c->structured, &c->meta,
					     meta_reply, c);
	default:
		return opt_error(c, opt, NBD_REP_ERR_UNSUP, "option not supported");
	}
}

/* ---- input parsing ------------------------------------------------------ */

/* Consumes what it can of p[0..avail); returns bytes used (0 = needs more
 * input) or -errno to close the connection. */
static int parse_one(struct nbd_conn *c, const uint8_t *p, size_t avail)
{
	struct nbd_option_hdr oh;
	uint32_t flags, len;
	int r;

	switch (c->state) {
	case CS_CLIENT_FLAGS:
		if (avail < 4)
			return 0;
		memcpy(&flags, p, 4);
		flags = be32toh(flags);
		if (!(flags & NBD_FLAG_C_FIXED_NEWSTYLE) ||
		    (flags & ~(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES))) {
			log_warn("NBD client sent unsupported handshake flags 0x%x", flags);
			return -EPROTO;
		}
		c->no_zeroes = flags & NBD_FLAG_C_NO_ZEROES;
		c->state = CS_OPTIONS;
		return 4;
	case CS_OPTIONS:
		if (avail < sizeof(oh))
			return 0;
		memcpy(&oh, p, sizeof(oh));
		len = be32toh(oh.length);
		if (be64toh(oh.magic) != NBD_IHAVEOPT) {
			log_warn("NBD client sent a bad option magic");
			return -EPROTO;
		}
		if (len > NBD_MAX_OPTION_LEN) {
			log_warn("NBD client sent an option of %u bytes", len);
			return -EPROTO;
		}
		if (avail < sizeof(oh) + len)
			return 0;
		c->active_ms = now_mono_ms();
		c->sent_option = true;
		r = handle_option(c, be32toh(oh.option), p + sizeof(oh), len);
		return r < 0 ? r : (int)(sizeof(oh) + len);
	case CS_TRANSMISSION:
		if (avail < sizeof(struct nbd_request))
			return 0;
		return handle_request(c, p);
	}
	return -EPROTO;
}

static bool may_read(struct nbd_conn *c)
{
	bool r;

	pthread_mutex_lock(&c->lock);
	r = !c->read_closed && !c->dead && window_open_locked(c);
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* Loop thread: no more requests (dead: no more replies either). */
static void conn_close_side(struct nbd_conn *c, bool dead)
{
	pthread_mutex_lock(&c->lock);
	c->read_closed = true;
	if (dead)
		c->dead = true;
	pthread_mutex_unlock(&c->lock);
}

/* Moves payload bytes (buffered first, then straight from the socket) into
 * the write being received, or skips a refused write's payload. */
static int read_payload(struct nbd_conn *c)
{
	for (;;) {
		size_t want, take;
		uint8_t *dst;
		ssize_t n;

		if (c->rx) {
			want = c->rx->io.len - c->rx_have;
			dst = (uint8_t *)c->rx->io.buf + c->rx_have;
		} else if (c->discard_left) {
			want = (size_t)c->discard_left;
			dst = NULL;
		} else {
			return 1;
		}
		if (want == 0) {
			struct nbd_req *req = c->rx;
			c->rx = NULL;
			req_start(c, req);
			continue;
		}
		take = MIN(want, c->in_end - c->in_start);
		if (take) {
			if (dst)
				memcpy(dst, c->in + c->in_start, take);
			c->in_start += take;
		} else if (dst) {
			n = repl__nbd_recv(c->tls, c->fd, dst, want);
			if (n <= 0)
				return n == 0 ? -EPIPE : (errno == EAGAIN ? 0 : -errno);
			take = (size_t)n;
		} else {
			return 1;	/* refill the buffer, then skip */
		}
		if (c->rx)
			c->rx_have += take;
		else
			c->discard_left -= take;
	}
}

static int fill_input(struct nbd_conn *c)
{
	ssize_t n;

	if (c->in_start == c->in_end) {
		c->in_start = c->in_end = 0;
	} else if (c->in_start > 0 && IN_CAP - c->in_end < NBD_MAX_OPTION_LEN + 16) {
		memmove(c->in, c->in + c->in_start, c->in_end - c->in_start);
		c->in_end -= c->in_start;
		c->in_start = 0;
	}
	if (c->in_end == IN_CAP)
		return -EPROTO;
	n = repl__nbd_recv(c->tls, c->fd, c->in + c->in_end, IN_CAP - c->in_end);
	if (n == 0)
		return -EPIPE;
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	c->in_end += (size_t)n;
	return 1;
}

static void conn_read(struct nbd_conn *c)
{
	int r, rounds = 0;

	for (;;) {
		if (!may_read(c))
			return;
		r = read_payload(c);
		if (r <= 0)
			goto out;
		if (!c->rx && !c->discard_left && c->in_end > c->in_start) {
			r = parse_one(c, c->in + c->in_start, c->in_end - c->in_start);
			if (r < 0)
				goto out;
			if (r > 0) {
				c->in_start += (size_t)r;
				continue;
			}
		}
		/* Everything buffered is parsed: fair share, then refill. */
		if (rounds++ >= 64) {
			if (repl__nbd_tls_pending(c->tls)) {	/* no POLLIN for it */
				pthread_mutex_lock(&c->lock);
				conn_notify_locked(c);
				pthread_mutex_unlock(&c->lock);
			}
			return;
		}
		r = fill_input(c);
		if (r <= 0)
			goto out;
	}
out:
	if (r == -EPIPE)	/* gone mid-message: nothing to answer */
		conn_close_side(c, c->state != CS_TRANSMISSION || c->rx);
	else if (r < 0)
		conn_close_side(c, true);
}

/* ---- lifetime ----------------------------------------------------------- */

static void conn_event(void *arg, int fd, unsigned revents)
{
	struct nbd_conn *c = arg;

	c->busy++;
	if (revents & POLLOUT)
		conn_flush(c);
	/* Sent replies may have opened the window for requests that already
	 * wait in the input buffer: the socket will not say POLLIN for them. */
	if ((revents & POLLIN) || (may_read(c) && (c->rx || c->in_end > c->in_start ||
						       repl__nbd_tls_pending(c->tls))) ||
	    repl__nbd_tls_handshaking(c->tls))
		conn_read(c);
	conn_flush(c);
	if (revents & (POLLHUP | POLLERR))
		conn_close_side(c, true);	/* nobody left to answer */
	c->busy--;
	conn_update(c);
	conn_maybe_close(c);
}

static void conn_update(struct nbd_conn *c)
{
	unsigned ev = 0;
	bool dead;

	pthread_mutex_lock(&c->lock);
	dead = c->dead;
	if (!dead) {
		if (!c->read_closed && window_open_locked(c))
			ev |= POLLIN;
		if (c->out_head || repl__nbd_tls_wants_write(c->tls))
			ev |= POLLOUT;
		if (ev != c->events && repl__fd_mod(c->eng, c->fd, ev) == 0)
			c->events = ev;
	}
	pthread_mutex_unlock(&c->lock);
	/* Out of the loop at once: a hung-up socket would otherwise report
	 * POLLHUP on every turn while requests drain. */
	if (dead && c->registered) {
		repl__fd_del(c->eng, c->fd);
		c->registered = false;
	}
}

static void conn_free(struct nbd_conn *c)
{
	repl__timer_del(c->eng, &c->hs_timer);
	while (c->out_head)
		out_pop(c);
	if (c->rx)
		req_out_free(&c->rx->out);
	if (c->registered)
		repl__fd_del(c->eng, c->fd);
	repl__nbd_tls_free(c->tls);
	close(c->fd);
	if (c->vol && c->state == CS_TRANSMISSION) {
		c->vol->clients--;
		plog(LOG_INFO, c->vol->name, "client detached");
		repl__window_clients_changed(c->vol);
	}
	if (c->prev)
		c->prev->next = c->next;
	else
		c->eng->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	pthread_mutex_destroy(&c->lock);
	free(c->meta);
	free(c->in);
	free(c);
}

/* Loop thread.  Frees the connection once nothing can touch it: no
 * handler running, not on the notify list, nothing in flight. */
static void conn_maybe_close(struct nbd_conn *c)
{
	bool done;

	if (c->busy)
		return;
	pthread_mutex_lock(&c->lock);
	if (c->dead) {
		/* Requests still running will find their connection gone. */
		while (c->out_head)
			out_pop(c);
		if (c->rx) {
			req_out_free(&c->rx->out);
			c->rx = NULL;
		}
	}
	done = !c->notified && c->inflight == 0 &&
	       (c->dead || (c->read_closed && !c->out_head));
	pthread_mutex_unlock(&c->lock);
	if (done)
		conn_free(c);
}

/* ---- the notify list: workers hand connections back to the loop ---------- */

struct nbd_notify {
	pthread_mutex_t lock;
	int efd;
	struct nbd_conn *head;
};

/* Called with c->lock held (so the loop cannot free c meanwhile). */
static void conn_notify_locked(struct nbd_conn *c)
{
	struct nbd_notify *n = c->eng->notify;
	uint64_t one = 1;
	bool first;

	if (c->notified)
		return;
	c->notified = true;
	pthread_mutex_lock(&n->lock);
	first = !n->head;
	c->notify_next = n->head;
	n->head = c;
	pthread_mutex_unlock(&n->lock);
	if (first && write(n->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_err_errno(errno, "notify eventfd");
}

/* What a worker left: arm POLLOUT, read input that waited for room in the
 * window, or close. */
static void conn_service(struct nbd_conn *c)
{
	pthread_mutex_lock(&c->lock);
	c->notified = false;
	pthread_mutex_unlock(&c->lock);
	if (may_read(c) && (c->rx || c->in_end > c->in_start || repl__nbd_tls_pending(c->tls))) {
		c->busy++;
		conn_read(c);
		conn_flush(c);
		c->busy--;
	}
	conn_update(c);
	conn_maybe_close(c);
}

static void notify_dispatch(void *arg, int fd, unsigned revents)
{
	struct nbd_notify *n = arg;
	struct nbd_conn *c, *next;
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_err_errno(errno, "notify eventfd");
	pthread_mutex_lock(&n->lock);
	c = n->head;
	n->head = NULL;
	pthread_mutex_unlock(&n->lock);
	for (; c; c = next) {
		next = c->notify_next;
		conn_service(c);
	}
}

int repl__nbd_notify_new(struct repl_engine *eng)
{
	struct nbd_notify *n = calloc(1, sizeof(*n));
	int r;

	if (!n)
		return -ENOMEM;
	pthread_mutex_init(&n->lock, NULL);
	n->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (n->efd < 0) {
		r = -errno;
		free(n);
		return r;
	}
	r = repl__fd_add(eng, n->efd, POLLIN, notify_dispatch, n);
	if (r < 0) {
		close(n->efd);
		free(n);
		return r;
	}
	eng->notify = n;
	return 0;
}

void repl__nbd_notify_free(struct repl_engine *eng)
{
	struct nbd_notify *n = eng->notify;

	if (!n)
		return;
	repl__fd_del(eng, n->efd);
	close(n->efd);
	pthread_mutex_destroy(&n->lock);
	free(n);
	eng->notify = NULL;
}

/* ---- creation and stop ---------------------------------------------------- */

/* A flood connects a thousand times a second: one warning a second, with
 * the count of what it stands for. */
static void log_drop(struct repl_engine *eng, const char *why)
{
	uint64_t now = now_mono_ms();

	if (eng->nbd_drop_log_ms && now - eng->nbd_drop_log_ms < DROP_LOG_MS) {
		eng->nbd_drops_unlogged++;
		return;
	}
	if (eng->nbd_drops_unlogged)
		log_warn("dropping an NBD client: %s (and %u more in the last %u ms)", why,
			 eng->nbd_drops_unlogged, (unsigned)(now - eng->nbd_drop_log_ms));
	else
		log_warn("dropping an NBD client: %s", why);
	eng->nbd_drop_log_ms = now;
	eng->nbd_drops_unlogged = 0;
}

/* Loop thread: ends a client still in the handshake (nothing in flight). */
static void conn_drop(struct nbd_conn *c, const char *why)
{
	log_drop(c->eng, why);
	repl__timer_del(c->eng, &c->hs_timer);
	conn_close_side(c, true);
	conn_update(c);
	conn_maybe_close(c);
}

static void handshake_expired(void *arg)
{
	struct nbd_conn *c = arg;

	c->hs_timer = NULL;
	if (c->state != CS_TRANSMISSION)
		conn_drop(c, "no NBD_OPT_GO within the handshake timeout");
}

static bool in_handshake(const struct nbd_conn *c)
{
	return c->state != CS_TRANSMISSION && !c->dead && !c->read_closed;
}

/* Option replies sent and not yet read by the client, or queued. */
static bool replies_unread(const struct nbd_conn *c)
{
	int n = 0;

	return c->out_backlog || (ioctl(c->fd, TIOCOUTQ, &n) == 0 && n > (int)UNREAD_MAX);
}

/* Which handshaking client goes first to make room: one that leaves its
 * replies unread (a real client reads each before its next option), then
 * one that never sent an option, then any; within a rank the one idle
 * longest.  Smaller goes first. */
static uint64_t drop_order(const struct nbd_conn *c)
{
	uint64_t rank = replies_unread(c) ? 0 : !c->sent_option ? 1 : 2;

	return rank << 62 | (c->active_ms & ((UINT64_C(1) << 62) - 1));
}

/* Room for one more client in the handshake from src: over a limit, one
 * goes (of src, if src is at its own limit).  The list is newest first, so
 * on a tie the older one goes. */
static void make_room(struct repl_engine *eng, const struct nbd_source *src)
{
	struct nbd_conn *victim = NULL;
	uint64_t best = UINT64_MAX;
	unsigned n = 0, from_src = 0;
	bool per_source;

	for (struct nbd_conn *c = eng->conns; c; c = c->next) {
		if (!in_handshake(c))
			continue;
		n++;
		from_src += !memcmp(&c->src, src, sizeof(*src));
	}
	per_source = from_src >= HANDSHAKES_PER_SOURCE;
	if (!per_source && n < HANDSHAKES_MAX)
		return;
	for (struct nbd_conn *c = eng->conns; c; c = c->next) {
		uint64_t o;
		if (!in_handshake(c) || (per_source && memcmp(&c->src, src, sizeof(*src))))
			continue;
		o = drop_order(c);
		if (o <= best) {
			best = o;
			victim = c;
		}
	}
	conn_drop(victim, per_source ? "too many handshakes from one client process or "
		  "address" : "too many handshakes at once");
}

void repl_nbd_set_clients_max(struct repl_engine *eng, unsigned max)
{
	eng->nbd_clients_max = max ? max : REPL_NBD_CLIENTS_MAX_DEFAULT;
}

int repl__nbd_conn_new(struct repl_engine *eng, int fd, const struct nbd_source *src)
{
	struct __attribute__((packed)) { uint64_t magic, opt; uint16_t flags; } greet = {
		htobe64(NBD_MAGIC), htobe64(NBD_IHAVEOPT),
		htobe16(NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES),
	};
	struct nbd_conn *c;

	if (eng->stopping)
		return -ESHUTDOWN;
	make_room(eng, src);
	c = calloc(1, sizeof(*c));
	if (!c || !(c->in = malloc(IN_CAP))) {
		free(c);
		return -ENOMEM;
	}
	c->eng = eng;
	c->fd = fd;
	c->src = *src;
	c->active_ms = now_mono_ms();
	c->out_tail = &c->out_head;
	c->events = POLLIN;
	pthread_mutex_init(&c->lock, NULL);
	if (repl__fd_add(eng, fd, POLLIN, conn_event, c) < 0) {
		pthread_mutex_destroy(&c->lock);
		free(c->in);
		free(c);
		return -ENOMEM;
	}
	c->registered = true;
	if (repl__timer_add(eng, HANDSHAKE_TIMEOUT_MS, handshake_expired, c, &c->hs_timer) < 0)
		log_warn("NBD client without a handshake timeout: no timer");
	c->next = eng->conns;
	if (c->next)
		c->next->prev = c;
	eng->conns = c;
	if (send_bytes(c, &greet, sizeof(greet), NULL, 0) < 0)
		conn_close_side(c, true);
	conn_flush(c);
	conn_update(c);
	conn_maybe_close(c);
	return 0;
}

void repl__nbd_conns_stop(struct repl_engine *eng)
{
	struct nbd_conn *c, *next;

	for (c = eng->conns; c; c = next) {
		next = c->next;
		conn_close_side(c, c->state != CS_TRANSMISSION);
		if (c->rx) {
			/* Half-received write: never acknowledged, dropped. */
			req_out_free(&c->rx->out);
			c->rx = NULL;
		}
		conn_update(c);
		conn_maybe_close(c);
	}
}

void repl__nbd_conns_free(struct repl_engine *eng)
{
	/* The caller drained the volumes' I/O: no request is in flight. */
	while (eng->conns)
		conn_free(eng->conns);
}

void repl__nbd_conns_drop_volume(struct repl_engine *eng, struct repl_volume *vol)
{
	struct nbd_conn *c, *next;

	for (c = eng->conns; c; c = next) {
		next = c->next;
		if (c->vol != vol || c->state != CS_TRANSMISSION)
			continue;
		conn_close_side(c, true);
		conn_update(c);
		conn_maybe_close(c);
	}
}

uint64_t repl__nbd_clients_max_size(const struct repl_engine *eng,
				    const struct repl_volume *vol)
{
	uint64_t max = 0;

	for (const struct nbd_conn *c = eng->conns; c; c = c->next)
		if (c->vol == vol && c->state == CS_TRANSMISSION)
			max = MAX(max, c->size);
	return max;
}
