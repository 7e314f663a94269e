/* nbd_tls.h: TLS for NBD over TCP (NBD_OPT_STARTTLS, X.509, GnuTLS), behind
 * a socket-like read/write interface so nbd_conn.c only swaps its recv and
 * sendmsg calls.  A NULL session means a plain socket. */
#ifndef REPL_NBD_TLS_H
#define REPL_NBD_TLS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

struct repl_engine;
struct nbd_tls;			/* one connection's session */
struct nbd_tls_creds;		/* the engine's certificates and allow list */

/* What to do with an option before TLS (pure). */
enum nbd_tls_gate {
	NBD_TLS_PASS,		/* handle it */
	NBD_TLS_REFUSE,		/* NBD_REP_ERR_TLS_REQD */
	NBD_TLS_CLOSE,		/* NBD_OPT_EXPORT_NAME has no error reply */
};
enum nbd_tls_gate repl__nbd_tls_gate(bool required, bool active, uint32_t opt);

/* Must a client from a TCP listener (tcp) use TLS on this engine? */
bool repl__nbd_tls_required(const struct repl_engine *eng, bool tcp);
/* Can this engine offer STARTTLS to such a client? */
bool repl__nbd_tls_offered(const struct repl_engine *eng, bool tcp);

/* A server session on fd, its handshake driven by the first reads:
 * 0 or -errno. */
int repl__nbd_tls_new(struct repl_engine *eng, int fd, struct nbd_tls **out);
void repl__nbd_tls_free(struct nbd_tls *t);

/* Like recv(fd, buf, len, MSG_DONTWAIT) and sendmsg(fd, msg, MSG_NOSIGNAL |
 * MSG_DONTWAIT): bytes, 0 at EOF (recv), or -1 with errno (EAGAIN: try
 * again on the socket's next event).  During the handshake a read drives
 * it and returns EAGAIN until it is done; a failed handshake or a bad
 * record is logged and gives EPROTO.  A send that returned EAGAIN must be
 * called again with the same first bytes (nbd_conn.c's queue does that). */
ssize_t repl__nbd_recv(struct nbd_tls *t, int fd, void *buf, size_t len);
ssize_t repl__nbd_sendmsg(struct nbd_tls *t, int fd, const struct msghdr *msg);

/* Decrypted bytes wait in the session: the socket will not say POLLIN
 * for them. */
bool repl__nbd_tls_pending(const struct nbd_tls *t);
/* The handshake is under way; wants_write: it waits for POLLOUT. */
bool repl__nbd_tls_handshaking(const struct nbd_tls *t);
bool repl__nbd_tls_wants_write(const struct nbd_tls *t);

void repl__nbd_tls_creds_free(struct nbd_tls_creds *cr);

#endif
