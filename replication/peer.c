/* peer.c: the connections between the replicas of a volume.  Each pair of
 * replicas has one TCP connection; the node whose name sorts first opens
 * it, the other accepts on its replica address.  A connection authenticates
 * both sides (wire.h: HMAC over the shared key), exchanges VOLUME frames and
 * lets gen.c decide (peer_state.c): in sync, who resyncs from whom, or
 * StandAlone (split brain, unrelated data, a different volume).  After
 * that, each frame is checked (its range, whether its sender may send it)
 * and handed to the engine through the peer_hooks table it was given
 * (peer.h; volume.c's), which names the modules above: this file and
 * peer_state.c call none of them.  The frames we send are built in
 * peer_send.c.
 *
 * The socket, the framing and the handshake are link.c's; it reports
 * through peer_link_ops.  Reconnects back off from 250 ms to 10 s; a link
 * that goes silent fails in link.c and the peer goes Disconnected here.
 * Loop thread only. */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "link.h"
#include "log.h"
#include "meta.h"
#include "handshake.h"
#include "peer.h"
#include "sys.h"
#include "util.h"
#include "wire.h"

#define BACKOFF_MIN_MS 250
#define BACKOFF_MAX_MS 10000
/* Disk drops this far apart start the delay over (resync.c's pause too). */
#define DISK_CALM_MS 20000

static struct peer *peer_by_name(struct repl_volume *vol, const char *node);
static void schedule_reconnect(struct peer *p);

/* ---- small helpers ---------------------------------------------------------- */

bool repl__peer_up(const struct peer *p)
{
	return p->conn == PC_UP;
}

/* ---- connection state --------------------------------------------------------- */

#define set_reason(p, ...) snprintf((p)->reason, sizeof((p)->reason), __VA_ARGS__)

/* Ends the connection; StandAlone peers are not retried. */
/* Our Primary is gone: what we applied lately must be made to agree with
 * the next Primary (recent.c), at once if another is already connected. */
static void primary_lost(struct repl_volume *vol, struct peer *gone)
{
	vol->lost_primary = true;
	vol->lost_primary_idx = gone->idx;
	for (unsigned i = 0; i < vol->n_peers; i++) {
		struct peer *o = vol->peers[i];
		if (o != gone && repl__peer_up(o) && o->peer_role == REPL_PRIMARY) {
			vol->lost_primary = false;
			o->hooks->recent_ask(o);
			return;
		}
	}
}

static void peer_down(struct peer *p, const char *why, bool standalone)
{
	bool was_up = p->conn == PC_UP;
	bool was_primary = was_up && p->peer_role == REPL_PRIMARY &&
			   p->vol->role != REPL_PRIMARY;

	if (p->l) {
		p->l->p = NULL;
		repl__link_close(p->l);
		p->l = NULL;
	}
	/* A connection being made goes too: left, it would become a second
	 * link of this peer once the next attempt also succeeds. */
	if (p->cfd >= 0) {
		repl__fd_del(p->vol->eng, p->cfd);
		repl__sys->close(p->cfd);
		p->cfd = -1;
	}
	p->conn = PC_IDLE;
	if (was_up)
		for (unsigned i = 0; i < PEER_DOWN_OBSERVERS; i++)
			p->hooks->down[i](p);
	if (why) {
		set_reason(p, "%s", why);
		plog(standalone ? LOG_ERR : LOG_WARNING, p->vol->name, "peer %s: %s%s",
		     p->node, why, standalone ? " (StandAlone: not retrying)" : "");
	}
	p->link = standalone ? REPL_LINK_STANDALONE : REPL_LINK_DISCONNECTED;
	if (was_primary)
		primary_lost(p->vol, p);
	if (!standalone && !p->vol->eng->stopping && !p->vol->down)
		schedule_reconnect(p);
	if (was_up)
		p->hooks->changed(p->vol);
}

void repl__peer_drop(struct peer *p, const char *why)
{
	peer_down(p, why, false);
}

void repl__peer_standalone(struct peer *p, uint32_t bye, const char *why)
{
	struct wire_msg m = { .type = WIRE_BYE };

	m.u.bye_reason = bye;
	if (p->l) {
		repl__link_send(p->l, &m, NULL, 0, NULL);
		repl__link_flush(p->l);
	}
	peer_down(p, why, true);
}

/* A link dropped for a disk is made again after 250 ms, then after twice
 * as long each time until 10 s, short again after 20 s without such a
 * drop.  Without it a Secondary whose every flush fails had its link made
 * again every 250 ms (the backoff starts over at each link that comes
 * up), each time with a resync that failed at its flush and log lines on
 * both sides: 39 links in 10 s.  Links that end soon for other reasons
 * (two promotions at once) still come back at once. */
static void disk_backoff(struct peer *p)
{
	uint64_t now = now_mono_ms();

	if (!p->disk_backoff_ms || now - p->disk_drop_ms > DISK_CALM_MS)
		p->disk_backoff_ms = BACKOFF_MIN_MS;
	else
		p->disk_backoff_ms = MIN(p->disk_backoff_ms * 2, BACKOFF_MAX_MS);
	p->disk_drop_ms = now;
	p->disk_wait = true;
}

void repl__peer_disk_drop(struct peer *p, const char *why)
{
	struct wire_msg m = { .type = WIRE_BYE };

	m.u.bye_reason = WIRE_BYE_DISK;
	if (p->l && p->conn >= PC_HANDSHAKE) {
		repl__link_send(p->l, &m, NULL, 0, NULL);
		repl__link_flush(p->l);
	}
	disk_backoff(p);
	peer_down(p, why, false);
}

/* The sizes differ and the link may not carry data yet (resize.h): both
 * sides wait and try again (the usual backoff; at once when this replica
 * grows), Disconnected, not StandAlone: a grow is going round and will
 * make them equal.  Said once in the log. */
void repl__peer_size_wait(struct peer *p, const char *why, bool tell)
{
	struct wire_msg m = { .type = WIRE_BYE };
	bool said = strcmp(p->reason, why) == 0;

	if (tell && p->l) {
		m.u.bye_reason = WIRE_BYE_SIZE;
		repl__link_send(p->l, &m, NULL, 0, NULL);
		repl__link_flush(p->l);
	}
	peer_down(p, said ? NULL : why, false);
	set_reason(p, "%s", why);
}

/* ---- receiving ---------------------------------------------------------------- */

static enum repl_io_op range_op(uint16_t type)
{
	return type == WIRE_TRIM ? REPL_IO_TRIM : REPL_IO_ZERO;
}

static unsigned io_flags(uint32_t wf)
{
	return ((wf & WIRE_WF_FUA) ? REPL_IO_FUA : 0) |
	       ((wf & WIRE_WF_NO_HOLE) ? REPL_IO_NO_HOLE : 0);
}

static bool range_ok(const struct repl_volume *vol, uint64_t off, uint64_t len)
{
	return len && off <= vol->size && len <= vol->size - off && len <= UINT32_MAX;
}

/* Is p the Primary this replica follows: it says it is Primary, and the
 * link to it carries its writes (in sync, or a resync from it), not the
 * state-only link of two Secondaries that differ? */
static bool following(const struct peer *p)
{
	return p->peer_role == REPL_PRIMARY && !p->suppressed &&
	       (p->link == REPL_LINK_CONNECTED || p->link == REPL_LINK_SYNC_TARGET);
}

/* A write (WRITE, TRIM, ZERO) is taken only from the Primary we follow: a
 * Secondary's would put data here that no Primary acknowledged and no
 * generation records.  (In a migration window the destination writes
 * only once it is Primary, and says so, in a STATE, before its first
 * write.)  Refused, the link goes; from one that lost a crossing too;
 * otherwise noted as taken from it. */
static bool take_from_primary(struct peer *p, uint16_t type)
{
	char why[192];

	if (!following(p)) {
		snprintf(why, sizeof(why), "%s from a peer that is not the Primary this "
			 "replica follows (it is %s%s): refused, nothing applied",
			 wire_type_name(type), p->peer_role == REPL_PRIMARY ? "Primary" : "Secondary",
			 p->suppressed ? ", on a link between differing Secondaries" : "");
		repl__peer_drop(p, why);
		return false;
	}
	if (p->lost_crossing) {
		repl__peer_drop(p, HS_LOST_CROSSING);
		return false;
	}
	p->took_primary = true;
	return true;
}

/* Data frames keep their payload buffer: data points into it. */
static void on_data(struct peer *p, const struct wire_msg *m, uint8_t *payload)
{
	const struct wire_write *w = &m->u.write;

	if (!range_ok(p->vol, w->offset, w->len) || p->vol->role == REPL_PRIMARY) {
		free(payload);
		repl__peer_drop(p, "write outside the volume, or to a Primary");
		return;
	}
	if (m->type == WIRE_RS_DATA) {
		p->hooks->rs_data(p, m->seq, w->offset, w->len, (void *)w->data, payload);
		return;
	}
	if (!take_from_primary(p, m->type)) {
		free(payload);
		return;
	}
	p->hooks->apply(p, m->seq, REPL_IO_WRITE, io_flags(w->flags), w->offset, w->len,
			(void *)w->data, payload);
}

static void on_range(struct peer *p, const struct wire_msg *m)
{
	const struct wire_range *r = &m->u.range;

	if (!range_ok(p->vol, r->offset, r->len) || p->vol->role == REPL_PRIMARY) {
		repl__peer_drop(p, "request outside the volume, or to a Primary");
		return;
	}
	if (m->type == WIRE_RS_ZERO) {
		p->hooks->rs_data(p, m->seq, r->offset, (uint32_t)r->len, NULL, NULL);
		return;
	}
	if (!take_from_primary(p, m->type))
		return;
	p->hooks->apply(p, m->seq, range_op(m->type), io_flags(r->flags), r->offset,
			(uint32_t)r->len, NULL, NULL);
}

/* A Secondary asks for regions it may hold alone (recent.c): they join its
 * bitmap here and a resync from this Primary follows. */
static void on_rs_request(struct peer *p, const struct wire_range *r)
{
	if (p->vol->role != REPL_PRIMARY || !range_ok(p->vol, r->offset, r->len)) {
		repl__peer_drop(p, "resync request to a Secondary, or outside the volume");
		return;
	}
	meta_bits_set_range(p->vol->meta, p->idx, r->offset, r->len);
	p->hooks->rs_more(p);
}

static void dispatch(struct peer *p, struct wire_msg *m, uint8_t *payload)
{
	switch (m->type) {
	case WIRE_WRITE:
	case WIRE_RS_DATA:
		on_data(p, m, payload);
		return;
	case WIRE_TRIM:
	case WIRE_ZERO:
	case WIRE_RS_ZERO:
		on_range(p, m);
		break;
	case WIRE_FLUSH:
		if (m->seq & WIRE_RS_SEQ_BIT)
			p->hooks->rs_flush(p, m->seq);
		else
			p->hooks->apply(p, m->seq, REPL_IO_FLUSH, 0, 0, 0, NULL, NULL);
		break;
	case WIRE_WRITE_ACK:
	case WIRE_FLUSH_ACK:
		if (m->u.ack.seq & WIRE_RS_SEQ_BIT)
			p->hooks->rs_ack(p, m->u.ack.seq, -(int)m->u.ack.error);
		else
			p->hooks->ack(p, m->u.ack.seq, -(int)m->u.ack.error);
		break;
	case WIRE_STATE:
		repl__peer_on_state(p, &m->u.state);
		break;
	case WIRE_VOLUME:
		if (p->conn == PC_UP)
			p->hooks->rs_done(p, &m->u.volume);
		else
			repl__peer_on_volume(p, &m->u.volume);
		break;
	case WIRE_PING: {
		/* The seq comes back: a Secondary's PING after its asks
		 * (recent.c) learns that they arrived. */
		struct wire_msg pong = { .type = WIRE_PING_ACK, .seq = m->seq };
		if (m->seq && !(m->seq & WIRE_PING_ECHO_BIT) && p->peer_role == REPL_PRIMARY)
			p->hooks->primary_seq(p->vol, m->seq);
		if (m->seq & WIRE_PING_ECHO_BIT)
			p->asks_owed = false;	/* its asks are all in our bitmap */
		repl__peer_send_msg(p, &pong);
		break;
	}
	case WIRE_RS_REQUEST:
		on_rs_request(p, &m->u.range);
		break;
	case WIRE_PING_ACK:
		if (m->seq)
			p->hooks->ping_acked(p, m->seq);
		break;
	case WIRE_VERIFY_REQ:
		if (range_ok(p->vol, m->u.range.offset, m->u.range.len))
			p->hooks->verify_request(p, m->seq, m->u.range.offset,
						 (uint32_t)m->u.range.len);
		else
			repl__peer_drop(p, "verify request outside the volume");
		break;
	case WIRE_VERIFY_REPLY:
		p->hooks->verify_reply(p, m->seq, &m->u.verify);
		break;
	case WIRE_TAKEOVER:
		p->hooks->takeover(p, m->seq, m->u.takeover.flags);
		break;
	case WIRE_HANDOVER:
		p->hooks->handover(p, m->seq, &m->u.handover);
		break;
	case WIRE_BYE:
		if (m->u.bye_reason == WIRE_BYE_DISK) {
			disk_backoff(p);
			peer_down(p, "the peer's disk failed: connecting again later", false);
		} else if (m->u.bye_reason == WIRE_BYE_SIZE)
			repl__peer_size_wait(p, "the peer waits until the sizes allow the link "
				  "(a resize is going round)", false);
		/* It saw a split brain with what we were when we sent our
		 * VOLUME; we have moved since (a third replica told us we are
		 * Outdated): the next handshake is on what we are now, and we
		 * may take its data then (gen.c rule 23).  StandAlone, nothing
		 * would try again: sim seed 46471 of the EIO profile.  (The
		 * deciding side's own move is peer_state.c's.) */
		else if (m->u.bye_reason == WIRE_BYE_SPLIT_BRAIN && repl__peer_told_stale(p))
			repl__peer_drop(p, "the peer saw a split brain with the state we had when "
					"the link was made: connecting again");
		else
			peer_down(p, m->u.bye_reason == WIRE_BYE_SHUTDOWN ? "peer shut down"
				  : "peer refused the connection",
				  m->u.bye_reason == WIRE_BYE_SPLIT_BRAIN);
		break;
	case WIRE_SIZE:
		p->hooks->size(p, m->u.size);
		break;
	case WIRE_CKPT:
		p->hooks->ckpt(p, &m->u.ckpt);
		break;
	case WIRE_READ_REQ:
		if (range_ok(p->vol, m->u.range.offset, m->u.range.len))
			p->hooks->read_request(p, m->seq, m->u.range.offset,
					       (uint32_t)m->u.range.len);
		else
			repl__peer_drop(p, "read request outside the volume");
		break;
	case WIRE_READ_DATA:
		p->hooks->read_answer(p, m->seq, &m->u.write, 0);
		break;
	case WIRE_READ_FAIL:
		p->hooks->read_answer(p, m->u.ack.seq, NULL,
				      m->u.ack.error ? -(int)m->u.ack.error : -EIO);
		break;
	default:
		repl__peer_drop(p, "unexpected frame");
		break;
	}
	free(payload);
}

/* Ready for frames other than the handshake's? */
static bool frame_allowed(const struct peer *p, uint16_t type)
{
	if (p->conn == PC_UP)
		return type != WIRE_HELLO && type != WIRE_CHALLENGE && type != WIRE_AUTH &&
		       type != WIRE_AUTH_OK;
	return type == WIRE_VOLUME || type == WIRE_BYE;
}

static struct peer *peer_by_name(struct repl_volume *vol, const char *node)
{
	for (unsigned i = 0; i < vol->n_peers; i++)
		if (strcmp(vol->peers[i]->node, node) == 0)
			return vol->peers[i];
	return NULL;
}

/* An accepted link proved the key and named its node: it becomes that
 * peer's connection, replacing a stale one (the peer restarted). */
static int attach_accepted(struct peer_link *l)
{
	const char *node = wire_auth_peer_node(&l->auth);
	struct peer *p = node ? peer_by_name(l->vol, node) : NULL;

	if (l->vol->down) {
		snprintf(l->why, sizeof(l->why), "volume is down on this node");
		return -EACCES;
	}
	if (!p || p->initiator) {
		plog(LOG_WARNING, l->vol->name, "refusing a connection from %s: not a peer "
		     "that connects to this node", node ? node : "?");
		return -EACCES;
	}
	if (p->l)
		peer_down(p, "replaced by a new connection from the peer", false);
	repl__timer_del(l->vol->eng, &p->reconnect_timer);
	p->l = l;
	l->p = p;
	p->conn = PC_HANDSHAKE;
	return 0;
}

/* Which check the handshake failed, for the log.  Names come from the
 * peer's claim, which the handshake reads only once its proof verified:
 * before that, all we know is that the key does not fit. */
static void explain_refusal(struct peer_link *l)
{
	const struct wire_names *c;
	enum wire_refusal why = wire_auth_refusal(&l->auth, &c);
	bool init = l->auth.initiator;
	const char *them = c ? (init ? c->acceptor : c->initiator) : "?";
	const char *us = c ? (init ? c->initiator : c->acceptor) : "?";

	switch (why) {
	case WIRE_REFUSE_PROOF:
		if (l->p)
			snprintf(l->why, sizeof(l->why), "authentication failed for peer %.64s: "
				 "the key files differ", l->p->node);
		else
			snprintf(l->why, sizeof(l->why), "authentication failed: the connecting "
				 "node's proof does not fit this node's key (the key files differ)");
		break;
	case WIRE_REFUSE_NONCE:
		snprintf(l->why, sizeof(l->why), "refused: the peer sent this link's own "
			 "nonce back (a reflection)");
		break;
	case WIRE_REFUSE_SELF:
		snprintf(l->why, sizeof(l->why), "refused: the peer is this node itself "
			 "(%.64s), its connection relayed back to it", l->vol->node);
		break;
	case WIRE_REFUSE_RESOURCE:
		snprintf(l->why, sizeof(l->why), "peer %.64s offers volume \"%.64s\", "
			 "not this one", them, c ? c->resource : "?");
		break;
	case WIRE_REFUSE_NOT_US:
		snprintf(l->why, sizeof(l->why), "refused: peer %.64s expected node %.64s "
			 "at this address, not this one", them, us);
		break;
	case WIRE_REFUSE_PEER:
		if (!peer_by_name(l->vol, them))
			snprintf(l->why, sizeof(l->why), "node %.64s is not a replica of this "
				 "volume", them);
		else
			snprintf(l->why, sizeof(l->why), "refused: the node at this address is "
				 "%.64s, not %.64s", them, l->auth.expect_peer);
		break;
	case WIRE_REFUSE_NONE:
		break;
	}
}

/* ---- what the links report (link.h) --------------------------------------------- */

static int on_link_authed(struct peer_link *l)
{
	int r;

	if (!l->p && (r = attach_accepted(l)) < 0)
		return r;
	plog(LOG_INFO, l->vol->name, "peer %s authenticated", l->p->node);
	/* It holds the generation it was lost at, and may lack writes made
	 * here since: say that we are ahead of it before comparing. */
	l->p->hooks->authed(l->p);
	return repl__peer_send_volume(l->p);
}

static int on_link_frame(struct peer_link *l, struct wire_msg *m, uint8_t *payload)
{
	if (!frame_allowed(l->p, m->type)) {
		free(payload);
		return -EPROTO;
	}
	dispatch(l->p, m, payload);
	return 0;
}

static void on_link_fail(struct peer_link *l, const char *why)
{
	peer_down(l->p, why, false);
}

static bool on_link_up(const struct peer_link *l)
{
	return l->p->conn == PC_UP;
}

static const struct repl_link_ops peer_link_ops = {
	.authed = on_link_authed,
	.frame = on_link_frame,
	.refused = explain_refusal,
	.fail = on_link_fail,
	.up = on_link_up,
};

/* ---- connecting ------------------------------------------------------------------- */

/* A connection attempt failed (refused, unreachable, ...): retried with
 * the backoff.  Logged once per reason, not on every retry, so that a
 * peer that is not listening (not started, or its port is taken) shows
 * in the log and not only in the status. */
static void connect_failed(struct peer *p, int err)
{
	char why[sizeof(p->reason)];

	snprintf(why, sizeof(why), "cannot connect: %s", strerror(err));
	if (strcmp(why, p->reason) != 0)
		plog(LOG_INFO, p->vol->name, "peer %s: cannot connect to %s:%s: %s (retrying)",
		     p->node, p->host, p->port, strerror(err));
	memcpy(p->reason, why, sizeof(why));
	schedule_reconnect(p);
}

static void connect_done(void *arg, int fd, unsigned revents)
{
	struct peer *p = arg;
	int err;

	repl__fd_del(p->vol->eng, fd);
	p->cfd = -1;
	err = repl__sys->connect_error(fd);
	if (err) {
		repl__sys->close(fd);
		p->conn = PC_IDLE;
		p->link = REPL_LINK_CONNECTING;
		connect_failed(p, err);
		return;
	}
	p->l = repl__link_new(p->vol, fd, p, p->node, &peer_link_ops);
	if (!p->l) {
		repl__sys->close(fd);
		p->conn = PC_IDLE;
		schedule_reconnect(p);
		return;
	}
	p->conn = PC_HANDSHAKE;
	if (repl__link_start(p->l) < 0)
		peer_down(p, "handshake failed", false);
}

static int connect_start(struct peer *p)
{
	int fd, r;

	fd = repl__sys->connect(p->host, p->port);
	if (fd < 0)
		return fd;
	r = repl__fd_add(p->vol->eng, fd, POLLOUT, connect_done, p);
	if (r < 0) {
		repl__sys->close(fd);
		return r;
	}
	p->cfd = fd;
	p->conn = PC_CONNECTING;
	p->link = REPL_LINK_CONNECTING;
	return 0;
}

static void reconnect_fire(void *arg)
{
	struct peer *p = arg;
	int r;

	p->reconnect_timer = NULL;
	if (p->conn != PC_IDLE || p->link == REPL_LINK_STANDALONE || p->vol->eng->stopping ||
	    p->vol->down)
		return;
	if (!p->host || !p->port) {
		set_reason(p, "address not known yet");
		return;
	}
	r = connect_start(p);
	if (r < 0)
		connect_failed(p, -r);
}

static void schedule_reconnect(struct peer *p)
{
	bool disk = p->disk_wait;

	p->disk_wait = false;
	if (!p->initiator || p->reconnect_timer)
		return;
	p->backoff_ms = p->backoff_ms ? MIN(p->backoff_ms * 2, BACKOFF_MAX_MS) : BACKOFF_MIN_MS;
	repl__timer_add(p->vol->eng, disk ? MAX(p->backoff_ms, p->disk_backoff_ms) :
			p->backoff_ms, reconnect_fire, p, &p->reconnect_timer);
}

/* ---- volume setup --------------------------------------------------------------- */

static struct peer *peer_new(struct repl_volume *vol, unsigned idx,
			     const struct repl_peer_config *pc, const struct peer_hooks *hooks)
{
	struct peer *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->vol = vol;
	p->idx = idx;
	p->hooks = hooks;
	snprintf(p->node, sizeof(p->node), "%s", pc->node);
	/* In cluster mode an address may not be known yet: NULL until
	 * repl__peer_set_address(). */
	p->host = pc->host ? strdup(pc->host) : NULL;
	p->port = pc->port ? strdup(pc->port) : NULL;
	if ((pc->host && !p->host) || (pc->port && !p->port)) {
		free(p->host);
		free(p->port);
		repl__unfl_free(p);
		free(p);
		return NULL;
	}
	p->cfd = -1;
	p->initiator = strcmp(vol->node, pc->node) < 0;
	p->link = p->initiator ? REPL_LINK_CONNECTING : REPL_LINK_DISCONNECTED;
	p->peer_role = REPL_SECONDARY;
	p->peer_disk = GEN_DISK_UNKNOWN;
	return p;
}

int repl__peers_start(struct repl_volume *vol, const struct repl_volume_config *cfg,
		      const struct peer_hooks *hooks)
{
	int r;

	for (unsigned i = 0; i < cfg->n_peers; i++) {
		vol->peers[i] = peer_new(vol, i, &cfg->peers[i], hooks);
		if (!vol->peers[i])
			return -ENOMEM;
		vol->n_peers = i + 1;
	}
	r = repl__link_listen(vol, cfg->listen_host, cfg->listen_port, &peer_link_ops);
	if (r < 0) {
		plog_errno(LOG_ERR, vol->name, -r, "cannot listen for replication on %s:%s",
			   cfg->listen_host, cfg->listen_port);
		return r;
	}
	for (unsigned i = 0; i < vol->n_peers; i++)
		if (vol->peers[i]->initiator)
			reconnect_fire(vol->peers[i]);
	return 0;
}

void repl__peers_stop(struct repl_volume *vol)
{
	struct wire_msg bye = { .type = WIRE_BYE };

	for (unsigned i = 0; i < vol->n_peers; i++) {
		struct peer *p = vol->peers[i];
		if (!p)
			continue;
		repl__timer_del(vol->eng, &p->reconnect_timer);
		if (p->l && p->conn >= PC_HANDSHAKE) {
			bye.u.bye_reason = WIRE_BYE_SHUTDOWN;
			repl__link_send(p->l, &bye, NULL, 0, NULL);
		}
		if (p->cfd >= 0) {
			repl__fd_del(vol->eng, p->cfd);
			repl__sys->close(p->cfd);
			p->cfd = -1;
		}
		peer_down(p, NULL, true);
	}
	repl__link_listen_stop(vol);
}

/* After repl__peers_stop() and after the volume's I/O has drained. */
void repl__peers_free(struct repl_volume *vol)
{
	for (unsigned i = 0; i < vol->n_peers; i++) {
		struct peer *p = vol->peers[i];
		if (!p)
			continue;
		free(p->host);
		free(p->port);
		repl__unfl_free(p);
		free(p);
		vol->peers[i] = NULL;
	}
	vol->n_peers = 0;
}

int repl__peer_set_address(struct peer *p, const char *host, const char *port)
{
	char *h = strdup(host), *pt = strdup(port);

	if (!h || !pt) {
		free(h);
		free(pt);
		return -ENOMEM;
	}
	if (p->host && strcmp(p->host, h) == 0 && strcmp(p->port, pt) == 0) {
		free(h);
		free(pt);
		return 0;
	}
	free(p->host);
	free(p->port);
	p->host = h;
	p->port = pt;
	if (p->initiator && p->conn == PC_IDLE && p->link != REPL_LINK_STANDALONE) {
		repl__timer_del(p->vol->eng, &p->reconnect_timer);
		p->backoff_ms = 0;
		schedule_reconnect(p);
	}
	return 0;
}

/* Down: every link closes and none is made until up again. */
void repl__peers_set_down(struct repl_volume *vol, bool down)
{
	for (unsigned i = 0; i < vol->n_peers; i++) {
		struct peer *p = vol->peers[i];
		if (down) {
			repl__timer_del(vol->eng, &p->reconnect_timer);
			if (p->conn != PC_IDLE || p->l)
				peer_down(p, "volume is down on this node", false);
			p->link = REPL_LINK_DISCONNECTED;
			set_reason(p, "volume is down on this node");
		} else {
			p->link = p->initiator ? REPL_LINK_CONNECTING : REPL_LINK_DISCONNECTED;
			p->reason[0] = '\0';
			p->backoff_ms = 0;
			if (p->initiator)
				reconnect_fire(p);
		}
	}
}

void repl__peer_reconnect_now(struct peer *p)
{
	if (!p->initiator || p->conn != PC_IDLE || p->link == REPL_LINK_STANDALONE ||
	    p->vol->down || p->vol->eng->stopping)
		return;
	repl__timer_del(p->vol->eng, &p->reconnect_timer);
	p->backoff_ms = 0;
	reconnect_fire(p);
}

/* StandAlone no more: try to connect again (resolve). */
void repl__peer_retry(struct peer *p)
{
	if (p->link != REPL_LINK_STANDALONE)
		return;
	p->link = p->initiator ? REPL_LINK_CONNECTING : REPL_LINK_DISCONNECTED;
	p->reason[0] = '\0';
	p->backoff_ms = 0;
	if (p->initiator)
		reconnect_fire(p);
}

/* Our role or disk changed: every connected peer hears it. */
void repl__peers_tell_state(struct repl_volume *vol)
{
	for (unsigned i = 0; i < vol->n_peers; i++)
		if (repl__peer_up(vol->peers[i]))
			repl__peer_send_state(vol->peers[i], NULL);
}
