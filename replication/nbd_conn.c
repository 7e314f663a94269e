/* nbd_conn.c: one NBD client connection, from the fixed newstyle handshake
 * through the transmission phase, on the loop thread.  Requests are read
 * without blocking, checked (nbd_validate.c), started on the volume, and
 * answered in the order they finish (out of order is allowed by the
 * protocol), with structured replies when the client asked for them.
 *
 * Its parts: the options of the handshake are nbd_opt.c's, the requests of
 * the transmission phase and their replies nbd_cmd.c's, the output queue
 * nbd_out.c's and the notify list nbd_notify.c's (they share the
 * connection through nbd_conn_int.h); this file reads and frames what the
 * client sends, limits the clients in the handshake, and owns the
 * connection's lifetime.
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
 * another (of its source first, see drop_order): first a client that
 * does not read its replies, then one that never sent an option, then the
 * one idle longest.  A real client sends its options one after the other
 * and reads the answers, so a flood pushes out its own connections.  A client that does not read its option
 * replies is not read from while more than OUT_BACKLOG_MAX (nbd_cmd.c) bytes
 * of them wait (in transmission the in-flight window bounds the replies).  Attached
 * clients are limited by eng->nbd_clients_max, refused at NBD_OPT_GO with a
 * message. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "log.h"
#include "nbd-protocol.h"
#include "nbd_cmd.h"
#include "nbd_conn_int.h"
#include "nbd_notify.h"
#include "nbd_opt.h"
#include "nbd_out.h"
#include "nbd_tls.h"
#include "repl_int.h"
#include "util.h"

#define IN_CAP		(NBD_MAX_OPTION_LEN + 64 * 1024)
#define HANDSHAKE_TIMEOUT_MS 10000
#define HANDSHAKES_MAX	64
#define HANDSHAKES_PER_SOURCE 16
#define UNREAD_MAX	4096		/* replies a real client leaves unread */
#define DROP_LOG_MS	1000

static void conn_update(struct nbd_conn *c);
static void conn_maybe_close(struct nbd_conn *c);
static void conn_read(struct nbd_conn *c);
static bool may_read(struct nbd_conn *c);

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
		r = repl__nbd_handle_option(c, be32toh(oh.option), p + sizeof(oh), len);
		return r < 0 ? r : (int)(sizeof(oh) + len);
	case CS_TRANSMISSION:
		if (avail < sizeof(struct nbd_request))
			return 0;
		return repl__nbd_handle_request(c, p);
	}
	return -EPROTO;
}

static bool may_read(struct nbd_conn *c)
{
	bool r;

	pthread_mutex_lock(&c->lock);
	r = !c->read_closed && !c->dead && repl__nbd_window_open_locked(c);
	pthread_mutex_unlock(&c->lock);
	return r;
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
			repl__nbd_req_start(c, req);
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

/* 1: read, 2: read, and the socket is drained (a short read of a plain
 * socket: the loop is level-triggered, so the next recv would only say
 * EAGAIN), 0: nothing there, or -errno. */
static int fill_input(struct nbd_conn *c)
{
	size_t room;
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
	room = IN_CAP - c->in_end;
	n = repl__nbd_recv(c->tls, c->fd, c->in + c->in_end, room);
	if (n == 0)
		return -EPIPE;
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	c->in_end += (size_t)n;
	return (size_t)n < room && !c->tls ? 2 : 1;
}

static void conn_read(struct nbd_conn *c)
{
	int r, rounds = 0;
	bool drained = false;

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
		/* Everything buffered is parsed: done if the socket was
		 * drained; else fair share, then refill. */
		if (drained)
			return;
		if (rounds++ >= 64) {
			if (repl__nbd_tls_pending(c->tls)) {	/* no POLLIN for it */
				pthread_mutex_lock(&c->lock);
				repl__nbd_conn_notify_locked(c);
				pthread_mutex_unlock(&c->lock);
			}
			return;
		}
		r = fill_input(c);
		if (r <= 0)
			goto out;
		drained = r == 2;
	}
out:
	if (r == -EPIPE)	/* gone mid-message: nothing to answer */
		repl__nbd_conn_close_side(c, c->state != CS_TRANSMISSION || c->rx);
	else if (r < 0)
		repl__nbd_conn_close_side(c, true);
}

/* ---- lifetime ----------------------------------------------------------- */

static void conn_event(void *arg, int fd, unsigned revents)
{
	struct nbd_conn *c = arg;

	c->busy++;
	if (revents & POLLOUT)
		repl__nbd_conn_flush(c);
	/* Sent replies may have opened the window for requests that already
	 * wait in the input buffer: the socket will not say POLLIN for them. */
	if ((revents & POLLIN) || (may_read(c) && (c->rx || c->in_end > c->in_start ||
						       repl__nbd_tls_pending(c->tls))) ||
	    repl__nbd_tls_handshaking(c->tls)) {
		struct repl_engine *eng = c->eng;

		repl__batch_begin(eng);	/* the writes to the peers: one sendmsg */
		conn_read(c);
		repl__batch_end(eng);
	}
	repl__nbd_conn_flush(c);
	if (revents & (POLLHUP | POLLERR))
		repl__nbd_conn_close_side(c, true);	/* nobody left to answer */
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
		if (!c->read_closed && repl__nbd_window_open_locked(c))
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
	repl__undefer(c->eng, &c->replies);
	repl__timer_del(c->eng, &c->hs_timer);
	while (c->out_head)
		repl__nbd_out_pop(c);
	if (c->rx)
		repl__nbd_req_out_free(&c->rx->out);
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
			repl__nbd_out_pop(c);
		if (c->rx) {
			repl__nbd_req_out_free(&c->rx->out);
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
		repl__nbd_conn_flush(c);
		c->busy--;
	}
	conn_update(c);
	conn_maybe_close(c);
}

int repl__nbd_notify_new(struct repl_engine *eng)
{
	return repl__nbd_notify_open(eng, conn_service);
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
	repl__nbd_conn_close_side(c, true);
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

static int by_source(const void *a, const void *b)
{
	const struct nbd_conn *x = *(struct nbd_conn *const *)a;
	const struct nbd_conn *y = *(struct nbd_conn *const *)b;

	return memcmp(&x->src, &y->src, sizeof(x->src));
}

/* Over the limit of all handshakes: the victim comes from the source that
 * holds the most of them, a flood rather than the one client that is
 * merely slow to send its first option (qemu-io on a loaded machine was
 * dropped so in CI), and within that source by drop_order; a tie between
 * sources goes by drop_order too.  hs holds the n handshaking clients. */
static struct nbd_conn *flood_victim(struct nbd_conn **hs, unsigned n)
{
	struct nbd_conn *victim = NULL;
	unsigned best_run = 0;
	uint64_t best = UINT64_MAX;

	qsort(hs, n, sizeof(*hs), by_source);
	for (unsigned i = 0, j; i < n; i = j) {
		struct nbd_conn *cand = NULL;
		uint64_t co = UINT64_MAX;
		for (j = i; j < n && !by_source(&hs[i], &hs[j]); j++) {
			uint64_t o = drop_order(hs[j]);
			if (o < co) {
				co = o;
				cand = hs[j];
			}
		}
		if (j - i > best_run || (j - i == best_run && co < best)) {
			best_run = j - i;
			best = co;
			victim = cand;
		}
	}
	return victim;
}

/* Room for one more client in the handshake from src: over a limit, one
 * goes: of src, if src is at its own limit, else of the source with the
 * most (flood_victim).  The list is newest first, so on a tie the older
 * one goes. */
static void make_room(struct repl_engine *eng, const struct nbd_source *src)
{
	struct nbd_conn *victim = NULL, *hs[2 * HANDSHAKES_MAX];
	uint64_t best = UINT64_MAX;
	unsigned n = 0, from_src = 0;
	bool per_source;

	for (struct nbd_conn *c = eng->conns; c; c = c->next) {
		if (!in_handshake(c))
			continue;
		if (n < ARRAY_SIZE(hs))
			hs[n] = c;
		n++;
		from_src += !memcmp(&c->src, src, sizeof(*src));
	}
	per_source = from_src >= HANDSHAKES_PER_SOURCE;
	if (!per_source && n < HANDSHAKES_MAX)
		return;
	if (!per_source && n <= ARRAY_SIZE(hs)) {
		conn_drop(flood_victim(hs, n), "too many handshakes at once");
		return;
	}
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
	c->replies = (struct repl_deferred){ .fn = repl__nbd_replies_send, .arg = c };
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
	if (repl__nbd_send_bytes(c, &greet, sizeof(greet), NULL, 0) < 0)
		repl__nbd_conn_close_side(c, true);
	repl__nbd_conn_flush(c);
	conn_update(c);
	conn_maybe_close(c);
	return 0;
}

void repl__nbd_conns_stop(struct repl_engine *eng)
{
	struct nbd_conn *c, *next;

	for (c = eng->conns; c; c = next) {
		next = c->next;
		repl__nbd_conn_close_side(c, c->state != CS_TRANSMISSION);
		if (c->rx) {
			/* Half-received write: never acknowledged, dropped. */
			repl__nbd_req_out_free(&c->rx->out);
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
		repl__nbd_conn_close_side(c, true);
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
