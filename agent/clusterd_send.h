/* clusterd_send.h: what cluster mode tells the group (clusterd_send.c). */
#ifndef REPL_AGENT_CLUSTERD_SEND_H
#define REPL_AGENT_CLUSTERD_SEND_H

#include <stdbool.h>
#include <stddef.h>

struct clmsg;
struct clusterd;
struct pending_outdate;
struct repl_volume;

/* Copies src into dst (cap bytes), truncated, NUL-terminated: names are
 * validated to fit before they get here; this only bounds. */
void clusterd__copy_str(char *dst, size_t cap, const char *src);
/* Multicasts m to the group: 0, or -errno (logged). */
int clusterd__send_msg(struct clusterd *cd, const struct clmsg *m);
/* This node's role of vol (Primary, handed over, Secondary). */
void clusterd__send_role(struct clusterd *cd, struct repl_volume *vol);
/* One of this node's outdate records: done when it comes back. */
void clusterd__send_outdate(struct clusterd *cd, const struct pending_outdate *po);
/* That node's replica of vol is outdated, or (false) in sync again. */
void clusterd__send_record(struct clusterd *cd, const char *vol, const char *node,
			   bool outdated);
/* What this node knows of vol's other replicas. */
void clusterd__send_records(struct clusterd *cd, struct repl_volume *vol);
/* Everything this node knows, ended by its SYNC_DONE. */
void clusterd__send_state(struct clusterd *cd);

/* The group's records this node keeps, each said again (but those
 * withheld). */
void clusterd__send_kept_records(struct clusterd *cd);

/* Does this node say nothing now of volume's replicas: true for a Primary
 * back from a minority until it knows whether it was overtaken. */
bool clusterd__withheld(const struct clusterd *cd, const char *volume);

#endif
