/* clmsg.h: the messages replagentd nodes exchange in the "replagent" CPG
 * group: node announcements, volume definitions, outdate notices, role
 * broadcasts.
 *
 * Pure encode/decode over byte buffers: no I/O, no allocation, no corosync.
 * Every message is a 16-byte header followed by `length` payload bytes; all
 * integers are big-endian:
 *
 *   offset size field
 *      0    4  magic    0x52504c43 ("RPLC")
 *      4    2  version  CLMSG_VERSION (1)
 *      6    2  type     enum clmsg_type
 *      8    4  length   payload bytes, within the type's [min, max]
 *     12    4  flags    none defined yet: must be 0
 *
 * The header (buffer length, magic, version, type, flags, length bounds) is
 * checked before any payload byte is read.  Strings on the wire are a u8
 * length (1..max) and that many bytes, with no NUL and only the characters
 * their kind allows.  A message that decodes is valid by the same checks
 * encoding applies, and re-encodes to the same bytes.  Payload layouts are
 * in clmsg.c.
 *
 * This is not the replication wire format between replicas (that is
 * replication/wire.h), and it knows nothing about what a receiver does with
 * a message. */
#ifndef REPL_AGENT_CLMSG_H
#define REPL_AGENT_CLMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CLMSG_MAGIC 0x52504c43u
#define CLMSG_VERSION 1
#define CLMSG_HDR_LEN 16
#define CLMSG_NAME_MAX 64	/* volume and node names, including NUL (as wire.h) */
#define CLMSG_ADDR_MAX 256	/* replication address, including NUL */
#define CLMSG_NODES_MIN 2
#define CLMSG_NODES_MAX 3
#define CLMSG_UUID_LEN 16
#define CLMSG_SECTOR 512	/* volume sizes are multiples of this */
/* The longest message of any type (an ANNOUNCE with the longest strings),
 * header included: a buffer this big always encodes. */
#define CLMSG_MAX_LEN (CLMSG_HDR_LEN + 4 + 1 + (CLMSG_NAME_MAX - 1) + 1 + (CLMSG_ADDR_MAX - 1))

enum clmsg_type {
	CLMSG_ANNOUNCE = 1,
	CLMSG_VOLDEF,
	CLMSG_OUTDATE,
	CLMSG_ROLE,
	CLMSG_SYNC_DONE,
	CLMSG_TYPE_COUNT	/* one past the last type: handler tables */
};

/* "I am node `node` (corosync nodeid `nodeid`); replicas reach me at
 * `addr` (an IP address or a host name)". */
struct clmsg_announce {
	uint32_t nodeid;		/* non-zero */
	char node[CLMSG_NAME_MAX];
	char addr[CLMSG_ADDR_MAX];
};

/* One version of a volume definition; also what voldb stores.  A deleted
 * definition (a tombstone) keeps the fields of the one it deleted. */
struct voldef {
	char name[CLMSG_NAME_MAX];	/* clmsg_volume_name_ok() */
	uint64_t size;			/* bytes, > 0, multiple of 512, <= INT64_MAX */
	uint8_t n_nodes;		/* CLMSG_NODES_MIN..CLMSG_NODES_MAX */
	char nodes[CLMSG_NODES_MAX][CLMSG_NAME_MAX];	/* distinct; unused ones "" */
	uint16_t port;			/* replication port, non-zero, same on every node */
	uint64_t version;		/* >= 1 */
	uint32_t origin;		/* nodeid that made this version, non-zero */
	bool deleted;
	uint8_t uuid[CLMSG_UUID_LEN];	/* random, made by the creator */
};

/* "Node `node`'s replica of `volume` is Outdated" (durable on receipt). */
struct clmsg_outdate {
	char volume[CLMSG_NAME_MAX];
	char node[CLMSG_NAME_MAX];
	uint64_t generation;		/* opaque token */
	uint32_t from;			/* nodeid of the sender, non-zero */
};

/* `node`'s role and disk state for `volume`.  A Primary that took the
 * role by a live migration's handover says so: its claim may be ordered
 * before the old Primary's demotion, and that is no crossing. */
enum {
	CLMSG_ROLE_SECONDARY = 0,
	CLMSG_ROLE_PRIMARY = 1,
	CLMSG_ROLE_HANDED_OVER = 2,
};
struct clmsg_role {
	char volume[CLMSG_NAME_MAX];
	char node[CLMSG_NAME_MAX];
	uint8_t role;			/* CLMSG_ROLE_* */
	uint8_t disk;			/* enum gen_disk, GEN_DISK_UNKNOWN allowed */
};

/* "Node `nodeid` has sent all of its state after a membership change". */
struct clmsg_sync_done {
	uint32_t nodeid;		/* non-zero */
};

struct clmsg {
	uint16_t type;			/* enum clmsg_type */
	union {
		struct clmsg_announce announce;
		struct voldef voldef;
		struct clmsg_outdate outdate;
		struct clmsg_role role;
		struct clmsg_sync_done sync_done;
	} u;
};

/* "ANNOUNCE", ...; "?" for an unknown type. */
const char *clmsg_type_name(uint16_t type);
bool clmsg_type_valid(uint16_t type);

/* Name syntax.  Volume names: 1..63 of [A-Za-z0-9_.-], not starting with
 * '.' or '-' (no hidden files, nothing that reads as an option).  Node
 * names: 1..63 of [A-Za-z0-9_.:-].  Addresses: 1..255 of [A-Za-z0-9_.:%-]
 * (host names, IPv4, IPv6 with a zone). */
bool clmsg_volume_name_ok(const char *s);
bool clmsg_node_name_ok(const char *s);
bool clmsg_addr_ok(const char *s);

/* 0, or -EINVAL with *why (if why) set to a static sentence for people. */
int voldef_check(const struct voldef *v, const char **why);

/* Whole message into buf: its length, or -EINVAL (m is not valid: the same
 * checks as decoding), -ENOBUFS (cap too small; CLMSG_MAX_LEN always
 * suffices). */
ssize_t clmsg_encode(const struct clmsg *m, uint8_t *buf, size_t cap);
/* One whole message of exactly len bytes into *out (zeroed first): 0, or
 * -EPROTO (shorter than a header, bad magic, unknown type, flags, a bad
 * field, bytes left over), -EPROTONOSUPPORT (version), -EMSGSIZE (length
 * field disagrees with len, or outside the type's bounds). */
int clmsg_decode(const uint8_t *buf, size_t len, struct clmsg *out);
/* The header of a message of any protocol version, so that a receiver can
 * tell another version from garbage: 0 with *version and *type (as that
 * version numbers its types), or -EPROTO (shorter than a header, bad
 * magic). */
int clmsg_peek(const uint8_t *buf, size_t len, uint16_t *version, uint16_t *type);

/* The member that sent a message: corosync's word, not the message's. */
struct clmsg_sender {
	uint32_t nodeid;		/* the CPG sender */
	const char *name;		/* its node name as corosync names it, or
					 * as it announced itself (checked then);
					 * NULL: not known */
};
/* 0 if every node id and name that m gives for its own sender is the
 * sender's: ANNOUNCE's nodeid (and its name, when s->name is known),
 * OUTDATE's from, ROLE's node (whose name must be known: a member names
 * itself before it claims a role), SYNC_DONE's nodeid.  A VOLDEF names
 * its author, not its sender (every member repeats every definition), and
 * passes.  -EPERM otherwise, with *why (if why) a static sentence. */
int clmsg_check_sender(const struct clmsg *m, const struct clmsg_sender *s, const char **why);

#endif
