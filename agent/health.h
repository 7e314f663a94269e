/* health.h: how healthy a volume, and the cluster, are, as the exit code of
 * "replagent status".
 *
 * Pure functions from the states that the control socket reports (role,
 * disk and link names as strings, DRBD's vocabulary; the cluster view's
 * quorum and members) to the codes that monitoring systems expect of a
 * check: 0 healthy, 1 degraded, 2 critical, 3 unknown.  It does no I/O and knows nothing of JSON or sockets; the
 * command line fills in the structures from the daemon's answer. */
#ifndef REPL_AGENT_HEALTH_H
#define REPL_AGENT_HEALTH_H

#include <stdbool.h>
#include <stddef.h>

enum health {
	HEALTH_OK = 0,
	HEALTH_DEGRADED = 1,	/* redundancy reduced, data still safe */
	HEALTH_CRITICAL = 2,	/* split brain, failed disk, Primary not UpToDate */
	HEALTH_UNKNOWN = 3,	/* missing or unrecognised states */
};

struct health_peer {
	const char *node;
	const char *link;	/* "Connected", "SyncSource", "StandAlone"... */
	const char *peer_disk;	/* "UpToDate", "Outdated", "DUnknown"... */
	const char *resync_error;	/* NULL, "" or why its resync waits */
};

struct health_volume {
	const char *name;
	const char *role;	/* "Primary" / "Secondary" */
	const char *disk;	/* this node's disk state */
	bool io_frozen;
	const char *grow_error;	/* why growing to the volume's new size failed
				 * (retried), or NULL */
	const char *failed;	/* why the volume could not be opened (it is
				 * not served: critical), or NULL */
	const char *meta_error;	/* why writes fail (the metadata cannot be
				 * written), or NULL / "" */
	unsigned n_peers;
	const struct health_peer *peers;
};

/* The volume's health, and in why (if not NULL) the worst problem found,
 * e.g. "vol0: peer n2 StandAlone (split brain or refused peer)";
 * "" when healthy.  NULL strings count as unknown states. */
enum health health_volume(const struct health_volume *v, char *why, size_t whylen);

struct health_node {
	const char *name;	/* NULL: a member that has not announced itself */
	bool member;
};

/* The status answer's "cluster" object.  A tri-state is 1 yes, 0 no, -1
 * not reported. */
struct health_cluster {
	const char *mode;	/* "static", "corosync"; NULL: no cluster object
				 * (an older daemon): nothing to judge */
	int connected, quorate, synced;
	int mixed;		/* a member speaks another protocol version;
				 * -1 (an older daemon) is not judged */
	unsigned n_nodes;
	const struct health_node *nodes;
};

/* The cluster's part, from these rules:
 *   critical  corosync not connected; the partition not quorate (this
 *             node may promote nothing, and its Primaries freeze)
 *   degraded  the state exchange is running (promotions wait for it); a
 *             node that announced itself is no longer a member (gone: the
 *             cluster has one failure less to spare); the cluster is mixed
 *             (a member speaks another protocol version: promotions need
 *             --force, a lost peer's outdate waits)
 *   unknown   a mode it does not know; cluster mode without quorate,
 *             connected or synced
 * and static mode (or no cluster object) is OK.  why as health_volume's,
 * e.g. "cluster: node n3 gone". */
enum health health_cluster(const struct health_cluster *c, char *why, size_t whylen);

/* The worse of two: OK < DEGRADED < UNKNOWN < CRITICAL (an unknown state
 * may hide a problem; a known critical one wins). */
enum health health_worse(enum health a, enum health b);

/* "OK", "DEGRADED", "CRITICAL", "UNKNOWN". */
const char *health_name(enum health h);

#endif
