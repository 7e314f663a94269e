/* metrics.h: replagentd's /metrics endpoint (metrics-listen), served by
 * libmicrohttpd on the daemon's own loop.
 *
 * libmicrohttpd runs in its external epoll mode: its one epoll fd sits in
 * the evloop, a readable fd or its timeout calls MHD_run(), which never
 * blocks.  So the request handler runs on the loop thread, where it may
 * read the engine (repl_volume_status, repl_volume_stats) without locks,
 * and each scrape renders what is true at that moment.  HTTP parsing,
 * timeouts and connection limits are the library's, not ours. */
#ifndef REPL_AGENT_METRICS_H
#define REPL_AGENT_METRICS_H

#include "evloop.h"
#include "repl.h"

struct metrics;

/* Listens on host:port (host "" = every address).  0, or -errno (the
 * address cannot be resolved or bound) with why logged. */
int metrics_open(struct evloop *loop, struct repl_engine *eng, const char *host,
		 const char *port, struct metrics **out);
void metrics_close(struct metrics *m);	/* NULL ok */

#endif
