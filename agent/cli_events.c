/* cli_events.c: "replagent events": one request, then the daemon's stream
 * of JSON lines for as long as it lasts, printed as is (--json) or as text
 * (evtext.c), until SIGINT or SIGTERM (exit 0) or the daemon's end of it
 * (exit 1). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sysexits.h>
#include <unistd.h>

#include "cli.h"
#include "evtext.h"
#include "health.h"
#include "json.h"
#include "util.h"

/* ---- events -------------------------------------------------------------------- */

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int signo)
{
	stop_signal = signo;
}

/* Without SA_RESTART: a signal ends the poll() of next_line(). */
static void catch_stop_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* The stream's input, kept between lines. */
struct linebuf {
	char *buf;
	size_t len, cap;
	size_t used;		/* the line returned last, newline included */
};

/* The next line (NUL-terminated in place, no newline) into *line: 0, or
 * -EINTR (a stop signal), -ETIMEDOUT (deadline; 0: none), -EPROTO (the
 * daemon closed the stream), -EFBIG, -ENOMEM, -errno. */
static int next_line(struct linebuf *lb, int fd, uint64_t deadline, char **line)
{
	char *nl;

	memmove(lb->buf, lb->buf + lb->used, lb->len - lb->used);
	lb->len -= lb->used;
	lb->used = 0;
	while (!(nl = memchr(lb->buf, '\n', lb->len))) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t now = now_mono_ms();
		ssize_t k;
		int r;

		if (lb->len + 1 >= lb->cap && (r = cli_grow(&lb->buf, &lb->cap)) < 0)
			return r;
		if (deadline && now >= deadline)
			return -ETIMEDOUT;
		r = poll(&p, 1, deadline ? (int)(deadline - now) : -1);
		if (stop_signal)
			return -EINTR;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r <= 0)
			continue;
		k = recv(fd, lb->buf + lb->len, lb->cap - lb->len - 1, MSG_DONTWAIT);
		if (k == 0)
			return -EPROTO;
		if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (k > 0)
			lb->len += (size_t)k;
	}
	*nl = '\0';
	lb->used = (size_t)(nl - lb->buf) + 1;
	*line = lb->buf;
	return 0;
}

/* One line of the stream, as is (--json) or as text; false if it is not
 * what the protocol promises (or, first, a refusal: said on stderr). */
static bool print_event(const struct cli *cli, const char *line, bool first)
{
	struct json_value *ev = NULL;
	char text[16384];

	if (json_parse(line, strlen(line), &ev) < 0 || ev->type != JSON_OBJECT) {
		if (first)
			fprintf(stderr, "replagent: unexpected answer from %s\n", cli->socket);
		json_value_free(ev);
		return false;
	}
	if (first && !json_get_bool(ev, "ok")) {
		cli_print_refusal("events", ev);
		json_value_free(ev);
		return false;
	}
	if (cli->flag)
		printf("%s\n", line);
	else if (first && evtext_snapshot(ev, text, sizeof(text)))
		fputs(text, stdout);
	else if (!first && evtext_event(ev, text, sizeof(text)))
		fputs(text, stdout);
	fflush(stdout);
	json_value_free(ev);
	return true;
}

/* Prints the stream until a signal (0), the daemon's end of it (1). */
static int events_loop(const struct cli *cli, struct linebuf *lb, int fd)
{
	char *line;
	int r;

	while ((r = next_line(lb, fd, 0, &line)) == 0)
		if (!print_event(cli, line, false))
			fprintf(stderr, "replagent: unexpected line from %s\n", cli->socket);
	if (r == -EINTR)
		return EX_OK;
	fprintf(stderr, "replagent: %s: %s\n", cli->socket,
		r == -EPROTO ? "replagentd closed the event stream" : strerror(-r));
	return EXIT_FAILED;
}

int cli_cmd_events(struct cli *cli)
{
	struct linebuf lb = { .buf = malloc(4096), .cap = 4096 };
	char req[256], *line;
	int fd = -1, r, ex;

	snprintf(req, sizeof(req), "events%s%s\n", cli->n_args ? " " : "",
		 cli->n_args ? cli->args[0] : "");
	catch_stop_signals();
	r = lb.buf ? cli_connect(cli->socket, &fd) : -ENOMEM;
	if (r < 0) {
		fprintf(stderr, "replagent: cannot connect to %s: %s (is replagentd running?)\n",
			cli->socket, strerror(-r));
		free(lb.buf);
		return HEALTH_UNKNOWN;
	}
	/* The snapshot comes at once; then events, for as long as it takes. */
	r = cli_send_all(fd, req, strlen(req), now_mono_ms() + CLI_IO_TIMEOUT_MS);
	if (r == 0 || r == -EPIPE || r == -ECONNRESET)
		r = next_line(&lb, fd, now_mono_ms() + CLI_IO_TIMEOUT_MS, &line);
	if (r == -EINTR) {
		ex = EX_OK;
	} else if (r < 0) {
		fprintf(stderr, "replagent: no answer from %s: %s\n", cli->socket,
			r == -EPROTO ? "connection closed" : strerror(-r));
		ex = HEALTH_UNKNOWN;
	} else {
		ex = print_event(cli, line, true) ? events_loop(cli, &lb, fd) : EXIT_FAILED;
	}
	close(fd);
	free(lb.buf);
	return ex;
}
