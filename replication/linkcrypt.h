/* linkcrypt.h: the protection of a replica link after its handshake
 * (linkcrypt.c).  Each frame travels as one record:
 *
 *   u32 length (big-endian, of what follows)  ciphertext  tag[16]
 *
 * AES-256-GCM over the whole frame (its header too, so an observer sees
 * neither types nor sequence numbers), with the length as additional
 * data.  Each direction has its own key, derived per connection from the
 * handshake (wire_auth_session_key, which covers both nonces) with HKDF,
 * and its own 64-bit record counter as the nonce: a record that is
 * altered, forged without the key, replayed or delivered out of order
 * fails its tag.  Pure over byte buffers: no sockets. */
#ifndef REPL_LINKCRYPT_H
#define REPL_LINKCRYPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "wire.h"

#define LC_LEN_BYTES 4
#define LC_TAG_LEN 16
#define LC_OVERHEAD (LC_LEN_BYTES + LC_TAG_LEN)
/* The largest frame a record carries: a full WRITE. */
#define LC_FRAME_MAX (WIRE_HDR_LEN + WIRE_DATA_FIXED + WIRE_DATA_MAX)

struct link_crypt;

/* Whose AES-256-GCM seals and opens (linkcrypt.c says why): the same
 * bytes either way.  Chosen once per process: intel-ipsec-mb where it is
 * built in and the CPU has VAES and VPCLMULQDQ, else OpenSSL; the
 * environment's REPLAGENT_LINK_AEAD=openssl or =ipsec-mb overrides it
 * (benches compare the two). */
enum lc_impl { LC_IMPL_OPENSSL, LC_IMPL_IPSEC_MB };
enum lc_impl repl__lc_impl(void);
const char *repl__lc_impl_name(enum lc_impl i);
/* For connections made from now on (tests cross the two): false when
 * that one is not built in. */
bool repl__lc_set_impl(enum lc_impl i);

/* The keys of one connection, once the peer's proof has been verified
 * (wire_auth_session_key): NULL on failure (errno set). */
struct link_crypt *repl__lc_new(const struct wire_auth *a);
void repl__lc_free(struct link_crypt *c);
/* Seals one frame (the concatenation of iov[0..n-1], 1..LC_FRAME_MAX
 * bytes) into out, which has room for LC_OVERHEAD more bytes than the
 * frame: the record's length, or -EMSGSIZE, -EIO. */
ssize_t repl__lc_seal(struct link_crypt *c, const struct iovec *iov, unsigned n, uint8_t *out);
/* The bytes after a record's length field: its length, or -EMSGSIZE when
 * no frame could be that long. */
ssize_t repl__lc_body_len(const uint8_t len_field[LC_LEN_BYTES]);
/* Opens a received record in place (body: ciphertext and tag, len bytes
 * from repl__lc_body_len): the frame's length at body, or -EBADMSG (the
 * tag does not match: altered, forged, replayed or reordered). */
ssize_t repl__lc_open(struct link_crypt *c, const uint8_t len_field[LC_LEN_BYTES],
		      uint8_t *body, size_t len);

#endif
