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

/* cfg->node is set to corosync's name of this node once it is known. */
int clusterd_open(struct evloop *loop, struct repl_engine *eng, struct cfg *cfg,
		  const uint8_t *key, size_t key_len, struct clusterd **out);
/* Adds volume commands, the quorum rule and the cluster view to the
 * control socket. */
void clusterd_attach_control(struct clusterd *cd, struct control *ctl);
void clusterd_close(struct clusterd *cd);	/* NULL ok */

/* This node, quorum, the state exchange and the known nodes, as now. */
void clusterd_view(const struct clusterd *cd, struct clview *out);
#endif
