/* wire_auth.c: the authentication handshake of a replica link (wire.h
 * says what it proves and how; wire_names.c carries the names): a state
 * machine over frames, no sockets, no allocation.  It was wire.c's; it
 * lives apart so that the frame format and the handshake each stay a file
 * one can read whole. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "util.h"
#include "wire.h"
#include "wire_names.h"

#define BIT(type) (1u << ((type) - 1))

static const char auth_label[] = "replagent-v3 auth";	/* with its NUL */
static const char session_label[] = "replagent-v3 session";

/* HMAC-SHA256 over label, an optional role byte, the transcript and one
 * or two encoded claims (names2 may be NULL). */
static int transcript_mac(const struct wire_auth *a, const char *label, size_t label_len,
			  int role, const uint8_t *names, const uint8_t *names2,
			  uint8_t out[WIRE_MAC_LEN])
{
	uint8_t msg[32 + 1 + 2 * WIRE_NONCE_LEN + 2 * WIRE_HELLO_LEN + 2 * WIRE_NAMES_LEN];
	const uint8_t *n_i = a->initiator ? a->nonce : a->peer_nonce;
	const uint8_t *n_a = a->initiator ? a->peer_nonce : a->nonce;
	const uint8_t *h_i = a->initiator ? a->hello : a->peer_hello;
	const uint8_t *h_a = a->initiator ? a->peer_hello : a->hello;
	unsigned int outlen = 0;
	size_t n = 0;

	memcpy(msg, label, label_len);
	n += label_len;
	if (role >= 0)
		msg[n++] = (uint8_t)role;
	memcpy(msg + n, n_i, WIRE_NONCE_LEN);
	n += WIRE_NONCE_LEN;
	memcpy(msg + n, n_a, WIRE_NONCE_LEN);
	n += WIRE_NONCE_LEN;
	memcpy(msg + n, h_i, WIRE_HELLO_LEN);
	n += WIRE_HELLO_LEN;
	memcpy(msg + n, h_a, WIRE_HELLO_LEN);
	n += WIRE_HELLO_LEN;
	memcpy(msg + n, names, WIRE_NAMES_LEN);
	n += WIRE_NAMES_LEN;
	if (names2) {
		memcpy(msg + n, names2, WIRE_NAMES_LEN);
		n += WIRE_NAMES_LEN;
	}
	if (!HMAC(EVP_sha256(), a->key, (int)a->keylen, msg, n, out, &outlen) ||
	    outlen != WIRE_MAC_LEN)
		return -EIO;
	return 0;
}

/* The proof of the initiator or the acceptor over its claim. */
static int proof(const struct wire_auth *a, bool of_initiator, const uint8_t *names,
		 uint8_t out[WIRE_MAC_LEN])
{
	return transcript_mac(a, auth_label, sizeof(auth_label), of_initiator, names, NULL, out);
}

static int mask(const struct wire_auth *a, bool of_initiator, uint8_t buf[WIRE_NAMES_LEN])
{
	const uint8_t *n_i = a->initiator ? a->nonce : a->peer_nonce;
	const uint8_t *n_a = a->initiator ? a->peer_nonce : a->nonce;

	return repl__names_mask(a->key, a->keylen, of_initiator, n_i, n_a, buf);
}

int wire_auth_init(struct wire_auth *a, const struct wire_auth_params *p,
		   const uint8_t *nonce)
{
	struct wire_msg m = { .type = WIRE_HELLO };
	uint8_t frame[WIRE_HDR_LEN + WIRE_HELLO_LEN];
	const char *resource = p->resource ? p->resource : "";
	int r;

	memset(a, 0, sizeof(*a));
	if (!p->key || p->keylen < WIRE_KEY_MIN || p->keylen > WIRE_KEY_MAX)
		return -EINVAL;
	if (!p->node || !wire_name_valid(p->node, false) || !wire_name_valid(resource, true))
		return -EINVAL;
	if (p->peer && !wire_name_valid(p->peer, false))
		return -EINVAL;

	memcpy(a->key, p->key, p->keylen);
	a->keylen = p->keylen;
	a->initiator = p->initiator;
	if (p->peer)
		strcpy(a->expect_peer, p->peer);
	strcpy(a->node, p->node);
	strcpy(a->resource, resource);
	if (p->initiator) {
		struct wire_names n = { .initiator = "" };

		strcpy(n.initiator, p->node);
		strcpy(n.acceptor, a->expect_peer);
		strcpy(n.resource, resource);
		repl__names_put(a->names, &n);
		a->have_names = true;
	}
	m.u.hello = (struct wire_hello){
		.proto_min = WIRE_VERSION, .proto_max = WIRE_VERSION,
		.features = p->features, .initiator = p->initiator,
	};
	a->self = m.u.hello;
	if (wire_encode(&m, frame, sizeof(frame)) != (ssize_t)sizeof(frame)) {
		wire_auth_clear(a);
		return -EINVAL;
	}
	memcpy(a->hello, frame + WIRE_HDR_LEN, WIRE_HELLO_LEN);
	if (nonce) {
		memcpy(a->nonce, nonce, WIRE_NONCE_LEN);
	} else {
		r = random_bytes(a->nonce, WIRE_NONCE_LEN);
		if (r) {
			wire_auth_clear(a);
			return r;
		}
	}
	return 0;
}

static int auth_fail(struct wire_auth *a, int err)
{
	a->error = err;
	return err;
}

static int refuse(struct wire_auth *a, enum wire_refusal why)
{
	a->refusal = why;
	return -EACCES;
}

int wire_auth_next(struct wire_auth *a, uint8_t *buf, size_t cap, size_t *len)
{
	struct wire_msg m = { 0 };
	ssize_t n;
	int r;

	if (a->error)
		return a->error;
	if (!(a->sent & BIT(WIRE_HELLO))) {
		m.type = WIRE_HELLO;
		m.u.hello = a->self;
	} else if (!(a->sent & BIT(WIRE_CHALLENGE))) {
		m.type = WIRE_CHALLENGE;
		memcpy(m.u.nonce, a->nonce, WIRE_NONCE_LEN);
	} else if (!(a->sent & BIT(WIRE_AUTH)) && (a->got & BIT(WIRE_CHALLENGE)) &&
		   (a->initiator || a->verified)) {
		m.type = WIRE_AUTH;
		memcpy(m.u.auth.names, a->names, WIRE_NAMES_LEN);
		r = proof(a, a->initiator, a->names, m.u.auth.mac);
		if (r == 0)
			r = mask(a, a->initiator, m.u.auth.names);
		if (r)
			return auth_fail(a, r);
	} else if (a->refuse) {
		return auth_fail(a, a->refuse);
	} else if (!(a->sent & BIT(WIRE_AUTH_OK)) && a->verified) {
		m.type = WIRE_AUTH_OK;
	} else {
		return 0;
	}
	m.seq = m.type - 1;
	n = wire_encode(&m, buf, cap);
	if (n < 0)
		return (int)n;
	a->sent |= BIT(m.type);
	*len = (size_t)n;
	return 1;
}

static int got_hello(struct wire_auth *a, const struct wire_msg *m, const uint8_t *payload)
{
	const struct wire_hello *h = &m->u.hello;

	if (h->proto_min > WIRE_VERSION || h->proto_max < WIRE_VERSION)
		return -EPROTO;
	if (h->initiator == a->initiator)
		return -EPROTO;
	a->peer = *h;
	memcpy(a->peer_hello, payload, WIRE_HELLO_LEN);
	return 0;
}

/* The peer's AUTH: its proof over its claim first, then the claim.  An
 * acceptor makes its own claim from the initiator's; if it refuses a
 * verified initiator for the names, it still sends its proof (refuse). */
static int got_auth(struct wire_auth *a, const struct wire_msg *m)
{
	uint8_t want[WIRE_MAC_LEN], names[WIRE_NAMES_LEN];
	enum wire_refusal why;
	int r;

	if (!(a->sent & BIT(WIRE_CHALLENGE)))
		return -EPROTO;
	memcpy(names, m->u.auth.names, WIRE_NAMES_LEN);
	r = mask(a, !a->initiator, names);
	if (r == 0)
		r = proof(a, !a->initiator, names, want);
	if (r)
		return r;
	if (CRYPTO_memcmp(want, m->u.auth.mac, WIRE_MAC_LEN) != 0)
		return refuse(a, WIRE_REFUSE_PROOF);
	/* A key holder's claim: malformed is a bug, not an attack. */
	if (repl__names_get(names, &a->claim))
		return -EPROTO;
	memcpy(a->peer_names, names, WIRE_NAMES_LEN);
	a->claimed = true;
	why = repl__names_refusal(&a->claim, a->initiator, a->node, a->resource,
				  a->expect_peer);
	if (a->initiator)
		return why ? refuse(a, why) : 0;
	if (!a->have_names) {
		struct wire_names n = a->claim;

		strcpy(n.acceptor, a->node);
		strcpy(n.resource, a->resource);
		repl__names_put(a->names, &n);
		a->have_names = true;
	}
	if (why) {
		a->refusal = why;
		a->refuse = -EACCES;	/* after our proof and claim */
	}
	return 0;
}

int wire_auth_receive(struct wire_auth *a, const uint8_t *frame, size_t len)
{
	static const uint16_t order[] = { WIRE_HELLO, WIRE_CHALLENGE, WIRE_AUTH, WIRE_AUTH_OK };
	struct wire_msg m;
	uint16_t want = 0;
	int r = 0;

	if (a->error)
		return a->error;
	for (size_t i = 0; i < ARRAY_SIZE(order) && !want; i++)
		if (!(a->got & BIT(order[i])))
			want = order[i];
	if (!want || wire_decode(frame, len, &m) || m.type != want || m.seq != want - 1u ||
	    m.sealed)
		return auth_fail(a, -EPROTO);

	switch (m.type) {
	case WIRE_HELLO:
		r = got_hello(a, &m, frame + WIRE_HDR_LEN);
		break;
	case WIRE_CHALLENGE:
		if (CRYPTO_memcmp(m.u.nonce, a->nonce, WIRE_NONCE_LEN) == 0)
			r = refuse(a, WIRE_REFUSE_NONCE);	/* reflected */
		else
			memcpy(a->peer_nonce, m.u.nonce, WIRE_NONCE_LEN);
		break;
	case WIRE_AUTH:
		r = got_auth(a, &m);
		if (r == 0) {
			a->verified = true;
			if (!a->refuse && ((a->self.features ^ a->peer.features) & WIRE_FEAT_AEAD))
				a->refuse = -ENOPROTOOPT;
		}
		break;
	case WIRE_AUTH_OK:
		if (!(a->sent & BIT(WIRE_AUTH)))
			r = -EPROTO;
		break;
	}
	if (r)
		return auth_fail(a, r);
	a->got |= BIT(m.type);
	return (a->got & BIT(WIRE_AUTH_OK)) ? WIRE_AUTH_DONE : WIRE_AUTH_CONTINUE;
}

bool wire_auth_done(const struct wire_auth *a)
{
	return !a->error && a->verified && !a->refuse && (a->got & BIT(WIRE_AUTH_OK)) &&
	       (a->sent & BIT(WIRE_AUTH_OK));
}

const struct wire_hello *wire_auth_peer_hello(const struct wire_auth *a)
{
	return (a->got & BIT(WIRE_HELLO)) ? &a->peer : NULL;
}

const char *wire_auth_peer_node(const struct wire_auth *a)
{
	if (a->error || !a->verified || a->refuse)
		return NULL;
	return a->initiator ? a->claim.acceptor : a->claim.initiator;
}

enum wire_refusal wire_auth_refusal(const struct wire_auth *a, const struct wire_names **claim)
{
	if (claim)
		*claim = a->claimed ? &a->claim : NULL;
	return a->refusal;
}

bool wire_auth_sent_ok(const struct wire_auth *a)
{
	return a->sent & BIT(WIRE_AUTH_OK);
}

bool wire_auth_proof_pending(const struct wire_auth *a)
{
	return (a->sent & BIT(WIRE_AUTH)) && !a->verified;
}

bool wire_auth_got_ok(const struct wire_auth *a)
{
	return a->got & BIT(WIRE_AUTH_OK);
}

int wire_auth_session_key(const struct wire_auth *a, uint8_t out[WIRE_SESSION_KEY_LEN])
{
	const uint8_t *n_i = a->initiator ? a->names : a->peer_names;
	const uint8_t *n_a = a->initiator ? a->peer_names : a->names;

	if (a->error || !a->verified || a->refuse)
		return -EAGAIN;
	return transcript_mac(a, session_label, sizeof(session_label), -1, n_i, n_a, out);
}

void wire_auth_clear(struct wire_auth *a)
{
	OPENSSL_cleanse(a, sizeof(*a));
}
