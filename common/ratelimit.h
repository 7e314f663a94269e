/* ratelimit.h: at most one message of a kind per interval.
 *
 * A disk that fails every write, or a peer whose disk does, would have
 * its errors logged once per request: thousands of lines a second, into a
 * journal that may sit on the very disk that is full.  The first message
 * of a kind goes out; after it at most one per interval, which says how
 * many were left out in between.  Not locked: each limit belongs to one
 * thread, or to one lock's holder. */
#ifndef REPL_COMMON_RATELIMIT_H
#define REPL_COMMON_RATELIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct ratelimit {
	uint64_t next_ms;	/* none goes out before this (0: the first goes) */
	unsigned skipped;	/* left out since the last one that went */
};

/* May a message go out at now_ms?  If so, *skipped is how many were left
 * out since the last one, and the next may go interval_ms later. */
static inline bool ratelimit_ok(struct ratelimit *r, uint64_t now_ms, uint64_t interval_ms,
				unsigned *skipped)
{
	if (r->next_ms && now_ms < r->next_ms) {
		r->skipped++;
		return false;
	}
	*skipped = r->skipped;
	r->skipped = 0;
	r->next_ms = now_ms + interval_ms;
	if (!r->next_ms)
		r->next_ms = 1;
	return true;
}

/* The end of a message that went out after skipped others were left out:
 * " (N more since the last such message)", or "" (in buf, len bytes). */
static inline const char *ratelimit_more(unsigned skipped, char *buf, size_t len)
{
	if (!skipped)
		return "";
	snprintf(buf, len, " (%u more since the last such message)", skipped);
	return buf;
}

#endif
