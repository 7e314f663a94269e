/* nbd_cmd.h: the transmission phase of an NBD connection (nbd_cmd.c), for
 * nbd_conn.c, which reads the bytes. */
#ifndef REPL_NBD_CMD_H
#define REPL_NBD_CMD_H

#include <stdbool.h>
#include <stdint.h>

struct nbd_conn;
struct nbd_req;
struct outmsg;

/* Loop thread: parses one request header at p (sizeof(struct nbd_request)
 * bytes are there) and starts the request or answers it; a write's payload
 * is then awaited in c->rx.  Returns bytes consumed or -errno (-EPROTO:
 * close the connection). */
int repl__nbd_handle_request(struct nbd_conn *c, const uint8_t *p);
/* Loop thread: starts req on the volume (a write once its payload is in). */
void repl__nbd_req_start(struct nbd_conn *c, struct nbd_req *req);
/* Frees the request whose reply m is and takes it out of the window.
 * Called with c->lock held, or when no other thread can hold it. */
void repl__nbd_req_out_free(struct outmsg *m);
/* Loop thread, at the end of a batch (c->replies): sends the replies its
 * requests queued. */
void repl__nbd_replies_send(void *conn);
/* Room in the window for more requests.  Called with c->lock held. */
bool repl__nbd_window_open_locked(const struct nbd_conn *c);

#endif
