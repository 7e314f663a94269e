/* wire.h: the replication wire format between replicas (wire.c, the
 * frames; wire_payload.c, what each type carries), and its mutual
 * authentication handshake (wire_auth.c, wire_names.c, wire_key.c).
 *
 * Pure encode/decode over byte buffers: no sockets, no allocation.  Every
 * frame is a 32-byte header followed by `length` payload bytes; all integers
 * are big-endian (network order):
 *
 *   offset size field
 *      0    4  magic        0x52504c57 ("RPLW")
 *      4    2  version      WIRE_VERSION (7)
 *      6    2  type         enum wire_type
 *      8    4  length       payload bytes, within the type's [min, max]
 *     12    4  flags        WIRE_HF_SEALED or 0
 *     16    8  seq          request id / cookie (acks echo it in the payload)
 *     24    4  payload_crc  CRC32C of the payload; 0 when sealed
 *     28    4  header_crc   CRC32C of bytes 0..27
 *
 * A receiver reads the 32 header bytes, wire_hdr_decode()s them (magic,
 * version, header CRC, type, flags and the length bounds, all before any
 * payload byte is looked at), then reads exactly `length` more bytes and
 * wire_decode_payload()s them.  Payload layouts are in wire_payload.c.
 * Decoders are strict: reserved bytes must be zero and strings
 * zero-padded, so a frame that decodes re-encodes to the same bytes.
 *
 * The CRCs catch corruption, not attackers.  On a link with protection on
 * (the default), every frame after the handshake travels inside a sealed
 * record (linkcrypt.h) whose AEAD tag covers the same bytes, and better:
 * such a frame says WIRE_HF_SEALED and carries no payload CRC, which would
 * cost a second pass over every byte on both sides for nothing.  The
 * header CRC stays (28 bytes).  A frame's flag must match its link: the
 * link layer refuses a sealed frame in clear and a clear one in a record. */
#ifndef REPL_WIRE_H
#define REPL_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define WIRE_MAGIC 0x52504c57u
/* 2: STATE carries a token that ties an outdate confirmation to its
 * notice.  3: no names in HELLO; they travel masked inside AUTH (below).
 * 4: VOLUME carries 8 history generations, not 2 (gen.h GEN_HISTORY).
 * 5: a frame in a sealed record has WIRE_HF_SEALED and no payload CRC.
 * A peer of another version is refused at its first frame. */
#define WIRE_VERSION 7
/* Header flags. */
#define WIRE_HF_SEALED 0x1u	/* in a sealed record; payload_crc is 0 */
#define WIRE_HDR_LEN 32
#define WIRE_DATA_MAX (4u << 20)	/* data bytes in WRITE / RS_DATA */
/* A PING's seq with this bit is not a Primary's "writes below seq are
 * everywhere" but a token its PING_ACK echoes (recent.c's asks). */
#define WIRE_PING_ECHO_BIT (UINT64_C(1) << 62)
/* A seq with this bit is a resync's (RS_DATA, RS_FLUSH and their acks),
 * numbered apart from the Primary's writes. */
#define WIRE_RS_SEQ_BIT (UINT64_C(1) << 63)
#define WIRE_DATA_FIXED 16		/* their fixed part before the data */
#define WIRE_NAME_MAX 64		/* names on the wire, including NUL */
#define WIRE_NONCE_LEN 32
#define WIRE_MAC_LEN 32
#define WIRE_UUID_LEN 16
#define WIRE_HELLO_LEN 16
#define WIRE_GEN_HISTORY 8
#define WIRE_VOLUME_LEN 192
/* The names a handshake binds (struct wire_names), and AUTH: proof, then
 * those names masked. */
#define WIRE_NAMES_LEN (3 * WIRE_NAME_MAX)
#define WIRE_AUTH_LEN (WIRE_MAC_LEN + WIRE_NAMES_LEN)
/* The largest control (non-data) frame, header included. */
#define WIRE_CONTROL_FRAME_MAX (WIRE_HDR_LEN + WIRE_AUTH_LEN)

enum wire_type {
	WIRE_HELLO = 1,
	WIRE_CHALLENGE,
	WIRE_AUTH,
	WIRE_AUTH_OK,
	WIRE_VOLUME,
	WIRE_WRITE,
	WIRE_WRITE_ACK,
	WIRE_FLUSH,
	WIRE_FLUSH_ACK,
	WIRE_TRIM,
	WIRE_ZERO,
	WIRE_RS_REQUEST,
	WIRE_RS_DATA,
	WIRE_RS_ZERO,
	WIRE_STATE,
	WIRE_PING,
	WIRE_PING_ACK,
	WIRE_BYE,
	WIRE_VERIFY_REQ,	/* range: "send me the checksum of this region" */
	WIRE_VERIFY_REPLY,	/* struct wire_verify */
	WIRE_TAKEOVER,		/* live migration: "hand the Primary role to me" */
	WIRE_HANDOVER,		/* the answer: struct wire_handover */
	WIRE_SIZE,		/* "my replica grew to this size" (bytes) */
	WIRE_CKPT,		/* changed-block tracking: struct wire_ckpt (cbt.c) */
	/* A Primary whose own disk failed a read (pread.c): "send me these
	 * bytes" (range), the answer (struct wire_write, flags 0) or its
	 * failure (struct wire_ack: the request's seq, an errno).  Only to
	 * a peer whose HELLO said WIRE_FEAT_READ. */
	WIRE_READ_REQ,
	WIRE_READ_DATA,
	WIRE_READ_FAIL,
	WIRE_TYPE_COUNT		/* one past the last type */
};

/* WRITE, TRIM and ZERO flags. */
#define WIRE_WF_FUA 0x1u	/* durable before the ack */
#define WIRE_WF_NO_HOLE 0x2u	/* ZERO only: allocate, do not punch */

/* TAKEOVER flags. */
#define WIRE_TO_SOFT 0x1u	/* only if the Primary has no NBD client left */

/* Feature bits in HELLO (negotiated: the intersection is used). */
#define WIRE_FEAT_TRIM 0x1u
#define WIRE_FEAT_ZERO 0x2u
/* link-security = aead: frames after the handshake are sealed
 * (linkcrypt.h).  Not negotiated: both sides must say the same. */
#define WIRE_FEAT_AEAD 0x4u
/* The sender answers READ_REQ (negotiated). */
#define WIRE_FEAT_READ 0x8u

enum wire_bye_reason {
	WIRE_BYE_SHUTDOWN = 0,
	WIRE_BYE_ERROR,
	WIRE_BYE_SPLIT_BRAIN,
	WIRE_BYE_UNRELATED,
	WIRE_BYE_REFUSED,
	WIRE_BYE_AUTH,
	WIRE_BYE_SIZE,		/* sizes differ (a resize): wait, then retry */
	WIRE_BYE_DISK,		/* our disk failed what the link carried: retry later */
	WIRE_BYE_REASON_COUNT
};

struct wire_hdr {
	uint16_t version;
	uint16_t type;
	uint32_t length;
	uint32_t flags;
	uint64_t seq;
	uint32_t payload_crc;
};

/* No names: they are not for anyone who listens (see the handshake). */
struct wire_hello {
	uint16_t proto_min, proto_max;
	uint32_t features;
	bool initiator;			/* the sender opened the connection */
};

/* AUTH: the proof, and the sender's names masked (the handshake). */
struct wire_proof {
	uint8_t mac[WIRE_MAC_LEN];
	uint8_t names[WIRE_NAMES_LEN];
};

struct wire_volume {
	uint8_t uuid[WIRE_UUID_LEN];
	char name[WIRE_NAME_MAX];
	uint64_t size;			/* bytes */
	uint64_t current, bitmap, history[WIRE_GEN_HISTORY];	/* generations (gen.h) */
	uint64_t dirty;			/* regions set in the sender's bitmap */
	uint32_t node_id;
	uint32_t region_size;		/* bytes per bitmap bit, power of two */
	uint8_t disk;			/* enum gen_disk, not UNKNOWN */
	uint8_t role;			/* 0 Secondary, 1 Primary */
	bool crashed_primary;
	bool lost_power;		/* gen.h */
	bool host_restarted;		/* gen.h */
	uint8_t peer_disk;		/* sender's view of the receiver's disk */
	bool has_primary;		/* a Primary is connected to the sender */
	bool no_quorum;			/* the sender lacks quorum (cluster mode) */
	bool partial;			/* gen.h; with disk Inconsistent */
};

/* WRITE and RS_DATA.  data points into the decoded buffer (decode) or to
 * the caller's bytes (encode); it is never copied by decode. */
struct wire_write {
	uint64_t offset;
	uint32_t len;			/* 1..WIRE_DATA_MAX */
	uint32_t flags;			/* WRITE: WIRE_WF_FUA; RS_DATA: 0 */
	const uint8_t *data;
	/* Encoding only: the frame's payload CRC when the caller has it
	 * already (wire_payload_crc(), once for every peer it sends the same
	 * frame to); decoding leaves have_crc false. */
	bool have_crc;
	uint32_t payload_crc;
};

/* WRITE_ACK and FLUSH_ACK. */
struct wire_ack {
	uint64_t seq;			/* of the request */
	uint32_t error;			/* 0 or a positive errno < 4096 */
};

/* TRIM, ZERO (len up to 2^64-1 - offset), RS_REQUEST, RS_ZERO (len
 * 1..WIRE_DATA_MAX). */
struct wire_range {
	uint64_t offset;
	uint64_t len;
	uint32_t flags;			/* TRIM: FUA; ZERO: FUA|NO_HOLE; RS_*: 0 */
};

/* VERIFY_REPLY: the CRC32C of a region's bytes (len 1..WIRE_DATA_MAX). */
struct wire_verify {
	uint64_t offset;
	uint32_t len;
	uint32_t crc;
};

/* TAKEOVER: a Secondary with a migration window asks its Primary for the
 * role (window.c). */
struct wire_takeover {
	uint32_t flags;			/* WIRE_TO_SOFT */
};

/* HANDOVER: the Primary's answer.  error 0: it is Secondary now, every
 * write it acknowledged is on the asker, which continues the sequence at
 * seq and keeps the generation current.  Otherwise a positive errno: no. */
struct wire_handover {
	uint32_t error;			/* 0 or a positive errno < 4096 */
	uint64_t seq;
	uint64_t current;
};

/* A Primary that lost a peer sends each other replica a notice (with a
 * token of its own) and holds acknowledgements until each confirms that
 * very notice (confirm, the same token): no other STATE releases them. */
struct wire_state {
	uint8_t role;			/* 0 Secondary, 1 Primary */
	uint8_t disk;			/* enum gen_disk, not UNKNOWN */
	bool outdate_notice;		/* "node outdated_node is Outdated" */
	bool confirm;			/* "I recorded your notice token" */
	bool partial;			/* gen.h; with disk Inconsistent */
	uint32_t outdated_node;		/* 0 unless outdate_notice */
	uint64_t current;		/* sender's current generation */
	uint64_t token;			/* 0 unless outdate_notice or confirm */
};

/* CKPT: the Primary's checkpoints (cbt.c).  CREATE: start one now, in the
 * order of the writes; HAVE: one exists (incomplete where it is new); END:
 * the HAVEs are over (those not named were deleted); DELETE. */
enum wire_ckpt_op {
	WIRE_CKPT_CREATE = 1,
	WIRE_CKPT_HAVE,
	WIRE_CKPT_END,
	WIRE_CKPT_DELETE,
};

struct wire_ckpt {
	uint32_t op;			/* enum wire_ckpt_op */
	char name[WIRE_NAME_MAX];	/* "" with END */
};

struct wire_msg {
	uint16_t type;
	uint64_t seq;
	/* The frame goes (encode) or came (decode) inside a sealed record:
	 * WIRE_HF_SEALED in its header and no payload CRC. */
	bool sealed;
	union {
		struct wire_hello hello;
		uint8_t nonce[WIRE_NONCE_LEN];	/* CHALLENGE */
		struct wire_proof auth;		/* AUTH */
		struct wire_volume volume;
		struct wire_write write;	/* WRITE, RS_DATA */
		struct wire_ack ack;		/* WRITE_ACK, FLUSH_ACK */
		struct wire_range range;	/* TRIM, ZERO, RS_REQUEST, RS_ZERO, VERIFY_REQ */
		struct wire_verify verify;	/* VERIFY_REPLY */
		struct wire_state state;
		struct wire_takeover takeover;
		struct wire_handover handover;
		uint32_t bye_reason;		/* enum wire_bye_reason */
		uint64_t size;			/* SIZE: > 0, a multiple of 512 */
		struct wire_ckpt ckpt;
	} u;				/* AUTH_OK, FLUSH, PING, PING_ACK: empty */
};

/* "HELLO", ...; "?" for an unknown type. */
const char *wire_type_name(uint16_t type);
bool wire_type_valid(uint16_t type);

/* Header: 0, or -EPROTO (short buffer, bad magic, unknown type, flags
 * other than WIRE_HF_SEALED, a sealed header with a payload CRC),
 * -EPROTONOSUPPORT (version), -EBADMSG (header CRC), -EMSGSIZE (length
 * outside the type's bounds). */
int wire_hdr_decode(const uint8_t *buf, size_t len, struct wire_hdr *h);
/* Before authentication only the handshake's frames may come, each of its
 * one exact length (HELLO 16, CHALLENGE 32, AUTH 224, AUTH_OK 0): a header
 * that is anything else (or says sealed) ends the connection before a
 * payload byte is read or a buffer allocated.  h from wire_hdr_decode(). */
bool wire_hdr_before_auth(const struct wire_hdr *h);
/* Payload of a decoded header: 0, or -EMSGSIZE (len != h->length),
 * -EBADMSG (CRC, unless the header says sealed), -EPROTO (bad field). */
int wire_decode_payload(const struct wire_hdr *h, const uint8_t *payload, size_t len,
			struct wire_msg *m);
/* One whole frame, exactly len bytes. */
int wire_decode(const uint8_t *buf, size_t len, struct wire_msg *m);

/* Frame length of m (header included), or -EINVAL if m is not valid. */
ssize_t wire_frame_len(const struct wire_msg *m);
/* Whole frame into buf: its length, or -EINVAL (invalid message, the same
 * checks as decoding), -ENOBUFS (cap too small). */
ssize_t wire_encode(const struct wire_msg *m, uint8_t *buf, size_t cap);
/* Header and fixed part only: for WRITE and RS_DATA the caller sends
 * m->u.write.data after it (writev, no copy); the CRC already covers it.
 * For other types the same as wire_encode. */
ssize_t wire_encode_prefix(const struct wire_msg *m, uint8_t *buf, size_t cap);
/* The payload CRC that encoding m puts in its header (m must be valid,
 * not sealed): for a WRITE sent to several peers, computed once and
 * passed back in m->u.write.payload_crc with have_crc. */
uint32_t wire_payload_crc(const struct wire_msg *m);

/* ---- authentication handshake ----------------------------------------
 *
 * Both sides hold the same key.  Each sends, in order: HELLO (versions,
 * features, its role as initiator or acceptor: no names), CHALLENGE (a
 * fresh 32-byte nonce), AUTH (proof and names), AUTH_OK (it accepted the
 * peer's proof).  The acceptor sends its proof only after it verified the
 * initiator's: a stranger who connects learns nothing keyed from it.
 *
 * Names are never in clear: AUTH carries the sender's claim, the names
 * (initiator node, acceptor node, resource; struct wire_names, 64 bytes
 * each) as it sees them, XORed with a mask only key holders can compute:
 *
 *   mask = HMAC-SHA256(key, "replagent-v3 names" NUL || sender role byte ||
 *                      block byte || initiator nonce || acceptor nonce)
 *          for blocks 0..5, concatenated
 *
 * fresh for every handshake and direction (the nonces, the role byte).  A
 * listener learns neither node nor resource; each volume has its own port,
 * so the acceptor knows the resource, and it learns who connects from the
 * initiator's claim.  The initiator names the node it expects ("": any,
 * tests only); the acceptor's claim repeats the initiator's name and gives
 * its own node and resource.  The proof is
 *
 *   HMAC-SHA256(key, "replagent-v3 auth" NUL || sender role byte ||
 *               initiator nonce || acceptor nonce ||
 *               initiator HELLO payload || acceptor HELLO payload ||
 *               sender's names, unmasked)
 *
 * Fresh nonces defeat replay; the role byte (1 initiator, 0 acceptor)
 * defeats reflection of a proof back to its sender; the HELLOs in the MAC
 * defeat tampering with the negotiation, the names in it tampering with
 * the claim.  A claim is looked at only once the proof over it verified;
 * then it must fit (enum wire_refusal): a peer with our own node name (a
 * relay back to ourselves), another resource, another node than the one
 * expected, or our own nonce is refused.  The acceptor that refuses a
 * verified initiator for its names still sends its own proof and claim
 * first, so that both sides log, authentically, why.  Proofs are compared
 * in constant time.  Once a proof is verified, the WIRE_FEAT_AEAD bits of
 * the two HELLOs must agree, or the handshake fails with -ENOPROTOOPT after
 * sending its own proof (so that both sides know that the settings
 * differ).  The session key (linkcrypt.c) is the same HMAC with
 * "replagent-v3 session" NUL, no role byte, and both claims. */

#define WIRE_KEY_MIN 16
#define WIRE_KEY_MAX 256
#define WIRE_SESSION_KEY_LEN 32

enum { WIRE_AUTH_CONTINUE = 0, WIRE_AUTH_DONE = 1 };

struct wire_auth_params {
	const uint8_t *key;
	size_t keylen;			/* WIRE_KEY_MIN..WIRE_KEY_MAX */
	bool initiator;			/* we opened the connection */
	const char *node;		/* our node name */
	const char *peer;		/* expected peer node name; NULL: any */
	const char *resource;		/* must match the peer's; NULL: "" */
	uint32_t features;
};

struct wire_names {
	char initiator[WIRE_NAME_MAX];	/* the node that connected */
	char acceptor[WIRE_NAME_MAX];	/* the node it connected to; "": any */
	char resource[WIRE_NAME_MAX];	/* what the link replicates */
};

/* Why a peer was refused (-EACCES). */
enum wire_refusal {
	WIRE_REFUSE_NONE = 0,
	WIRE_REFUSE_PROOF,		/* its proof does not fit our key */
	WIRE_REFUSE_NONCE,		/* our own nonce came back */
	WIRE_REFUSE_SELF,		/* it has our node name: a relay to ourselves */
	WIRE_REFUSE_RESOURCE,		/* it replicates another resource */
	WIRE_REFUSE_NOT_US,		/* it took us for another node */
	WIRE_REFUSE_PEER,		/* not the node we expected */
};

/* Opaque in spirit; on the stack, no heap.  Holds a copy of the key:
 * wire_auth_clear() wipes it. */
struct wire_auth {
	uint8_t key[WIRE_KEY_MAX];
	size_t keylen;
	bool initiator;
	unsigned sent, got;		/* bit (type - 1) per frame */
	bool verified;
	int error;			/* sticky, once failed */
	int refuse;			/* the error once our proof is sent */
	char node[WIRE_NAME_MAX], resource[WIRE_NAME_MAX];	/* ours */
	char expect_peer[WIRE_NAME_MAX];
	uint8_t nonce[WIRE_NONCE_LEN], peer_nonce[WIRE_NONCE_LEN];
	uint8_t hello[WIRE_HELLO_LEN], peer_hello[WIRE_HELLO_LEN];
	struct wire_hello self, peer;
	/* Claims, encoded: ours (the acceptor's once it read the
	 * initiator's), the peer's (unmasked, once its proof verified). */
	uint8_t names[WIRE_NAMES_LEN], peer_names[WIRE_NAMES_LEN];
	bool have_names, claimed;
	struct wire_names claim;	/* the peer's, decoded, if claimed */
	enum wire_refusal refusal;
};

/* nonce: 32 fresh random bytes (injected by tests); NULL draws them from
 * getrandom().  0, or -EINVAL (key length, names), -errno from getrandom. */
int wire_auth_init(struct wire_auth *a, const struct wire_auth_params *p,
		   const uint8_t *nonce);
/* The next frame to send: 1 with *len set, 0 when nothing is due now, or
 * the sticky error.  cap >= WIRE_CONTROL_FRAME_MAX is always enough. */
int wire_auth_next(struct wire_auth *a, uint8_t *buf, size_t cap, size_t *len);
/* A received frame: WIRE_AUTH_CONTINUE, WIRE_AUTH_DONE (the peer proved the
 * key and accepted ours; still send what wire_auth_next() has), -EACCES
 * (bad proof, wrong peer or resource), -EPROTO (malformed or out of order).
 * Errors are sticky. */
int wire_auth_receive(struct wire_auth *a, const uint8_t *frame, size_t len);
/* True once the handshake is complete in both directions. */
bool wire_auth_done(const struct wire_auth *a);
/* We sent our AUTH_OK / received the peer's: the last clear frame of each
 * direction (what follows is sealed, with WIRE_FEAT_AEAD). */
bool wire_auth_sent_ok(const struct wire_auth *a);
/* We sent our proof and have not verified the peer's. */
bool wire_auth_proof_pending(const struct wire_auth *a);
bool wire_auth_got_ok(const struct wire_auth *a);
/* The peer's HELLO, valid once received (NULL before). */
const struct wire_hello *wire_auth_peer_hello(const struct wire_auth *a);
/* The peer's node name once its proof verified and its claim fits; NULL
 * before.  ("" for an initiator that expected any acceptor.) */
const char *wire_auth_peer_node(const struct wire_auth *a);
/* Why the peer was refused (WIRE_REFUSE_NONE if it was not); *claim (if
 * not NULL) is set to the peer's names if its proof verified, else NULL. */
enum wire_refusal wire_auth_refusal(const struct wire_auth *a,
				    const struct wire_names **claim);
/* A key both sides derive from the handshake (linkcrypt.c); 0, or -EAGAIN
 * before the peer's proof is verified, -EIO. */
int wire_auth_session_key(const struct wire_auth *a, uint8_t out[WIRE_SESSION_KEY_LEN]);
void wire_auth_clear(struct wire_auth *a);

/* A name as the wire allows it: 1..63 bytes of printable ASCII, no space;
 * empty only if may_be_empty. */
bool wire_name_valid(const char *s, bool may_be_empty);

/* Reads a key file into buf: the key length, or -errno with *why set (if
 * why is not NULL) to a static explanation: -EPERM if the file is readable
 * or writable by group or others or owned by another user, -EINVAL if it is
 * not a regular file or shorter than WIRE_KEY_MIN bytes, -EFBIG if longer
 * than maxlen.  The key is the file's bytes, a trailing newline included. */
ssize_t wire_key_load(const char *path, uint8_t *buf, size_t maxlen, const char **why);

#endif
