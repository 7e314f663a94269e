/* nbd_opt.h: the options of an NBD handshake (nbd_opt.c), for nbd_conn.c,
 * which frames them. */
#ifndef REPL_NBD_OPT_H
#define REPL_NBD_OPT_H

#include <stdint.h>

struct nbd_conn;

/* Loop thread: handles option opt with its data (d, len bytes, inside
 * c->in): queues the replies, and may move c to the transmission phase or
 * start TLS.  0, or -errno to close the connection (-EPROTO: the client
 * broke the protocol). */
int repl__nbd_handle_option(struct nbd_conn *c, uint32_t opt, const uint8_t *d, uint32_t len);

#endif
