/* nbd_out.c: the output side of an NBD connection, shared by both phases
 * and both threads: the queue of messages waiting for the socket, sent as
 * far as the socket takes them (through the TLS session once there is
 * one), the handshake's option replies, and the close of a connection's
 * sides, under c->lock.  What to send is decided above it (nbd_opt.c,
 * nbd_cmd.c, nbd_conn.c); it is the bottom of the connection's files and
 * calls none of them. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "nbd-protocol.h"
#include "nbd_conn_int.h"
#include "nbd_out.h"
#include "nbd_tls.h"
#include "util.h"

#define MAX_IOV		64

void repl__nbd_out_push(struct nbd_conn *c, struct outmsg *m)
{
	m->next = NULL;
	*c->out_tail = m;
	c->out_tail = &m->next;
}

void repl__nbd_out_pop(struct nbd_conn *c)
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
void repl__nbd_flush_locked(struct nbd_conn *c)
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
			repl__nbd_out_pop(c);
		}
	}
}

void repl__nbd_conn_flush(struct nbd_conn *c)
{
	pthread_mutex_lock(&c->lock);
	repl__nbd_flush_locked(c);
	pthread_mutex_unlock(&c->lock);
}

static void outmsg_free_plain(struct outmsg *m) { free(m); }

/* A handshake-phase message: copied, freed once sent. */
int repl__nbd_send_bytes(struct nbd_conn *c, const void *a, size_t alen,
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
	repl__nbd_out_push(c, m);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

int repl__nbd_opt_reply(struct nbd_conn *c, uint32_t opt, uint32_t reply,
		     const void *data, uint32_t len)
{
	struct nbd_option_reply r = {
		.magic = htobe64(NBD_REP_MAGIC),
		.option = htobe32(opt),
		.reply = htobe32(reply),
		.length = htobe32(len),
	};
	return repl__nbd_send_bytes(c, &r, sizeof(r), data, len);
}

int repl__nbd_opt_error(struct nbd_conn *c, uint32_t opt, uint32_t reply, const char *msg)
{
	return repl__nbd_opt_reply(c, opt, reply, msg, (uint32_t)strlen(msg));
}

/* Loop thread: no more requests (dead: no more replies either). */
void repl__nbd_conn_close_side(struct nbd_conn *c, bool dead)
{
	pthread_mutex_lock(&c->lock);
	c->read_closed = true;
	if (dead)
		c->dead = true;
	pthread_mutex_unlock(&c->lock);
}
