/* control_int.h: what the two halves of the daemon's control socket share
 * (control.c: the socket, its clients, their bytes; control_cmd.c: the
 * requests and their JSON answers), and nobody else.  Loop thread only. */
#ifndef REPL_AGENT_CONTROL_INT_H
#define REPL_AGENT_CONTROL_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "control.h"
#include "repl.h"

struct events;
struct json_writer;

struct client {
	struct control *ctl;
	struct client *prev, *next;
	int fd;
	void *timer;
	char *out;		/* the answer, once there is one */
	size_t out_len, out_off;
	bool wants_events;	/* asked for events: hand it over */
	char events_vol[REPL_NAME_MAX + 1];
	size_t in_len;
	char in[CONTROL_REQUEST_MAX];
};

struct control {
	struct evloop *loop;
	struct repl_engine *eng;
	const struct cfg *cfg;
	char *path;
	dev_t dev;		/* of the socket we created, to unlink only it */
	ino_t ino;
	int fd;
	bool accepting;
	void *pause_timer;
	struct client *clients;
	unsigned n_clients;
	struct control_ext ext;
	struct events *events;
	const struct volfail *failed;	/* volumes that could not be opened */
	struct client *current;	/* whose request is being answered */
};

/* Answers one request line (split in place) into w: one JSON object. */
void control__dispatch(struct control *c, char *line, struct json_writer *w);
/* {"ok":false,"error":...} */
void control__answer_error(struct json_writer *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
