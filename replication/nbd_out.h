/* nbd_out.h: an NBD connection's output queue and the close of its sides
 * (nbd_out.c), for the files that handle the connection (nbd_conn_int.h).
 * Functions ending in _locked want c->lock held; the others take it
 * themselves, except the queue's own push and pop (see each). */
#ifndef REPL_NBD_OUT_H
#define REPL_NBD_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct nbd_conn;
struct outmsg;

/* Appends m (c->lock held, or no other thread can hold it). */
void repl__nbd_out_push(struct nbd_conn *c, struct outmsg *m);
/* Drops the first message, sent or not (as repl__nbd_out_push). */
void repl__nbd_out_pop(struct nbd_conn *c);
/* Sends what the socket takes now; the rest waits for POLLOUT.  A socket
 * error marks the connection dead. */
void repl__nbd_flush_locked(struct nbd_conn *c);
void repl__nbd_conn_flush(struct nbd_conn *c);
/* A handshake-phase message, a then b, copied and counted in the option
 * reply backlog: 0 or -ENOMEM. */
int repl__nbd_send_bytes(struct nbd_conn *c, const void *a, size_t alen,
			 const void *b, size_t blen);
/* An option reply carrying len bytes of data, or a message: 0 or -ENOMEM. */
int repl__nbd_opt_reply(struct nbd_conn *c, uint32_t opt, uint32_t reply,
			const void *data, uint32_t len);
int repl__nbd_opt_error(struct nbd_conn *c, uint32_t opt, uint32_t reply, const char *msg);
/* Loop thread: no more requests (dead: no more replies either). */
void repl__nbd_conn_close_side(struct nbd_conn *c, bool dead);

#endif
