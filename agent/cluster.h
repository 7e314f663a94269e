/* cluster.h: replagentd's link to corosync: the CPG group "replagent"
 * (membership and messages in agreed order), votequorum (is this partition
 * quorate) and cmap (node names, this node's ring0 address).
 *
 * Its fds run on the daemon's evloop; everything it reports arrives through
 * struct cluster_ops, on the loop thread.  If corosync goes away it says so
 * (connection false, quorum false) and reconnects every second, then says
 * connection true again: the daemon then rejoins with a fresh membership
 * and should resend its state.  cs_error_t never leaves this file: errors
 * are -errno.
 *
 * This is not the message format (clmsg.h) nor the cluster state built from
 * the messages (the daemon keeps that). */
#ifndef REPL_AGENT_CLUSTER_H
#define REPL_AGENT_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct evloop;
struct cluster;

#define CLUSTER_GROUP "replagent"
#define CLUSTER_RETRY_MS 1000	/* reconnect period after corosync went away */

struct cluster_ops {
	/* A group message, in the same (agreed) order on every member, ours
	 * included.  msg is valid during the call only. */
	void (*deliver)(void *arg, uint32_t nodeid, const void *msg, size_t len);
	/* The group changed: its members after the change (sorted), and who
	 * joined and left.  One entry per process, so a nodeid appears twice
	 * only if two daemons of one node are in the group. */
	void (*membership)(void *arg, const uint32_t *members, size_t n,
			   const uint32_t *joined, size_t nj, const uint32_t *left, size_t nl);
	/* Quorum changed (false as well while corosync is away). */
	void (*quorum)(void *arg, bool quorate);
	/* Connected to corosync (again), or lost it. */
	void (*connection)(void *arg, bool up);
};

/* Connects to corosync, joins the group, reads quorum, and adds its fds to
 * loop.  ops->connection(true) and ops->quorum() are called before it
 * returns.  A first connection that fails is an error (the caller decides
 * to exit or to try later); later losses are retried.  0, or -errno
 * (-ENOTCONN, -EACCES, ... from corosync; -ENOMEM). */
int cluster_open(struct evloop *loop, const struct cluster_ops *ops, void *arg,
		 struct cluster **out);
/* Leaves the group and disconnects; no callbacks.  NULL ok.  Not from
 * inside an ops callback. */
void cluster_close(struct cluster *c);

/* Multicasts len bytes to the group (CPG_TYPE_AGREED).  When corosync
 * pushes back (TRY_AGAIN), the message is queued and resent in order from
 * a timer: 0 means sent or queued.  Queued messages are dropped if the
 * connection is lost.  -ENOTCONN (corosync away), -ENOBUFS (queue full),
 * -EMSGSIZE, other -errno (the connection is then dropped and retried). */
int cluster_send(struct cluster *c, const void *msg, size_t len);

bool cluster_connected(const struct cluster *c);
/* This node's corosync nodeid (stays valid while disconnected). */
uint32_t cluster_local_nodeid(const struct cluster *c);
bool cluster_quorate(const struct cluster *c);

/* A node's name as Pacemaker names it: nodelist.node.N.name, else its
 * ring0_addr unless that is a numeric address; for this node, else
 * uname's nodename.  0, -ENOENT (no name), -ENAMETOOLONG (len too small),
 * -ENOTCONN. */
int cluster_node_name(struct cluster *c, uint32_t nodeid, char *buf, size_t len);
/* This node's nodelist ring0_addr (an address or a host name): the default
 * replication address.  0, -ENOENT, -ENAMETOOLONG, -ENOTCONN. */
int cluster_local_address(struct cluster *c, char *buf, size_t len);

#endif
