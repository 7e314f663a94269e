/* tests/mitm.c: a man in the middle for one replica link (tests/repl-mitm.sh).
 *
 *   mitm LISTEN_PORT TARGET_HOST TARGET_PORT MODE INJECT_OFFSET [CAPTURE]
 *
 * Relays TCP connections from 127.0.0.1:LISTEN_PORT to the target, one at
 * a time, and attacks the first connection once, in the direction from
 * the connecting node (the initiator, here the Primary) to the target:
 *
 *   flip     flips a bit in the middle of the first WRITE
 *   inject   after the first WRITE, sends a well-formed WRITE of its own
 *            (4 KiB of 0xEE at INJECT_OFFSET), made without the link key
 *   replay   sends the first WRITE again after the second
 *   reorder  holds the first WRITE back until the next frame has gone
 *   hold     holds everything the client sends after its AUTH_OK (its
 *            VOLUME first) until SIGUSR1, then sends it on: the server
 *            decides late, on what the client said when it sent it
 *            (tests/repl-rejoin-late-state.sh)
 *   none     relays only
 *
 * It follows the framing: the handshake's frames (wire.h headers) up to
 * AUTH_OK, then either plain frames (the magic follows) or sealed records
 * (linkcrypt.h: a length, then ciphertext and tag); a "WRITE" there is a
 * record of more than 4 KiB.  Each attack and each connection is one line
 * on stdout.  With CAPTURE, every byte relayed either way is appended to
 * CAPTURE.all, and the handshake's frames of both directions (up to each
 * side's AUTH_OK) to CAPTURE.handshake: what a listener on the wire sees
 * (tests/repl-link-names.sh).  Ends on SIGTERM. */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "wire.h"

enum { ST_HANDSHAKE, ST_AFTER_AUTH, ST_PLAIN, ST_SEALED };

struct relay {
	int c, s;			/* client (initiator), server (target) */
	uint8_t *buf;			/* client-to-server bytes not yet forwarded */
	size_t have, cap;
	int state;
	unsigned writes;		/* WRITE frames seen on this connection */
	uint8_t *held;			/* reorder: the frame held back; replay: recorded */
	size_t held_len;
	/* server-to-client handshake frames being assembled (capture only) */
	uint8_t sbuf[4096];
	size_t shave;
	bool sdone;			/* the server's AUTH_OK went by */
};

static const char *mode;
static volatile sig_atomic_t release;	/* hold: SIGUSR1 came */
static bool holding;
static uint64_t inject_offset;
static bool attacked;
static FILE *cap_all, *cap_hs;	/* CAPTURE.all, CAPTURE.handshake */

static void capture(FILE *f, const void *p, size_t len)
{
	if (f && (fwrite(p, 1, len, f) != len || fflush(f))) {
		perror("mitm: capture");
		exit(1);
	}
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int send_all(int fd, const void *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p = (const uint8_t *)p + n;
		len -= (size_t)n;
	}
	return 0;
}

static int connect_to(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	int fd;

	if (getaddrinfo(host, port, &hints, &ai))
		return -1;
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	return fd;
}

/* The length of the unit at the start of buf (0: not known yet). */
static size_t unit_len(struct relay *r)
{
	if (r->state == ST_AFTER_AUTH) {
		if (r->have < 4)
			return 0;
		r->state = be32(r->buf) == WIRE_MAGIC ? ST_PLAIN : ST_SEALED;
		printf("mitm: frames after the handshake are %s\n",
		       r->state == ST_PLAIN ? "plain" : "sealed");
		fflush(stdout);
	}
	if (r->state == ST_SEALED)
		return r->have < 4 ? 0 : 4 + (size_t)be32(r->buf);
	return r->have < WIRE_HDR_LEN ? 0 : WIRE_HDR_LEN + (size_t)be32(r->buf + 8);
}

static bool is_write(const struct relay *r, const uint8_t *u, size_t len)
{
	if (r->state == ST_PLAIN)
		return (u[6] << 8 | u[7]) == WIRE_WRITE;
	return r->state == ST_SEALED && len > 4096;
}

/* A WRITE as anyone can make it: in a plain link a frame, in a sealed one
 * the same frame where the ciphertext goes, with a tag of zeroes. */
static int inject(struct relay *r)
{
	static uint8_t data[4096], out[4 + WIRE_HDR_LEN + 16 + sizeof(data) + 16];
	struct wire_msg m = { .type = WIRE_WRITE, .seq = 1u << 30 };
	uint8_t *f = r->state == ST_SEALED ? out + 4 : out;
	ssize_t n;

	memset(data, 0xee, sizeof(data));
	m.u.write = (struct wire_write){ inject_offset, sizeof(data), 0, data };
	n = wire_encode(&m, f, sizeof(out) - 4);
	if (n < 0)
		return -1;
	if (r->state == ST_SEALED) {
		memset(f + n, 0, 16);
		n += 16;
		out[0] = (uint8_t)(n >> 24);
		out[1] = (uint8_t)(n >> 16);
		out[2] = (uint8_t)(n >> 8);
		out[3] = (uint8_t)n;
		n += 4;
	}
	return send_all(r->s, out, (size_t)n);
}

static void note(const char *what)
{
	printf("mitm: %s\n", what);
	fflush(stdout);
	attacked = true;
}

/* One whole unit from the client: forward it, or attack with it. */
static int forward(struct relay *r, uint8_t *u, size_t len)
{
	bool w = is_write(r, u, len);
	int rc;

	capture(cap_all, u, len);
	if (r->state == ST_HANDSHAKE)
		capture(cap_hs, u, len);
	if (r->state == ST_HANDSHAKE && (u[6] << 8 | u[7]) == WIRE_AUTH_OK)
		r->state = ST_AFTER_AUTH;
	if (w)
		r->writes++;
	if (attacked || !strcmp(mode, "none"))
		return send_all(r->s, u, len);
	if (!strcmp(mode, "hold") && r->state != ST_HANDSHAKE && r->state != ST_AFTER_AUTH) {
		uint8_t *nh = realloc(r->held, r->held_len + len);
		if (!nh)
			return -1;
		memcpy(nh + r->held_len, u, len);
		r->held = nh;
		r->held_len += len;
		if (!holding) {
			printf("mitm: holding what the client sends after its handshake\n");
			fflush(stdout);
			holding = true;
		}
		return 0;
	}
	if (!strcmp(mode, "reorder") && r->held) {
		rc = send_all(r->s, u, len);
		if (rc == 0)
			rc = send_all(r->s, r->held, r->held_len);
		note("reordered: the held WRITE went after the next frame");
		return rc;
	}
	if (!w)
		return send_all(r->s, u, len);
	if (!strcmp(mode, "flip") && r->writes == 1) {
		u[len / 2] ^= 0x10;
		note("flipped a bit in a WRITE");
	} else if (!strcmp(mode, "inject") && r->writes == 1) {
		if (send_all(r->s, u, len) < 0)
			return -1;
		note("injected a WRITE of its own");
		return inject(r);
	} else if ((!strcmp(mode, "replay") || !strcmp(mode, "reorder")) && r->writes == 1) {
		r->held = malloc(len);
		if (!r->held)
			return -1;
		memcpy(r->held, u, len);
		r->held_len = len;
		if (!strcmp(mode, "reorder"))
			return 0;	/* sent after the next frame */
	} else if (!strcmp(mode, "replay") && r->writes == 2) {
		if (send_all(r->s, u, len) < 0)
			return -1;
		note("replayed the first WRITE after the second");
		return send_all(r->s, r->held, r->held_len);
	}
	return send_all(r->s, u, len);
}

/* Client bytes arrived: forward every whole unit. */
static int from_client(struct relay *r)
{
	size_t len;
	ssize_t n;

	if (r->cap - r->have < 65536) {
		uint8_t *nb = realloc(r->buf, r->cap * 2);
		if (!nb)
			return -1;
		r->buf = nb;
		r->cap *= 2;
	}
	n = recv(r->c, r->buf + r->have, r->cap - r->have, 0);
	if (n <= 0)
		return -1;
	r->have += (size_t)n;
	while ((len = unit_len(r)) && r->have >= len) {
		if (len > (8u << 20) || forward(r, r->buf, len) < 0)
			return -1;
		memmove(r->buf, r->buf + len, r->have - len);
		r->have -= len;
	}
	return 0;
}

/* The server's handshake frames, for CAPTURE.handshake: assembled from
 * what it sends until its AUTH_OK. */
static void capture_server(struct relay *r, const uint8_t *b, size_t n)
{
	while (cap_hs && !r->sdone && n) {
		size_t want = WIRE_HDR_LEN, take;
		if (r->shave >= WIRE_HDR_LEN)
			want += be32(r->sbuf + 8);
		if (want > sizeof(r->sbuf)) {
			r->sdone = true;	/* not a handshake frame: stop */
			break;
		}
		take = want - r->shave < n ? want - r->shave : n;
		memcpy(r->sbuf + r->shave, b, take);
		r->shave += take;
		b += take;
		n -= take;
		if (r->shave < WIRE_HDR_LEN || r->shave < WIRE_HDR_LEN + be32(r->sbuf + 8))
			continue;
		capture(cap_hs, r->sbuf, r->shave);
		if ((r->sbuf[6] << 8 | r->sbuf[7]) == WIRE_AUTH_OK)
			r->sdone = true;
		r->shave = 0;
	}
}

static int from_server(struct relay *r)
{
	uint8_t b[65536];
	ssize_t n = recv(r->s, b, sizeof(b), 0);

	if (n <= 0)
		return -1;
	capture(cap_all, b, (size_t)n);
	capture_server(r, b, (size_t)n);
	return send_all(r->c, b, (size_t)n);
}

/* hold: SIGUSR1 came; what was held goes, and the rest is relayed. */
static int release_held(struct relay *r)
{
	char what[96];

	release = 0;
	if (!holding || attacked)
		return 0;
	snprintf(what, sizeof(what), "released %zu bytes held", r->held_len);
	note(what);
	return r->s >= 0 && r->held_len ? send_all(r->s, r->held, r->held_len) : 0;
}

static void on_usr1(int sig)
{
	(void)sig;
	release = 1;
}

static void relay_end(struct relay *r)
{
	if (r->c >= 0)
		close(r->c);
	if (r->s >= 0)
		close(r->s);
	free(r->buf);
	free(r->held);
	memset(r, 0, sizeof(*r));
	r->c = r->s = -1;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct relay r = { .c = -1, .s = -1 };
	unsigned conns = 0;
	int lfd, one = 1;

	if (argc != 6 && argc != 7) {
		fprintf(stderr, "usage: mitm LISTEN_PORT HOST PORT "
			"flip|inject|replay|reorder|hold|none INJECT_OFFSET [CAPTURE]\n");
		return 2;
	}
	if (argc == 7) {
		char path[4096];
		snprintf(path, sizeof(path), "%s.all", argv[6]);
		cap_all = fopen(path, "ab");
		snprintf(path, sizeof(path), "%s.handshake", argv[6]);
		cap_hs = fopen(path, "ab");
		if (!cap_all || !cap_hs) {
			perror("mitm: capture");
			return 1;
		}
	}
	mode = argv[4];
	signal(SIGUSR1, on_usr1);
	inject_offset = strtoull(argv[5], NULL, 0);
	sa.sin_port = htons((uint16_t)atoi(argv[1]));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 8) < 0) {
		perror("mitm: listen");
		return 1;
	}
	for (;;) {
		struct pollfd pf[3] = { { lfd, POLLIN, 0 }, { r.c, POLLIN, 0 }, { r.s, POLLIN, 0 } };
		if (poll(pf, 3, 200) < 0 && errno != EINTR)
			return 1;
		if (release && release_held(&r) < 0)
			relay_end(&r);
		if (pf[0].revents & POLLIN) {
			int c = accept(lfd, NULL, NULL);
			if (c < 0)
				continue;
			relay_end(&r);	/* the node gave up the old one */
			r.c = c;
			r.s = connect_to(argv[2], argv[3]);
			r.cap = 1u << 20;
			r.buf = malloc(r.cap);
			printf("mitm: connection %u\n", ++conns);
			fflush(stdout);
			if (r.s < 0 || !r.buf)
				relay_end(&r);
			continue;
		}
		if ((pf[1].revents && from_client(&r) < 0) ||
		    (pf[2].revents && from_server(&r) < 0))
			relay_end(&r);
	}
}
