/* control.h: replagentd's control socket, the daemon side.
 *
 * A Unix stream socket (mode 0600, so root's only) where a client sends one
 * request line and gets one JSON object back: status, promote, demote,
 * version (docs/control-protocol.md is the reference); a client that asks
 * for "events" is handed over to events.c, which keeps it.  Everything runs on
 * the daemon's evloop without blocking: clients that send garbage, too
 * much, too slowly, or do not read their answer are dropped and cannot stall
 * the loop.  This is not the command line (agent/replagent.c) and holds no
 * state of its own beyond its clients: every answer asks the engine afresh. */
#ifndef REPL_AGENT_CONTROL_H
#define REPL_AGENT_CONTROL_H

#include "cfg.h"
#include "evloop.h"
#include "repl.h"

#define CONTROL_REQUEST_MAX 4096	/* bytes per request line, newline included */
#define CONTROL_CLIENTS_MAX 32		/* concurrent clients; more are refused */
#define CONTROL_TIMEOUT_MS 5000		/* per client, from accept to last byte */

struct control;
struct json_writer;
struct clview;
struct events;
struct volfail;

/* What cluster mode adds to the control socket. */
struct control_ext {
	void *arg;
	/* Runs before a promotion: 0 to go on, or -errno and why. */
	int (*promote_guard)(void *arg, struct repl_volume *vol, bool force, char *why,
			     size_t whylen);
	/* A command the static daemon does not know: true if it answered. */
	bool (*command)(void *arg, char **words, unsigned n, struct json_writer *w);
	/* The cluster view for status answers (NULL: static mode). */
	void (*cluster_view)(void *arg, struct clview *out);
};

/* Creates cfg->control_socket (its parent directory 0755 if missing, a
 * stale socket replaced; anything else at that path is left alone and
 * -EEXIST returned) and serves it on loop.  eng and cfg must outlive it. */
int control_open(struct evloop *loop, struct repl_engine *eng, const struct cfg *cfg,
		 struct control **out);
void control_set_ext(struct control *c, const struct control_ext *ext);
/* Where "events" requests go (without: they are refused). */
void control_set_events(struct control *c, struct events *ev);
/* The volumes that could not be opened (volfail.h): status lists them,
 * commands on them are refused with the reason.  vf must outlive c. */
void control_set_failed(struct control *c, const struct volfail *vf);
/* One element of a status answer's "volumes" (events carry the same). */
void control_put_volume(struct json_writer *w, const struct repl_volume *vol);
/* Drops all clients, closes and unlinks the socket.  NULL ok. */
void control_close(struct control *c);

#endif
