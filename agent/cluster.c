/* cluster.c: see cluster.h.
 *
 * Corosync's libraries return cs_error_t; cs_errno() is the one place that
 * turns it into -errno.  CS_ERR_TRY_AGAIN (and QUEUE_FULL) means "corosync
 * is busy, ask again": synchronous calls (connecting, cmap lookups) go
 * through CS_REPEAT, a short bounded backoff (pacemaker's cs_repeat, with
 * milliseconds instead of seconds: this thread also serves I/O); multicasts
 * never block the loop, they queue and a timer resends them in order.
 *
 * Teardown never happens inside a corosync dispatch (a callback may call
 * cluster_send, and a failing send must not finalize the handle that is
 * dispatching it): failures found there are acted on from a 0 ms timer. */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <time.h>

#include <corosync/cmap.h>
#include <corosync/corotypes.h>
#include <corosync/cpg.h>
#include <corosync/quorum.h>

#include "clcrypto.h"
#include "cluster.h"
#include "evloop.h"
#include "log.h"
#include "util.h"

#define REPEAT_MAX 8			/* calls; sleeps 10+20+40+80+160+200+200 ms */
#define REPEAT_FIRST_MS 10
#define REPEAT_CAP_MS 200
#define SENDQ_MAX 4096			/* queued multicasts */
#define FLUSH_FIRST_MS 1
#define FLUSH_CAP_MS 100
#define ADDR_BUF 256			/* ring0_addr, as clmsg's CLMSG_ADDR_MAX */

struct pending {
	struct pending *next;
	size_t len;
	uint8_t data[];
};

struct cluster {
	struct evloop *loop;
	const struct cluster_ops *ops;
	void *arg;

	bool up;			/* handles open, fds on the loop */
	bool broken;			/* failed inside a dispatch: teardown pending */
	cpg_handle_t cpg;
	quorum_handle_t quorum;
	cmap_handle_t cmap;
	int cpg_fd, quorum_fd;
	uint32_t nodeid;
	bool quorate;

	struct pending *q_head, **q_tail;
	size_t q_len;
	uint64_t flush_ms;		/* current resend backoff */

	void *flush_timer, *fail_timer, *retry_timer;
	unsigned retries;		/* reconnect attempts since the loss */
};

/* ---- cs_error_t -------------------------------------------------------- */

static int cs_errno(cs_error_t rc)
{
	switch (rc) {
	case CS_OK: return 0;
	case CS_ERR_TRY_AGAIN: case CS_ERR_QUEUE_FULL: case CS_ERR_BUSY: return -EAGAIN;
	case CS_ERR_NO_MEMORY: return -ENOMEM;
	case CS_ERR_NO_RESOURCES: return -ENOBUFS;
	case CS_ERR_ACCESS: case CS_ERR_SECURITY: return -EACCES;
	case CS_ERR_NOT_EXIST: case CS_ERR_NAME_NOT_FOUND: return -ENOENT;
	case CS_ERR_EXIST: return -EEXIST;
	case CS_ERR_INVALID_PARAM: case CS_ERR_BAD_FLAGS: return -EINVAL;
	case CS_ERR_NAME_TOO_LONG: return -ENAMETOOLONG;
	case CS_ERR_TOO_BIG: return -EMSGSIZE;
	case CS_ERR_TIMEOUT: return -ETIMEDOUT;
	case CS_ERR_NO_SPACE: return -ENOSPC;
	case CS_ERR_NOT_SUPPORTED: return -EOPNOTSUPP;
	case CS_ERR_INTERRUPT: return -EINTR;
	case CS_ERR_MESSAGE_ERROR: return -EPROTO;
	case CS_ERR_LIBRARY: case CS_ERR_BAD_HANDLE: case CS_ERR_INIT:
		return -ENOTCONN;	/* corosync is not there (any more) */
	default: return -EIO;
	}
}

static bool cs_again(cs_error_t rc)
{
	return rc == CS_ERR_TRY_AGAIN || rc == CS_ERR_QUEUE_FULL;
}

/* Sleeps before attempt *n + 1; false once the attempts are used up. */
static bool cs_backoff(unsigned *n)
{
	uint64_t ms = MIN((uint64_t)REPEAT_FIRST_MS << *n, (uint64_t)REPEAT_CAP_MS);
	struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)(ms * 1000000) };

	if (++*n >= REPEAT_MAX)
		return false;
	log_debug("corosync busy, retrying in %llu ms", (unsigned long long)ms);
	nanosleep(&ts, NULL);
	return true;
}

#define CS_REPEAT(rc, call) do { \
	unsigned attempt_ = 0; \
	while (cs_again((rc) = (call)) && cs_backoff(&attempt_)) \
		; \
} while (0)

/* ---- callbacks from corosync -------------------------------------------- */

static struct cluster *cpg_owner(cpg_handle_t h)
{
	void *c = NULL;

	cpg_context_get(h, &c);
	return c;
}

static void on_deliver(cpg_handle_t h, const struct cpg_name *group, uint32_t nodeid,
		       uint32_t pid, void *msg, size_t len)
{
	struct cluster *c = cpg_owner(h);

	if (c && c->ops->deliver)
		c->ops->deliver(c->arg, nodeid, msg, len);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static size_t nodeids(const struct cpg_address *a, size_t n, uint32_t *out)
{
	n = MIN(n, (size_t)CPG_MEMBERS_MAX);
	for (size_t i = 0; i < n; i++)
		out[i] = a[i].nodeid;
	qsort(out, n, sizeof(*out), cmp_u32);
	return n;
}

static void set_quorate(struct cluster *c, bool quorate);

static void refresh_quorum(struct cluster *c)
{
	uint32_t quorate = 0;

	if (c->quorum && quorum_getquorate(c->quorum, (int *)&quorate) == CS_OK)
		set_quorate(c, quorate != 0);
}

static void on_confchg(cpg_handle_t h, const struct cpg_name *group,
		       const struct cpg_address *members, size_t n,
		       const struct cpg_address *left, size_t nl,
		       const struct cpg_address *joined, size_t nj)
{
	struct cluster *c = cpg_owner(h);
	uint32_t m[CPG_MEMBERS_MAX], l[CPG_MEMBERS_MAX], j[CPG_MEMBERS_MAX];

	if (!c)
		return;
	n = nodeids(members, n, m);
	nl = nodeids(left, nl, l);
	nj = nodeids(joined, nj, j);
	log_info("group %s: %zu members, %zu joined, %zu left", CLUSTER_GROUP, n, nj, nl);
	if (c->ops->membership)
		c->ops->membership(c->arg, m, n, j, nj, l, nl);
	/* The quorum notification of this change may come later: ask now, so
	 * that nobody acts on the quorum of the configuration before. */
	refresh_quorum(c);
}

static void set_quorate(struct cluster *c, bool quorate)
{
	if (c->quorate == quorate)
		return;
	c->quorate = quorate;
	log_notice("this partition is %s", quorate ? "quorate" : "not quorate");
	if (c->ops->quorum)
		c->ops->quorum(c->arg, quorate);
}

static void on_quorum(quorum_handle_t h, uint32_t quorate, uint64_t ring_seq,
		      uint32_t n, uint32_t *view)
{
	const void *ctx = NULL;

	quorum_context_get(h, &ctx);
	if (ctx)
		set_quorate((struct cluster *)ctx, quorate != 0);
}

/* ---- connecting and disconnecting ---------------------------------------- */

static void on_cpg_fd(void *arg, int fd, unsigned revents);
static void on_quorum_fd(void *arg, int fd, unsigned revents);

static int open_cpg(struct cluster *c)
{
	cpg_model_v1_data_t model = {
		.model = CPG_MODEL_V1,
		.cpg_deliver_fn = on_deliver,
		.cpg_confchg_fn = on_confchg,
	};
	struct cpg_name group = { .length = sizeof(CLUSTER_GROUP) - 1 };
	cs_error_t rc;

	memcpy(group.value, CLUSTER_GROUP, sizeof(CLUSTER_GROUP) - 1);
	CS_REPEAT(rc, cpg_model_initialize(&c->cpg, CPG_MODEL_V1, (cpg_model_data_t *)&model, c));
	if (rc != CS_OK)
		return cs_errno(rc);
	CS_REPEAT(rc, cpg_local_get(c->cpg, &c->nodeid));
	if (rc == CS_OK)
		rc = cpg_fd_get(c->cpg, &c->cpg_fd);
	if (rc == CS_OK)
		CS_REPEAT(rc, cpg_join(c->cpg, &group));
	return cs_errno(rc);
}

static int open_quorum(struct cluster *c)
{
	quorum_callbacks_t cb = { .quorum_notify_fn = on_quorum };
	uint32_t type = 0;
	int quorate = 0;
	cs_error_t rc;

	CS_REPEAT(rc, quorum_initialize(&c->quorum, &cb, &type));
	if (rc != CS_OK)
		return cs_errno(rc);
	if (type == QUORUM_FREE)
		log_warn("corosync has no quorum provider: every partition counts as quorate");
	rc = quorum_context_set(c->quorum, c);
	if (rc == CS_OK)
		CS_REPEAT(rc, quorum_getquorate(c->quorum, &quorate));
	if (rc == CS_OK)
		CS_REPEAT(rc, quorum_trackstart(c->quorum, CS_TRACK_CHANGES));
	if (rc == CS_OK)
		rc = quorum_fd_get(c->quorum, &c->quorum_fd);
	if (rc == CS_OK)
		c->quorate = quorate != 0;
	return cs_errno(rc);
}

static void drop_queue(struct cluster *c)
{
	while (c->q_head) {
		struct pending *p = c->q_head;
		c->q_head = p->next;
		free(p);
	}
	c->q_tail = &c->q_head;
	c->q_len = 0;
}

static void del_timer(struct cluster *c, void **t)
{
	if (*t) {
		evloop_timer_del(c->loop, *t);
		*t = NULL;
	}
}

/* Undoes connect(), whatever part of it was done. */
static void disconnect(struct cluster *c)
{
	if (c->cpg_fd >= 0)
		evloop_fd_del(c->loop, c->cpg_fd);
	if (c->quorum_fd >= 0)
		evloop_fd_del(c->loop, c->quorum_fd);
	c->cpg_fd = c->quorum_fd = -1;
	if (c->cpg)
		cpg_finalize(c->cpg);
	if (c->quorum)
		quorum_finalize(c->quorum);
	if (c->cmap)
		cmap_finalize(c->cmap);
	c->cpg = c->quorum = c->cmap = 0;
	del_timer(c, &c->flush_timer);
	del_timer(c, &c->fail_timer);
	drop_queue(c);
	c->up = c->broken = false;
}

/* totem.<name> from cmap, or NULL (not set, or cmap unanswering). */
static char *totem_string(struct cluster *c, const char *name)
{
	char key[64], *s = NULL;
	cs_error_t rc;

	snprintf(key, sizeof(key), "totem.%s", name);
	CS_REPEAT(rc, cmap_get_string(c->cmap, key, &s));
	return rc == CS_OK ? s : NULL;
}

/* A warning when corosync's packets are not encrypted (clcrypto.c). */
static void check_crypto(struct cluster *c)
{
	char *cipher = totem_string(c, "crypto_cipher");
	char *hash = totem_string(c, "crypto_hash");
	char *secauth = totem_string(c, "secauth");
	const char *why = clcrypto_problem(cipher, hash, secauth);

	if (why)
		log_warn("corosync traffic is %s: anyone on the cluster network can join "
			 "the membership and forge replagent's messages; set crypto_cipher: "
			 "aes256 and crypto_hash: sha256 in totem, with an authkey "
			 "(corosync-keygen)", why);
	free(cipher);
	free(hash);
	free(secauth);
}

static int connect_corosync(struct cluster *c)
{
	cs_error_t rc;
	int r = open_cpg(c);

	if (!r)
		r = open_quorum(c);
	if (!r) {
		CS_REPEAT(rc, cmap_initialize(&c->cmap));
		r = cs_errno(rc);
	}
	if (!r)
		r = evloop_fd_add(c->loop, c->cpg_fd, POLLIN, on_cpg_fd, c);
	if (!r) {
		r = evloop_fd_add(c->loop, c->quorum_fd, POLLIN, on_quorum_fd, c);
		if (r < 0)
			evloop_fd_del(c->loop, c->cpg_fd);
	}
	if (r < 0) {
		c->cpg_fd = c->quorum_fd = -1;	/* not on the loop */
		disconnect(c);
		return r;
	}
	c->up = true;
	check_crypto(c);
	log_info("joined corosync group %s as nodeid %u (%s)", CLUSTER_GROUP, c->nodeid,
		 c->quorate ? "quorate" : "not quorate");
	return 0;
}

static void on_retry(void *arg);

static void schedule_retry(struct cluster *c)
{
	if (evloop_timer_add(c->loop, CLUSTER_RETRY_MS, on_retry, c, &c->retry_timer) < 0) {
		c->retry_timer = NULL;
		log_err("cannot schedule a reconnection to corosync: out of memory");
	}
}

static void on_retry(void *arg)
{
	struct cluster *c = arg;
	int r;

	c->retry_timer = NULL;
	r = connect_corosync(c);
	if (r < 0) {
		if (++c->retries == 1 || c->retries % 60 == 0)
			log_warn("still cannot reach corosync (%s); retrying every %d ms",
				 strerror(-r), CLUSTER_RETRY_MS);
		schedule_retry(c);
		return;
	}
	log_notice("connected to corosync again after %u attempts", c->retries + 1);
	c->retries = 0;
	if (c->ops->connection)
		c->ops->connection(c->arg, true);
	if (c->ops->quorum)
		c->ops->quorum(c->arg, c->quorate);
}

/* Corosync went away (or a call failed for good): report and retry. */
static void lost(struct cluster *c, const char *what, int err)
{
	if (!c->up)
		return;
	log_err("lost corosync (%s: %s); reconnecting every %d ms", what, strerror(-err),
		CLUSTER_RETRY_MS);
	disconnect(c);
	set_quorate(c, false);
	if (c->ops->connection)
		c->ops->connection(c->arg, false);
	schedule_retry(c);
}

static void on_fail_timer(void *arg)
{
	struct cluster *c = arg;

	c->fail_timer = NULL;
	lost(c, "send", -ENOTCONN);
}

/* For failures inside a dispatch: teardown from the loop, just after. */
static void fail_later(struct cluster *c)
{
	if (c->broken)
		return;
	c->broken = true;
	if (evloop_timer_add(c->loop, 0, on_fail_timer, c, &c->fail_timer) < 0)
		c->fail_timer = NULL;	/* the next dispatch error will do it */
}

static void on_cpg_fd(void *arg, int fd, unsigned revents)
{
	struct cluster *c = arg;
	cs_error_t rc = cpg_dispatch(c->cpg, CS_DISPATCH_ALL);

	if (rc != CS_OK && !cs_again(rc))
		lost(c, "cpg_dispatch", cs_errno(rc));
	else if (revents & (POLLHUP | POLLERR))
		lost(c, "cpg connection", -ENOTCONN);
	else if (c->broken && !c->fail_timer)
		lost(c, "send", -ENOTCONN);
}

static void on_quorum_fd(void *arg, int fd, unsigned revents)
{
	struct cluster *c = arg;
	cs_error_t rc = quorum_dispatch(c->quorum, CS_DISPATCH_ALL);

	if (rc != CS_OK && !cs_again(rc))
		lost(c, "quorum_dispatch", cs_errno(rc));
	else if (revents & (POLLHUP | POLLERR))
		lost(c, "quorum connection", -ENOTCONN);
}

int cluster_open(struct evloop *loop, const struct cluster_ops *ops, void *arg,
		 struct cluster **out)
{
	struct cluster *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	c->loop = loop;
	c->ops = ops;
	c->arg = arg;
	c->cpg_fd = c->quorum_fd = -1;
	c->q_tail = &c->q_head;
	r = connect_corosync(c);
	if (r < 0) {
		free(c);
		return r;
	}
	/* The callbacks may use the handle: it is the caller's first. */
	*out = c;
	if (ops->connection)
		ops->connection(arg, true);
	if (ops->quorum)
		ops->quorum(arg, c->quorate);
	return 0;
}

void cluster_close(struct cluster *c)
{
	if (!c)
		return;
	disconnect(c);
	del_timer(c, &c->retry_timer);
	free(c);
}

/* ---- sending ------------------------------------------------------------ */

static cs_error_t mcast(struct cluster *c, const void *msg, size_t len)
{
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = len };

	return cpg_mcast_joined(c->cpg, CPG_TYPE_AGREED, &iov, 1);
}

static void on_flush(void *arg);

static void arm_flush(struct cluster *c)
{
	if (c->flush_timer)
		return;
	if (evloop_timer_add(c->loop, c->flush_ms, on_flush, c, &c->flush_timer) < 0)
		c->flush_timer = NULL;	/* retried at the next send */
	c->flush_ms = MIN(c->flush_ms * 2, (uint64_t)FLUSH_CAP_MS);
}

static void on_flush(void *arg)
{
	struct cluster *c = arg;
	cs_error_t rc = CS_OK;

	c->flush_timer = NULL;
	while (c->q_head && (rc = mcast(c, c->q_head->data, c->q_head->len)) == CS_OK) {
		struct pending *p = c->q_head;
		c->q_head = p->next;
		if (!c->q_head)
			c->q_tail = &c->q_head;
		c->q_len--;
		free(p);
		c->flush_ms = FLUSH_FIRST_MS;	/* progress: back off from scratch */
	}
	if (!c->q_head)
		log_debug("corosync takes multicasts again");
	else if (cs_again(rc))
		arm_flush(c);
	else
		lost(c, "cpg_mcast_joined", cs_errno(rc));
}

static int enqueue(struct cluster *c, const void *msg, size_t len)
{
	struct pending *p;

	if (c->q_len >= SENDQ_MAX)
		return -ENOBUFS;
	p = malloc(sizeof(*p) + len);
	if (!p)
		return -ENOMEM;
	p->next = NULL;
	p->len = len;
	memcpy(p->data, msg, len);
	*c->q_tail = p;
	c->q_tail = &p->next;
	if (!c->q_len++) {
		log_debug("corosync pushes back: queueing multicasts");
		c->flush_ms = FLUSH_FIRST_MS;
	}
	arm_flush(c);
	return 0;
}

int cluster_send(struct cluster *c, const void *msg, size_t len)
{
	cs_error_t rc;

	if (!c->up || c->broken)
		return -ENOTCONN;
	if (c->q_head)		/* keep the order: behind what is queued */
		return enqueue(c, msg, len);
	rc = mcast(c, msg, len);
	if (cs_again(rc))
		return enqueue(c, msg, len);
	if (rc != CS_OK && rc != CS_ERR_TOO_BIG && rc != CS_ERR_INVALID_PARAM)
		fail_later(c);
	return cs_errno(rc);
}

/* ---- state and cmap ------------------------------------------------------ */

bool cluster_connected(const struct cluster *c)
{
	return c->up && !c->broken;
}

uint32_t cluster_local_nodeid(const struct cluster *c)
{
	return c->nodeid;
}

bool cluster_quorate(const struct cluster *c)
{
	return c->up && c->quorate;
}

static int copy_out(const char *s, char *buf, size_t len)
{
	if (strlen(s) >= len)
		return -ENAMETOOLONG;
	strcpy(buf, s);
	return 0;
}

/* nodelist.node.<i>.<field> as a string, 0 or -errno. */
static int node_string(struct cluster *c, unsigned i, const char *field, char *buf, size_t len)
{
	char key[64], *s = NULL;
	cs_error_t rc;
	int r;

	snprintf(key, sizeof(key), "nodelist.node.%u.%s", i, field);
	CS_REPEAT(rc, cmap_get_string(c->cmap, key, &s));
	if (rc != CS_OK)
		return cs_errno(rc);
	r = copy_out(s, buf, len);
	free(s);
	return r;
}

/* Index of nodeid in the nodelist, or -ENOENT / -errno. */
static int node_index(struct cluster *c, uint32_t nodeid)
{
	for (unsigned i = 0; i < 1024; i++) {
		char key[64];
		uint32_t id = 0;
		cs_error_t rc;

		snprintf(key, sizeof(key), "nodelist.node.%u.nodeid", i);
		CS_REPEAT(rc, cmap_get_uint32(c->cmap, key, &id));
		if (rc != CS_OK)
			return rc == CS_ERR_NOT_EXIST ? -ENOENT : cs_errno(rc);
		if (id == nodeid)
			return (int)i;
	}
	return -ENOENT;
}

static bool is_numeric_address(const char *s)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_flags = AI_NUMERICHOST };
	struct addrinfo *res = NULL;
	int r = getaddrinfo(s, NULL, &hints, &res);

	if (res)
		freeaddrinfo(res);
	return r == 0;
}

static int uname_nodename(char *buf, size_t len)
{
	struct utsname u;

	if (uname(&u) < 0)
		return -errno;
	return copy_out(u.nodename, buf, len);
}

int cluster_node_name(struct cluster *c, uint32_t nodeid, char *buf, size_t len)
{
	char addr[ADDR_BUF];
	int i, r;

	if (!c->up)
		return -ENOTCONN;
	i = node_index(c, nodeid);
	if (i >= 0) {
		r = node_string(c, (unsigned)i, "name", buf, len);
		if (r != -ENOENT)
			return r;
		r = node_string(c, (unsigned)i, "ring0_addr", addr, sizeof(addr));
		if (!r && !is_numeric_address(addr))
			return copy_out(addr, buf, len);
	} else if (i != -ENOENT) {
		return i;
	}
	return nodeid == c->nodeid ? uname_nodename(buf, len) : -ENOENT;
}

int cluster_local_address(struct cluster *c, char *buf, size_t len)
{
	int i;

	if (!c->up)
		return -ENOTCONN;
	i = node_index(c, c->nodeid);
	if (i < 0)
		return i;
	return node_string(c, (unsigned)i, "ring0_addr", buf, len);
}
