/* clusterd_nodes.h: what cluster mode knows of the group's members
 * (clusterd_nodes.c). */
#ifndef REPL_AGENT_CLUSTERD_NODES_H
#define REPL_AGENT_CLUSTERD_NODES_H

#include <stdbool.h>
#include <stdint.h>

struct clusterd;
struct known_node;
struct primary_rec;

/* The node that announced itself under name, or NULL. */
struct known_node *clusterd__node_by_name(struct clusterd *cd, const char *name);
bool clusterd__is_member(const struct clusterd *cd, uint32_t nodeid);
/* Another member that says it is Primary of volume (not this node). */
struct primary_rec *clusterd__primary_of(struct clusterd *cd, const char *volume);
/* A member other than nodeid except that says it is Primary of volume. */
bool clusterd__other_claim(const struct clusterd *cd, const char *volume, uint32_t except);
/* node's claim to be Primary of volume, or NULL. */
struct primary_rec *clusterd__primary_rec(struct clusterd *cd, const char *volume,
					  const char *node);
/* Records that node (nodeid) is Primary of volume, or (primary false)
 * that it is not; a claim that does not fit the table is not kept. */
void clusterd__set_primary(struct clusterd *cd, const char *volume, const char *node,
			   uint32_t nodeid, bool primary);
/* The name node nodeid announced, or NULL. */
const char *clusterd__name_of(const struct clusterd *cd, uint32_t nodeid);

#endif
