/* link.h: one replication connection as a byte pipe of frames (link.c):
 * the socket, the send queue, reading and decoding frames, the
 * authentication handshake, ping and timeouts, and the listener that
 * accepts links.  It knows nothing of replicas, generations or roles:
 * what a link means is the owner's (peer.c), which hands link.c a table of
 * callbacks and is never called by name from here.  Loop thread only. */
#ifndef REPL_LINK_H
#define REPL_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "repl_int.h"
#include "wire.h"

struct link_crypt;
struct peer;
struct peer_link;
struct txmsg;

/* What the owner of links does with them.  Each returns 0 or -errno (the
 * link then fails, and fail() is called if the link has an owner). */
struct repl_link_ops {
	/* The handshake is complete: an accepted link (l->p NULL) must get
	 * its owner here (l->p set), or fail. */
	int (*authed)(struct peer_link *l);
	/* A decoded frame after authentication; payload (may be NULL) is the
	 * callee's, m->u.write.data points into it. */
	int (*frame)(struct peer_link *l, struct wire_msg *m, uint8_t *payload);
	/* The peer's proof failed (-EACCES): set l->why if it can say more. */
	void (*refused)(struct peer_link *l);
	/* An owned link failed: the owner closes it (repl__link_close). */
	void (*fail)(struct peer_link *l, const char *why);
	/* Owned and past its own handshake (pings are due, not a timeout)? */
	bool (*up)(const struct peer_link *l);
};

struct peer_link {
	struct repl_volume *vol;
	struct peer *p;			/* owner; NULL until an accepted link names itself */
	const struct repl_link_ops *ops;
	struct peer_link *next;		/* volume's unidentified links */
	int fd;
	bool registered;
	unsigned events;
	struct wire_auth auth;
	char why[256];			/* a refusal more precise than the errno */
	bool authed;
	/* link-security = aead (linkcrypt.h): the keys, and whether frames
	 * we send / receive are sealed now (from our / the peer's AUTH_OK) */
	struct link_crypt *lc;
	bool tx_sealed, rx_sealed;
	unsigned busy;			/* inside link_event: free later */
	bool dead;
	/* receive: one recv a wake-up into rx (rx_small until the link is
	 * authenticated, then LINK_RX_STAGE bytes), from which every whole
	 * frame is taken: its header, then exactly h.length payload bytes
	 * (the rest of a large payload is read straight into it) */
	uint8_t *rx;
	size_t rx_cap, rx_off, rx_end;	/* rx[rx_off, rx_end): not taken yet */
	uint8_t rx_small[256];
	uint8_t hdr[WIRE_HDR_LEN];
	size_t hdr_have;
	struct wire_hdr h;
	uint8_t *payload;
	size_t pay_have;
	/* send: frames queued in a batch (loop.c) go out at its end, together */
	struct txmsg *tx_head, **tx_tail;
	struct repl_deferred flush_later;
	uint64_t last_rx_ms, started_ms;
	void *tick;
	struct sockaddr_storage src;	/* accepted: who connected (family 0: unknown) */
};

/* A link on a connected socket fd (p: we opened it for p, whose node is
 * named peer_node; both NULL: accepted).  NULL on failure (fd is then the
 * caller's to close). */
struct peer_link *repl__link_new(struct repl_volume *vol, int fd, struct peer *p,
				 const char *peer_node, const struct repl_link_ops *ops);
/* Sends what the handshake has to send now: 0 or -errno. */
int repl__link_start(struct peer_link *l);
/* Queues a frame: the encoded prefix, then data (not copied; it must live
 * until sent or the link closes; owned is freed then).  0, or -errno
 * (-EPIPE: the socket failed, the read side will notice and close). */
int repl__link_send(struct peer_link *l, const struct wire_msg *m, const void *data,
		    size_t dlen, void *owned);
/* Writes what the socket takes now: 0 or -errno. */
int repl__link_flush(struct peer_link *l);
/* Frames sent on l from now on go in sealed records (no payload CRC). */
bool repl__link_sealed(const struct peer_link *l);
/* The features (WIRE_FEAT_*) both sides' HELLOs named; 0 before them. */
uint32_t repl__link_features(const struct peer_link *l);
/* Closes the socket now; the memory goes when no handler is running on it. */
void repl__link_close(struct peer_link *l);

/* The volume's listener: accepted links get ops.  0 or -errno. */
int repl__link_listen(struct repl_volume *vol, const char *host, const char *port,
		      const struct repl_link_ops *ops);
/* Closes the listener and the links it accepted that have no owner yet. */
void repl__link_listen_stop(struct repl_volume *vol);

#endif
