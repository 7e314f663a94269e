/* nbd_meta.h: NBD metadata contexts (NBD_OPT_LIST/SET_META_CONTEXT and
 * NBD_CMD_BLOCK_STATUS), a table of what this server offers; nbd_conn.c
 * only carries the bytes.  See nbd_meta.c. */
#ifndef REPL_NBD_META_H
#define REPL_NBD_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nbd-protocol.h"

struct repl_engine;
struct repl_volume;

#define NBD_META_MAX		16	/* contexts one client may select */
#define NBD_META_NAME_MAX	256	/* bytes of a context name */
#define NBD_META_EXTENTS_MAX	1024	/* descriptors per context in a reply */

/* base:allocation status flags */
#define NBD_STATE_HOLE		(1u << 0)
#define NBD_STATE_ZERO		(1u << 1)

struct nbd_meta_ctx {
	unsigned kind;			/* index in nbd_meta.c's table */
	char name[NBD_META_NAME_MAX];	/* the full context name */
};

/* What a client selected (NBD_OPT_SET_META_CONTEXT), or what a LIST found;
 * context ids are index + 1. */
struct nbd_meta_sel {
	char export[NBD_MAX_NAME_LEN + 1];
	unsigned n;
	struct nbd_meta_ctx ctx[NBD_META_MAX];
};

struct nbd_extent {
	uint32_t len;
	uint32_t flags;
};

/* The export name of a LIST/SET_META_CONTEXT option's data (NUL
 * terminated into export, which holds NBD_MAX_NAME_LEN + 1 bytes): 0, or
 * NBD_REP_ERR_INVALID and *why.  Pure. */
uint32_t repl__nbd_meta_export(const uint8_t *d, uint32_t len, char *export,
			       const char **why);
/* The contexts of vol (NULL: no such export) that the option's queries
 * select (list: LIST semantics, a bare "namespace:" or no query at all
 * matches all of them), into *sel: 0, or an NBD_REP_ERR_* and *why.
 * Queries that match nothing are not an error. */
uint32_t repl__nbd_meta_query(struct repl_volume *vol, bool list, const uint8_t *d,
			      uint32_t len, struct nbd_meta_sel *sel, const char **why);
/* NBD_OPT_LIST/SET_META_CONTEXT (opt) with its data: answers through
 * reply (an NBD_REP_META_CONTEXT per context and NBD_REP_ACK, or an error
 * reply) and, for SET, replaces *sel (malloc'd; the caller frees it).
 * 0, or -errno when the connection must close. */
int repl__nbd_meta_option(struct repl_engine *eng, uint32_t opt, const uint8_t *d,
			  uint32_t len, bool structured, struct nbd_meta_sel **sel,
			  int (*reply)(void *arg, uint32_t opt, uint32_t type, const void *data,
				       uint32_t len),
			  void *arg);
/* Worker thread: the whole structured reply to an NBD_CMD_BLOCK_STATUS of
 * [off, off+len) (one NBD_REPLY_TYPE_BLOCK_STATUS chunk per selected
 * context, the last one flagged done), in a new buffer *buf of *buflen
 * bytes.  The extents start at off, cover at most len bytes (less when
 * there would be more than NBD_META_EXTENTS_MAX of them) and are one per
 * context with req_one.  0 or -errno. */
int repl__nbd_meta_reply(struct repl_volume *vol, const struct nbd_meta_sel *sel,
			 uint64_t cookie, uint64_t off, uint32_t len, bool req_one,
			 void **buf, size_t *buflen);
/* base:allocation of a store (worker thread): up to max extents from off,
 * covering at most len bytes, into e; *n how many.  0 or -errno. */
int repl__nbd_meta_allocation(int fd, bool blockdev, uint64_t off, uint32_t len,
			      struct nbd_extent *e, unsigned max, unsigned *n);

#endif
