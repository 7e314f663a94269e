/* cli_talk.c: the command line's side of the control socket protocol
 * (docs/control-protocol.md): connect, send one request line, read one
 * answer line, each step bounded by CLI_IO_TIMEOUT_MS; and the small
 * helpers that put the daemon's answers on a terminal.  No command lives
 * here. */
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

/* ---- talking to the daemon ------------------------------------------------- */

static int cli_wait_fd(int fd, short events, uint64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	uint64_t now = now_mono_ms();
	int n;

	if (now >= deadline)
		return -ETIMEDOUT;
	n = poll(&p, 1, (int)(deadline - now));
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	return n == 0 ? -ETIMEDOUT : 0;
}

/* Blocking connect, bounded by SO_SNDTIMEO; non-blocking afterwards. */
int cli_connect(const char *path, int *out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { CLI_IO_TIMEOUT_MS / 1000, 0 };
	int fd, r = 0;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		r = errno == EINPROGRESS ? -ETIMEDOUT : -errno;
	if (r == 0)
		r = fd_set_nonblock(fd);
	if (r < 0) {
		close(fd);
		return r;
	}
	*out = fd;
	return 0;
}

int cli_send_all(int fd, const char *buf, size_t len, uint64_t deadline)
{
	while (len > 0) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
		int r;

		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
		} else if ((r = cli_wait_fd(fd, POLLOUT, deadline)) < 0) {
			return r;
		}
	}
	return 0;
}

int cli_grow(char **buf, size_t *cap)
{
	char *p;

	if (*cap >= CLI_ANSWER_MAX)
		return -EFBIG;
	p = realloc(*buf, *cap * 2);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap *= 2;
	return 0;
}

/* Reads up to the first newline (not stored); *out is NUL-terminated. */
static int recv_line(int fd, char **out, size_t *len, uint64_t deadline)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap), *nl;
	int r = buf ? 0 : -ENOMEM;

	while (r == 0) {
		ssize_t k = recv(fd, buf + n, cap - n - 1, 0);

		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
			r = cli_wait_fd(fd, POLLIN, deadline);
			continue;
		}
		if (k <= 0) {
			r = k == 0 ? -EPROTO : -errno;
			break;
		}
		if ((nl = memchr(buf + n, '\n', (size_t)k))) {
			*nl = '\0';
			*out = buf;
			*len = (size_t)(nl - buf);
			return 0;
		}
		n += (size_t)k;
		if (n + 1 == cap)
			r = cli_grow(&buf, &cap);
	}
	free(buf);
	return r;
}

/* One exchange: the request line out, the answer line in (*raw, to free). */
static int exchange(const char *sock, const char *req, char **raw, size_t *len)
{
	uint64_t deadline = now_mono_ms() + CLI_IO_TIMEOUT_MS;
	int fd = -1, r;

	r = cli_connect(sock, &fd);
	if (r < 0) {
		fprintf(stderr, "replagent: cannot connect to %s: %s (is replagentd running?)\n",
			sock, strerror(-r));
		return r;
	}
	/* Even if the send fails, the daemon may have said why it hung up. */
	r = cli_send_all(fd, req, strlen(req), deadline);
	if (r == 0 || r == -EPIPE || r == -ECONNRESET)
		r = recv_line(fd, raw, len, deadline);
	close(fd);
	if (r < 0)
		fprintf(stderr, "replagent: no answer from %s: %s\n", sock,
			r == -EPROTO ? "connection closed" : strerror(-r));
	return r;
}

/* Sends req and parses the answer; prints why on failure.  0 (answer in
 * *ans, raw text in *raw when raw is not NULL), -EPROTO for an answer that
 * is no JSON object with "ok", or another -errno. */
int cli_ask(const struct cli *cli, const char *req, struct json_value **ans, char **raw)
{
	char *text = NULL;
	size_t len = 0;
	int r;

	r = exchange(cli->socket, req, &text, &len);
	if (r < 0)
		return r;
	r = json_parse(text, len, ans);
	if (r == 0 && (!json_get(*ans, "ok") || json_get(*ans, "ok")->type != JSON_BOOL)) {
		json_value_free(*ans);
		r = -EPROTO;
	}
	if (r < 0) {
		fprintf(stderr, "replagent: unexpected answer from %s\n", cli->socket);
		free(text);
		return -EPROTO;
	}
	if (raw)
		*raw = text;
	else
		free(text);
	return 0;
}

/* The daemon's text for a terminal: control characters become '?'. */
const char *cli_clean(const char *s, char *buf, size_t len)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < len; i++)
		buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	buf[i] = '\0';
	return buf;
}

void cli_print_refusal(const char *what, const struct json_value *ans)
{
	const char *err = json_get_str(ans, "error");
	char buf[512];

	fprintf(stderr, "replagent: %s: %s\n", what,
		err ? cli_clean(err, buf, sizeof(buf)) : "refused (no reason given)");
}

/* Sends req; prints the refusal or runs ok(ans).  0 or EXIT_FAILED. */
int cli_simple_request(struct cli *cli, const char *req, const char *what,
			  void (*ok)(const struct json_value *ans))
{
	struct json_value *ans;
	int ex = EX_OK;

	if (cli_ask(cli, req, &ans, NULL) < 0)
		return EXIT_FAILED;
	if (!json_get_bool(ans, "ok")) {
		cli_print_refusal(what, ans);
		ex = EXIT_FAILED;
	} else if (ok) {
		ok(ans);
	}
	json_value_free(ans);
	return ex;
}

const char *cli_or_unknown(const char *s)
{
	return s ? s : "?";
}

void cli_append(char *line, size_t size, const char *s)
{
	size_t n = strlen(line);

	snprintf(line + n, size - n, "%s", s);
}
