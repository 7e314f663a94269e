/* cfgreload.h: what a reload of the configuration file (SIGHUP) does.
 *
 * A pure decision from the running configuration and the one just read:
 * which settings change at run time (log-level, and the replication tuning
 * that cfg_repl_tuning() fills: resync-rate-max, outdate-timeout,
 * after-sb-*), which [volume] sections are new here and can be served, and
 * what else changed and needs a restart (named by key, or "[volume NAME]
 * KEY").  Plus the two moves that put what is applied into the running
 * configuration, and the one-line summary the daemon logs.  No logging, no
 * engine, no files: replagentd does those. */
#ifndef REPL_AGENT_CFGRELOAD_H
#define REPL_AGENT_CFGRELOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "cfg.h"

#define CFGRELOAD_ITEMS_MAX 32
#define CFGRELOAD_ITEM_LEN (CFG_NAME_MAX + 48)

struct cfgreload {
	bool log_level;		/* log-level changed */
	bool tuning;		/* some replication tuning changed */
	unsigned n_applied;
	const char *applied[8];	/* the keys that apply now (static strings) */
	unsigned n_added;	/* new volumes this node serves */
	unsigned added[CFGRELOAD_ITEMS_MAX];	/* their index in the new volumes */
	unsigned n_restart;	/* may exceed CFGRELOAD_ITEMS_MAX (only that many kept) */
	char restart[CFGRELOAD_ITEMS_MAX][CFGRELOAD_ITEM_LEN];
};

/* Compares running (what the daemon runs with) with next (the file as it
 * is now).  A volume is running if running serves it here
 * (cfg_volume_here); it is new if next serves it here and it is not
 * running (in static mode only: in cluster mode a new section is named
 * for a restart, as clusterd sets the quorum of the volumes it knows at
 * start).  The node name is compared as it is in both: the caller puts
 * into next what overrides the file (-n NODE, corosync's name). */
void cfgreload_plan(const struct cfg *running, const struct cfg *next, struct cfgreload *out);

/* Copies log-level and the replication tuning of from into to. */
void cfgreload_take_settings(struct cfg *to, const struct cfg *from);
/* Moves from->volumes[i] to the end of to->volumes (its strings change
 * hands; from keeps the entry without them).  0 or -ENOMEM. */
int cfgreload_take_volume(struct cfg *to, struct cfg *from, unsigned i);

/* The summary line for the log, e.g. "applied log-level, resync-rate-max;
 * added volume vol1; restart needed for nbd-socket, [volume vol0] backing",
 * or "nothing changed".  failed[k] (may be NULL) is true if the volume of
 * added[k] could not be served. */
void cfgreload_summary(const struct cfgreload *r, const struct cfg *next, const bool *failed,
		       char *buf, size_t len);

#endif
