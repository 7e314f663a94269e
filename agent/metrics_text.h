/* metrics_text.h: the Prometheus text exposition format (version 0.0.4) of
 * the volumes' status and counters, as /metrics serves it.
 *
 * Pure: it takes snapshots the loop thread made (repl_volume_status,
 * repl_volume_stats) and returns text; no engine calls, no HTTP
 * (metrics.c).  Names follow Prometheus' conventions: replagent_ prefix,
 * base units (_bytes, _seconds), _total for counters, labels volume and
 * peer; an enumerated state is a set of 0/1 series with a state label. */
#ifndef REPL_AGENT_METRICS_TEXT_H
#define REPL_AGENT_METRICS_TEXT_H

#include <stddef.h>

#include "repl.h"
#include "repl_stats.h"

struct metrics_vol {
	struct repl_volume_status st;
	struct repl_volume_stats sx;
};

/* Renders n volumes into a malloc'ed, NUL-terminated *text of *len bytes
 * (the caller frees it).  0 or -ENOMEM. */
int metrics_render(const struct metrics_vol *v, size_t n, char **text, size_t *len);

#endif
