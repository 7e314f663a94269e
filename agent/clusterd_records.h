/* clusterd_records.h: the group's Outdated records as this node keeps
 * them (clusterd_records.c).  The promotion rule they make and what they
 * tell a replica are declared in clusterd_int.h. */
#ifndef REPL_AGENT_CLUSTERD_RECORDS_H
#define REPL_AGENT_CLUSTERD_RECORDS_H

#include <stdint.h>

struct clmsg_outdate;
struct clusterd;
struct repl_volume;

/* The requests not yet recorded and the records, to STATE_DIR/outdates
 * (logged if they cannot be written). */
void clusterd__save_pending(struct clusterd *cd);
/* o (a record that o->node is Outdated) kept, unless it names a member
 * that says it is Primary, or a volume or node the group does not know. */
void clusterd__record_outdated(struct clusterd *cd, const struct clmsg_outdate *o);
/* o ("o->node is in sync again", or "is Primary") from member from:
 * the record goes if from is the one Primary of the volume. */
void clusterd__clear_record(struct clusterd *cd, uint32_t from, const struct clmsg_outdate *o);
/* The same message told to this node's replica vol (may be NULL). */
void clusterd__on_in_sync(struct clusterd *cd, uint32_t from, struct repl_volume *vol,
			  const struct clmsg_outdate *o);
/* A record that this node's replica is Outdated while it is Primary. */
void clusterd__record_about_us(struct clusterd *cd, const struct clmsg_outdate *o);

#endif
