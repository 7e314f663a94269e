/* test-linkcrypt: the sealing of replica frames after the handshake
 * (linkcrypt.h) and the handshake rules it relies on (wire.h): both sides
 * derive matching keys, one per direction; a record that is altered,
 * forged, replayed, reordered or sent back to its sender fails; the
 * acceptor proves its key only after the initiator's proof; a mixed
 * link-security is refused on both sides once the proofs are verified. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linkcrypt.h"
#include "unit.h"
#include "wire.h"

static const uint8_t key1[32] = "0123456789abcdef0123456789abcdef";

struct side {
	struct wire_auth a;
	int rc;
	unsigned proofs;	/* AUTH frames it sent */
};

static void setup(struct side *s, bool initiator, const char *node, uint32_t features,
		  uint8_t nonce_byte)
{
	struct wire_auth_params p = {
		.key = key1, .keylen = 32, .initiator = initiator, .node = node,
		.peer = initiator ? "beta" : NULL,	/* as link.c: it names whom it calls */
		.resource = "vm42", .features = features,
	};
	uint8_t nonce[WIRE_NONCE_LEN];

	memset(nonce, nonce_byte, sizeof(nonce));
	memset(s, 0, sizeof(*s));
	CHECK(wire_auth_init(&s->a, &p, nonce) == 0);
}

/* One side sends all it has, the other receives it. */
static bool step(struct side *from, struct side *to)
{
	uint8_t f[WIRE_CONTROL_FRAME_MAX];
	bool any = false;
	size_t len;

	while (wire_auth_next(&from->a, f, sizeof(f), &len) == 1) {
		struct wire_hdr h;
		any = true;
		if (wire_hdr_decode(f, len, &h) == 0 && h.type == WIRE_AUTH)
			from->proofs++;
		if (!to->a.error)
			to->rc = wire_auth_receive(&to->a, f, len);
	}
	return any;
}

static void handshake(struct side *i, struct side *a)
{
	while (step(i, a) | step(a, i))
		;
}

static ssize_t seal1(struct link_crypt *c, const void *frame, size_t len, uint8_t *out)
{
	struct iovec iov = { (void *)frame, len };

	return repl__lc_seal(c, &iov, 1, out);
}

/* Opens a record as a receiver would: length field, then body. */
static ssize_t open1(struct link_crypt *c, uint8_t *rec, size_t len)
{
	ssize_t body = repl__lc_body_len(rec);

	if (body < 0)
		return body;
	if ((size_t)body != len - LC_LEN_BYTES)
		return -EPROTO;
	return repl__lc_open(c, rec, rec + LC_LEN_BYTES, (size_t)body);
}

static void test_order_and_mismatch(void)
{
	struct side i, a;

	/* The acceptor's first round has no proof in it; the initiator's
	 * second round (after the acceptor's CHALLENGE) has. */
	setup(&i, true, "alpha", WIRE_FEAT_AEAD, 1);
	setup(&a, false, "beta", WIRE_FEAT_AEAD, 2);
	step(&i, &a);
	step(&a, &i);
	CHECK(a.proofs == 0 && i.proofs == 0);
	step(&i, &a);
	CHECK(i.proofs == 1);
	step(&a, &i);
	CHECK(a.proofs == 1);
	handshake(&i, &a);
	CHECK(wire_auth_done(&i.a) && wire_auth_done(&a.a));

	/* aead against none: both proofs are sent, then both sides refuse. */
	setup(&i, true, "alpha", WIRE_FEAT_AEAD, 1);
	setup(&a, false, "beta", 0, 2);
	handshake(&i, &a);
	CHECK(!wire_auth_done(&i.a) && !wire_auth_done(&a.a));
	CHECK(a.proofs == 1 && i.proofs == 1);
	CHECK(i.a.error == -ENOPROTOOPT && a.a.error == -ENOPROTOOPT);
	/* Each knows, from the verified claim, whom to name in its log (the
	 * names are not in any HELLO). */
	{
		const struct wire_names *ci, *ca;
		CHECK(wire_auth_refusal(&i.a, &ci) == WIRE_REFUSE_NONE && ci &&
		      !strcmp(ci->acceptor, "beta"));
		CHECK(wire_auth_refusal(&a.a, &ca) == WIRE_REFUSE_NONE && ca &&
		      !strcmp(ca->initiator, "alpha"));
	}
}

static void test_records(void)
{
	struct side i, a;
	struct link_crypt *ci, *ca, *ci2;
	uint8_t frame[300], r1[400], r2[400], r3[400], copy[400];
	ssize_t n1, n2, n3;

	setup(&i, true, "alpha", WIRE_FEAT_AEAD, 1);
	setup(&a, false, "beta", WIRE_FEAT_AEAD, 2);
	handshake(&i, &a);
	CHECK(wire_auth_done(&i.a) && wire_auth_done(&a.a));
	ci = repl__lc_new(&i.a);
	ca = repl__lc_new(&a.a);
	CHECK(ci && ca);
	if (!ci || !ca)
		return;
	for (size_t k = 0; k < sizeof(frame); k++)
		frame[k] = (uint8_t)k;

	/* Round trip, and the ciphertext is not the frame. */
	n1 = seal1(ci, frame, 100, r1);
	CHECK(n1 == 100 + LC_OVERHEAD);
	CHECK(memmem(r1, (size_t)n1, frame + 8, 32) == NULL);
	memcpy(copy, r1, (size_t)n1);
	CHECK(open1(ca, copy, (size_t)n1) == 100 && memcmp(copy + LC_LEN_BYTES, frame, 100) == 0);

	/* Replayed: the same record again fails (the counter moved on). */
	memcpy(copy, r1, (size_t)n1);
	CHECK(open1(ca, copy, (size_t)n1) == -EBADMSG);
	repl__lc_free(ca);

	/* Reordered: records 2 and 3 swapped. */
	ca = repl__lc_new(&a.a);
	ci2 = repl__lc_new(&i.a);
	n1 = seal1(ci2, frame, 50, r1);
	n2 = seal1(ci2, frame, 60, r2);
	n3 = seal1(ci2, frame, 70, r3);
	CHECK(open1(ca, r1, (size_t)n1) == 50);
	CHECK(open1(ca, r3, (size_t)n3) == -EBADMSG);
	repl__lc_free(ca);
	ca = repl__lc_new(&a.a);
	/* The same records in order after a fresh start are fine. */
	repl__lc_free(ci2);
	ci2 = repl__lc_new(&i.a);
	n1 = seal1(ci2, frame, 50, r1);
	n2 = seal1(ci2, frame, 60, r2);
	CHECK(open1(ca, r1, (size_t)n1) == 50 && open1(ca, r2, (size_t)n2) == 60);
	repl__lc_free(ci2);

	/* A flipped bit anywhere: ciphertext, tag or length. */
	for (size_t bit = 0; bit < (size_t)(100 + LC_OVERHEAD) * 8; bit += 37) {
		struct link_crypt *s = repl__lc_new(&i.a), *r = repl__lc_new(&a.a);
		ssize_t n = seal1(s, frame, 100, r1);
		r1[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		CHECK_MSG(open1(r, r1, (size_t)n) < 0, "bit %zu flipped and accepted", bit);
		repl__lc_free(s);
		repl__lc_free(r);
	}

	/* Forged without the key: a well-formed frame where the ciphertext
	 * goes, with any tag. */
	{
		struct wire_msg m = { .type = WIRE_PING };
		struct link_crypt *r = repl__lc_new(&a.a);
		ssize_t fl = wire_encode(&m, r1 + LC_LEN_BYTES, sizeof(r1) - LC_OVERHEAD);
		CHECK(fl == WIRE_HDR_LEN);
		r1[0] = 0; r1[1] = 0; r1[2] = 0; r1[3] = (uint8_t)(fl + LC_TAG_LEN);
		memset(r1 + LC_LEN_BYTES + fl, 0, LC_TAG_LEN);
		CHECK(open1(r, r1, (size_t)(fl + LC_OVERHEAD)) == -EBADMSG);
		repl__lc_free(r);
	}

	/* Reflected: a record the initiator sealed does not open with the
	 * initiator's own receive key. */
	{
		struct link_crypt *s = repl__lc_new(&i.a), *r = repl__lc_new(&i.a);
		ssize_t n = seal1(s, frame, 100, r1);
		CHECK(open1(r, r1, (size_t)n) == -EBADMSG);
		repl__lc_free(s);
		repl__lc_free(r);
	}

	/* Bounds of the length field. */
	memset(r1, 0, 4);
	CHECK(repl__lc_body_len(r1) == -EMSGSIZE);
	r1[0] = 0xff;
	CHECK(repl__lc_body_len(r1) == -EMSGSIZE);
	CHECK(seal1(ci, frame, 0, r1) == -EMSGSIZE);
	repl__lc_free(ci);
	repl__lc_free(ca);
	repl__lc_free(NULL);
}

/* intel-ipsec-mb and OpenSSL are the same AES-256-GCM: from the same
 * keys, records of every frame length from a header's to 1100 bytes and
 * large frames over
 * two iovecs are byte for byte the same, and each opens the other's. */
static void test_cross(void)
{
	static const size_t big[] = { 4096, 65536 + 3, 1u << 20, LC_FRAME_MAX };
	struct side i, a;
	uint8_t *frame = malloc(LC_FRAME_MAX), *r1 = malloc(LC_FRAME_MAX + LC_OVERHEAD);
	uint8_t *r2 = malloc(LC_FRAME_MAX + LC_OVERHEAD);
	struct link_crypt *so, *si, *ro, *ri;
	unsigned bad_eq = 0, bad_open = 0;

	if (!repl__lc_set_impl(LC_IMPL_IPSEC_MB)) {
		printf("# intel-ipsec-mb is not built in: OpenSSL only\n");
		goto out;
	}
	CHECK(frame && r1 && r2);
	if (!frame || !r1 || !r2)
		goto out;
	for (size_t k = 0; k < LC_FRAME_MAX; k++)
		frame[k] = (uint8_t)(k * 131 + (k >> 9));
	setup(&i, true, "alpha", WIRE_FEAT_AEAD, 1);
	setup(&a, false, "beta", WIRE_FEAT_AEAD, 2);
	handshake(&i, &a);
	CHECK(repl__lc_set_impl(LC_IMPL_OPENSSL));
	so = repl__lc_new(&i.a);
	ro = repl__lc_new(&a.a);
	CHECK(repl__lc_set_impl(LC_IMPL_IPSEC_MB));
	si = repl__lc_new(&i.a);
	ri = repl__lc_new(&a.a);
	CHECK(so && ro && si && ri);
	for (size_t n = WIRE_HDR_LEN; n <= 1100 + sizeof(big) / sizeof(big[0]) && so && si; n++) {
		size_t len = n <= 1100 ? n : big[n - 1101], cut = len / 3 + (n & 1);
		struct iovec iov[2] = { { frame, cut }, { frame + cut, len - cut } };
		ssize_t n1 = repl__lc_seal(so, iov, 2, r1), n2 = repl__lc_seal(si, iov, 2, r2);

		if (n1 != (ssize_t)(len + LC_OVERHEAD) || n1 != n2 || memcmp(r1, r2, (size_t)n1)) {
			bad_eq++;
			continue;
		}
		/* Each opens the other's record (the two counters agree). */
		if (open1(ri, r1, (size_t)n1) != (ssize_t)len ||
		    memcmp(r1 + LC_LEN_BYTES, frame, len) ||
		    open1(ro, r2, (size_t)n2) != (ssize_t)len ||
		    memcmp(r2 + LC_LEN_BYTES, frame, len))
			bad_open++;
	}
	CHECK_MSG(bad_eq == 0, "%u records differ between OpenSSL and intel-ipsec-mb", bad_eq);
	CHECK_MSG(bad_open == 0, "%u records did not open across", bad_open);
	repl__lc_free(so);
	repl__lc_free(si);
	repl__lc_free(ro);
	repl__lc_free(ri);
out:
	free(frame);
	free(r1);
	free(r2);
}

int main(void)
{
	test_order_and_mismatch();
	/* Every rule for each implementation this build has. */
	for (int k = LC_IMPL_OPENSSL; k <= LC_IMPL_IPSEC_MB; k++) {
		if (!repl__lc_set_impl((enum lc_impl)k))
			continue;
		printf("# records with %s\n", repl__lc_impl_name((enum lc_impl)k));
		test_records();
	}
	test_cross();
	return unit_done("test-linkcrypt");
}
