/* agree.h: the ranges a Primary's own disk failed while its peers applied
 * them (agree.c), between the write path (replicate.c) and the
 * peer-ack that lets the Secondaries forget their recent regions
 * (recent.c). */
#ifndef REPL_AGREE_H
#define REPL_AGREE_H

#include <stdbool.h>
#include <stdint.h>

struct repl_volume;

/* The write seq to [offset, offset + len) failed here and the peers get
 * the range back from us: 0, or -ENOMEM (then said in the log). */
int repl__agree_add(struct repl_volume *vol, uint64_t seq, uint64_t offset, uint64_t len);
/* The peer-ack seq may say no more than this (seq, or the oldest range
 * some peer still lacks); ranges no peer lacks any longer go. */
uint64_t repl__agree_bound(struct repl_volume *vol, uint64_t seq);
/* Does a connected peer still lack one of the ranges?  A handover waits
 * (window.c): the new Primary would not know they differ there. */
bool repl__agree_waiting(const struct repl_volume *vol);
/* Forgotten: not Primary any more, or closing. */
void repl__agree_free(struct repl_volume *vol);

#endif
