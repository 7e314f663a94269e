/* cli.h: what the files of the replagent command line share: the parsed
 * command line, the exchange with replagentd's control socket (cli_talk.c),
 * and the commands that have files of their own (status and show in
 * cli_status.c, events in cli_events.c).  Not the daemon's side (control.h). */
#ifndef REPL_AGENT_CLI_H
#define REPL_AGENT_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CLI_IO_TIMEOUT_MS 5000	/* every exchange, the first line of events */
#define CLI_ANSWER_MAX (16u << 20)
#define EXIT_FAILED 1		/* refused, or the daemon unreachable */

struct json_value;

/* Positional arguments: promote and demote take many volumes at once (a
 * node's Primaries failing over: one CLI process, not one each). */
#define CLI_ARGS_MAX 1024

struct cli {
	const char *socket;
	bool flag;		/* the command's flag: status --json, promote --force */
	const char *args[CLI_ARGS_MAX];	/* positional arguments after the command */
	unsigned n_args;
};

/* ---- cli_talk.c ---- */
/* Connects to the control socket (bounded): 0 with *out, or -errno. */
int cli_connect(const char *path, int *out);
int cli_send_all(int fd, const char *buf, size_t len, uint64_t deadline);
/* Doubles *buf (up to CLI_ANSWER_MAX): 0, -EFBIG, -ENOMEM. */
int cli_grow(char **buf, size_t *cap);
/* Sends req and parses the answer; prints why on failure.  0 (answer in
 * *ans, raw text in *raw when raw is not NULL), -EPROTO for an answer that
 * is no JSON object with "ok", or another -errno. */
int cli_ask(const struct cli *cli, const char *req, struct json_value **ans, char **raw);
/* Sends req; prints the refusal or runs ok(ans).  0 or EXIT_FAILED. */
int cli_simple_request(struct cli *cli, const char *req, const char *what,
		       void (*ok)(const struct json_value *ans));
/* The daemon's text for a terminal: control characters become '?'. */
const char *cli_clean(const char *s, char *buf, size_t len);
void cli_print_refusal(const char *what, const struct json_value *ans);
const char *cli_or_unknown(const char *s);
/* Appends s to line (of size bytes), truncating. */
void cli_append(char *line, size_t size, const char *s);

/* ---- commands: 0 or an exit code ---- */
int cli_cmd_status(struct cli *cli);	/* cli_status.c */
int cli_cmd_show(struct cli *cli);
int cli_cmd_verify(struct cli *cli);
int cli_cmd_events(struct cli *cli);	/* cli_events.c */
int cli_cmd_checkpoint(struct cli *cli, int argc, char **argv);	/* cli_checkpoint.c */

#endif
