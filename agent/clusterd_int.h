/* clusterd_int.h: what the files of cluster mode share (clusterd.c: the
 * group's messages, membership and quorum; clusterd_send.c: what it
 * sends; clusterd_nodes.c: the members it knows; clusterd_vol.c: the
 * volumes it attaches; clusterd_cmd.c: the promotion rules, the volume
 * commands of the control socket, the cluster view), and nobody else.
 * Each has its own header for its functions.  Loop thread only. */
#ifndef REPL_AGENT_CLUSTERD_INT_H
#define REPL_AGENT_CLUSTERD_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clmsg.h"
#include "clusterd.h"
#include "outdates.h"

#define MAX_NODES 32
#define BASE_PORT 7789

struct known_node {
	uint32_t nodeid;
	char node[CLMSG_NAME_MAX];
	char addr[CLMSG_ADDR_MAX];
};

struct other_version {		/* a member whose messages are of another
				 * protocol version (logged once) */
	uint32_t nodeid;
	uint16_t version;
};

struct primary_rec {		/* who said it is Primary of a volume */
	char volume[CLMSG_NAME_MAX];
	char node[CLMSG_NAME_MAX];
	uint32_t nodeid;
};

struct clusterd {
	struct evloop *loop;
	struct repl_engine *eng;
	struct cfg *cfg;
	const uint8_t *key;
	size_t key_len;
	struct cluster *cl;
	struct voldb *db;
	struct volfail *failed;		/* replicas that could not be opened */
	uint32_t nodeid;
	char addr[CLMSG_ADDR_MAX];
	bool ready;			/* connected, node name known */
	bool quorate;			/* corosync's word */
	bool synced;			/* every member sent its state since the
					 * last membership change */
	bool effective;			/* what the volumes were told */
	bool lost_quorum;		/* since the last check for a rival Primary */
	bool heard_about_us;		/* a record that a volume we are Primary
					 * of is Outdated here, since that check */
	uint32_t sync_wait[MAX_NODES];	/* members whose SYNC_DONE is due */
	size_t n_sync_wait;
	uint32_t members[MAX_NODES];
	size_t n_members;
	struct known_node nodes[MAX_NODES];
	size_t n_nodes;
	struct other_version others[MAX_NODES];	/* members now: the cluster is
						 * mixed while there is one */
	size_t n_others;
	struct primary_rec primaries[256];
	size_t n_primaries;
	struct pending_outdate *pending;	/* in STATE_DIR/outdates too */
	struct pending_outdate *records;	/* the group's Outdated records,
						 * there too (outdates.h) */
	void (*notify)(void *arg);	/* the view may have changed */
	void *notify_arg;
};

/* The promotion rule of a mixed cluster: 0, or -EPERM and why. */
int clusterd__mixed_rule(const struct clusterd *cd, char *why, size_t len);

/* The promotion rule of the group's records: 0, or -EPERM and why when
 * the group recorded this node's replica of volume Outdated. */
int clusterd__record_rule(struct clusterd *cd, const char *volume, char *why, size_t len);

/* The group's records of volume told to this node's replica of it. */
void clusterd__apply_records(struct clusterd *cd, struct repl_volume *vol);

#endif
