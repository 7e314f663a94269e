/* cbt.h: changed-block tracking.  A checkpoint is a name and, on each
 * replica, a persistent bitmap of the regions written since it was made;
 * NBD clients read it as the metadata context "replagent:changed:NAME"
 * (nbd_meta.c).  The first half is the engine's public API (replagentd's
 * control socket uses it), the second what the engine's files call.  See
 * cbt.c for the rules that keep every replica's bitmap complete. */
#ifndef REPL_CBT_H
#define REPL_CBT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct repl_volume;
struct peer;
struct cbt;
struct wire_ckpt;
struct nbd_extent;

#define CBT_NAME_MAX 32		/* bytes of a checkpoint name, without the NUL */
#define CBT_MAX 8		/* checkpoints per volume */
#define CBT_CONTEXT_PREFIX "replagent:changed:"

struct repl_checkpoint_info {
	char name[CBT_NAME_MAX + 1];
	bool complete;		/* false: this replica cannot tell what changed */
	char why[128];		/* why not, when incomplete */
	uint64_t changed;	/* bytes in changed regions (complete only) */
};

/* Whether name may name a checkpoint: 1..CBT_NAME_MAX of [A-Za-z0-9_.-],
 * not starting with '.' or '-', not ending in ".tmp".  Pure. */
bool repl_checkpoint_name_ok(const char *name);
/* On the Primary (or a volume without peers): starts a checkpoint here and
 * on every connected replica, in the order of the writes.  0, or -errno
 * with why: -EINVAL bad name, -EEXIST taken, -ENOSPC CBT_MAX reached,
 * -EPERM not Primary, or the I/O's error. */
int repl_checkpoint_create(struct repl_volume *vol, const char *name, char *why, size_t len);
/* Deletes it here and (from the Primary) on every connected replica:
 * 0, -ENOENT, or -errno with why. */
int repl_checkpoint_delete(struct repl_volume *vol, const char *name, char *why, size_t len);
/* Up to max checkpoints of vol into out: how many there are. */
unsigned repl_checkpoint_list(struct repl_volume *vol, struct repl_checkpoint_info *out,
			      unsigned max);

/* ---- inside the engine ---- */
/* Loads the checkpoints kept beside the metadata file meta_path (a damaged
 * one is loaded as incomplete).  0 or -errno (memory only). */
int repl__cbt_open(struct repl_volume *vol, const char *meta_path);
void repl__cbt_free(struct cbt *cbt);	/* NULL ok */
/* Worker thread, before a WRITE, TRIM or ZERO of [off, off+len) reaches the
 * store: the regions are marked changed in every checkpoint, durably, so
 * that no acknowledged write is missing from a bitmap after a crash.  A
 * checkpoint whose file cannot be written becomes incomplete.  NULL ok. */
void repl__cbt_before_write(struct cbt *cbt, uint64_t off, uint64_t len);
/* Every checkpoint becomes incomplete (the replica forgot its data's
 * history: a full resync follows). */
void repl__cbt_forget(struct repl_volume *vol, const char *why);
/* A link came up: a Primary tells the peer which checkpoints exist. */
void repl__cbt_peer_up(struct peer *p);
/* A CKPT frame from a peer. */
void repl__cbt_on_msg(struct peer *p, const struct wire_ckpt *m);
/* nbd_meta.c: the context names of vol's checkpoints, and their extents
 * (flag 1: changed since the checkpoint) for a BLOCK_STATUS: 0, or -EIO
 * when the checkpoint is incomplete here, -ENOENT when gone. */
void repl__cbt_contexts(struct repl_volume *vol, void (*add)(void *ctx, const char *name),
			void *ctx);
int repl__cbt_extents(struct repl_volume *vol, const char *name, uint64_t off, uint32_t len,
		      struct nbd_extent *e, unsigned max, unsigned *n);

#endif
