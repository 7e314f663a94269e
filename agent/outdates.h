/* outdates.h: what this node knows of Outdated replicas, kept in a file of
 * the state directory so that a restart of the daemon does not lose it:
 * the group's records, and the requests of its Primaries that the group
 * has not recorded yet.
 *
 * Records: every member keeps the group's word that a replica is Outdated,
 * also a member without a replica of that volume.  Each record was made
 * in a quorate partition, and any later quorate partition has a member of
 * that one: so a replica that missed writes hears it, even when the
 * Primary that recorded it and every other replica are gone (with two
 * replicas and a third node that only votes, that third node is the only
 * one left to say it).
 *
 * Requests: the outdate requests of this node's Primaries that the group
 * has not recorded yet.  A Primary that lost a peer
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

/* A request (token > 0) or a record (token 0, in a list of its own). */
struct pending_outdate {
	struct pending_outdate *next;
	char volume[CLMSG_NAME_MAX];
	char node[CLMSG_NAME_MAX];
	uint64_t token;
	bool replayed;		/* loaded from the file: made by an earlier
				 * run, no volume of ours waits for it */
};

#define OUTDATES_FILE "outdates"

/* The list as the file's text, after a comment line: "VOLUME NODE TOKEN"
 * a line for a request, "VOLUME NODE" for a record; its length, or
 * -ENOSPC. */
int outdates_format(const struct pending_outdate *list, char *buf, size_t cap);

/* Parses text: its lines appended to *list in the file's order, each
 * marked replayed (a record has token 0); 0, or -EINVAL with the first bad
 * line's number and why in err (nothing is added then). */
int outdates_parse(const char *text, struct pending_outdate **list, char *err, size_t errlen);

/* Writes the requests and the records to DIR/outdates (a new file,
 * fsync'ed, renamed into place, the directory fsync'ed); with neither it
 * removes the file.  0 or -errno. */
int outdates_save(const char *dir, const struct pending_outdate *pending,
		  const struct pending_outdate *records);

/* Reads DIR/outdates, its requests appended to *pending and its records
 * to *records: 0 (also when there is none), or -errno / -EINVAL with why
 * (the file is then left alone and nothing is added). */
int outdates_load(const char *dir, struct pending_outdate **pending,
		  struct pending_outdate **records, char *why, size_t len);

/* The list's entry for volume and node, or NULL. */
struct pending_outdate *outdates_find(struct pending_outdate *list, const char *volume,
				      const char *node);

/* Records volume and node in *list (token 0) unless it is there: 1 if
 * added, 0 if it was there, -ENOMEM. */
int outdates_add_record(struct pending_outdate **list, const char *volume, const char *node);

/* Removes the entries for volume (and node, unless NULL): how many. */
unsigned outdates_remove(struct pending_outdate **list, const char *volume, const char *node);

void outdates_free(struct pending_outdate *list);

#endif
