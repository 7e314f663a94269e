/* evtext.h: the cluster view and the events of the control socket as text
 * for a person, for the command line ("replagent status", "replagent
 * events").  Pure: a parsed JSON object in, lines out; no I/O.  Times are
 * the event's time_ms in local time. */
#ifndef REPL_AGENT_EVTEXT_H
#define REPL_AGENT_EVTEXT_H

#include <stdbool.h>
#include <stddef.h>

struct json_value;

/* "cluster: quorate; nodes n1 (member) n2 (member) n3 (gone)", with "NOT
 * quorate", "exchanging state", "corosync unreachable" as they apply.
 * false (and "") for static mode or no cluster object. */
bool evtext_cluster(const struct json_value *cluster, char *buf, size_t len);

/* One line per change of an event ("kind" volume or cluster), each "TIME
 * WHAT\n", e.g. "2024-05-01 12:00:00.123 vol0 role Secondary -> Primary",
 * "... vol0 peer n2 Connected -> Disconnected", "... cluster quorum lost";
 * a kind it does not know is one line naming it.  Returns the number of
 * lines. */
unsigned evtext_event(const struct json_value *ev, char *buf, size_t len);

/* The first line of the stream ("kind" snapshot): "TIME node n1, 2
 * volume(s)", a line per volume ("vol0 Primary UpToDate; peer n2
 * Connected Secondary UpToDate") and the cluster line if any. */
unsigned evtext_snapshot(const struct json_value *snap, char *buf, size_t len);

#endif
