/* test-wire-names: names stay out of the handshake's clear bytes (wire.h,
 * wire_names.c).  The codec is strict; the mask differs per direction and
 * handshake and undoes itself; the refusal rules come from a table; and a
 * whole handshake between two sides shows no name in any frame while each
 * side learns the other's, and each refusal (key, our own name, another
 * resource, another node) is reported with its reason on the side that
 * checks it, and with the peer's claim once its proof verified. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "unit.h"
#include "util.h"
#include "wire.h"
#include "wire_names.h"

static const uint8_t key1[32] = "0123456789abcdef0123456789abcdef";
static const uint8_t key2[32] = "fedcba9876543210fedcba9876543210";

static void test_codec(void)
{
	struct wire_names n = { "node-a.example", "node-b", "vm42" }, d;
	uint8_t b[WIRE_NAMES_LEN], c[WIRE_NAMES_LEN];

	repl__names_put(b, &n);
	CHECK(repl__names_get(b, &d) == 0);
	CHECK(!strcmp(d.initiator, n.initiator) && !strcmp(d.acceptor, n.acceptor) &&
	      !strcmp(d.resource, n.resource));
	n.acceptor[0] = 0;	/* "any", from an initiator that names none */
	repl__names_put(b, &n);
	CHECK(repl__names_get(b, &d) == 0 && d.acceptor[0] == 0);

	static const struct { size_t off; uint8_t val; const char *what; } bad[] = {
		{ 0, 0, "empty initiator (junk after the NUL)" },
		{ 1, ' ', "space" },
		{ 1, '\n', "control character" },
		{ 1, 0xc3, "high bit" },
		{ 63, 'x', "no NUL" },
		{ 64 + 40, 'x', "junk after the acceptor's NUL" },
		{ 128, 0, "empty resource" },
		{ 191, 'x', "resource without NUL" },
	};
	n = (struct wire_names){ "node-a.example", "node-b", "vm42" };
	repl__names_put(b, &n);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		memcpy(c, b, sizeof(c));
		c[bad[i].off] = bad[i].val;
		CHECK_MSG(repl__names_get(c, &d) == -EPROTO, "%s", bad[i].what);
	}
}

static void test_mask(void)
{
	static const uint8_t n1[WIRE_NONCE_LEN] = { 1 }, n2[WIRE_NONCE_LEN] = { 2 };
	struct wire_names n = { "alpha", "beta", "vm42" };
	uint8_t plain[WIRE_NAMES_LEN], a[WIRE_NAMES_LEN], b[WIRE_NAMES_LEN];

	repl__names_put(plain, &n);
	memcpy(a, plain, sizeof(a));
	CHECK(repl__names_mask(key1, 32, true, n1, n2, a) == 0);
	CHECK(memcmp(a, plain, sizeof(a)) != 0);
	CHECK(memmem(a, sizeof(a), "alpha", 5) == NULL && memmem(a, sizeof(a), "vm42", 4) == NULL);
	/* Every 32-byte block is masked (no zero padding shows through). */
	for (size_t off = 0; off < WIRE_NAMES_LEN; off += 32) {
		bool same = true;
		for (size_t i = 0; i < 32; i++)
			same &= a[off + i] == plain[off + i];
		CHECK_MSG(!same, "block at %zu not masked", off);
	}
	memcpy(b, a, sizeof(b));
	CHECK(repl__names_mask(key1, 32, true, n1, n2, b) == 0);
	CHECK(memcmp(b, plain, sizeof(b)) == 0);	/* undoes itself */
	/* Another direction, other nonces, another key: another mask. */
	memcpy(b, plain, sizeof(b));
	CHECK(repl__names_mask(key1, 32, false, n1, n2, b) == 0 && memcmp(a, b, sizeof(a)));
	memcpy(b, plain, sizeof(b));
	CHECK(repl__names_mask(key1, 32, true, n2, n1, b) == 0 && memcmp(a, b, sizeof(a)));
	memcpy(b, plain, sizeof(b));
	CHECK(repl__names_mask(key2, 32, true, n1, n2, b) == 0 && memcmp(a, b, sizeof(a)));
}

static void test_refusal_table(void)
{
	static const struct {
		struct wire_names claim;
		bool we_initiate;
		const char *node, *resource, *expect;
		enum wire_refusal want;
	} t[] = {
		/* acceptor "b" of "vm42" */
		{ { "a", "b", "vm42" }, false, "b", "vm42", "", WIRE_REFUSE_NONE },
		{ { "a", "", "vm42" }, false, "b", "vm42", "", WIRE_REFUSE_NONE },
		{ { "b", "b", "vm42" }, false, "b", "vm42", "", WIRE_REFUSE_SELF },
		{ { "b", "c", "vm43" }, false, "b", "vm42", "", WIRE_REFUSE_SELF },
		{ { "a", "b", "vm43" }, false, "b", "vm42", "", WIRE_REFUSE_RESOURCE },
		{ { "a", "c", "vm43" }, false, "b", "vm42", "", WIRE_REFUSE_RESOURCE },
		{ { "a", "c", "vm42" }, false, "b", "vm42", "", WIRE_REFUSE_NOT_US },
		{ { "a", "b", "vm42" }, false, "b", "vm42", "a", WIRE_REFUSE_NONE },
		{ { "x", "b", "vm42" }, false, "b", "vm42", "a", WIRE_REFUSE_PEER },
		/* initiator "a" of "vm42", expecting "b" (or anyone) */
		{ { "a", "b", "vm42" }, true, "a", "vm42", "b", WIRE_REFUSE_NONE },
		{ { "a", "c", "vm42" }, true, "a", "vm42", "", WIRE_REFUSE_NONE },
		{ { "a", "a", "vm42" }, true, "a", "vm42", "b", WIRE_REFUSE_SELF },
		{ { "a", "b", "vm43" }, true, "a", "vm42", "b", WIRE_REFUSE_RESOURCE },
		{ { "x", "b", "vm42" }, true, "a", "vm42", "b", WIRE_REFUSE_NOT_US },
		{ { "a", "c", "vm42" }, true, "a", "vm42", "b", WIRE_REFUSE_PEER },
	};

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		enum wire_refusal got = repl__names_refusal(&t[i].claim, t[i].we_initiate,
							    t[i].node, t[i].resource,
							    t[i].expect);
		CHECK_MSG(got == t[i].want, "row %zu: got %d, want %d", i, got, t[i].want);
	}
}

/* ---- whole handshakes ------------------------------------------------ */

struct side {
	struct wire_auth a;
	int rc;
};

static void setup(struct side *s, const uint8_t *key, bool initiator, const char *node,
		  const char *peer, const char *resource, uint8_t nonce_byte)
{
	struct wire_auth_params p = {
		.key = key, .keylen = 32, .initiator = initiator, .node = node,
		.peer = peer, .resource = resource, .features = WIRE_FEAT_AEAD,
	};
	uint8_t nonce[WIRE_NONCE_LEN];

	memset(nonce, nonce_byte, sizeof(nonce));
	memset(s, 0, sizeof(*s));
	CHECK(wire_auth_init(&s->a, &p, nonce) == 0);
}

/* Runs both sides; every frame either sends goes through seen (all the
 * bytes of the handshake, as a listener gets them). */
static size_t pump(struct side *x, struct side *y, uint8_t *seen, size_t cap)
{
	struct side *sides[2] = { x, y };
	size_t have = 0;
	bool progress = true;

	while (progress) {
		progress = false;
		for (unsigned dir = 0; dir < 2; dir++) {
			uint8_t f[WIRE_CONTROL_FRAME_MAX];
			size_t len;

			while (wire_auth_next(&sides[dir]->a, f, sizeof(f), &len) == 1) {
				progress = true;
				if (have + len <= cap) {
					memcpy(seen + have, f, len);
					have += len;
				}
				if (!sides[!dir]->a.error)
					sides[!dir]->rc = wire_auth_receive(&sides[!dir]->a, f, len);
			}
		}
	}
	return have;
}

static bool shows(const uint8_t *seen, size_t len, const char *s)
{
	return memmem(seen, len, s, strlen(s)) != NULL;
}

static void test_listener_sees_no_names(void)
{
	struct side i, a;
	uint8_t seen[4096];
	size_t n;
	const struct wire_names *c;

	setup(&i, key1, true, "alpha-node", "beta-node", "volume42", 0x11);
	setup(&a, key1, false, "beta-node", NULL, "volume42", 0x22);
	n = pump(&i, &a, seen, sizeof(seen));
	CHECK(wire_auth_done(&i.a) && wire_auth_done(&a.a));
	CHECK(n == 2 * (4 * WIRE_HDR_LEN + WIRE_HELLO_LEN + WIRE_NONCE_LEN + WIRE_AUTH_LEN));
	CHECK(!shows(seen, n, "alpha") && !shows(seen, n, "beta") && !shows(seen, n, "volume"));
	/* Yet each side knows the other. */
	CHECK(!strcmp(wire_auth_peer_node(&a.a), "alpha-node"));
	CHECK(!strcmp(wire_auth_peer_node(&i.a), "beta-node"));
	CHECK(wire_auth_refusal(&a.a, &c) == WIRE_REFUSE_NONE && c &&
	      !strcmp(c->resource, "volume42"));
}

/* A refusal: the side that checks reports why, and the peer's claim iff
 * the peer's proof verified.  The acceptor that refuses a verified
 * initiator for its names still proves its key, so the initiator (whose
 * rule fires too) reports as well. */
static void refused(const char *what, struct side *checker, enum wire_refusal why,
		    bool claim)
{
	const struct wire_names *c;

	/* (The acceptor's refusal for names comes after its proof, from
	 * wire_auth_next: the error is sticky either way.) */
	CHECK_MSG(checker->a.error == -EACCES, "%s: error %d", what, checker->a.error);
	CHECK_MSG(wire_auth_refusal(&checker->a, &c) == why, "%s: refusal %d, want %d", what,
		  wire_auth_refusal(&checker->a, NULL), why);
	CHECK_MSG((c != NULL) == claim, "%s: claim %s", what, c ? "given" : "missing");
	CHECK_MSG(wire_auth_peer_node(&checker->a) == NULL, "%s: peer named", what);
}

static void test_refusals(void)
{
	struct side i, a;
	uint8_t seen[4096];
	const struct wire_names *c;

	/* Another key: the acceptor refuses the proof, learns no name, and
	 * the initiator is left waiting for a close. */
	setup(&i, key1, true, "alpha", "beta", "vm42", 0x11);
	setup(&a, key2, false, "beta", NULL, "vm42", 0x22);
	pump(&i, &a, seen, sizeof(seen));
	refused("other key", &a, WIRE_REFUSE_PROOF, false);
	CHECK(i.rc == WIRE_AUTH_CONTINUE && wire_auth_proof_pending(&i.a));

	/* A relay of alpha's connection back to alpha's own listener. */
	setup(&i, key1, true, "alpha", "beta", "vm42", 0x11);
	setup(&a, key1, false, "alpha", NULL, "vm42", 0x22);
	pump(&i, &a, seen, sizeof(seen));
	refused("relay to itself, acceptor", &a, WIRE_REFUSE_SELF, true);
	refused("relay to itself, initiator", &i, WIRE_REFUSE_SELF, true);

	/* Another resource on that port: both say which. */
	setup(&i, key1, true, "alpha", "beta", "vm42", 0x11);
	setup(&a, key1, false, "beta", NULL, "other", 0x22);
	pump(&i, &a, seen, sizeof(seen));
	refused("other resource, acceptor", &a, WIRE_REFUSE_RESOURCE, true);
	refused("other resource, initiator", &i, WIRE_REFUSE_RESOURCE, true);
	wire_auth_refusal(&i.a, &c);
	CHECK(c && !strcmp(c->resource, "other") && !strcmp(c->acceptor, "beta"));
	wire_auth_refusal(&a.a, &c);
	CHECK(c && !strcmp(c->resource, "vm42") && !strcmp(c->initiator, "alpha"));

	/* alpha expected beta at this address; gamma answers. */
	setup(&i, key1, true, "alpha", "beta", "vm42", 0x11);
	setup(&a, key1, false, "gamma", NULL, "vm42", 0x22);
	pump(&i, &a, seen, sizeof(seen));
	refused("another node, acceptor", &a, WIRE_REFUSE_NOT_US, true);
	refused("another node, initiator", &i, WIRE_REFUSE_PEER, true);

	/* Neither side's session key is to be had after a refusal. */
	{
		uint8_t k[WIRE_SESSION_KEY_LEN];
		CHECK(wire_auth_session_key(&i.a, k) == -EAGAIN);
		CHECK(wire_auth_session_key(&a.a, k) == -EAGAIN);
	}
}

int main(void)
{
	test_codec();
	test_mask();
	test_refusal_table();
	test_listener_sees_no_names();
	test_refusals();
	return unit_done("test-wire-names");
}
