/* voldb.h: the volume definitions one node knows, in memory and on disk.
 *
 * A definition (struct voldef, clmsg.h) is made once on some node, spread
 * through the CPG group, and merged by every node with one deterministic
 * rule (voldb_merge), so that all nodes end up with the same set whatever
 * order the versions arrive in.  Deleting a volume makes a tombstone: a
 * definition with `deleted` set and a higher version, kept and persisted
 * like any other, so that a node that was down while the volume was deleted
 * cannot bring it back.
 *
 * On disk: one file per volume, DIR/NAME.vol, "key = value" lines (see
 * voldef_format), replaced atomically (write .NAME.vol.tmp, fsync, rename,
 * fsync the directory).  Loading reports and skips files it cannot use.
 *
 * Not here: the network (the caller sends and receives definitions), and
 * what a definition means for the engine (the daemon opens the volumes). */
#ifndef REPL_AGENT_VOLDB_H
#define REPL_AGENT_VOLDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clmsg.h"

#define VOLDB_FILE_MAX 4096	/* a .vol file longer than this is garbage */
#define VOLDB_SENT_MAX 64	/* creations sent and not back, at most */

struct voldb;

enum voldb_merge {
	VOLDB_NEW = 0,		/* no definition of that name before: stored */
	VOLDB_UPDATED,		/* it beat the stored one: replaced it */
	VOLDB_SAME,		/* identical to the stored one */
	VOLDB_OLDER,		/* the stored one wins: ignored */
};

/* dir NULL: memory only (tests).  Otherwise dir is created (mode 0700) if
 * it does not exist; its parent must.  0 or -errno. */
int voldb_new(const char *dir, struct voldb **out);
void voldb_free(struct voldb *db);	/* NULL ok */
/* Reads every DIR/NAME.vol.  Files that are not definitions (bad syntax,
 * invalid fields, a name that is not the file's) are logged with their path
 * and skipped; stale temporary files are removed.  Returns the number of
 * files skipped, or -errno if the directory cannot be read. */
int voldb_load(struct voldb *db);

/* The merge rule, pure: > 0 if a beats b, 0 if they are identical, < 0 if
 * b beats a.  The higher version wins; at equal versions a tombstone (a
 * delete made at the same time as another change wins), then the larger
 * size (of two resizes made at once the larger wins: a replica that grew
 * to it is never left larger than its volume), then the higher origin
 * nodeid, then - two nodes should never get that far, but a node that
 * lost its state might - the larger encoding in byte order.  Every node
 * picks the same winner. */
int voldef_cmp(const struct voldef *a, const struct voldef *b);

/* Applies the rule to the in-memory set only (no I/O): enum voldb_merge,
 * or -EINVAL (voldef_check fails), -ENOMEM. */
int voldb_merge(struct voldb *db, const struct voldef *in);
/* What the daemon calls on a received definition: the rule, and if it wins,
 * the file is written (durable) before the memory is changed.  enum
 * voldb_merge, or -EINVAL, -ENOMEM, or the write's -errno (nothing
 * changed). */
int voldb_accept(struct voldb *db, const struct voldef *in);

/* The definition of that name, tombstones included (check ->deleted), or
 * NULL.  Pointers are valid until the next merge or accept. */
const struct voldef *voldb_find(const struct voldb *db, const char *name);
/* Iteration in name order, tombstones included: for (i < voldb_count) ... */
size_t voldb_count(const struct voldb *db);
const struct voldef *voldb_at(const struct voldb *db, size_t i);

/* Builds (does not store) version 1 of a new volume, or the version after
 * its tombstone: this node as origin, a fresh random UUID, and the lowest
 * port >= base_port that no live definition uses, nor a creation this node
 * sent that has not come back (voldb_sent).  It takes effect when merged,
 * normally as it comes back through the group.  0, or -EINVAL (bad name,
 * size or nodes), -EEXIST (a live volume of that name, or one being
 * created), -ENOSPC (no free port), -EBUSY (VOLDB_SENT_MAX creations not
 * back yet), or random_bytes' -errno; on all but the last *why says why,
 * for people. */
int voldb_create(const struct voldb *db, const char *name, uint64_t size,
		 const char *const *nodes, size_t n_nodes, uint32_t local_nodeid,
		 uint16_t base_port, struct voldef *out, const char **why);
/* v, made by voldb_create or voldb_move, was sent to the group: until a
 * definition of its name at its version or later is merged or accepted
 * (whichever wins), its name and port are taken, so that creations made
 * back to back (before the first comes back) get different ports.  0, or
 * -EBUSY (full, or that name already).
 * voldb_sent_forget(): none is awaited any more (the link to the group
 * went: what was sent may never come back). */
int voldb_sent(struct voldb *db, const struct voldef *v);
void voldb_sent_forget(struct voldb *db);
/* Builds (does not store) the tombstone of a live volume: the next version,
 * this node as origin.  0, -ENOENT (no live volume of that name) or
 * -EOVERFLOW (version exhausted). */
int voldb_delete(const struct voldb *db, const char *name, uint32_t local_nodeid,
		 struct voldef *out);

/* Builds (does not store) the next version of a live volume with a larger
 * size, this node as origin (the UUID stays: the same volume, grown).  0,
 * or with *why for people: -ENOENT (no live volume of that name), -EINVAL
 * (smaller - a volume only grows - or not a positive multiple of 512),
 * -EALREADY (that size already), -EOVERFLOW (version exhausted). */
int voldb_resize(const struct voldb *db, const char *name, uint64_t size,
		 uint32_t local_nodeid, struct voldef *out, const char **why);

/* Two live definitions with one port (two volumes created at the same
 * moment on two nodes, each picking the lowest port free in its view): the
 * one whose name sorts first owns the port, the same answer on every node
 * in any arrival order.  voldb_port_owner: that one, or NULL (no live
 * definition has the port).  voldb_port_conflict: another owns v's port,
 * v must not use it. */
const struct voldef *voldb_port_owner(const struct voldb *db, uint16_t port);
bool voldb_port_conflict(const struct voldb *db, const struct voldef *v);
/* Builds (does not store) the next version of a live volume on the lowest
 * free port (as voldb_create picks it), this node as origin: how a volume
 * that lost its port gets another.  Send it, then voldb_sent() it.  0, or
 * -ENOENT (no live volume of that name), -EBUSY (a creation or move of it
 * is awaited already, or VOLDB_SENT_MAX are), -EOVERFLOW (version
 * exhausted), -ENOSPC (no free port). */
int voldb_move(const struct voldb *db, const char *name, uint32_t local_nodeid,
	       uint16_t base_port, struct voldef *out);

/* The file format, pure.  voldef_format: length written (NUL excluded), or
 * -ENOBUFS.  voldef_parse: 0, or -EINVAL with "line N: ..." in err. */
int voldef_format(const struct voldef *v, char *buf, size_t cap);
int voldef_parse(const char *text, struct voldef *out, char *err, size_t errlen);

#endif
