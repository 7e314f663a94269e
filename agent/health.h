/* health.h: how healthy a volume is, as the exit code of "replagent status".
 *
 * A pure function from the states that the control socket reports (role,
 * disk and link names as strings, DRBD's vocabulary) to the codes that
 * monitoring systems expect of a check: 0 healthy, 1 degraded, 2 critical,
 * 3 unknown.  It does no I/O and knows nothing of JSON or sockets; the
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
};

struct health_volume {
	const char *name;
	const char *role;	/* "Primary" / "Secondary" */
	const char *disk;	/* this node's disk state */
	bool io_frozen;
	unsigned n_peers;
	const struct health_peer *peers;
};

/* The volume's health, and in why (if not NULL) the worst problem found,
 * e.g. "vol0: peer n2 StandAlone (split brain or refused peer)";
 * "" when healthy.  NULL strings count as unknown states. */
enum health health_volume(const struct health_volume *v, char *why, size_t whylen);

/* The worse of two: OK < DEGRADED < UNKNOWN < CRITICAL (an unknown state
 * may hide a problem; a known critical one wins). */
enum health health_worse(enum health a, enum health b);

/* "OK", "DEGRADED", "CRITICAL", "UNKNOWN". */
const char *health_name(enum health h);

#endif
