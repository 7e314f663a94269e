/* clview.h: the cluster view as the control socket shows it.
 *
 * This node's name and corosync nodeid, whether corosync is connected,
 * whether the partition is quorate and the state exchange done, and every
 * node that announced itself in the group, with its replication address
 * and whether it is a member now.  Plain data that clusterd fills in
 * (clusterd_view) and its JSON form: the "cluster" object of status answers
 * and of cluster events.  No I/O and no corosync here; the static mode has
 * a view with cluster false and nothing else. */
#ifndef REPL_AGENT_CLVIEW_H
#define REPL_AGENT_CLVIEW_H

#include <stdbool.h>
#include <stdint.h>

#define CLVIEW_NODES_MAX 32
#define CLVIEW_NAME_MAX 64	/* bytes of a node name, NUL not counted */
#define CLVIEW_ADDR_MAX 255	/* bytes of a replication address */

struct json_writer;

struct clview_node {
	char name[CLVIEW_NAME_MAX + 1];	/* "": a member not announced yet */
	uint32_t nodeid;
	char addr[CLVIEW_ADDR_MAX + 1];
	bool member;			/* in the group now */
};

struct clview_other {			/* a member of another protocol version */
	uint32_t nodeid;
	uint16_t protocol;
};

struct clview {
	bool cluster;			/* false: static mode; the rest unset */
	char node[CLVIEW_NAME_MAX + 1];
	uint32_t nodeid;
	bool connected;			/* to corosync */
	bool quorate;
	bool synced;			/* every member sent its state */
	uint16_t protocol;		/* this node's cluster protocol version */
	unsigned n_others;		/* > 0: the cluster is mixed */
	struct clview_other others[CLVIEW_NODES_MAX];
	unsigned n_nodes;
	struct clview_node nodes[CLVIEW_NODES_MAX];	/* by nodeid */
};

/* Writes v as a JSON object:
 *   {"mode":"static"}, or
 *   {"mode":"corosync","node":"n1","nodeid":1,"connected":true,
 *    "quorate":true,"synced":true,"nodes":[{"name":"n1","nodeid":1,
 *    "address":"10.0.0.1","member":true},...],"protocol":1,"mixed":false,
 *    "other_protocols":[]}
 * (a node's name is null until it announced itself; other_protocols lists
 * the members whose messages are of another protocol version, as
 * {"nodeid":3,"protocol":2}, and mixed is true while there is one). */
void clview_put(struct json_writer *w, const struct clview *v);

#endif
