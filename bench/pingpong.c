/*
 * bench/pingpong.c: the TCP loopback round trip of a replicated 4k write,
 * measured without any engine: one process sends OUT bytes (default 4096,
 * a 4 KiB write) over 127.0.0.1, a second process reads them all and
 * answers BACK bytes (default 16, an ack); the sender times each exchange
 * with CLOCK_MONOTONIC and prints "median_us p99_us" over N exchanges
 * after 1000 untimed ones.  Both sides use TCP_NODELAY and blocking
 * send/recv, the cheapest a userspace program can do per exchange.  It is
 * the floor that bench/write-path-bench.sh holds replication against
 * (issue 14, goal 1); it is not a test and asserts nothing.
 *
 *   pingpong [-n N] [-o OUT] [-b BACK]
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WARMUP 1000

static int xfer(int fd, void *buf, size_t len, int out)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = out ? send(fd, (char *)buf + done, len - done, MSG_NOSIGNAL)
				: recv(fd, (char *)buf + done, len - done, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

static void nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* The answering side: read OUT bytes, send BACK bytes, until EOF. */
static int echo_side(int lfd, char *buf, size_t out, size_t back)
{
	int c = accept(lfd, NULL, NULL);

	close(lfd);
	if (c < 0)
		return 1;
	nodelay(c);
	while (xfer(c, buf, out, 0) == 0)
		if (xfer(c, buf, back, 1) < 0)
			return 1;
	close(c);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	size_t n = 20000, out = 4096, back = 16, i;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t slen = sizeof(sa);
	uint64_t *t;
	char *buf;
	int opt, lfd, fd, st;
	pid_t pid;

	while ((opt = getopt(argc, argv, "n:o:b:")) != -1) {
		switch (opt) {
		case 'n': n = strtoul(optarg, NULL, 10); break;
		case 'o': out = strtoul(optarg, NULL, 10); break;
		case 'b': back = strtoul(optarg, NULL, 10); break;
		default:
			fprintf(stderr, "usage: %s [-n N] [-o OUT] [-b BACK]\n", argv[0]);
			return 2;
		}
	}
	if (n == 0 || out == 0 || back == 0 || out > (64u << 20) || back > (64u << 20)) {
		fprintf(stderr, "pingpong: N, OUT and BACK must be > 0 (sizes <= 64 MiB)\n");
		return 2;
	}
	buf = calloc(1, out > back ? out : back);
	t = calloc(n, sizeof(*t));
	if (!buf || !t)
		return 1;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(lfd, 1) < 0 || getsockname(lfd, (struct sockaddr *)&sa, &slen) < 0) {
		perror("pingpong: listen on 127.0.0.1");
		return 1;
	}
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0)
		_exit(echo_side(lfd, buf, out, back));
	close(lfd);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("pingpong: connect");
		return 1;
	}
	nodelay(fd);
	for (i = 0; i < WARMUP + n; i++) {
		uint64_t t0 = now_ns();

		if (xfer(fd, buf, out, 1) < 0 || xfer(fd, buf, back, 0) < 0) {
			fprintf(stderr, "pingpong: the echo process went away\n");
			return 1;
		}
		if (i >= WARMUP)
			t[i - WARMUP] = now_ns() - t0;
	}
	close(fd);
	waitpid(pid, &st, 0);
	qsort(t, n, sizeof(*t), cmp_u64);
	printf("%.1f %.1f\n", t[n / 2] / 1000.0, t[(n * 99) / 100] / 1000.0);
	free(t);
	free(buf);
	return 0;
}
