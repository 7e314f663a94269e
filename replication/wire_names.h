/* wire_names.h: the names a replica link's handshake binds, and how they
 * travel (wire_names.c; the protocol is described in wire.h). */
#ifndef REPL_WIRE_NAMES_H
#define REPL_WIRE_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

/* Encodes n (valid names) into WIRE_NAMES_LEN bytes, zero-padded. */
void repl__names_put(uint8_t out[WIRE_NAMES_LEN], const struct wire_names *n);
/* Decodes: 0, or -EPROTO (not canonical, an invalid name, an empty
 * initiator or resource). */
int repl__names_get(const uint8_t in[WIRE_NAMES_LEN], struct wire_names *n);
/* XORs buf with the mask of the sender (of_initiator) for this pair of
 * nonces; applying it twice gives buf back.  0 or -EIO. */
int repl__names_mask(const uint8_t *key, size_t keylen, bool of_initiator,
		     const uint8_t n_i[WIRE_NONCE_LEN], const uint8_t n_a[WIRE_NONCE_LEN],
		     uint8_t buf[WIRE_NAMES_LEN]);
/* Does the peer's verified claim fit us (we_initiate, our node and
 * resource, the peer we expect or "" for any)?  WIRE_REFUSE_NONE, or why
 * not, checked in this order: SELF, RESOURCE, NOT_US, PEER. */
enum wire_refusal repl__names_refusal(const struct wire_names *claim, bool we_initiate,
				      const char *node, const char *resource,
				      const char *expect_peer);

#endif
