/* wire_names.c: the names of a replica link's handshake (initiator node,
 * acceptor node, resource) as they travel inside AUTH: encoded, masked
 * with a keystream only holders of the link key can compute, and checked
 * against what this side expects once the proof over them verified.  The
 * mask is HMAC-SHA256 in counter mode over the sender's role and both
 * nonces (wire.h): fresh for each handshake and direction, so a listener
 * learns nothing; it is not an integrity check, the proof is (it covers
 * the names unmasked), which is why a claim is decoded only after its
 * proof verified.  Pure functions over buffers. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "wire_names.h"

static const char mask_label[] = "replagent-v3 names";	/* with its NUL */

static void put_name(uint8_t *p, const char *s)
{
	memset(p, 0, WIRE_NAME_MAX);
	memcpy(p, s, strnlen(s, WIRE_NAME_MAX - 1));
}

/* Canonical only: a NUL inside, zeros after it, a valid name. */
static int get_name(char *out, const uint8_t *p, bool may_be_empty)
{
	const uint8_t *nul = memchr(p, 0, WIRE_NAME_MAX);

	if (!nul)
		return -EPROTO;
	for (const uint8_t *q = nul; q < p + WIRE_NAME_MAX; q++)
		if (*q)
			return -EPROTO;
	memcpy(out, p, WIRE_NAME_MAX);
	return wire_name_valid(out, may_be_empty) ? 0 : -EPROTO;
}

void repl__names_put(uint8_t out[WIRE_NAMES_LEN], const struct wire_names *n)
{
	put_name(out, n->initiator);
	put_name(out + WIRE_NAME_MAX, n->acceptor);
	put_name(out + 2 * WIRE_NAME_MAX, n->resource);
}

int repl__names_get(const uint8_t in[WIRE_NAMES_LEN], struct wire_names *n)
{
	if (get_name(n->initiator, in, false) ||
	    get_name(n->acceptor, in + WIRE_NAME_MAX, true) ||
	    get_name(n->resource, in + 2 * WIRE_NAME_MAX, false))
		return -EPROTO;
	return 0;
}

int repl__names_mask(const uint8_t *key, size_t keylen, bool of_initiator,
		     const uint8_t n_i[WIRE_NONCE_LEN], const uint8_t n_a[WIRE_NONCE_LEN],
		     uint8_t buf[WIRE_NAMES_LEN])
{
	uint8_t msg[sizeof(mask_label) + 2 + 2 * WIRE_NONCE_LEN], block[WIRE_MAC_LEN];
	size_t n = sizeof(mask_label);

	memcpy(msg, mask_label, sizeof(mask_label));
	msg[n++] = of_initiator;
	msg[n++] = 0;			/* the block number */
	memcpy(msg + n, n_i, WIRE_NONCE_LEN);
	memcpy(msg + n + WIRE_NONCE_LEN, n_a, WIRE_NONCE_LEN);
	for (size_t off = 0; off < WIRE_NAMES_LEN; off += WIRE_MAC_LEN) {
		unsigned int outlen = 0;

		msg[sizeof(mask_label) + 1] = (uint8_t)(off / WIRE_MAC_LEN);
		if (!HMAC(EVP_sha256(), key, (int)keylen, msg, sizeof(msg), block, &outlen) ||
		    outlen != WIRE_MAC_LEN)
			return -EIO;
		for (size_t i = 0; i < WIRE_MAC_LEN && off + i < WIRE_NAMES_LEN; i++)
			buf[off + i] ^= block[i];
	}
	return 0;
}

enum wire_refusal repl__names_refusal(const struct wire_names *claim, bool we_initiate,
				      const char *node, const char *resource,
				      const char *expect_peer)
{
	const char *them = we_initiate ? claim->acceptor : claim->initiator;
	const char *us = we_initiate ? claim->initiator : claim->acceptor;

	if (strcmp(them, node) == 0)
		return WIRE_REFUSE_SELF;
	if (strcmp(claim->resource, resource) != 0)
		return WIRE_REFUSE_RESOURCE;
	if (us[0] && strcmp(us, node) != 0)
		return WIRE_REFUSE_NOT_US;
	if (expect_peer[0] && strcmp(them, expect_peer) != 0)
		return WIRE_REFUSE_PEER;
	return WIRE_REFUSE_NONE;
}
