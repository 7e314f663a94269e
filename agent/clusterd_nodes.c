/* clusterd_nodes.c: what cluster mode knows of the group's members: the
 * nodes that announced a name and a replication address, and which of
 * them says it is Primary of which volume.  Lookups and records in the
 * clusterd's tables only; what a message or a membership change does
 * with them is clusterd.c's. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "clusterd_int.h"
#include "clusterd_nodes.h"
#include "util.h"

struct known_node *clusterd__node_by_name(struct clusterd *cd, const char *name)
{
	for (size_t i = 0; i < cd->n_nodes; i++)
		if (strcmp(cd->nodes[i].node, name) == 0)
			return &cd->nodes[i];
	return NULL;
}

bool clusterd__is_member(const struct clusterd *cd, uint32_t nodeid)
{
	for (size_t i = 0; i < cd->n_members; i++)
		if (cd->members[i] == nodeid)
			return true;
	return false;
}

/* Another member that says it is Primary of volume (not this node). */
struct primary_rec *clusterd__primary_of(struct clusterd *cd, const char *volume)
{
	for (size_t i = 0; i < cd->n_primaries; i++)
		if (strcmp(cd->primaries[i].volume, volume) == 0 &&
		    cd->primaries[i].nodeid != cd->nodeid)
			return &cd->primaries[i];
	return NULL;
}

bool clusterd__other_claim(const struct clusterd *cd, const char *volume, uint32_t except)
{
	for (size_t i = 0; i < cd->n_primaries; i++)
		if (strcmp(cd->primaries[i].volume, volume) == 0 &&
		    cd->primaries[i].nodeid != except &&
		    clusterd__is_member(cd, cd->primaries[i].nodeid))
			return true;
	return false;
}

struct primary_rec *clusterd__primary_rec(struct clusterd *cd, const char *volume,
				       const char *node)
{
	for (size_t i = 0; i < cd->n_primaries; i++)
		if (strcmp(cd->primaries[i].volume, volume) == 0 &&
		    strcmp(cd->primaries[i].node, node) == 0)
			return &cd->primaries[i];
	return NULL;
}

void clusterd__set_primary(struct clusterd *cd, const char *volume, const char *node,
			uint32_t nodeid, bool primary)
{
	struct primary_rec *pr = clusterd__primary_rec(cd, volume, node);

	if (!primary) {
		if (pr)
			*pr = cd->primaries[--cd->n_primaries];
		return;
	}
	if (!pr) {
		if (cd->n_primaries == ARRAY_SIZE(cd->primaries))
			return;
		pr = &cd->primaries[cd->n_primaries++];
	}
	snprintf(pr->volume, sizeof(pr->volume), "%s", volume);
	snprintf(pr->node, sizeof(pr->node), "%s", node);
	pr->nodeid = nodeid;
}

const char *clusterd__name_of(const struct clusterd *cd, uint32_t nodeid)
{
	for (size_t i = 0; i < cd->n_nodes; i++)
		if (cd->nodes[i].nodeid == nodeid)
			return cd->nodes[i].node;
	return NULL;
}
