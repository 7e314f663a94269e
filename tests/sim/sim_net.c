/* sim_net.c: the simulated network of replica links: non-blocking stream
 * sockets between nodes named "n0", "n1", ...  Bytes of one connection
 * arrive in order (each segment no earlier than the one before it), with
 * a seeded delay, so connections reorder against each other but never
 * within themselves, as TCP.  A cut resets a connection (both ends see
 * ECONNRESET); a partition or a crash makes it silent (what is sent is
 * lost, nothing tells either end: their ping timeout or the cluster must).
 * A connection attempt may arrive twice (a stray duplicate the listener
 * accepts and that then closes). */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "sim.h"

struct sim_netcfg sim_netcfg = { .delay_min = 100000, .delay_max = 2 * SIM_MS };
bool (*sim_reachable)(int a, int b);

enum sk_state { SK_FREE, SK_LISTEN, SK_CONNECTING, SK_ESTAB, SK_DEAD };

struct seg {
	struct seg *next;
	uint64_t at;		/* arrival */
	size_t len, off;
	bool fin;
	uint8_t data[];
};

struct sock {
	enum sk_state st;
	int node;
	bool open;		/* the owner has not closed it */
	int peer;		/* fd of the other end, -1 */
	int err;		/* pending error (connect result, reset) */
	bool silent;		/* blackholed: sends are lost */
	bool connected;		/* a connect that finished */
	struct seg *in_head, **in_tail;
	size_t in_bytes;
	uint64_t last_at;	/* arrival of the last segment sent to the peer */
	int accq[16];		/* listener: accepted, not yet taken */
	unsigned naccq;
};

#define MAX_SOCKS 65536
#define SOCK_BUF (256 * 1024)
/* never reused within a run: an event about an old socket finds it gone */
static struct sock socks[MAX_SOCKS];
static int next_sock;
static int listeners[SIM_NODES];

static struct sock *sk(int fd)
{
	if (fd < SIM_FD_BASE || fd >= SIM_FD_BASE + MAX_SOCKS)
		return NULL;
	return socks[fd - SIM_FD_BASE].st == SK_FREE ? NULL : &socks[fd - SIM_FD_BASE];
}

bool simnet_owns(int fd)
{
	return sk(fd) != NULL;
}

static int sk_new(int node, enum sk_state st)
{
	if (next_sock < MAX_SOCKS) {
		int i = next_sock++;
		socks[i] = (struct sock){ .st = st, .node = node, .open = true, .peer = -1 };
		socks[i].in_tail = &socks[i].in_head;
		return SIM_FD_BASE + i;
	}
	fprintf(stderr, "replsim: out of simulated sockets\n");
	exit(2);
}

static void seg_free_all(struct sock *s)
{
	while (s->in_head) {
		struct seg *g = s->in_head;
		s->in_head = g->next;
		free(g);
	}
	s->in_tail = &s->in_head;
	s->in_bytes = 0;
}

static void sk_release(int fd)
{
	struct sock *s = sk(fd);

	if (!s)
		return;
	seg_free_all(s);
	s->st = SK_FREE;
}

void sim_net_reset(void)
{
	for (int i = 0; i < next_sock; i++)
		if (socks[i].st != SK_FREE)
			sk_release(SIM_FD_BASE + i);
	next_sock = 0;
	for (int i = 0; i < SIM_NODES; i++)
		listeners[i] = -1;
}

/* The short receives' own generator: drawing them from the run's
 * generator would change every seed's run. */
static uint64_t short_x;

void sim_net_seed(uint64_t seed)
{
	short_x = seed ^ UINT64_C(0x5eed5e95);
}

static uint64_t delay(void)
{
	return sim_netcfg.delay_min + rnd_below(sim_netcfg.delay_max - sim_netcfg.delay_min + 1);
}

static void wake(void *a, uint64_t b)
{
	(void)a;
	(void)b;	/* the sweep after this event finds what arrived */
}

static int node_of_host(const char *host)
{
	if (host && host[0] == 'n' && host[1] >= '0' && host[1] < '0' + SIM_NODES && !host[2])
		return host[1] - '0';
	return -1;
}

unsigned sim_net_ready(int fd)
{
	struct sock *s = sk(fd);
	unsigned r = 0;

	if (!s)
		return 0;
	switch (s->st) {
	case SK_LISTEN:
		return s->naccq ? POLLIN : 0;
	case SK_CONNECTING:
		return 0;
	case SK_DEAD:
		return POLLERR | POLLHUP | POLLIN | POLLOUT;
	default:
		break;
	}
	if (s->err)
		return POLLERR | POLLHUP | POLLIN | POLLOUT;
	if (s->in_head && s->in_head->at <= sim_now)
		r |= POLLIN;
	if (s->in_head && s->in_head->fin && s->in_head->at <= sim_now)
		r |= POLLHUP;
	if (s->peer >= 0 && sk(s->peer) && sk(s->peer)->in_bytes < SOCK_BUF)
		r |= POLLOUT;
	else if (s->peer < 0 || !sk(s->peer))
		r |= POLLOUT;	/* the send finds out */
	return r;
}

int simnet_listen(const char *host, const char *port)
{
	int node = node_of_host(host), fd;

	(void)port;
	if (node < 0 || node != sim_cur)
		return -EADDRNOTAVAIL;
	if (listeners[node] >= 0 && sk(listeners[node]))
		return -EADDRINUSE;
	fd = sk_new(node, SK_LISTEN);
	listeners[node] = fd;
	return fd;
}

/* Queues a segment (data or FIN) from s to its peer, in order. */
static void send_seg(struct sock *s, const void *data, size_t len, bool fin)
{
	struct sock *p = sk(s->peer);
	struct seg *g;

	if (!p || s->silent)
		return;
	g = malloc(sizeof(*g) + len);
	if (!g)
		exit(2);
	g->next = NULL;
	g->len = len;
	g->off = 0;
	g->fin = fin;
	memcpy(g->data, data, len);
	g->at = sim_now + delay();
	if (g->at < s->last_at)
		g->at = s->last_at;
	s->last_at = g->at;
	*p->in_tail = g;
	p->in_tail = &g->next;
	p->in_bytes += len;
	sim_at(g->at, p->node, wake, NULL, 0);
}

struct conn_try {
	int cfd;	/* the connecting socket */
	int to;		/* node */
};

static void connect_result(void *a, uint64_t b)
{
	int cfd = (int)(intptr_t)a;
	struct sock *c = sk(cfd);

	if (!c || c->st != SK_CONNECTING)
		return;
	if (b) {
		c->st = SK_DEAD;
		c->err = (int)b;
		return;
	}
	c->st = SK_ESTAB;
	c->connected = true;
}

/* The SYN arrives at node `to`. */
static void connect_arrive(void *a, uint64_t b)
{
	int cfd = (int)(intptr_t)a, to = (int)b, lfd = listeners[to], sfd;
	struct sock *c = sk(cfd), *l = sk(lfd);

	if (!c || c->st != SK_CONNECTING)
		return;
	if (!sim_reachable(c->node, to)) {
		sim_at(sim_now + 1000 * SIM_MS, c->node, connect_result, a, ETIMEDOUT);
		return;
	}
	if (!l || l->st != SK_LISTEN || l->naccq >= 14) {
		sim_at(sim_now + delay(), c->node, connect_result, a, ECONNREFUSED);
		return;
	}
	if (rnd_chance(sim_netcfg.dup_connect_permille)) {
		/* a duplicate that the client never completes: accepted, then
		 * closed by its (non-existent) other end */
		int dfd = sk_new(to, SK_ESTAB), gfd = sk_new(c->node, SK_ESTAB);
		struct sock *d = &socks[dfd - SIM_FD_BASE], *g = &socks[gfd - SIM_FD_BASE];
		d->peer = gfd;
		g->peer = dfd;
		g->open = false;
		l->accq[l->naccq++] = dfd;
		send_seg(g, "", 0, true);
		trace("net: duplicate connection attempt n%d->n%d", c->node, to);
	}
	sfd = sk_new(to, SK_ESTAB);
	socks[sfd - SIM_FD_BASE].peer = cfd;
	c->peer = sfd;
	l->accq[l->naccq++] = sfd;
	sim_at(sim_now + delay(), c->node, connect_result, a, 0);
}

int simnet_connect(const char *host, const char *port)
{
	int to = node_of_host(host), fd;

	(void)port;
	if (to < 0)
		return -EHOSTUNREACH;
	fd = sk_new(sim_cur, SK_CONNECTING);
	sim_at(sim_now + delay(), -1, connect_arrive, (void *)(intptr_t)fd, (uint64_t)to);
	return fd;
}

int simnet_connect_error(int fd)
{
	struct sock *s = sk(fd);

	if (!s)
		return EBADF;
	return s->connected ? s->err : (s->err ? s->err : ECONNREFUSED);
}

int simnet_accept(int fd, struct sockaddr_storage *src)
{
	struct sock *l = sk(fd);
	int c;

	if (!l || l->st != SK_LISTEN || !l->naccq) {
		errno = EAGAIN;
		return -1;
	}
	c = l->accq[0];
	memmove(l->accq, l->accq + 1, --l->naccq * sizeof(int));
	memset(src, 0, sizeof(*src));
	src->ss_family = AF_INET;
	((uint8_t *)src)[4] = (uint8_t)(c >> 8);	/* sin_addr: one per connection */
	((uint8_t *)src)[5] = (uint8_t)c;
	return c;
}

ssize_t simnet_sendmsg(int fd, const struct msghdr *msg)
{
	struct sock *s = sk(fd), *p;
	size_t total = 0, space, n = 0;
	uint8_t *buf;

	if (!s || s->st != SK_ESTAB) {
		errno = s && s->err ? s->err : EPIPE;
		return -1;
	}
	if (s->err) {
		errno = s->err;
		return -1;
	}
	p = sk(s->peer);
	if (!p || !p->open) {
		/* the other end is gone: a RST answers */
		if (!s->silent) {
			errno = ECONNRESET;
			return -1;
		}
	}
	for (size_t i = 0; i < msg->msg_iovlen; i++)
		total += msg->msg_iov[i].iov_len;
	space = p && p->in_bytes < SOCK_BUF ? SOCK_BUF - p->in_bytes : SOCK_BUF;
	if (p && p->in_bytes >= SOCK_BUF) {
		errno = EAGAIN;
		return -1;
	}
	if (total > space)
		total = space;
	buf = malloc(total ? total : 1);
	if (!buf)
		exit(2);
	for (size_t i = 0; i < msg->msg_iovlen && n < total; i++) {
		size_t take = msg->msg_iov[i].iov_len;
		if (take > total - n)
			take = total - n;
		memcpy(buf + n, msg->msg_iov[i].iov_base, take);
		n += take;
	}
	if (p && p->open)
		send_seg(s, buf, total, false);
	free(buf);
	return (ssize_t)total;
}

ssize_t simnet_recv(int fd, void *buf, size_t len)
{
	struct sock *s = sk(fd);
	size_t n = 0;

	if (!s) {
		errno = EBADF;
		return -1;
	}
	if (s->err) {
		errno = s->err;
		return -1;
	}
	/* TCP may return less than is there: a header, a payload, a record
	 * split anywhere (the reader must not take a short read for more than
	 * "nothing more now": the data left is readable at the next sweep). */
	if (len > 1 && sim_splitmix(&short_x) % 1000 < sim_netcfg.short_recv_permille)
		len = 1 + sim_splitmix(&short_x) % (len - 1);
	while (n < len && s->in_head && s->in_head->at <= sim_now) {
		struct seg *g = s->in_head;
		size_t take;

		if (g->fin) {
			if (n)
				break;
			return 0;
		}
		take = g->len - g->off;
		if (take > len - n)
			take = len - n;
		memcpy((uint8_t *)buf + n, g->data + g->off, take);
		g->off += take;
		n += take;
		s->in_bytes -= take;
		if (g->off == g->len) {
			s->in_head = g->next;
			if (!s->in_head)
				s->in_tail = &s->in_head;
			free(g);
		}
	}
	if (!n) {
		errno = EAGAIN;
		return -1;
	}
	return (ssize_t)n;
}

int simnet_close(int fd)
{
	struct sock *s = sk(fd), *p;

	if (!s)
		return -1;
	if (s->st == SK_LISTEN) {
		for (unsigned i = 0; i < s->naccq; i++)
			simnet_close(s->accq[i]);
		if (listeners[s->node] == fd)
			listeners[s->node] = -1;
		sk_release(fd);
		return 0;
	}
	p = sk(s->peer);
	if (p && s->st == SK_ESTAB)
		send_seg(s, "", 0, true);
	if (p)
		p->peer = p->peer == fd ? -2 : p->peer;	/* its FIN still travels */
	s->open = false;
	if (p && s->st == SK_ESTAB) {
		/* keep the record until the peer closes too: the FIN is queued
		 * on the peer already, nothing here is needed any more */
	}
	sk_release(fd);
	return 0;
}

static bool between(struct sock *s, int fd, int a, int b)
{
	struct sock *p;

	if (s->st != SK_ESTAB && s->st != SK_CONNECTING)
		return false;
	p = sk(s->peer);
	(void)fd;
	return p && ((s->node == a && p->node == b) || (s->node == b && p->node == a));
}

void sim_net_cut(int a, int b)
{
	for (int i = 0; i < next_sock; i++) {
		struct sock *s = &socks[i];
		if (s->st != SK_FREE && between(s, SIM_FD_BASE + i, a, b)) {
			s->err = ECONNRESET;
			seg_free_all(s);
		}
	}
}

void sim_net_blackhole(int a, int b)
{
	for (int i = 0; i < next_sock; i++) {
		struct sock *s = &socks[i];
		if (s->st != SK_FREE && between(s, SIM_FD_BASE + i, a, b))
			s->silent = true;
	}
}

void sim_net_crash(int node)
{
	for (int i = 0; i < next_sock; i++) {
		struct sock *s = &socks[i];
		struct sock *p;

		if (s->st == SK_FREE || s->node != node)
			continue;
		p = sk(s->peer);
		if (p) {
			/* nothing more comes from here; the peer learns of it
			 * from its ping timeout, the cluster, or a RST to its
			 * next send once the node is back */
			p->peer = -2;
			p->silent = true;
		}
		if (s->st == SK_LISTEN)
			listeners[node] = -1;
		sk_release(SIM_FD_BASE + i);
	}
}
