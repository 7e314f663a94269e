/* clusterd.h: replagentd's cluster mode.  It joins the corosync group
 * (cluster.c), keeps the volume definitions (voldb.c) in step with the
 * group (clmsg.c), attaches this node's replicas to the engine, tells the
 * engine about quorum and peer addresses, and carries the engine's outdate
 * records through the group.  Static volumes from the configuration file
 * are not its business. */
#ifndef REPL_AGENT_CLUSTERD_H
#define REPL_AGENT_CLUSTERD_H

#include <stddef.h>
#include <stdint.h>

#include "cfg.h"
#include "evloop.h"
#include "repl.h"

struct clusterd;
struct control;
struct clview;
struct volfail;

/* cfg->node is set to corosync's name of this node once it is known.  The
 * engine's hooks are the caller's to install (replagentd dispatches them to
 * clusterd_hook_outdate, clusterd_hook_changed and clusterd_hook_may_promote,
 * and to its events).  A replica that cannot be opened is recorded in
 * failed (with the reason; cleared when it opens later), and the others
 * go on. */
int clusterd_open(struct evloop *loop, struct repl_engine *eng, struct cfg *cfg,
		  const uint8_t *key, size_t key_len, struct volfail *failed,
		  struct clusterd **out);
/* Adds volume commands, the quorum rule and the cluster view to the
 * control socket. */
void clusterd_attach_control(struct clusterd *cd, struct control *ctl);
void clusterd_close(struct clusterd *cd);	/* NULL ok */

/* struct repl_hooks' outdate and changed for cluster mode (arg: the
 * clusterd). */
int clusterd_hook_outdate(void *arg, struct repl_volume *vol, const char *node,
			  uint64_t token);
void clusterd_hook_changed(void *arg, struct repl_volume *vol);
/* struct repl_hooks' may_promote: the cluster's promotion rules. */
int clusterd_hook_may_promote(void *arg, struct repl_volume *vol, bool takeover, char *why,
			      size_t len);

/* This node, quorum, the state exchange and the known nodes, as now. */
void clusterd_view(const struct clusterd *cd, struct clview *out);
/* fn(arg) runs (on the loop) whenever what clusterd_view() shows may have
 * changed: membership, quorum, a node's announcement, the corosync
 * connection, the end of a state exchange.  NULL fn: no more calls. */
void clusterd_set_notify(struct clusterd *cd, void (*fn)(void *arg), void *arg);

#endif
