/* test-wire.c: unit tests of replication/wire.c: frame round trips, every
 * truncation, header and field rejects, random garbage, the authentication
 * handshake under replay, reflection and tampering, and the key-file
 * loader.  Buffers are malloc'd to their exact length so that ASan catches
 * any read past the end. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gen.h"
#include "unit.h"
#include "util.h"
#include "wire.h"

static uint8_t data100[100];
static uint8_t data1[1] = { 0x5a };

/* One valid message of every type (several for some). */
static size_t samples(struct wire_msg *out)
{
	size_t n = 0;
	struct wire_msg m;

	for (size_t i = 0; i < sizeof(data100); i++)
		data100[i] = (uint8_t)(i * 7 + 3);

	m = (struct wire_msg){ .type = WIRE_HELLO, .seq = 1 };
	m.u.hello = (struct wire_hello){ .proto_min = 1, .proto_max = 3, .features = 0x80000003,
					 .initiator = true };
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_HELLO, .seq = 0 };
	m.u.hello = (struct wire_hello){ .proto_min = 1, .proto_max = 1 };
	out[n++] = m;

	m = (struct wire_msg){ .type = WIRE_CHALLENGE, .seq = 2 };
	for (int i = 0; i < WIRE_NONCE_LEN; i++)
		m.u.nonce[i] = (uint8_t)(0xf0 ^ i);
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_AUTH, .seq = 3 };
	for (int i = 0; i < WIRE_MAC_LEN; i++)
		m.u.auth.mac[i] = (uint8_t)(i * 13);
	for (int i = 0; i < WIRE_NAMES_LEN; i++)
		m.u.auth.names[i] = (uint8_t)(i * 7 + 1);
	out[n++] = m;
	out[n++] = (struct wire_msg){ .type = WIRE_AUTH_OK, .seq = 4 };

	m = (struct wire_msg){ .type = WIRE_VOLUME, .seq = UINT64_MAX };
	m.u.volume = (struct wire_volume){
		.uuid = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 },
		.size = 10ull << 30, .current = 0x1122334455667788ull, .bitmap = 2,
		.history = { 3, 0xfedcba9876543210ull, 5, 6, 7, 8, 9, 0x0102030405060708ull },
		.dirty = 12345, .node_id = 7,
		.region_size = 1u << 20, .disk = GEN_DISK_UPTODATE, .role = 1,
		.crashed_primary = true, .lost_power = true, .host_restarted = true, .peer_disk = GEN_DISK_UNKNOWN,
		.has_primary = true, .no_quorum = true, .partial = true,
	};
	strcpy(m.u.volume.name, "vol0");
	out[n++] = m;

	m = (struct wire_msg){ .type = WIRE_WRITE, .seq = 100 };
	m.u.write = (struct wire_write){ .offset = 4096, .len = sizeof(data100),
					 .flags = WIRE_WF_FUA, .data = data100 };
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_WRITE, .seq = 101 };
	m.u.write = (struct wire_write){ .offset = UINT64_MAX - 1, .len = 1, .data = data1 };
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_WRITE_ACK, .seq = 102 };
	m.u.ack = (struct wire_ack){ .seq = 100, .error = EIO };
	out[n++] = m;
	out[n++] = (struct wire_msg){ .type = WIRE_FLUSH, .seq = 103 };
	m = (struct wire_msg){ .type = WIRE_FLUSH_ACK, .seq = 104 };
	m.u.ack = (struct wire_ack){ .seq = 103, .error = 0 };
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_TRIM, .seq = 105 };
	m.u.range = (struct wire_range){ .offset = 0, .len = UINT64_MAX, .flags = WIRE_WF_FUA };
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_ZERO, .seq = 106 };
	m.u.range = (struct wire_range){ .offset = 1 << 20, .len = 1ull << 40,
					 .flags = WIRE_WF_FUA | WIRE_WF_NO_HOLE };
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_RS_REQUEST, .seq = 107 };
	m.u.range = (struct wire_range){ .offset = 8192, .len = WIRE_DATA_MAX };
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_RS_DATA, .seq = 107 };
	m.u.write = (struct wire_write){ .offset = 8192, .len = 64, .data = data100 + 3 };
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_RS_ZERO, .seq = 108 };
	m.u.range = (struct wire_range){ .offset = 0, .len = 512 };
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_STATE, .seq = 109 };
	m.u.state = (struct wire_state){ .role = 1, .disk = GEN_DISK_UPTODATE,
					 .outdate_notice = true, .outdated_node = 2,
					 .current = 0xabcdef, .token = 77 };
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_STATE, .seq = 109 };
	m.u.state = (struct wire_state){ .role = 0, .disk = GEN_DISK_UPTODATE,
					 .confirm = true, .current = 0xabcdef, .token = 77 };
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_STATE, .seq = 110 };
	m.u.state = (struct wire_state){ .role = 0, .disk = GEN_DISK_OUTDATED };
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_STATE, .seq = 110 };
	m.u.state = (struct wire_state){ .role = 0, .disk = GEN_DISK_INCONSISTENT,
					 .partial = true };
	out[n++] = m;
	out[n++] = (struct wire_msg){ .type = WIRE_PING, .seq = 111 };
	out[n++] = (struct wire_msg){ .type = WIRE_PING_ACK, .seq = 111 };
	m = (struct wire_msg){ .type = WIRE_BYE, .seq = 112 };
	m.u.bye_reason = WIRE_BYE_SPLIT_BRAIN;
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_VERIFY_REQ, .seq = 113 };
	m.u.range = (struct wire_range){ .offset = 65536, .len = 65536 };
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_VERIFY_REPLY, .seq = 113 };
	m.u.verify = (struct wire_verify){ .offset = 65536, .len = 65536, .crc = 0xdeadbeef };
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_TAKEOVER, .seq = 114 };
	m.u.takeover.flags = WIRE_TO_SOFT;
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_HANDOVER, .seq = 114 };
	m.u.handover = (struct wire_handover){ .error = 0, .seq = 0x0102030405060708ull,
					       .current = 0xfeedfacecafebeefull };
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_SIZE, .seq = 0 };
	m.u.size = (96ull << 20) + 512;
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_BYE, .seq = 114 };
	m.u.bye_reason = WIRE_BYE_SIZE;
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_CKPT, .seq = 0 };
	m.u.ckpt.op = WIRE_CKPT_CREATE;
	strcpy(m.u.ckpt.name, "daily-1");
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_CKPT, .seq = 0 };
	m.u.ckpt.op = WIRE_CKPT_END;
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_BYE, .seq = 115 };
	m.u.bye_reason = WIRE_BYE_DISK;
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_READ_REQ, .seq = 116 };
	m.u.range = (struct wire_range){ .offset = 1u << 20, .len = WIRE_DATA_MAX };
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_READ_DATA, .seq = 116 };
	m.u.write = (struct wire_write){ .offset = 1u << 20, .len = 50, .data = data100 + 7 };
	out[n++] = m;
	m = (struct wire_msg){ .type = WIRE_READ_FAIL, .seq = 0 };
	m.u.ack = (struct wire_ack){ .seq = 117, .error = EIO };
	out[n++] = m;
	return n;
}

#define MAX_SAMPLES 40

static bool msg_equal(const struct wire_msg *a, const struct wire_msg *b)
{
	if (a->type != b->type || a->seq != b->seq)
		return false;
	switch (a->type) {
	case WIRE_HELLO:
		return a->u.hello.proto_min == b->u.hello.proto_min &&
		       a->u.hello.proto_max == b->u.hello.proto_max &&
		       a->u.hello.features == b->u.hello.features &&
		       a->u.hello.initiator == b->u.hello.initiator;
	case WIRE_CHALLENGE:
		return memcmp(a->u.nonce, b->u.nonce, WIRE_NONCE_LEN) == 0;
	case WIRE_AUTH:
		return memcmp(&a->u.auth, &b->u.auth, sizeof(a->u.auth)) == 0;
	case WIRE_VOLUME: {
		const struct wire_volume *x = &a->u.volume, *y = &b->u.volume;
		return memcmp(x->uuid, y->uuid, WIRE_UUID_LEN) == 0 &&
		       strcmp(x->name, y->name) == 0 && x->size == y->size &&
		       x->current == y->current && x->bitmap == y->bitmap &&
		       memcmp(x->history, y->history, sizeof(x->history)) == 0 &&
		       x->dirty == y->dirty && x->node_id == y->node_id &&
		       x->region_size == y->region_size && x->disk == y->disk &&
		       x->role == y->role && x->crashed_primary == y->crashed_primary &&
		       x->lost_power == y->lost_power && x->host_restarted == y->host_restarted &&
		       x->peer_disk == y->peer_disk && x->has_primary == y->has_primary &&
		       x->no_quorum == y->no_quorum && x->partial == y->partial;
	}
	case WIRE_WRITE:
	case WIRE_RS_DATA:
	case WIRE_READ_DATA:
		return a->u.write.offset == b->u.write.offset && a->u.write.len == b->u.write.len &&
		       a->u.write.flags == b->u.write.flags &&
		       memcmp(a->u.write.data, b->u.write.data, a->u.write.len) == 0;
	case WIRE_WRITE_ACK:
	case WIRE_FLUSH_ACK:
	case WIRE_READ_FAIL:
		return a->u.ack.seq == b->u.ack.seq && a->u.ack.error == b->u.ack.error;
	case WIRE_TRIM:
	case WIRE_ZERO:
	case WIRE_RS_REQUEST:
	case WIRE_RS_ZERO:
	case WIRE_VERIFY_REQ:
	case WIRE_READ_REQ:
		return a->u.range.offset == b->u.range.offset && a->u.range.len == b->u.range.len &&
		       a->u.range.flags == b->u.range.flags;
	case WIRE_STATE:
		return a->u.state.role == b->u.state.role && a->u.state.disk == b->u.state.disk &&
		       a->u.state.outdate_notice == b->u.state.outdate_notice &&
		       a->u.state.confirm == b->u.state.confirm &&
		       a->u.state.partial == b->u.state.partial &&
		       a->u.state.outdated_node == b->u.state.outdated_node &&
		       a->u.state.current == b->u.state.current &&
		       a->u.state.token == b->u.state.token;
	case WIRE_BYE:
		return a->u.bye_reason == b->u.bye_reason;
	case WIRE_TAKEOVER:
		return a->u.takeover.flags == b->u.takeover.flags;
	case WIRE_HANDOVER:
		return a->u.handover.error == b->u.handover.error &&
		       a->u.handover.seq == b->u.handover.seq &&
		       a->u.handover.current == b->u.handover.current;
	case WIRE_VERIFY_REPLY:
		return a->u.verify.offset == b->u.verify.offset &&
		       a->u.verify.len == b->u.verify.len && a->u.verify.crc == b->u.verify.crc;
	case WIRE_SIZE:
		return a->u.size == b->u.size;
	case WIRE_CKPT:
		return a->u.ckpt.op == b->u.ckpt.op && !strcmp(a->u.ckpt.name, b->u.ckpt.name);
	default:
		return true;
	}
}

/* Encodes m into an exactly sized heap buffer. */
static uint8_t *encode_alloc(const struct wire_msg *m, size_t *len)
{
	ssize_t n = wire_frame_len(m);
	uint8_t *buf;

	if (n < 0)
		return NULL;
	buf = malloc((size_t)n);
	if (!buf)
		abort();
	if (wire_encode(m, buf, (size_t)n) != n) {
		free(buf);
		return NULL;
	}
	*len = (size_t)n;
	return buf;
}

/* After editing a frame, makes both CRCs right again (as an attacker can). */
static void refix(uint8_t *f, size_t len)
{
	uint32_t plen, v;

	memcpy(&plen, f + 8, 4);
	plen = be32toh(plen);

	if (WIRE_HDR_LEN + (size_t)plen <= len) {
		/* A sealed frame (flags bit 0) carries no payload CRC. */
		v = (f[15] & WIRE_HF_SEALED) ? 0 : htobe32(crc32c(0, f + WIRE_HDR_LEN, plen));
		memcpy(f + 24, &v, 4);
	}
	v = htobe32(crc32c(0, f, 28));
	memcpy(f + 28, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return be32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return be64toh(v);
}

static void set32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static void set16(uint8_t *p, uint16_t v)
{
	v = htobe16(v);
	memcpy(p, &v, 2);
}

/* ---- frames ------------------------------------------------------------- */

static void test_roundtrip(void)
{
	struct wire_msg s[MAX_SAMPLES], d;
	size_t n = samples(s);
	bool seen[WIRE_TYPE_COUNT] = { false };

	for (size_t i = 0; i < n; i++) {
		size_t len = 0, plen;
		uint8_t *f = encode_alloc(&s[i], &len), *g, *prefix;
		ssize_t pn;
		const char *name = wire_type_name(s[i].type);

		CHECK_MSG(f != NULL, "sample %zu (%s) does not encode", i, name);
		if (!f)
			continue;
		seen[s[i].type] = true;
		CHECK(strcmp(name, "?") != 0);
		CHECK_MSG(wire_decode(f, len, &d) == 0, "sample %zu (%s) does not decode", i, name);
		CHECK_MSG(msg_equal(&s[i], &d), "sample %zu (%s) differs", i, name);
		/* Decoded messages re-encode to the same bytes. */
		g = encode_alloc(&d, &plen);
		CHECK(g && plen == len && memcmp(f, g, len) == 0);
		free(g);
		/* The header is explicitly big-endian. */
		CHECK(f[0] == 'R' && f[1] == 'P' && f[2] == 'L' && f[3] == 'W');
		CHECK(f[4] == 0 && f[5] == WIRE_VERSION && f[6] == 0 && f[7] == s[i].type);
		CHECK(get32(f + 8) == len - WIRE_HDR_LEN);
		CHECK(get64(f + 16) == s[i].seq);
		/* Prefix plus data is the whole frame. */
		prefix = malloc(WIRE_CONTROL_FRAME_MAX);
		pn = wire_encode_prefix(&s[i], prefix, WIRE_CONTROL_FRAME_MAX);
		CHECK(pn > 0 && (size_t)pn <= len && memcmp(prefix, f, (size_t)pn) == 0);
		if (s[i].type == WIRE_WRITE || s[i].type == WIRE_RS_DATA ||
		    s[i].type == WIRE_READ_DATA)
			CHECK((size_t)pn + s[i].u.write.len == len);
		else
			CHECK((size_t)pn == len);
		CHECK(wire_encode_prefix(&s[i], prefix, (size_t)pn - 1) == -ENOBUFS);
		free(prefix);
		CHECK(wire_encode(&s[i], f, len - 1) == -ENOBUFS);
		free(f);
	}
	for (uint16_t t = 1; t < WIRE_TYPE_COUNT; t++)
		CHECK_MSG(seen[t], "no sample of type %u", t);
	CHECK(strcmp(wire_type_name(0), "?") == 0);
	CHECK(strcmp(wire_type_name(WIRE_TYPE_COUNT), "?") == 0);
	CHECK(strcmp(wire_type_name(0xffff), "?") == 0);
	CHECK(strcmp(wire_type_name(WIRE_RS_ZERO), "RS_ZERO") == 0);
}

static void test_big_write(void)
{
	uint8_t *data = malloc(WIRE_DATA_MAX);
	struct wire_msg m = { .type = WIRE_WRITE, .seq = 9 }, d;
	size_t len = 0;
	uint8_t *f;

	for (size_t i = 0; i < WIRE_DATA_MAX; i++)
		data[i] = (uint8_t)(i ^ (i >> 8));
	m.u.write = (struct wire_write){ .offset = 1ull << 40, .len = WIRE_DATA_MAX, .data = data };
	f = encode_alloc(&m, &len);
	CHECK(f && len == WIRE_HDR_LEN + WIRE_DATA_FIXED + WIRE_DATA_MAX);
	CHECK(f && wire_decode(f, len, &d) == 0 && msg_equal(&m, &d));
	/* Sampled truncations (every one would be quadratic here). */
	for (size_t t = 0; f && t < len; t = t < 64 ? t + 1 : t + 65521) {
		uint8_t *p = malloc(t);
		memcpy(p, f, t);
		CHECK_MSG(wire_decode(p, t, &d) < 0, "4 MiB write truncated to %zu accepted", t);
		free(p);
	}
	if (f) {
		CHECK(wire_decode(f, len - 1, &d) == -EMSGSIZE);
		/* Header only, claiming one byte too many: rejected from the header. */
		set32(f + 8, WIRE_DATA_FIXED + WIRE_DATA_MAX + 1);
		refix(f, WIRE_HDR_LEN);
		CHECK(wire_hdr_decode(f, WIRE_HDR_LEN, &(struct wire_hdr){ 0 }) == -EMSGSIZE);
	}
	m.u.write.len = WIRE_DATA_MAX + 1;
	CHECK(wire_frame_len(&m) == -EINVAL);
	free(f);
	free(data);
}

/* A WRITE's payload CRC computed once (wire_payload_crc) and handed to the
 * encoder gives the same frame as the encoder's own; the encoder trusts it
 * (a wrong one goes out, and the receiver refuses the frame), so it is
 * really not summed again for the second peer. */
static void test_payload_crc_once(void)
{
	uint8_t data[4096], a[WIRE_CONTROL_FRAME_MAX], b[WIRE_CONTROL_FRAME_MAX];
	struct wire_msg m = { .type = WIRE_WRITE, .seq = 5 }, d;
	uint8_t *f;
	size_t len;
	ssize_t na, nb;
	uint32_t crc;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7);
	m.u.write = (struct wire_write){ .offset = 8192, .len = sizeof(data),
					 .flags = WIRE_WF_FUA, .data = data };
	na = wire_encode_prefix(&m, a, sizeof(a));
	crc = wire_payload_crc(&m);
	m.seq = 6;			/* another peer's sequence: same payload */
	m.u.write.have_crc = true;
	m.u.write.payload_crc = crc;
	nb = wire_encode_prefix(&m, b, sizeof(b));
	CHECK(na > 0 && na == nb);
	CHECK(memcmp(a + 24, b + 24, 4) == 0 && memcmp(a + 32, b + 32, (size_t)na - 32) == 0);
	f = encode_alloc(&m, &len);
	CHECK(f && wire_decode(f, len, &d) == 0 && msg_equal(&m, &d) && !d.u.write.have_crc);
	free(f);
	m.u.write.payload_crc = crc ^ 1;
	f = encode_alloc(&m, &len);
	CHECK(f && wire_decode(f, len, &d) == -EBADMSG);
	free(f);
}

/* Every prefix of every frame is refused, from an exactly sized buffer;
 * so are a trailing byte and a consistent-looking shorter payload. */
static void test_truncation(void)
{
	struct wire_msg s[MAX_SAMPLES], d;
	size_t n = samples(s);
	unsigned bad = 0;

	for (size_t i = 0; i < n; i++) {
		size_t len = 0;
		uint8_t *f = encode_alloc(&s[i], &len), *p;
		struct wire_hdr h;

		if (!f)
			continue;
		for (size_t t = 0; t < len; t++) {
			p = malloc(t);
			memcpy(p, f, t);
			if (wire_decode(p, t, &d) >= 0)
				bad++;
			if (t >= WIRE_HDR_LEN && wire_hdr_decode(p, t, &h) == 0 &&
			    wire_decode_payload(&h, p + WIRE_HDR_LEN, t - WIRE_HDR_LEN, &d) >= 0)
				bad++;
			/* The same prefix with length and CRCs made to match. */
			if (t >= WIRE_HDR_LEN) {
				set32(p + 8, (uint32_t)(t - WIRE_HDR_LEN));
				refix(p, t);
				if (wire_decode(p, t, &d) >= 0)
					bad++;
			}
			free(p);
		}
		p = malloc(len + 1);
		memcpy(p, f, len);
		p[len] = 0;
		CHECK(wire_decode(p, len + 1, &d) == -EMSGSIZE);
		free(p);
		free(f);
	}
	CHECK_MSG(bad == 0, "%u truncated frames accepted", bad);
}

/* Encodes a sample, lets edit() change it, fixes the CRCs, expects err. */
static void reject(const char *what, const struct wire_msg *m, size_t off, uint8_t val,
		   int err)
{
	size_t len = 0;
	uint8_t *f = encode_alloc(m, &len);
	struct wire_msg d;
	int r;

	if (!f || off >= len) {
		CHECK_MSG(0, "%s: bad test", what);
		free(f);
		return;
	}
	f[off] = val;
	refix(f, len);
	r = wire_decode(f, len, &d);
	CHECK_MSG(r == err, "%s: got %d, want %d", what, r, err);
	free(f);
}

static struct wire_msg sample_of(uint16_t type)
{
	struct wire_msg s[MAX_SAMPLES];
	size_t n = samples(s);

	for (size_t i = 0; i < n; i++)
		if (s[i].type == type)
			return s[i];
	abort();
}

/* Wire v5: a frame that travels in a sealed record says so (flags bit 0)
 * and carries no payload CRC (the record's AEAD tag covers the same
 * bytes; computing both cost a pass over every byte on each side).  It
 * decodes and re-encodes exactly; its header is checked as before; a
 * sealed header with a CRC in it, or any other flag, is refused; no
 * handshake frame may say sealed. */
static void test_sealed(void)
{
	struct wire_msg s[MAX_SAMPLES], d, wr = sample_of(WIRE_WRITE);
	size_t n = samples(s), len;
	struct wire_hdr h;
	uint8_t *f, *g;
	uint32_t crc;

	for (size_t i = 0; i < n; i++) {
		s[i].sealed = true;
		f = encode_alloc(&s[i], &len);
		CHECK_MSG(f && f[15] == WIRE_HF_SEALED && !get32(f + 24), "%s: sealed header",
			  wire_type_name(s[i].type));
		CHECK_MSG(f && wire_decode(f, len, &d) == 0 && d.sealed && msg_equal(&s[i], &d),
			  "%s: sealed frame decodes", wire_type_name(s[i].type));
		g = f ? encode_alloc(&d, &len) : NULL;
		CHECK_MSG(g && !memcmp(f, g, len), "%s: sealed re-encodes",
			  wire_type_name(s[i].type));
		free(g);
		free(f);
	}
	/* Not a CRC in sight: a payload byte changed still decodes (the
	 * link's tag refuses it, test-linkcrypt); in clear the CRC refuses. */
	wr.sealed = true;
	f = encode_alloc(&wr, &len);
	CHECK(f && len > WIRE_HDR_LEN + WIRE_DATA_FIXED);
	f[len - 1] ^= 1;
	CHECK(wire_decode(f, len, &d) == 0 && d.sealed);
	f[15] = 0;
	refix(f, len);
	f[len - 1] ^= 1;
	CHECK(wire_decode(f, len, &d) == -EBADMSG);
	/* A sealed header that carries a CRC is not one this side sends. */
	f[15] = WIRE_HF_SEALED;
	refix(f, len);
	f[27] = 1;
	crc = htobe32(crc32c(0, f, 28));
	memcpy(f + 28, &crc, 4);
	CHECK(wire_hdr_decode(f, len, &h) == -EPROTO);
	free(f);
	/* The CRC for a plain link does not depend on the flag. */
	crc = wire_payload_crc(&wr);
	wr.sealed = false;
	CHECK(crc == wire_payload_crc(&wr));
	/* Handshake frames are never sealed. */
	h = (struct wire_hdr){ .version = WIRE_VERSION, .type = WIRE_HELLO,
			       .length = WIRE_HELLO_LEN, .flags = WIRE_HF_SEALED };
	CHECK(!wire_hdr_before_auth(&h));
}

static void test_rejects(void)
{
	struct wire_msg vol = sample_of(WIRE_VOLUME), hello = sample_of(WIRE_HELLO);
	struct wire_msg wr = sample_of(WIRE_WRITE), ack = sample_of(WIRE_WRITE_ACK);
	struct wire_msg trim = sample_of(WIRE_TRIM), zero = sample_of(WIRE_ZERO);
	struct wire_msg rsq = sample_of(WIRE_RS_REQUEST), st = sample_of(WIRE_STATE);
	struct wire_msg bye = sample_of(WIRE_BYE), ping = sample_of(WIRE_PING);
	struct wire_msg rsd = sample_of(WIRE_RS_DATA), m;
	struct wire_msg rdd = sample_of(WIRE_READ_DATA), rdq = sample_of(WIRE_READ_REQ);
	struct wire_msg tko = sample_of(WIRE_TAKEOVER), hnd = sample_of(WIRE_HANDOVER);
	struct wire_msg size = sample_of(WIRE_SIZE);
	enum { H = WIRE_HDR_LEN };
	size_t len = 0;
	uint8_t *f;
	struct wire_hdr h;

	/* Header fields, each with the header CRC fixed so it is the field
	 * that is refused. */
	reject("magic", &ping, 0, 'X', -EPROTO);
	reject("version 0", &ping, 5, 0, -EPROTONOSUPPORT);
	reject("version 1 (before the outdate token)", &ping, 5, 1, -EPROTONOSUPPORT);
	reject("version 2 (names in HELLO)", &ping, 5, 2, -EPROTONOSUPPORT);
	reject("version 3 (2 history generations in VOLUME)", &ping, 5, 3, -EPROTONOSUPPORT);
	reject("version 4 (a payload CRC in sealed frames)", &ping, 5, 4, -EPROTONOSUPPORT);
	reject("version 5 (no power-loss flags in VOLUME)", &ping, 5, 5, -EPROTONOSUPPORT);
	reject("version 6 (a resync's end unconfirmed)", &ping, 5, 6, -EPROTONOSUPPORT);
	reject("the next version", &ping, 5, WIRE_VERSION + 1, -EPROTONOSUPPORT);
	reject("type 0", &ping, 7, 0, -EPROTO);
	reject("type past the end", &ping, 7, WIRE_TYPE_COUNT, -EPROTO);
	reject("type high byte", &ping, 6, 1, -EPROTO);
	reject("flags 2", &ping, 15, 2, -EPROTO);
	reject("flags sealed and 2", &ping, 15, 3, -EPROTO);
	reject("flags high", &ping, 12, 0x80, -EPROTO);
	reject("volume oversized", &vol, 11, WIRE_VOLUME_LEN + 1, -EMSGSIZE);
	reject("volume undersized", &vol, 11, WIRE_VOLUME_LEN - 1, -EMSGSIZE);
	reject("ping with payload", &ping, 11, 1, -EMSGSIZE);
	reject("write length 2^31", &wr, 8, 0x80, -EMSGSIZE);
	reject("write without data", &wr, 11, WIRE_DATA_FIXED, -EMSGSIZE);
	{
		struct wire_msg ck = sample_of(WIRE_CKPT);
		reject("ckpt op 0", &ck, H + 3, 0, -EPROTO);
		reject("ckpt op past the end", &ck, H + 3, WIRE_CKPT_DELETE + 1, -EPROTO);
		reject("ckpt reserved", &ck, H + 5, 1, -EPROTO);
		reject("ckpt name with a blank", &ck, H + 8, ' ', -EPROTO);
		reject("ckpt name not padded", &ck, H + 8 + 63, 'x', -EPROTO);
	}
	/* CRCs. */
	f = encode_alloc(&vol, &len);
	f[28] ^= 1;
	CHECK(wire_decode(f, len, &m) == -EBADMSG);
	f[28] ^= 1;
	f[H + 50] ^= 0x10;
	CHECK(wire_decode(f, len, &m) == -EBADMSG);
	f[H + 50] ^= 0x10;
	f[24] ^= 1;
	CHECK(wire_decode(f, len, &m) == -EBADMSG);
	/* Bad magic is refused before the CRC is looked at. */
	f[0] = 0;
	CHECK(wire_hdr_decode(f, WIRE_HDR_LEN, &h) == -EPROTO);
	free(f);
	CHECK(wire_hdr_decode((const uint8_t *)"RPLW", 4, &h) == -EPROTO);

	/* Payload fields. */
	reject("hello initiator 2", &hello, H + 8, 2, -EPROTO);
	reject("hello reserved", &hello, H + 12, 1, -EPROTO);
	reject("hello proto_min 0", &hello, H + 1, 0, -EPROTO);
	reject("hello proto_min > max", &hello, H + 1, 9, -EPROTO);
	reject("hello reserved last", &hello, H + 15, 1, -EPROTO);
	reject("volume name empty", &vol, H + 16, 0, -EPROTO);
	reject("volume region 3", &vol, H + 135, 3, -EPROTO);
	reject("volume disk unknown", &vol, H + 136, GEN_DISK_UNKNOWN, -EPROTO);
	reject("volume role 2", &vol, H + 137, 2, -EPROTO);
	reject("volume flags 64", &vol, H + 138, 64, -EPROTO);
	reject("volume peer disk 6", &vol, H + 139, 6, -EPROTO);
	reject("volume reserved", &vol, H + 143, 1, -EPROTO);
	reject("write flags", &wr, H + 15, 2, -EPROTO);
	reject("write len field", &wr, H + 11, 99, -EPROTO);
	m = wr;
	m.u.write.offset = UINT64_MAX - 100;	/* ends exactly at 2^64 - 1 */
	reject("write offset overflow", &m, H + 7, 0xff, -EPROTO);
	reject("rs_data FUA", &rsd, H + 15, WIRE_WF_FUA, -EPROTO);
	reject("read_data FUA", &rdd, H + 15, WIRE_WF_FUA, -EPROTO);
	reject("read_req > 4 MiB", &rdq, H + 11, 1, -EPROTO);
	reject("read_req len 0", &rdq, H + 9, 0, -EPROTO);
	reject("ack error 4096", &ack, H + 10, 0x10, -EPROTO);
	reject("ack reserved", &ack, H + 15, 1, -EPROTO);
	reject("trim no-hole", &trim, H + 19, WIRE_WF_NO_HOLE | WIRE_WF_FUA, -EPROTO);
	reject("trim overflow", &trim, H + 0, 1, -EPROTO);
	reject("zero flag 4", &zero, H + 19, 4, -EPROTO);
	reject("zero reserved", &zero, H + 20, 1, -EPROTO);
	reject("rs_request > 4 MiB", &rsq, H + 11, 1, -EPROTO);
	reject("rs_request len 0", &rsq, H + 9, 0, -EPROTO);
	reject("rs_request reserved", &rsq, H + 12, 1, -EPROTO);
	reject("state role 2", &st, H + 0, 2, -EPROTO);
	reject("state disk unknown", &st, H + 1, GEN_DISK_UNKNOWN, -EPROTO);
	reject("state flags 8", &st, H + 2, 8, -EPROTO);
	reject("state notice and confirmation", &st, H + 2, 3, -EPROTO);
	reject("state reserved", &st, H + 3, 1, -EPROTO);
	reject("bye reason", &bye, H + 3, WIRE_BYE_REASON_COUNT, -EPROTO);
	reject("bye reserved", &bye, H + 7, 1, -EPROTO);
	reject("takeover flag 2", &tko, H + 3, 2, -EPROTO);
	reject("takeover reserved", &tko, H + 7, 1, -EPROTO);
	reject("takeover undersized", &tko, 11, 4, -EMSGSIZE);
	reject("handover error 4096", &hnd, H + 2, 0x10, -EPROTO);
	reject("handover reserved", &hnd, H + 5, 1, -EPROTO);
	reject("handover oversized", &hnd, 11, 25, -EMSGSIZE);
	reject("size not a multiple of 512", &size, H + 7, 1, -EPROTO);
	m = size;
	m.u.size = 0;
	CHECK(wire_frame_len(&m) == -EINVAL);
	reject("size undersized", &size, 11, 7, -EMSGSIZE);
	m = st;
	m.u.state.outdate_notice = false;	/* node set without notice */
	f = encode_alloc(&st, &len);
	f[H + 2] = 0;
	refix(f, len);
	CHECK(wire_decode(f, len, &m) == -EPROTO);
	free(f);

	/* The encoder refuses what the decoder would. */
	m = hello;
	m.u.hello.proto_min = 0;
	CHECK(wire_frame_len(&m) == -EINVAL);
	m = hello;
	m.u.hello.proto_min = 4;	/* above proto_max */
	CHECK(wire_encode(&m, (uint8_t[256]){ 0 }, 256) == -EINVAL);
	m = vol;
	m.u.volume.region_size = 0;
	CHECK(wire_frame_len(&m) == -EINVAL);
	m = wr;
	m.u.write.data = NULL;
	CHECK(wire_frame_len(&m) == -EINVAL);
	m = wr;
	m.u.write.len = 0;
	CHECK(wire_frame_len(&m) == -EINVAL);
	m = trim;
	m.u.range.len = 0;
	CHECK(wire_frame_len(&m) == -EINVAL);
	m = rsq;
	m.u.range.len = WIRE_DATA_MAX + 1;
	CHECK(wire_frame_len(&m) == -EINVAL);
	m = st;
	m.u.state.outdate_notice = false;
	CHECK(wire_frame_len(&m) == -EINVAL);
	m = st;				/* a token on a plain STATE */
	m.u.state.outdate_notice = false;
	m.u.state.outdated_node = 0;
	CHECK(wire_frame_len(&m) == -EINVAL);
	m.u.state.token = 0;
	CHECK(wire_frame_len(&m) > 0);
	m.u.state.confirm = true;	/* a confirmation without a token is valid */
	CHECK(wire_frame_len(&m) > 0);
	m = st;
	m.u.state.confirm = true;	/* notice and confirmation at once */
	CHECK(wire_frame_len(&m) == -EINVAL);
	m = bye;
	m.u.bye_reason = 77;
	CHECK(wire_frame_len(&m) == -EINVAL);
	m = ping;
	m.type = 0;
	CHECK(wire_frame_len(&m) == -EINVAL);
	m.type = WIRE_TYPE_COUNT;
	CHECK(wire_encode(&m, (uint8_t[64]){ 0 }, 64) == -EINVAL);
	/* A header struct not from wire_hdr_decode. */
	h = (struct wire_hdr){ .type = 0 };
	CHECK(wire_decode_payload(&h, NULL, 0, &m) == -EPROTO);
	h = (struct wire_hdr){ .type = WIRE_AUTH, .length = 4 };
	CHECK(wire_decode_payload(&h, (const uint8_t *)"abcd", 4, &m) == -EMSGSIZE);
}

/* ---- random garbage ---------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static void test_garbage(void)
{
	enum { ITER = 100000, MAXLEN = 600 };
	unsigned accepted = 0, decoded[WIRE_TYPE_COUNT] = { 0 }, mismatch = 0;
	struct wire_msg m;

	/* Pure garbage, sometimes with a plausible start. */
	for (unsigned i = 0; i < ITER; i++) {
		size_t len = rng() % MAXLEN;
		uint8_t *buf = malloc(len);

		for (size_t k = 0; k < len; k++)
			buf[k] = (uint8_t)rng();
		if (len >= 8 && (i & 1)) {
			set32(buf, WIRE_MAGIC);
			set16(buf + 4, WIRE_VERSION);
			set16(buf + 6, (uint16_t)(rng() % (WIRE_TYPE_COUNT + 2)));
		}
		if (wire_decode(buf, len, &m) == 0)
			accepted++;
		free(buf);
	}
	CHECK_MSG(accepted == 0, "%u garbage frames accepted", accepted);

	/* Valid headers and CRCs over payloads of an acceptable length, either
	 * random (mostly zeros, so that reserved fields often pass) or a valid
	 * payload with a few random bytes changed: whatever decodes must
	 * re-encode to the very same bytes. */
	for (unsigned i = 0; i < ITER; i++) {
		uint16_t type = (uint16_t)(1 + rng() % (WIRE_TYPE_COUNT - 1));
		struct wire_msg probe = sample_of(type);
		bool mutate = i & 1;
		size_t plen = (size_t)wire_frame_len(&probe) - WIRE_HDR_LEN, len, glen;
		uint8_t *buf, *g;
		unsigned density = (unsigned)(rng() % 4);

		if (!mutate && (type == WIRE_WRITE || type == WIRE_RS_DATA ||
				 type == WIRE_READ_DATA))
			plen = WIRE_DATA_FIXED + 1 + rng() % 200;
		len = WIRE_HDR_LEN + plen;
		buf = malloc(len);
		if (mutate) {
			if (wire_encode(&probe, buf, len) != (ssize_t)len)
				abort();
			for (unsigned k = 0, nk = 1 + (unsigned)(rng() % 3); plen && k < nk; k++)
				buf[WIRE_HDR_LEN + rng() % plen] = (uint8_t)rng();
		} else {
			for (size_t k = WIRE_HDR_LEN; k < len; k++)
				buf[k] = (rng() % 8) < density ? (uint8_t)rng() : 0;
		}
		set32(buf, WIRE_MAGIC);
		set16(buf + 4, WIRE_VERSION);
		set16(buf + 6, type);
		set32(buf + 8, (uint32_t)plen);
		set32(buf + 12, 0);
		memcpy(buf + 16, &(uint64_t){ rng() }, 8);
		refix(buf, len);
		if (wire_decode(buf, len, &m) == 0) {
			decoded[type]++;
			g = encode_alloc(&m, &glen);
			if (!g || glen != len || memcmp(g, buf, len) != 0)
				mismatch++;
			free(g);
		}
		free(buf);
	}
	CHECK_MSG(mismatch == 0, "%u decoded garbage payloads re-encode differently", mismatch);
	/* The sweep reached the decoders' accepting paths of every type. */
	for (uint16_t t = 1; t < WIRE_TYPE_COUNT; t++)
		CHECK_MSG(decoded[t] > 0, "random payloads never decoded as %s", wire_type_name(t));
}

/* ---- handshake -------------------------------------------------------- */

static const uint8_t key1[32] = "0123456789abcdef0123456789abcdef";
static const uint8_t key2[32] = "0123456789abcdef0123456789abcdeF";

struct side {
	struct wire_auth a;
	int rc;			/* last result of wire_auth_receive */
};

static void setup(struct side *s, const uint8_t *key, bool initiator, const char *node,
		  const char *peer, uint8_t nonce_byte)
{
	struct wire_auth_params p = {
		.key = key, .keylen = 32, .initiator = initiator, .node = node,
		.peer = peer, .resource = "vm42", .features = initiator ? 3 : 1,
	};
	uint8_t nonce[WIRE_NONCE_LEN];

	memset(nonce, nonce_byte, sizeof(nonce));
	memset(s, 0, sizeof(*s));
	CHECK(wire_auth_init(&s->a, &p, nonce) == 0);
}

/* Called for each frame in flight; may rewrite it (len may change). */
typedef void (*mitm_fn)(unsigned dir, unsigned idx, uint8_t *f, size_t *len, void *arg);

#define FRAME_CAP (WIRE_CONTROL_FRAME_MAX + 16)

/* Runs two sides against each other until neither has anything to say. */
static void pump(struct side *x, struct side *y, mitm_fn mitm, void *arg)
{
	struct side *sides[2] = { x, y };
	unsigned idx[2] = { 0, 0 };
	bool progress = true;

	while (progress) {
		progress = false;
		for (unsigned dir = 0; dir < 2; dir++) {
			struct side *from = sides[dir], *to = sides[!dir];
			uint8_t f[FRAME_CAP];
			size_t len;

			while (wire_auth_next(&from->a, f, sizeof(f), &len) == 1) {
				progress = true;
				if (mitm)
					mitm(dir, idx[dir], f, &len, arg);
				idx[dir]++;
				if (!to->a.error) {
					uint8_t *exact = malloc(len);
					memcpy(exact, f, len);
					to->rc = wire_auth_receive(&to->a, exact, len);
					free(exact);
				}
			}
		}
	}
}

static void test_handshake_ok(void)
{
	struct side i, a;
	uint8_t k1[WIRE_SESSION_KEY_LEN], k2[WIRE_SESSION_KEY_LEN];
	const struct wire_hello *ph;

	setup(&i, key1, true, "alpha", "beta", 0x11);
	setup(&a, key1, false, "beta", NULL, 0x22);
	CHECK(wire_auth_session_key(&i.a, k1) == -EAGAIN);
	CHECK(wire_auth_peer_hello(&i.a) == NULL);
	pump(&i, &a, NULL, NULL);
	CHECK(i.rc == WIRE_AUTH_DONE && a.rc == WIRE_AUTH_DONE);
	CHECK(wire_auth_done(&i.a) && wire_auth_done(&a.a));
	CHECK(wire_auth_session_key(&i.a, k1) == 0);
	CHECK(wire_auth_session_key(&a.a, k2) == 0);
	CHECK(memcmp(k1, k2, sizeof(k1)) == 0);
	ph = wire_auth_peer_hello(&i.a);
	CHECK(ph && ph->features == 1 && !ph->initiator);
	ph = wire_auth_peer_hello(&a.a);
	CHECK(ph && ph->features == 3 && ph->initiator);
	/* The names, from the claims, once verified. */
	CHECK(wire_auth_peer_node(&i.a) && strcmp(wire_auth_peer_node(&i.a), "beta") == 0);
	CHECK(wire_auth_peer_node(&a.a) && strcmp(wire_auth_peer_node(&a.a), "alpha") == 0);
	CHECK(wire_auth_refusal(&a.a, NULL) == WIRE_REFUSE_NONE);
	/* Nothing more to send or receive. */
	CHECK(wire_auth_next(&i.a, (uint8_t[FRAME_CAP]){ 0 }, FRAME_CAP, &(size_t){ 0 }) == 0);
	CHECK(wire_auth_receive(&i.a, (const uint8_t *)"x", 1) == -EPROTO);
	wire_auth_clear(&i.a);
	CHECK(i.a.keylen == 0 && i.a.key[0] == 0);
	wire_auth_clear(&a.a);

	/* A different session has a different session key. */
	setup(&i, key1, true, "alpha", "beta", 0x33);
	setup(&a, key1, false, "beta", NULL, 0x22);
	pump(&i, &a, NULL, NULL);
	CHECK(wire_auth_session_key(&i.a, k2) == 0 && memcmp(k1, k2, sizeof(k1)) != 0);

	/* Random nonces by default. */
	{
		struct wire_auth_params p = { .key = key1, .keylen = 32, .node = "n" };
		struct wire_auth r1, r2;

		CHECK(wire_auth_init(&r1, &p, NULL) == 0);
		CHECK(wire_auth_init(&r2, &p, NULL) == 0);
		CHECK(memcmp(r1.nonce, r2.nonce, WIRE_NONCE_LEN) != 0);
	}
}

static void expect_fail(const char *what, struct side *x, struct side *y, int err)
{
	CHECK_MSG(!wire_auth_done(&x->a) && !wire_auth_done(&y->a), "%s: completed", what);
	CHECK_MSG(x->rc == err || y->rc == err, "%s: got %d/%d, want %d", what, x->rc, y->rc,
		  err);
	CHECK_MSG(x->rc < 0 || y->rc < 0, "%s: no side failed", what);
}

static void test_handshake_refused(void)
{
	struct side i, a;
	struct wire_auth_params p = { .key = key1, .keylen = 32, .node = "n" };
	struct wire_auth w;

	setup(&i, key1, true, "alpha", NULL, 0x11);
	setup(&a, key2, false, "beta", NULL, 0x22);
	pump(&i, &a, NULL, NULL);
	expect_fail("different key", &i, &a, -EACCES);
	/* The initiator proves first; the acceptor refuses it and never sends
	 * its own proof (a stranger who connects gets nothing keyed), so the
	 * initiator is left waiting (for a close). */
	CHECK(a.rc == -EACCES && i.rc == WIRE_AUTH_CONTINUE);
	/* Errors are sticky. */
	CHECK(wire_auth_next(&a.a, (uint8_t[FRAME_CAP]){ 0 }, FRAME_CAP, &(size_t){ 0 }) == -EACCES);
	CHECK(wire_auth_receive(&a.a, (const uint8_t *)"x", 1) == -EACCES);
	/* Handed the initiator's proof anyway, the acceptor refuses it too. */
	setup(&i, key1, true, "alpha", NULL, 0x11);
	setup(&a, key2, false, "beta", NULL, 0x22);
	{
		uint8_t f[FRAME_CAP];
		size_t len;

		for (unsigned k = 0; k < 2; k++) {
			CHECK(wire_auth_next(&a.a, f, sizeof(f), &len) == 1);
			CHECK(wire_auth_receive(&i.a, f, len) == WIRE_AUTH_CONTINUE);
		}
		for (unsigned k = 0; k < 3; k++) {
			CHECK(wire_auth_next(&i.a, f, sizeof(f), &len) == 1);
			a.rc = wire_auth_receive(&a.a, f, len);
		}
		CHECK(a.rc == -EACCES);
	}

	setup(&i, key1, true, "alpha", "gamma", 0x11);
	setup(&a, key1, false, "beta", NULL, 0x22);
	pump(&i, &a, NULL, NULL);
	expect_fail("unexpected peer", &i, &a, -EACCES);

	setup(&i, key1, true, "alpha", NULL, 0x11);
	setup(&a, key1, false, "alpha", NULL, 0x22);
	pump(&i, &a, NULL, NULL);
	expect_fail("peer claims our name", &i, &a, -EACCES);

	setup(&i, key1, true, "alpha", NULL, 0x11);
	setup(&a, key1, true, "beta", NULL, 0x22);
	pump(&i, &a, NULL, NULL);
	expect_fail("two initiators", &i, &a, -EPROTO);

	{
		struct wire_auth_params q = { .key = key1, .keylen = 32, .initiator = true,
					      .node = "alpha", .resource = "vm43" };
		setup(&a, key1, false, "beta", NULL, 0x22);
		CHECK(wire_auth_init(&i.a, &q, (const uint8_t[32]){ 1 }) == 0);
		i.rc = 0;
		pump(&i, &a, NULL, NULL);
		expect_fail("other resource", &i, &a, -EACCES);
	}

	/* Same nonce on both sides: looks like a reflection. */
	setup(&i, key1, true, "alpha", NULL, 0x11);
	setup(&a, key1, false, "beta", NULL, 0x11);
	pump(&i, &a, NULL, NULL);
	expect_fail("equal nonces", &i, &a, -EACCES);

	/* Parameters. */
	p.keylen = WIRE_KEY_MIN - 1;
	CHECK(wire_auth_init(&w, &p, NULL) == -EINVAL);
	p.keylen = WIRE_KEY_MAX + 1;
	CHECK(wire_auth_init(&w, &p, NULL) == -EINVAL);
	p.keylen = WIRE_KEY_MIN;
	CHECK(wire_auth_init(&w, &p, NULL) == 0);
	p.node = "";
	CHECK(wire_auth_init(&w, &p, NULL) == -EINVAL);
	p.node = "has space";
	CHECK(wire_auth_init(&w, &p, NULL) == -EINVAL);
	p.node = NULL;
	CHECK(wire_auth_init(&w, &p, NULL) == -EINVAL);
	p.node = "n";
	p.peer = "";
	CHECK(wire_auth_init(&w, &p, NULL) == -EINVAL);
	p.peer = NULL;
	p.key = NULL;
	CHECK(wire_auth_init(&w, &p, NULL) == -EINVAL);
}

/* Records the frames one side sends. */
struct tape {
	uint8_t f[4][FRAME_CAP];
	size_t len[4];
	unsigned n;
};

static void record(unsigned dir, unsigned idx, uint8_t *f, size_t *len, void *arg)
{
	struct tape *t = arg;

	if (dir == 0 && idx < 4) {
		memcpy(t->f[idx], f, *len);
		t->len[idx] = *len;
		t->n = idx + 1;
	}
}

/* Feeds recorded frames to a fresh victim, ignoring what it says. */
static int replay(struct wire_auth *victim, const struct tape *t, unsigned count)
{
	uint8_t out[FRAME_CAP];
	size_t len;
	int rc = 0;

	for (unsigned k = 0; k < count && rc >= 0; k++) {
		while (wire_auth_next(victim, out, sizeof(out), &len) == 1)
			;
		rc = wire_auth_receive(victim, t->f[k], t->len[k]);
	}
	return rc;
}

static void test_replay_reflection(void)
{
	struct side i, a, v;
	struct tape t = { .n = 0 };
	uint8_t out[FRAME_CAP];
	size_t len;
	struct wire_msg m;

	/* A good session, recorded from the initiator's side. */
	setup(&i, key1, true, "alpha", NULL, 0x11);
	setup(&a, key1, false, "beta", NULL, 0x22);
	pump(&i, &a, record, &t);
	CHECK(wire_auth_done(&i.a) && wire_auth_done(&a.a) && t.n == 4);

	/* Replayed to a new acceptor (new nonce): the proof no longer fits. */
	setup(&v, key1, false, "beta", NULL, 0x23);
	CHECK(replay(&v.a, &t, 3) == -EACCES);
	CHECK(!wire_auth_done(&v.a));
	/* Even with the same acceptor nonce the replayed proof would only fit
	 * an acceptor that reused its nonce: that one accepts, showing the
	 * check is the nonce, and why nonces must be fresh. */
	setup(&v, key1, false, "beta", NULL, 0x22);
	CHECK(replay(&v.a, &t, 3) == WIRE_AUTH_CONTINUE);

	/* Reflection: an attacker (acceptor "evil") sends its own HELLO and
	 * CHALLENGE, then hands the initiator's proof back to it. */
	setup(&i, key1, true, "alpha", NULL, 0x11);
	setup(&a, key2, false, "evil", NULL, 0x44);	/* attacker, no key */
	for (unsigned k = 0; k < 2; k++) {
		CHECK(wire_auth_next(&a.a, out, sizeof(out), &len) == 1);
		CHECK(wire_auth_receive(&i.a, out, len) == WIRE_AUTH_CONTINUE);
	}
	/* The initiator sends HELLO, CHALLENGE, AUTH; the attacker keeps AUTH. */
	for (unsigned k = 0; k < 3; k++)
		CHECK(wire_auth_next(&i.a, out, sizeof(out), &len) == 1);
	CHECK(wire_decode(out, len, &m) == 0 && m.type == WIRE_AUTH);
	CHECK(wire_auth_receive(&i.a, out, len) == -EACCES);

	/* Reflecting the CHALLENGE (our own nonce) or the HELLO (our role and
	 * name) is refused too. */
	setup(&i, key1, true, "alpha", NULL, 0x11);
	setup(&a, key1, false, "beta", NULL, 0x22);
	CHECK(wire_auth_next(&a.a, out, sizeof(out), &len) == 1);	/* beta HELLO */
	CHECK(wire_auth_receive(&i.a, out, len) == WIRE_AUTH_CONTINUE);
	CHECK(wire_auth_next(&i.a, out, sizeof(out), &len) == 1);	/* alpha HELLO */
	CHECK(wire_auth_next(&i.a, out, sizeof(out), &len) == 1);	/* alpha CHALLENGE */
	CHECK(wire_auth_receive(&i.a, out, len) == -EACCES);

	setup(&i, key1, true, "alpha", NULL, 0x11);
	CHECK(wire_auth_next(&i.a, out, sizeof(out), &len) == 1);
	CHECK(wire_auth_receive(&i.a, out, len) == -EPROTO);

	/* Out of order: AUTH before CHALLENGE, a second HELLO, wrong seq. */
	setup(&i, key1, true, "alpha", NULL, 0x11);
	setup(&a, key1, false, "beta", NULL, 0x22);
	pump(&i, &a, NULL, NULL);
	setup(&v, key1, false, "beta", NULL, 0x22);
	CHECK(wire_auth_receive(&v.a, t.f[0], t.len[0]) == WIRE_AUTH_CONTINUE);
	CHECK(wire_auth_receive(&v.a, t.f[2], t.len[2]) == -EPROTO);
	setup(&v, key1, false, "beta", NULL, 0x22);
	CHECK(wire_auth_receive(&v.a, t.f[0], t.len[0]) == WIRE_AUTH_CONTINUE);
	CHECK(wire_auth_receive(&v.a, t.f[0], t.len[0]) == -EPROTO);
	setup(&v, key1, false, "beta", NULL, 0x22);
	memcpy(out, t.f[0], t.len[0]);
	out[23] = 5;		/* seq */
	refix(out, t.len[0]);
	CHECK(wire_auth_receive(&v.a, out, t.len[0]) == -EPROTO);
	/* A valid frame of another type. */
	setup(&v, key1, false, "beta", NULL, 0x22);
	m = (struct wire_msg){ .type = WIRE_PING };
	len = (size_t)wire_encode(&m, out, sizeof(out));
	CHECK(wire_auth_receive(&v.a, out, len) == -EPROTO);
	/* AUTH_OK from a peer we never sent AUTH to. */
	setup(&v, key1, false, "beta", NULL, 0x22);
	CHECK(wire_auth_receive(&v.a, t.f[0], t.len[0]) == WIRE_AUTH_CONTINUE);
	CHECK(wire_auth_receive(&v.a, t.f[1], t.len[1]) == WIRE_AUTH_CONTINUE);
	CHECK(wire_auth_receive(&v.a, t.f[2], t.len[2]) == -EPROTO);	/* no CHALLENGE sent */
}

struct tamper {
	unsigned dir, idx;
	size_t off;
	uint8_t mask;
	bool fix_crc;
	bool hit;
};

static void tamper_fn(unsigned dir, unsigned idx, uint8_t *f, size_t *len, void *arg)
{
	struct tamper *t = arg;

	if (dir != t->dir || idx != t->idx || t->off >= *len)
		return;
	f[t->off] ^= t->mask;
	if (t->fix_crc)
		refix(f, *len);
	t->hit = true;
}

/* Flips every bit of every handshake frame in both directions, raw and
 * with the CRCs recomputed: the handshake never completes. */
static void test_tampering(void)
{
	static const size_t frame_len[4] = { WIRE_HDR_LEN + WIRE_HELLO_LEN,
					     WIRE_HDR_LEN + WIRE_NONCE_LEN,
					     WIRE_HDR_LEN + WIRE_AUTH_LEN, WIRE_HDR_LEN };
	unsigned runs = 0, completed = 0, macs = 0;

	for (unsigned fix = 0; fix < 2; fix++)
	for (unsigned dir = 0; dir < 2; dir++)
	for (unsigned idx = 0; idx < 4; idx++)
	for (size_t off = 0; off < frame_len[idx]; off++)
	for (unsigned bit = 0; bit < 8; bit++) {
		struct tamper t = { dir, idx, off, (uint8_t)(1u << bit), fix, false };
		struct side i, a;

		/* Raw flips of the payload are all CRC errors: one bit is
		 * enough there. */
		if (!fix && off >= WIRE_HDR_LEN && bit)
			continue;
		/* The header CRC itself is not part of what we fix. */
		if (fix && off >= 24 && off < 32)
			continue;
		setup(&i, key1, true, "alpha", NULL, 0x11);
		setup(&a, key1, false, "beta", NULL, 0x22);
		pump(&i, &a, tamper_fn, &t);
		runs++;
		/* The receiver of a changed frame never completes, and neither
		 * do both sides.  (The sender of the last AUTH_OK may: nobody
		 * confirms the last message.) */
		if (!t.hit || wire_auth_done(dir ? &i.a : &a.a) ||
		    (wire_auth_done(&i.a) && wire_auth_done(&a.a))) {
			completed++;
			fprintf(stderr, "tamper fix=%u dir=%u frame=%u off=%zu bit=%u: %s\n",
				fix, dir, idx, off, bit, t.hit ? "completed" : "missed");
		}
		if (i.rc == -EACCES || a.rc == -EACCES)
			macs++;
	}
	CHECK(runs > 5000);
	CHECK_MSG(completed == 0, "%u of %u tampered handshakes completed", completed, runs);
	CHECK(macs > 1000);	/* the MAC, not only the CRC, was put to work */
}

/* ---- key file --------------------------------------------------------- */

static char tmpdir[64];

static char *write_file(const char *name, const void *data, size_t len, mode_t mode)
{
	static char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || full_write(fd, data, len) || fchmod(fd, mode) || close(fd))
		abort();
	return path;
}

static void test_key_file(void)
{
	uint8_t key[64], big[100];
	const char *why = NULL;
	char path[128];
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/test-wire.XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(tmpdir))
		abort();
	memset(big, 'k', sizeof(big));

	CHECK(wire_key_load(write_file("good", key1, 32, 0600), key, sizeof(key), &why) == 32);
	CHECK(memcmp(key, key1, 32) == 0 && why == NULL);
	CHECK(wire_key_load(write_file("ro", key1, 16, 0400), key, sizeof(key), NULL) == 16);
	CHECK(wire_key_load(write_file("max", big, 64, 0600), key, sizeof(key), &why) == 64);
	CHECK(wire_key_load(write_file("long", big, 65, 0600), key, sizeof(key), &why) == -EFBIG);
	CHECK(why && strstr(why, "too long"));
	CHECK(key[0] == 0);	/* wiped on failure */
	CHECK(wire_key_load(write_file("short", key1, 15, 0600), key, sizeof(key), &why) == -EINVAL);
	CHECK(why && strstr(why, "shorter than 16"));
	CHECK(wire_key_load(write_file("empty", key1, 0, 0600), key, sizeof(key), &why) == -EINVAL);
	why = NULL;
	CHECK(wire_key_load(write_file("g-r", key1, 32, 0640), key, sizeof(key), &why) == -EPERM);
	CHECK(why && strstr(why, "group or others"));
	CHECK(wire_key_load(write_file("o-r", key1, 32, 0604), key, sizeof(key), &why) == -EPERM);
	CHECK(wire_key_load(write_file("g-w", key1, 32, 0620), key, sizeof(key), &why) == -EPERM);
	CHECK(wire_key_load(write_file("o-x", key1, 32, 0601), key, sizeof(key), &why) == -EPERM);
	CHECK(wire_key_load(tmpdir, key, sizeof(key), &why) == -EINVAL);
	CHECK(why && strstr(why, "regular"));
	snprintf(path, sizeof(path), "%s/missing", tmpdir);
	CHECK(wire_key_load(path, key, sizeof(key), &why) == -ENOENT);
	CHECK(why != NULL);
	if (geteuid() == 0) {
		char *p = write_file("other", key1, 32, 0600);
		CHECK(chown(p, 4321, 4321) == 0);
		CHECK(wire_key_load(p, key, sizeof(key), &why) == -EPERM);
		CHECK(why && strstr(why, "another user"));
	}

	static const char *const names[] = { "good", "ro", "max", "long", "short", "empty",
					     "g-r", "o-r", "g-w", "o-x", "other" };
	for (size_t k = 0; k < ARRAY_SIZE(names); k++) {
		snprintf(path, sizeof(path), "%s/%s", tmpdir, names[k]);
		unlink(path);
	}
	CHECK(rmdir(tmpdir) == 0);
}

/* Before authentication: the handshake's four types at their one length,
 * nothing else (a WRITE header there must not get a 4 MiB buffer). */
static void test_before_auth(void)
{
	static const struct { uint16_t type; uint32_t length; bool ok; } t[] = {
		{ WIRE_HELLO, WIRE_HELLO_LEN, true },
		{ WIRE_CHALLENGE, WIRE_NONCE_LEN, true },
		{ WIRE_AUTH, WIRE_AUTH_LEN, true },
		{ WIRE_AUTH_OK, 0, true },
		{ WIRE_HELLO, WIRE_HELLO_LEN - 1, false },
		{ WIRE_AUTH, WIRE_AUTH_LEN + 1, false },
		{ WIRE_AUTH, WIRE_MAC_LEN, false },	/* version 2's */
		{ WIRE_VOLUME, WIRE_VOLUME_LEN, false },
		{ WIRE_WRITE, WIRE_DATA_FIXED + WIRE_DATA_MAX, false },
		{ WIRE_WRITE, WIRE_DATA_FIXED + 1, false },
		{ WIRE_RS_DATA, WIRE_DATA_FIXED + 512, false },
		{ WIRE_BYE, 8, false },
		{ WIRE_PING, 0, false },
		{ WIRE_STATE, 16, false },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct wire_hdr h = { .version = WIRE_VERSION, .type = t[i].type,
				      .length = t[i].length };
		CHECK_MSG(wire_hdr_before_auth(&h) == t[i].ok, "type %u length %u",
			  t[i].type, t[i].length);
	}
}

int main(void)
{
	test_roundtrip();
	test_big_write();
	test_payload_crc_once();
	test_sealed();
	test_truncation();
	test_rejects();
	test_garbage();
	test_handshake_ok();
	test_handshake_refused();
	test_replay_reflection();
	test_tampering();
	test_key_file();
	test_before_auth();
	return unit_done("test-wire");
}
