/* clusterd_vol.h: the group's volume definitions applied to this node
 * (clusterd_vol.c). */
#ifndef REPL_AGENT_CLUSTERD_VOL_H
#define REPL_AGENT_CLUSTERD_VOL_H

#include <stdbool.h>

struct clusterd;
struct known_node;
struct voldef;

/* node is one of d's replicas. */
bool clusterd__def_has_node(const struct voldef *d, const char *node);
/* Makes this node's replica what d says: attached (logged, and recorded
 * in the clusterd's failed list, if it cannot be), grown, or removed with
 * its files set aside.  The other volumes go on either way. */
void clusterd__apply_def(struct clusterd *cd, const struct voldef *d);
/* Tells the replicas this node shares with kn its address now. */
void clusterd__apply_addresses(struct clusterd *cd, const struct known_node *kn);

#endif
