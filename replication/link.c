/* link.c: see link.h.  Every frame's header is validated before its
 * payload is read (wire.c), and garbage ends the connection, never reaches
 * a volume.  A link that sends nothing for PING_LIMIT fails (an unplugged
 * cable sends no RST; where TCP keepalive is on, the socket fails first).
 *
 * Anyone who can reach the port can connect, so until a connection has
 * proved the key it costs little and lasts little: only the handshake's
 * frames are read (wire_hdr_before_auth: a WRITE header closes it before a
 * buffer exists) and it has AUTH_TIMEOUT_MS to authenticate; how many
 * such links a listener keeps is link_accept.c's business.  Loop thread
 * only. */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bufpool.h"
#include "link_int.h"
#include "linkcrypt.h"
#include "log.h"
#include "sys.h"
#include "util.h"
#include "wire.h"

/* What this build offers every peer (negotiated); AEAD is the setting's. */
#define LINK_FEATURES WIRE_FEAT_READ

#define PING_INTERVAL_MS 1000
#define PING_TIMEOUT_MS 4000
/* Where the sockets drop a silent peer themselves (sys.h link_dead_ms: TCP
 * keepalive), pings only catch a peer whose process hangs (its kernel still
 * answers: noticed after 15 s, not 4), and a link wakes the loop every 5 s
 * rather than every second (200 volumes: 334 links). */
#define KEPT_PING_INTERVAL_MS 5000
#define KEPT_PING_TIMEOUT_MS 15000
#define PING_EVERY (repl__sys->link_dead_ms ? KEPT_PING_INTERVAL_MS : PING_INTERVAL_MS)
#define PING_LIMIT (repl__sys->link_dead_ms ? KEPT_PING_TIMEOUT_MS : PING_TIMEOUT_MS)
#define HANDSHAKE_TIMEOUT_MS 10000
#define AUTH_TIMEOUT_MS 3000		/* an accepted link proves the key in time */
#define MAX_IOV 64
#define LINK_RX_STAGE (64 * 1024)	/* an authenticated link's receive buffer */

struct txmsg {
	struct txmsg *next;
	struct iovec iov[2];
	unsigned niov;
	void *owned;			/* freed once sent */
	uint8_t prefix[WIRE_CONTROL_FRAME_MAX];
};

static void link_close(struct peer_link *l);
static void link_free(struct peer_link *l);

static void link_update(struct peer_link *l)
{
	if (l->dead)
		return;
	unsigned ev = POLLIN | (l->tx_head ? POLLOUT : 0);

	if (l->registered && ev != l->events &&
	    repl__fd_mod(l->vol->eng, l->fd, ev) == 0)
		l->events = ev;
}

/* ---- sending ---------------------------------------------------------------- */

static int link_flush(struct peer_link *l)
{
	struct iovec iov[MAX_IOV];
	struct msghdr msg = { .msg_iov = iov };
	ssize_t n;

	while (l->tx_head) {
		size_t cnt = 0;
		for (struct txmsg *m = l->tx_head; m && cnt + 2 <= MAX_IOV; m = m->next)
			for (unsigned i = 0; i < m->niov; i++)
				iov[cnt++] = m->iov[i];
		msg.msg_iovlen = cnt;
		n = repl__sys->sendmsg(l->fd, &msg);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -errno;
		}
		while (l->tx_head && n > 0) {
			struct txmsg *m = l->tx_head;
			for (unsigned i = 0; i < m->niov && n > 0; i++) {
				size_t take = MIN((size_t)n, m->iov[i].iov_len);
				m->iov[i].iov_base = (char *)m->iov[i].iov_base + take;
				m->iov[i].iov_len -= take;
				n -= (ssize_t)take;
			}
			if (m->iov[m->niov - 1].iov_len)
				break;
			l->tx_head = m->next;
			if (!l->tx_head)
				l->tx_tail = &l->tx_head;
			repl__buf_put(m->owned);	/* a sealed record: kept for the next */
			free(m);
		}
	}
	return 0;
}

/* Replaces t's frame by its sealed record (the data is not needed after). */
static ssize_t seal(struct peer_link *l, struct txmsg *t)
{
	size_t len = t->iov[0].iov_len + (t->niov > 1 ? t->iov[1].iov_len : 0);
	uint8_t *out = repl__buf_get(len + LC_OVERHEAD);
	ssize_t n;

	if (!out)
		return -ENOMEM;
	n = repl__lc_seal(l->lc, t->iov, t->niov, out);
	if (n < 0) {
		free(out);
		return n;
	}
	free(t->owned);
	t->owned = out;
	t->iov[0] = (struct iovec){ out, (size_t)n };
	t->niov = 1;
	return n;
}

bool repl__link_sealed(const struct peer_link *l)
{
	return l->tx_sealed;
}

uint32_t repl__link_features(const struct peer_link *l)
{
	const struct wire_hello *h = wire_auth_peer_hello(&l->auth);

	return h ? h->features & LINK_FEATURES : 0;
}

/* Queues a frame: the encoded prefix, then data (not copied; it must live
 * until sent or the link closes; owned is freed then). */
static int link_send(struct peer_link *l, const struct wire_msg *m, const void *data,
		     size_t dlen, void *owned)
{
	struct txmsg *t = malloc(sizeof(*t));
	ssize_t n;

	if (!t) {
		free(owned);
		return -ENOMEM;
	}
	if (l->tx_sealed) {
		struct wire_msg sm = *m;
		sm.sealed = true;
		n = wire_encode_prefix(&sm, t->prefix, sizeof(t->prefix));
	} else {
		n = wire_encode_prefix(m, t->prefix, sizeof(t->prefix));
	}
	if (n < 0) {
		free(owned);
		free(t);
		return (int)n;
	}
	t->iov[0] = (struct iovec){ t->prefix, (size_t)n };
	t->niov = 1;
	if (dlen)
		t->iov[t->niov++] = (struct iovec){ (void *)data, dlen };
	t->owned = owned;
	if (l->tx_sealed && (n = seal(l, t)) < 0) {
		free(t->owned);
		free(t);
		return (int)n;
	}
	t->next = NULL;
	*l->tx_tail = t;
	l->tx_tail = &t->next;
	if (repl__defer(l->vol->eng, &l->flush_later))
		return 0;
	if (link_flush(l) < 0)
		return -EPIPE;	/* the read side will notice and close */
	link_update(l);
	return 0;
}

/* The end of a batch that queued frames: they go out in one sendmsg (a
 * failure is the read side's to notice, as above). */
static void flush_later(void *arg)
{
	struct peer_link *l = arg;

	if (l->dead)
		return;
	link_flush(l);
	link_update(l);
}

static void explain_security(struct peer_link *l)
{
	const char *mine = l->vol->link_plain ? "none" : "aead";
	const char *theirs = l->vol->link_plain ? "aead" : "none";
	const struct wire_names *c;

	wire_auth_refusal(&l->auth, &c);
	snprintf(l->why, sizeof(l->why), "refused: peer %.64s has link-security = %s, this "
		 "node %s; set the same on every replica",
		 c ? (l->auth.initiator ? c->acceptor : c->initiator) : "?", theirs, mine);
}

static int auth_step(struct peer_link *l)
{
	uint8_t buf[WIRE_CONTROL_FRAME_MAX];
	size_t len;
	int r;

	while ((r = wire_auth_next(&l->auth, buf, sizeof(buf), &len)) == 1) {
		struct txmsg *t = malloc(sizeof(*t));
		if (!t)
			return -ENOMEM;
		memcpy(t->prefix, buf, len);
		t->iov[0] = (struct iovec){ t->prefix, len };
		t->niov = 1;
		t->owned = NULL;
		t->next = NULL;
		*l->tx_tail = t;
		l->tx_tail = &t->next;
	}
	if (r < 0) {
		/* A refusal after our proof (link-security differs, or, for
		 * an acceptor, the initiator's names do not fit): the peer
		 * reads the proof before the socket closes. */
		link_flush(l);
		if (r == -ENOPROTOOPT)
			explain_security(l);
		else if (r == -EACCES)
			l->ops->refused(l);	/* the acceptor, for the names */
		return r;
	}
	if (link_flush(l) < 0)
		return -EPIPE;
	if (!l->vol->link_plain && !l->tx_sealed && wire_auth_sent_ok(&l->auth)) {
		if (!l->lc && !(l->lc = repl__lc_new(&l->auth)))
			return -errno;
		l->tx_sealed = true;
	}
	if (!l->authed && wire_auth_done(&l->auth)) {
		l->authed = true;
		if (!l->p)
			repl__link_unpend(l);
		r = l->ops->authed(l);
		if (r == 0 && !l->p)
			r = -EACCES;
		return r;
	}
	return 0;
}

/* A sealed record (its body in rec, l->h.length bytes): open it, then it
 * is a frame like any other. */
static int on_record(struct peer_link *l, uint8_t *rec)
{
	struct wire_msg m;
	struct wire_hdr h;
	ssize_t n = repl__lc_open(l->lc, l->hdr, rec, l->h.length);
	int r;

	if (n < 0) {
		snprintf(l->why, sizeof(l->why), "a frame failed authentication (altered, "
			 "forged, replayed or out of order): link dropped");
		free(rec);
		return (int)n;
	}
	r = wire_hdr_decode(rec, (size_t)n, &h);
	if (r == 0 && (h.length != (size_t)n - WIRE_HDR_LEN || !(h.flags & WIRE_HF_SEALED)))
		r = -EPROTO;
	if (r == 0)
		r = wire_decode_payload(&h, rec + WIRE_HDR_LEN, h.length, &m);
	if (r < 0) {
		free(rec);
		return r;
	}
	m.seq = h.seq;
	return l->ops->frame(l, &m, rec);
}

static int on_frame(struct peer_link *l)
{
	struct wire_msg m;
	uint8_t *payload = l->payload;
	int r;

	l->payload = NULL;
	if (!l->authed) {
		uint8_t *frame = malloc(WIRE_HDR_LEN + l->h.length);
		if (!frame) {
			free(payload);
			return -ENOMEM;
		}
		memcpy(frame, l->hdr, WIRE_HDR_LEN);
		if (l->h.length)
			memcpy(frame + WIRE_HDR_LEN, payload, l->h.length);
		r = wire_auth_receive(&l->auth, frame, WIRE_HDR_LEN + l->h.length);
		free(frame);
		free(payload);
		if (r == -EACCES)
			l->ops->refused(l);
		if (r == WIRE_AUTH_DONE && !l->vol->link_plain) {
			if (!l->lc && !(l->lc = repl__lc_new(&l->auth)))
				return -errno;
			l->rx_sealed = true;	/* its AUTH_OK was its last clear frame */
		}
		return r < 0 ? r : auth_step(l);
	}
	if (l->rx_sealed)
		return on_record(l, payload);
	r = wire_decode_payload(&l->h, payload, l->h.length, &m);
	if (r < 0) {
		free(payload);
		return r;
	}
	m.seq = l->h.seq;
	return l->ops->frame(l, &m, payload);
}

/* What comes before a payload: a frame header, or a record's length. */
static size_t hdr_len(const struct peer_link *l)
{
	return l->rx_sealed ? LC_LEN_BYTES : WIRE_HDR_LEN;
}

/* A record's length field: l->h.length is then what follows it. */
static int record_hdr(struct peer_link *l)
{
	ssize_t n = repl__lc_body_len(l->hdr);

	if (n < 0)
		return (int)n;
	memset(&l->h, 0, sizeof(l->h));
	l->h.length = (uint32_t)n;
	return 0;
}

/* A frame's header is complete (in l->hdr): check it, and get the buffer
 * for its payload.  0, or -errno to close. */
static int frame_begin(struct peer_link *l)
{
	int r = l->rx_sealed ? record_hdr(l) : wire_hdr_decode(l->hdr, WIRE_HDR_LEN, &l->h);

	if (r < 0)
		return r;
	if (!l->authed && !wire_hdr_before_auth(&l->h)) {
		snprintf(l->why, sizeof(l->why), "%s frame of %u bytes before "
			 "authentication", wire_type_name(l->h.type), l->h.length);
		return -EPROTO;
	}
	/* A frame that says sealed belongs inside a record. */
	if (!l->rx_sealed && (l->h.flags & WIRE_HF_SEALED))
		return -EPROTO;
	l->payload = repl__buf_get(l->h.length);
	if (!l->payload)
		return -ENOMEM;
	l->pay_have = 0;
	return 0;
}

static bool frame_whole(const struct peer_link *l)
{
	return l->hdr_have == hdr_len(l) && l->pay_have == l->h.length;
}

/* Takes what rx holds into the frame being put together, handling each
 * frame as it is whole (which may change hdr_len(): a handshake's last
 * clear frame).  0, or -errno to close. */
static int rx_take(struct peer_link *l)
{
	while (l->rx_off < l->rx_end && !l->dead) {
		size_t avail = l->rx_end - l->rx_off, n;
		int r;

		if (l->hdr_have < hdr_len(l)) {
			n = MIN(avail, hdr_len(l) - l->hdr_have);
			memcpy(l->hdr + l->hdr_have, l->rx + l->rx_off, n);
			l->hdr_have += n;
			l->rx_off += n;
			if (l->hdr_have < hdr_len(l))
				break;
			if ((r = frame_begin(l)) < 0)
				return r;
		} else {
			n = MIN(avail, l->h.length - l->pay_have);
			memcpy(l->payload + l->pay_have, l->rx + l->rx_off, n);
			l->pay_have += n;
			l->rx_off += n;
		}
		if (frame_whole(l)) {
			l->hdr_have = 0;
			if ((r = on_frame(l)) < 0)
				return r;
		}
	}
	return 0;
}

/* Reads what is there; returns 0 (wait for more), or -errno to close.
 * One recv a wake-up when frames are small (a short read means the socket
 * is drained: no recv that says EAGAIN), and every frame in it is
 * handled; a payload larger than rx goes straight into its buffer. */
static int link_read(struct peer_link *l)
{
	for (int rounds = 0;; rounds++) {
		size_t want;
		bool direct;
		ssize_t n;
		int r = rx_take(l);

		if (r < 0 || l->dead || rounds == 64)
			return r;
		if (l->authed && l->rx == l->rx_small) {
			uint8_t *big = malloc(LINK_RX_STAGE);
			if (!big)
				return -ENOMEM;
			l->rx = big;
			l->rx_cap = LINK_RX_STAGE;
			l->rx_off = l->rx_end = 0;
		}
		direct = l->hdr_have == hdr_len(l) && l->h.length - l->pay_have >= l->rx_cap;
		want = direct ? l->h.length - l->pay_have : l->rx_cap;
		n = repl__sys->recv(l->fd, direct ? l->payload + l->pay_have : l->rx, want);
		if (n == 0)
			return -EPIPE;
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		l->last_rx_ms = now_mono_ms();
		if (!direct) {
			l->rx_off = 0;
			l->rx_end = (size_t)n;
		} else if ((l->pay_have += (size_t)n) == l->h.length) {
			l->hdr_have = 0;
			if ((r = on_frame(l)) < 0 || l->dead)
				return r;
		}
		if ((size_t)n < want)
			return rx_take(l);
	}
}

static const char *link_error(int r)
{
	switch (r) {
	case -EPIPE: return "connection closed by peer";
	case -EACCES: return "authentication failed (wrong key or not a peer)";
	case -EPROTO: return "peer sent an invalid frame";
	case -EBADMSG: return "frame checksum mismatch";
	case -EMSGSIZE: return "frame length out of bounds";
	case -EPROTONOSUPPORT: return "peer speaks another protocol version";
	case -ENOPROTOOPT: return "the peer's link-security differs from this node's";
	case -ETIMEDOUT: return "peer not responding";
	default: return "connection error";
	}
}

static void link_fail(struct peer_link *l, int r)
{
	const char *why = l->why[0] ? l->why : link_error(r);

	/* The acceptor verifies our proof before it sends its own: if it
	 * hangs up then, it refused our key (or us); its log says which. */
	if (r == -EPIPE && !l->why[0] && wire_auth_proof_pending(&l->auth))
		why = "authentication failed: the peer closed the connection after checking "
		      "our proof (the key files differ, or this node is not its peer)";

	if (l->p) {
		l->ops->fail(l, why);
		return;
	}
	repl__link_refused(l, why);
	link_close(l);
}

void repl__link_fail(struct peer_link *l, int r)
{
	link_fail(l, r);
}

static void link_event(void *arg, int fd, unsigned revents)
{
	struct peer_link *l = arg;
	struct repl_engine *eng = l->vol->eng;	/* outlives what the frames cause */
	int r = 0;

	l->busy++;
	repl__batch_begin(eng);
	if (revents & POLLOUT)
		r = link_flush(l);
	if (r == 0 && (revents & (POLLIN | POLLHUP | POLLERR)))
		r = link_read(l);
	if (r < 0 && !l->dead)
		link_fail(l, r);
	repl__batch_end(eng);	/* sends what the frames caused */
	if (!l->dead)
		link_update(l);
	if (--l->busy == 0 && l->dead)
		link_free(l);
}

/* ---- timers ---------------------------------------------------------------------- */

static void link_tick(void *arg)
{
	struct peer_link *l = arg;
	uint64_t now = now_mono_ms();
	struct wire_msg ping = { .type = WIRE_PING };

	l->tick = NULL;
	if (!l->p && now - l->started_ms > AUTH_TIMEOUT_MS) {
		link_fail(l, -ETIMEDOUT);
		return;
	}
	if (!l->authed || (l->p && !l->ops->up(l))) {
		if (now - l->started_ms > HANDSHAKE_TIMEOUT_MS) {
			link_fail(l, -ETIMEDOUT);
			return;
		}
	} else if (now - l->last_rx_ms > PING_LIMIT) {
		link_fail(l, -ETIMEDOUT);
		return;
	} else if (l->p) {
		link_send(l, &ping, NULL, 0, NULL);
	}
	/* The handshake's deadlines are checked every second. */
	repl__timer_add(l->vol->eng, l->authed && l->p && l->ops->up(l) ? PING_EVERY :
			PING_INTERVAL_MS, link_tick, l, &l->tick);
}

struct peer_link *repl__link_new(struct repl_volume *vol, int fd, struct peer *p,
				 const char *peer_node, const struct repl_link_ops *ops)
{
	struct peer_link *l = calloc(1, sizeof(*l));
	struct wire_auth_params ap = {
		.key = vol->key, .keylen = vol->key_len, .initiator = p != NULL,
		.node = vol->node, .peer = peer_node, .resource = vol->name,
		.features = (vol->link_plain ? 0 : WIRE_FEAT_AEAD) | LINK_FEATURES,
	};

	if (!l)
		return NULL;
	l->vol = vol;
	l->p = p;
	l->ops = ops;
	l->fd = fd;
	l->tx_tail = &l->tx_head;
	l->flush_later = (struct repl_deferred){ .fn = flush_later, .arg = l };
	l->rx = l->rx_small;
	l->rx_cap = sizeof(l->rx_small);
	l->started_ms = l->last_rx_ms = now_mono_ms();
	if (wire_auth_init(&l->auth, &ap, NULL) < 0 ||
	    repl__fd_add(vol->eng, fd, POLLIN, link_event, l) < 0) {
		free(l);
		return NULL;
	}
	l->registered = true;
	l->events = POLLIN;
	repl__timer_add(vol->eng, PING_INTERVAL_MS, link_tick, l, &l->tick);
	return l;
}

static void link_free(struct peer_link *l)
{
	struct txmsg *t;

	repl__undefer(l->vol->eng, &l->flush_later);
	while ((t = l->tx_head)) {
		l->tx_head = t->next;
		repl__buf_put(t->owned);
		free(t);
	}
	wire_auth_clear(&l->auth);
	repl__lc_free(l->lc);
	free(l->payload);
	if (l->rx != l->rx_small)
		free(l->rx);
	free(l);
}

/* Closes the socket now; the memory goes when no handler is running on it. */
static void link_close(struct peer_link *l)
{
	/* What this batch queued goes out first, as it did when every frame
	 * was sent at once (a refusal, a last STATE). */
	repl__undefer(l->vol->eng, &l->flush_later);
	if (l->tx_head && l->fd >= 0)
		link_flush(l);
	repl__timer_del(l->vol->eng, &l->tick);
	if (l->registered)
		repl__fd_del(l->vol->eng, l->fd);
	l->registered = false;
	if (l->fd >= 0)
		repl__sys->close(l->fd);
	l->fd = -1;
	l->dead = true;
	if (!l->busy)
		link_free(l);
}

/* ---- for the owner (link.h) ------------------------------------------------ */

int repl__link_start(struct peer_link *l)
{
	return auth_step(l);
}

int repl__link_send(struct peer_link *l, const struct wire_msg *m, const void *data,
		    size_t dlen, void *owned)
{
	return link_send(l, m, data, dlen, owned);
}

int repl__link_flush(struct peer_link *l)
{
	return link_flush(l);
}

void repl__link_close(struct peer_link *l)
{
	link_close(l);
}
