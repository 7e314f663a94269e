/* clusterd_vol.h: the group's volume definitions applied to this node
 * (clusterd_vol.c). */
#ifndef REPL_AGENT_CLUSTERD_VOL_H
#define REPL_AGENT_CLUSTERD_VOL_H

#include <stdbool.h>
#include <stdint.h>

struct clusterd;
struct known_node;
struct voldef;

/* node is one of d's replicas. */
bool clusterd__def_has_node(const struct voldef *d, const char *node);
/* Makes this node's replica what d says: attached (logged, and recorded
 * in the clusterd's failed list, if it cannot be), grown, moved to its new
 * port, or removed with its files set aside; a volume that has d's port
 * and sorts after it is refused (and moved by the node that made it), and
 * so is d if one sorts before it.  was_port: the port d's name had before
 * d came (0: none, or not live), which the volume refused on it gets if
 * d frees it.  The other volumes go on either way. */
void clusterd__apply_def(struct clusterd *cd, const struct voldef *d, uint16_t was_port);
/* d came again unchanged (a member's state after the group changed): if
 * it still has another volume's port, it is moved now if this node is the
 * one to (a send that failed, or the node that made it left). */
void clusterd__port_recheck(struct clusterd *cd, const struct voldef *d);
/* Tells the replicas this node shares with kn its address now. */
void clusterd__apply_addresses(struct clusterd *cd, const struct known_node *kn);

#endif
