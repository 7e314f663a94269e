/* events.h: "events" subscribers of the control socket.
 *
 * A client that sends "events [VOLUME]" is handed over here by control.c
 * and kept: it first gets a snapshot line (the status answer with
 * "kind":"snapshot"), then one JSON line per event: a volume's role, disk,
 * I/O freeze, up/down or a peer's link, role or disk changed, a volume came
 * or went, or (cluster mode) corosync, quorum, the state exchange or a
 * node's membership changed.  docs/control-protocol.md has the format.
 *
 * Changes are found by comparing each volume's state with the last one
 * published (evdiff.c): at once when the engine's hook or clusterd says
 * something changed, and every EVENTS_POLL_MS for what changes without a
 * hook (a peer's disk seen in its state message, a thaw).  Nothing is kept
 * or polled while nobody subscribes.  Bounded: at most
 * EVENTS_SUBSCRIBERS_MAX subscribers (beyond the control socket's own
 * clients, which they do not count against, and without its timeout); a
 * subscriber whose unsent output would pass EVENTS_PENDING_MAX is dropped
 * with a log line.  Writes never block the loop.  This is not the control
 * socket (control.c) nor the diff (evdiff.c). */
#ifndef REPL_AGENT_EVENTS_H
#define REPL_AGENT_EVENTS_H

#include "cfg.h"
#include "evloop.h"
#include "repl.h"

#define EVENTS_SUBSCRIBERS_MAX 16
#define EVENTS_PENDING_MAX (256u << 10)	/* bytes not yet sent, per subscriber */
#define EVENTS_SNDBUF (32u << 10)	/* SO_SNDBUF asked for a subscriber */
#define EVENTS_POLL_MS 500

struct events;
struct clview;

/* eng and cfg must outlive it.  0 or -ENOMEM. */
int events_new(struct evloop *loop, struct repl_engine *eng, const struct cfg *cfg,
	       struct events **out);
/* Closes every subscriber.  NULL ok. */
void events_free(struct events *ev);

/* Where the cluster view comes from (cluster mode; without it the
 * snapshot says mode static and there are no cluster events). */
void events_set_cluster(struct events *ev, void (*view)(void *arg, struct clview *out),
			void *arg);

/* Takes fd (a connected control client) over, whatever happens: on
 * success it is a subscriber; otherwise it gets one error line if it can
 * take it and is closed.  volume NULL: all volumes (cluster events come in
 * either case).  0, -EBUSY (EVENTS_SUBSCRIBERS_MAX reached), -ENOMEM. */
int events_subscribe(struct events *ev, int fd, const char *volume);

/* vol's state may have changed (the engine's changed hook).  NULL ev ok. */
void events_volume_changed(struct events *ev, struct repl_volume *vol);
/* The cluster view may have changed (clusterd's notify; arg: the events). */
void events_cluster_changed(void *arg);

#endif
