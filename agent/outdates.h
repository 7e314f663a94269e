/* outdates.h: the outdate requests of this node's Primaries that the group
 * has not recorded yet, kept in a file of the state directory so that a
 * restart of the daemon does not lose them.  A Primary that lost a peer
 * asks the group to record it Outdated before it acknowledges anything
 * more; while the group cannot (no quorum) the request waits, and if the
 * daemon stops meanwhile (its metadata failing, a crash of the process)
 * the request must still go out once it is back: otherwise the lost peer,
 * recorded Outdated nowhere (our own metadata may have failed to say it),
 * may be promoted without the writes this replica holds.  This file knows
 * the list and its file format, nothing of the group. */
#ifndef REPL_AGENT_OUTDATES_H
#define REPL_AGENT_OUTDATES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clmsg.h"

struct pending_outdate {
	struct pending_outdate *next;
	char volume[CLMSG_NAME_MAX];
	char node[CLMSG_NAME_MAX];
	uint64_t token;
	bool replayed;		/* loaded from the file: made by an earlier
				 * run, no volume of ours waits for it */
};

#define OUTDATES_FILE "outdates"

/* The list as the file's text ("VOLUME NODE TOKEN" a line, after a comment
 * line); its length, or -ENOSPC. */
int outdates_format(const struct pending_outdate *list, char *buf, size_t cap);

/* Parses text: its requests appended to *list in the file's order, each
 * marked replayed; 0, or -EINVAL with the first bad line's number and why
 * in err (nothing is added then). */
int outdates_parse(const char *text, struct pending_outdate **list, char *err, size_t errlen);

/* Writes the list to DIR/outdates (a new file, fsync'ed, renamed into
 * place, the directory fsync'ed); an empty list removes the file.  0 or
 * -errno. */
int outdates_save(const char *dir, const struct pending_outdate *list);

/* Reads DIR/outdates: 0 (also when there is none), or -errno / -EINVAL
 * with why (the file is then left alone and nothing is added). */
int outdates_load(const char *dir, struct pending_outdate **list, char *why, size_t len);

void outdates_free(struct pending_outdate *list);

#endif
