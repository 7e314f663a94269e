/* nbd-protocol.h: the NBD wire format (fixed newstyle handshake, simple and
 * structured replies), as the NBD protocol document defines it.  All fields
 * are big-endian on the wire; the packed structs here are only used with
 * be*toh/htobe* on every field.  Constants only: no behaviour. */
#ifndef REPL_NBD_PROTOCOL_H
#define REPL_NBD_PROTOCOL_H

#include <stdint.h>

#define NBD_MAGIC		0x4e42444d41474943ULL	/* "NBDMAGIC" */
#define NBD_IHAVEOPT		0x49484156454F5054ULL	/* "IHAVEOPT" */
#define NBD_REP_MAGIC		0x0003e889045565a9ULL
#define NBD_REQUEST_MAGIC	0x25609513u
#define NBD_SIMPLE_REPLY_MAGIC	0x67446698u
#define NBD_STRUCTURED_REPLY_MAGIC 0x668e33efu

/* handshake flags (server) */
#define NBD_FLAG_FIXED_NEWSTYLE	(1u << 0)
#define NBD_FLAG_NO_ZEROES	(1u << 1)
/* client flags */
#define NBD_FLAG_C_FIXED_NEWSTYLE (1u << 0)
#define NBD_FLAG_C_NO_ZEROES	(1u << 1)

/* transmission flags */
#define NBD_FLAG_HAS_FLAGS	(1u << 0)
#define NBD_FLAG_READ_ONLY	(1u << 1)
#define NBD_FLAG_SEND_FLUSH	(1u << 2)
#define NBD_FLAG_SEND_FUA	(1u << 3)
#define NBD_FLAG_ROTATIONAL	(1u << 4)
#define NBD_FLAG_SEND_TRIM	(1u << 5)
#define NBD_FLAG_SEND_WRITE_ZEROES (1u << 6)
#define NBD_FLAG_SEND_DF	(1u << 7)
#define NBD_FLAG_CAN_MULTI_CONN	(1u << 8)
#define NBD_FLAG_SEND_RESIZE	(1u << 9)
#define NBD_FLAG_SEND_CACHE	(1u << 10)
#define NBD_FLAG_SEND_FAST_ZERO	(1u << 11)

/* options */
#define NBD_OPT_EXPORT_NAME	1
#define NBD_OPT_ABORT		2
#define NBD_OPT_LIST		3
#define NBD_OPT_STARTTLS	5
#define NBD_OPT_INFO		6
#define NBD_OPT_GO		7
#define NBD_OPT_STRUCTURED_REPLY 8
#define NBD_OPT_LIST_META_CONTEXT 9
#define NBD_OPT_SET_META_CONTEXT 10

/* option replies */
#define NBD_REP_ACK		1
#define NBD_REP_SERVER		2
#define NBD_REP_INFO		3
#define NBD_REP_META_CONTEXT	4
#define NBD_REP_FLAG_ERROR	(1u << 31)
#define NBD_REP_ERR_UNSUP	(NBD_REP_FLAG_ERROR | 1)
#define NBD_REP_ERR_POLICY	(NBD_REP_FLAG_ERROR | 2)
#define NBD_REP_ERR_INVALID	(NBD_REP_FLAG_ERROR | 3)
#define NBD_REP_ERR_PLATFORM	(NBD_REP_FLAG_ERROR | 4)
#define NBD_REP_ERR_TLS_REQD	(NBD_REP_FLAG_ERROR | 5)
#define NBD_REP_ERR_UNKNOWN	(NBD_REP_FLAG_ERROR | 6)
#define NBD_REP_ERR_SHUTDOWN	(NBD_REP_FLAG_ERROR | 7)
#define NBD_REP_ERR_BLOCK_SIZE_REQD (NBD_REP_FLAG_ERROR | 8)
#define NBD_REP_ERR_TOO_BIG	(NBD_REP_FLAG_ERROR | 9)

/* NBD_REP_INFO types */
#define NBD_INFO_EXPORT		0
#define NBD_INFO_NAME		1
#define NBD_INFO_DESCRIPTION	2
#define NBD_INFO_BLOCK_SIZE	3

/* commands */
#define NBD_CMD_READ		0
#define NBD_CMD_WRITE		1
#define NBD_CMD_DISC		2
#define NBD_CMD_FLUSH		3
#define NBD_CMD_TRIM		4
#define NBD_CMD_CACHE		5
#define NBD_CMD_WRITE_ZEROES	6
#define NBD_CMD_BLOCK_STATUS	7

/* command flags */
#define NBD_CMD_FLAG_FUA	(1u << 0)
#define NBD_CMD_FLAG_NO_HOLE	(1u << 1)
#define NBD_CMD_FLAG_DF		(1u << 2)
#define NBD_CMD_FLAG_REQ_ONE	(1u << 3)
#define NBD_CMD_FLAG_FAST_ZERO	(1u << 4)

/* structured reply */
#define NBD_REPLY_FLAG_DONE	(1u << 0)
#define NBD_REPLY_TYPE_NONE	0
#define NBD_REPLY_TYPE_OFFSET_DATA 1
#define NBD_REPLY_TYPE_OFFSET_HOLE 2
#define NBD_REPLY_TYPE_BLOCK_STATUS 5
#define NBD_REPLY_TYPE_ERROR	32769
#define NBD_REPLY_TYPE_ERROR_OFFSET 32770

/* errors */
#define NBD_EPERM	1
#define NBD_EIO		5
#define NBD_ENOMEM	12
#define NBD_EINVAL	22
#define NBD_ENOSPC	28
#define NBD_EOVERFLOW	75
#define NBD_ENOTSUP	95
#define NBD_ESHUTDOWN	108

struct nbd_option_hdr {		/* client -> server */
	uint64_t magic;		/* NBD_IHAVEOPT */
	uint32_t option;
	uint32_t length;
} __attribute__((packed));

struct nbd_option_reply {	/* server -> client */
	uint64_t magic;		/* NBD_REP_MAGIC */
	uint32_t option;
	uint32_t reply;
	uint32_t length;
} __attribute__((packed));

struct nbd_request {
	uint32_t magic;		/* NBD_REQUEST_MAGIC */
	uint16_t flags;
	uint16_t type;
	uint64_t cookie;
	uint64_t offset;
	uint32_t count;
} __attribute__((packed));

struct nbd_simple_reply {
	uint32_t magic;		/* NBD_SIMPLE_REPLY_MAGIC */
	uint32_t error;
	uint64_t cookie;
} __attribute__((packed));

struct nbd_structured_reply {
	uint32_t magic;		/* NBD_STRUCTURED_REPLY_MAGIC */
	uint16_t flags;
	uint16_t type;
	uint64_t cookie;
	uint32_t length;
} __attribute__((packed));

/* Limits this server enforces (and advertises in NBD_INFO_BLOCK_SIZE). */
#define NBD_MAX_PAYLOAD		(32u * 1024 * 1024)
#define NBD_MAX_OPTION_LEN	(64u * 1024)
#define NBD_MAX_NAME_LEN	4096u

#endif
