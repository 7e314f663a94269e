/* nbd_conn_int.h: one NBD client connection as the files that handle it
 * share it (nbd_conn.c: reading and parsing, the handshake limits, the
 * lifetime; nbd_opt.c: the handshake's options; nbd_cmd.c: the requests
 * of the transmission phase and their replies; nbd_out.c: the output
 * queue; nbd_notify.c: workers handing a connection back to the loop),
 * and nobody else.  Which thread may touch what, and under which lock, is
 * written at the top of nbd_conn.c. */
#ifndef REPL_NBD_CONN_INT_H
#define REPL_NBD_CONN_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "repl_int.h"

struct nbd_meta_sel;
struct nbd_tls;

enum conn_state { CS_CLIENT_FLAGS, CS_OPTIONS, CS_TRANSMISSION };

struct outmsg {
	struct outmsg *next;
	struct iovec iov[2];
	unsigned niov;
	size_t backlog;			/* bytes counted in the conn's out_backlog */
	void (*free)(struct outmsg *m);
};

struct nbd_req {
	struct repl_io io;		/* first: container_of by cast */
	struct outmsg out;
	struct nbd_conn *conn;
	uint64_t cookie;
	size_t buflen;			/* counted in inflight_bytes */
	uint16_t type;
	uint16_t cmd_flags;
	size_t reply_len;		/* BLOCK_STATUS: the reply in io.buf */
	uint8_t hdr[32];
	uint64_t start_ns;		/* for the latency histogram (stats.h) */
};

struct nbd_conn {
	struct repl_engine *eng;
	struct nbd_conn *next, *prev;
	int fd;
	enum conn_state state;
	unsigned events;
	uint8_t *in;
	size_t in_start, in_end;
	struct repl_volume *vol;
	uint64_t size;			/* negotiated: the export's size for good */
	bool structured;
	bool no_zeroes;
	struct nbd_meta_sel *meta;	/* selected metadata contexts (nbd_meta.c) */
	struct nbd_req *rx;		/* write whose payload is arriving */
	size_t rx_have;
	uint64_t discard_left;		/* payload of a refused write */
	struct outmsg *out_head, **out_tail;
	size_t out_backlog;		/* option replies queued, not sent */
	struct nbd_source src;
	void *hs_timer;			/* the handshake's deadline */
	uint64_t active_ms;		/* connected, or last option handled */
	bool sent_option;
	unsigned inflight;
	size_t inflight_bytes;
	unsigned busy;
	pthread_mutex_t lock;
	struct ratelimit fail_log;	/* failed requests' messages, under lock */
	bool notified;			/* on the engine's notify list */
	struct nbd_conn *notify_next;
	bool registered;		/* fd is in the loop */
	bool read_closed;		/* EOF, DISC, ABORT or stopping */
	bool dead;			/* socket unusable: send nothing more */
	/* Replies of a batch, sent at its end (nbd_cmd.c). Loop thread. */
	struct repl_deferred replies;
	struct nbd_tls *tls;		/* after NBD_OPT_STARTTLS (nbd_tls.c) */
};

#endif
