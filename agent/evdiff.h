/* evdiff.h: what changed, for "replagent events".
 *
 * Pure functions from an old and a new state (a volume's struct
 * repl_volume_status, or the cluster view) to the list of changes that an
 * event carries, and the JSON of such a list and of an event's time.  The
 * daemon keeps the last state it published and asks what differs whenever
 * something may have changed; nothing here keeps state, does I/O or looks
 * at the clock.  The fields compared are the ones a person or a monitor
 * acts on: role, disk, io_frozen, up, window, size (a grow, in bytes as a
 * decimal string), and each peer's link, role and disk;
 * corosync connection, quorum, state exchange, and each node's membership
 * and address.  Counters (clients, resync progress) are in the state that
 * every event carries, not in its changes. */
#ifndef REPL_AGENT_EVDIFF_H
#define REPL_AGENT_EVDIFF_H

#include <stdbool.h>
#include <stdint.h>

#include "clview.h"
#include "repl.h"

struct json_writer;

/* Changes one event may list; more are counted but not kept. */
#define EVDIFF_MAX 72

struct evdiff_val {
	bool null;		/* no such thing before / after */
	bool b;			/* a flag's value */
	char s[CLVIEW_ADDR_MAX + 1];	/* a state name or an address */
};

struct evdiff_change {
	const char *field;	/* "role", "link", "quorate", "member" ... */
	const char *about;	/* "peer", "node", or NULL for the volume or cluster */
	char who[CLVIEW_NAME_MAX + 1];	/* that peer or node ("" if it has no name) */
	uint32_t nodeid;	/* a node's nodeid (about "node") */
	bool is_bool;
	struct evdiff_val from, to;
};

/* The changes from old to new, either of which may be NULL (a volume that
 * appears: one change "present" false -> true; one that goes: true ->
 * false).  Writes at most max to out; returns how many there are. */
unsigned evdiff_volume(const struct repl_volume_status *old,
		       const struct repl_volume_status *new_st,
		       struct evdiff_change *out, unsigned max);
/* The same for the cluster view; nodes are matched by nodeid. */
unsigned evdiff_cluster(const struct clview *old, const struct clview *new_v,
			struct evdiff_change *out, unsigned max);

/* The "changes" member: key and array of
 *   {"field":"role","from":"Secondary","to":"Primary"}
 *   {"field":"link","peer":"n2","from":"Connected","to":"Disconnected"}
 *   {"field":"member","node":"n3","nodeid":3,"from":true,"to":false} */
void evdiff_put_changes(struct json_writer *w, const struct evdiff_change *c, unsigned n);
/* The "time" (RFC 3339, UTC, milliseconds) and "time_ms" (since the epoch)
 * members for unix_ms. */
void evdiff_put_time(struct json_writer *w, uint64_t unix_ms);

#endif
