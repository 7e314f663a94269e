/* wire.c: the frame codec of wire.h: the 32-byte header (its encoding, its
 * strict decoding, the length bounds of each type, what may come before
 * authentication), whole frames in and out, and the payload CRC.  The
 * layout of each type's payload is in wire_payload.c (reached through
 * its type table, wire_int.h), the key file in wire_key.c, the handshake
 * in wire_auth.c.  Pure: no sockets, no allocation. */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/types.h>

#include "util.h"
#include "wire.h"
#include "wire_int.h"

bool wire_type_valid(uint16_t type)
{
	return type < WIRE_TYPE_COUNT && repl__wire_types[type].name;
}

const char *wire_type_name(uint16_t type)
{
	return wire_type_valid(type) ? repl__wire_types[type].name : "?";
}

static uint32_t payload_min(const struct wire_type_info *t)
{
	return t->fixed + (t->data ? 1 : 0);
}

static uint32_t payload_max(const struct wire_type_info *t)
{
	return t->fixed + (t->data ? WIRE_DATA_MAX : 0);
}

/* ---- header ----------------------------------------------------------- */

static void hdr_encode(uint8_t *p, uint16_t type, uint32_t length, uint32_t flags,
		       uint64_t seq, uint32_t payload_crc)
{
	put32(p, WIRE_MAGIC);
	put16(p + 4, WIRE_VERSION);
	put16(p + 6, type);
	put32(p + 8, length);
	put32(p + 12, flags);
	put64(p + 16, seq);
	put32(p + 24, payload_crc);
	put32(p + 28, crc32c(0, p, 28));
}

int wire_hdr_decode(const uint8_t *buf, size_t len, struct wire_hdr *h)
{
	const struct wire_type_info *t;

	if (len < WIRE_HDR_LEN || get32(buf) != WIRE_MAGIC)
		return -EPROTO;
	if (get16(buf + 4) != WIRE_VERSION)
		return -EPROTONOSUPPORT;
	if (get32(buf + 28) != crc32c(0, buf, 28))
		return -EBADMSG;
	h->version = WIRE_VERSION;
	h->type = get16(buf + 6);
	h->length = get32(buf + 8);
	h->flags = get32(buf + 12);
	h->seq = get64(buf + 16);
	h->payload_crc = get32(buf + 24);
	if (!wire_type_valid(h->type) || (h->flags & ~WIRE_HF_SEALED) ||
	    ((h->flags & WIRE_HF_SEALED) && h->payload_crc))
		return -EPROTO;
	t = &repl__wire_types[h->type];
	if (h->length < payload_min(t) || h->length > payload_max(t))
		return -EMSGSIZE;
	return 0;
}

bool wire_hdr_before_auth(const struct wire_hdr *h)
{
	switch (h->type) {
	case WIRE_HELLO:
	case WIRE_CHALLENGE:
	case WIRE_AUTH:
	case WIRE_AUTH_OK:
		return h->length == repl__wire_types[h->type].fixed && !h->flags;
	default:
		return false;
	}
}

/* ---- frames ----------------------------------------------------------- */

int wire_decode_payload(const struct wire_hdr *h, const uint8_t *payload, size_t len,
			struct wire_msg *m)
{
	const struct wire_type_info *t;
	int r;

	if (!wire_type_valid(h->type))
		return -EPROTO;
	t = &repl__wire_types[h->type];
	if (len != h->length || len < payload_min(t) || len > payload_max(t))
		return -EMSGSIZE;
	if (!(h->flags & WIRE_HF_SEALED) && crc32c(0, payload, len) != h->payload_crc)
		return -EBADMSG;
	memset(m, 0, sizeof(*m));
	m->type = h->type;
	m->seq = h->seq;
	m->sealed = h->flags & WIRE_HF_SEALED;
	r = t->dec(payload, (uint32_t)len, m);
	if (r == 0 && t->check(m))
		r = -EPROTO;
	return r;
}

int wire_decode(const uint8_t *buf, size_t len, struct wire_msg *m)
{
	struct wire_hdr h;
	int r = wire_hdr_decode(buf, len, &h);

	if (r)
		return r;
	if (len - WIRE_HDR_LEN != h.length)
		return -EMSGSIZE;
	return wire_decode_payload(&h, buf + WIRE_HDR_LEN, h.length, m);
}

ssize_t wire_frame_len(const struct wire_msg *m)
{
	const struct wire_type_info *t;

	if (!wire_type_valid(m->type))
		return -EINVAL;
	t = &repl__wire_types[m->type];
	if (t->check(m))
		return -EINVAL;
	return (ssize_t)(WIRE_HDR_LEN + t->fixed + (t->data ? m->u.write.len : 0));
}

ssize_t wire_encode_prefix(const struct wire_msg *m, uint8_t *buf, size_t cap)
{
	ssize_t total = wire_frame_len(m);
	const struct wire_type_info *t;
	size_t prefix;
	uint32_t crc;

	if (total < 0)
		return total;
	t = &repl__wire_types[m->type];
	prefix = WIRE_HDR_LEN + t->fixed;
	if (cap < prefix)
		return -ENOBUFS;
	if (t->enc)
		t->enc(m, buf + WIRE_HDR_LEN);
	if (m->sealed) {
		crc = 0;	/* the record's tag covers the payload */
	} else if (t->data && m->u.write.have_crc) {
		crc = m->u.write.payload_crc;
	} else {
		crc = crc32c(0, buf + WIRE_HDR_LEN, t->fixed);
		if (t->data)
			crc = crc32c(crc, m->u.write.data, m->u.write.len);
	}
	hdr_encode(buf, m->type, (uint32_t)((size_t)total - WIRE_HDR_LEN),
		   m->sealed ? WIRE_HF_SEALED : 0, m->seq, crc);
	return (ssize_t)prefix;
}

uint32_t wire_payload_crc(const struct wire_msg *m)
{
	uint8_t prefix[WIRE_CONTROL_FRAME_MAX];
	struct wire_msg plain = *m;

	plain.sealed = false;
	if (plain.type == WIRE_WRITE || plain.type == WIRE_RS_DATA)
		plain.u.write.have_crc = false;
	if (wire_encode_prefix(&plain, prefix, sizeof(prefix)) < 0)
		return 0;
	return get32(prefix + 24);
}

ssize_t wire_encode(const struct wire_msg *m, uint8_t *buf, size_t cap)
{
	ssize_t total = wire_frame_len(m);
	ssize_t prefix;

	if (total < 0)
		return total;
	if (cap < (size_t)total)
		return -ENOBUFS;
	prefix = wire_encode_prefix(m, buf, cap);
	if (prefix < 0)
		return prefix;
	if (prefix < total)
		memcpy(buf + prefix, m->u.write.data, (size_t)(total - prefix));
	return total;
}
