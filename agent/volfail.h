/* volfail.h: the volumes this node should serve but could not open
 * (damaged metadata, a missing backing, a port in use), each with the
 * reason.  The daemon goes on with its other volumes; status lists these
 * as failed (critical), commands on them are refused with the reason, and
 * a reload (static mode) or a new attach (cluster mode) tries again.  A
 * plain list on the loop thread: no I/O, no engine.  A NULL list is an
 * empty one. */
#ifndef REPL_AGENT_VOLFAIL_H
#define REPL_AGENT_VOLFAIL_H

#include <stddef.h>

struct volfail;

int volfail_new(struct volfail **out);		/* 0 or -ENOMEM */
void volfail_free(struct volfail *vf);		/* NULL ok */
/* Records name as failed, or replaces its reason: 0 or -ENOMEM. */
int volfail_set(struct volfail *vf, const char *name, const char *reason);
/* name is served (or no longer this node's): forget it. */
void volfail_clear(struct volfail *vf, const char *name);
/* name's reason, or NULL if it has not failed. */
const char *volfail_reason(const struct volfail *vf, const char *name);
/* The failed volumes, in the order they failed: 0 <= i < volfail_count. */
size_t volfail_count(const struct volfail *vf);
const char *volfail_name(const struct volfail *vf, size_t i);

#endif
