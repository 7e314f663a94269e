/* wire_payload.c: the payload of each replication frame type (wire.h):
 * its layout (below), the checks that encoding and decoding share, the
 * encoders and the strict decoders, the names the wire allows, and the
 * table of types (wire_int.h) through which wire.c's frame codec reaches
 * them.  No header, no CRC, no I/O, no allocation.
 *
 * Payload layouts (offsets in bytes, integers big-endian, "res" = reserved,
 * must be zero; names are NUL-terminated and zero-padded to 64 bytes):
 *
 *   HELLO       16  0 u16 proto_min   2 u16 proto_max   4 u32 features
 *                   8 u8 initiator (0/1)   9 res[7]
 *   CHALLENGE   32  0 nonce[32]
 *   AUTH       224  0 hmac-sha256[32]   32 names[192], masked (wire.h;
 *                   unmasked: initiator[64] acceptor[64] resource[64])
 *   AUTH_OK      0
 *   VOLUME     192  0 uuid[16]   16 name[64]   80 u64 size   88 u64 current
 *                   96 u64 bitmap   104 u64 history[0]   112 u64 history[1]
 *                   120 u64 dirty   128 u32 node_id   132 u32 region_size
 *                   136 u8 disk   137 u8 role   138 u8 flags (bit 0:
 *                   crashed primary, bit 1: has a Primary connected, bit
 *                   2: lost power, bit 3: its host restarted, bit 4:
 *                   no quorum (since version 7); a build before a bit
 *                   drops a link that sends it)
 *                   139 u8 peer_disk   140 res[4]
 *                   144 u64 history[2..7] (since version 4)
 *   WRITE    16+len 0 u64 offset   8 u32 len   12 u32 flags   16 data[len]
 *   RS_DATA  16+len same as WRITE, flags 0
 *   WRITE_ACK   16  0 u64 seq   8 u32 error   12 res[4]
 *   FLUSH_ACK   16  same as WRITE_ACK
 *   FLUSH, PING, PING_ACK   0
 *   TRIM, ZERO  24  0 u64 offset   8 u64 len   16 u32 flags   20 res[4]
 *   RS_REQUEST  16  0 u64 offset   8 u32 len   12 res[4]
 *   RS_ZERO     16  same as RS_REQUEST
 *   STATE       24  0 u8 role   1 u8 disk   2 u8 flags (bit 0: outdate
 *                   notice, bit 1: confirmation; not both)   3 res
 *                   4 u32 outdated_node   8 u64 current   16 u64 token
 *   BYE          8  0 u32 reason   4 res[4]
 *   READ_REQ    16  same as RS_REQUEST
 *   READ_DATA 16+len same as WRITE, flags 0
 *   READ_FAIL   16  same as WRITE_ACK
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "gen.h"
#include "util.h"
#include "wire.h"
#include "wire_int.h"

/* ---- names ------------------------------------------------------------ */

static bool name_char_ok(unsigned char c)
{
	return c > 0x20 && c < 0x7f;
}

static bool name_ok(const char *s, bool may_be_empty)
{
	size_t n = strnlen(s, WIRE_NAME_MAX);

	if (n == WIRE_NAME_MAX || (n == 0 && !may_be_empty))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!name_char_ok((unsigned char)s[i]))
			return false;
	return true;
}

static void put_name(uint8_t *p, const char *s)
{
	memset(p, 0, WIRE_NAME_MAX);
	memcpy(p, s, strnlen(s, WIRE_NAME_MAX - 1));
}

/* Canonical only: a NUL inside, zeros after it.  Characters are checked by
 * the message check. */
static int get_name(char *out, const uint8_t *p)
{
	const uint8_t *nul = memchr(p, 0, WIRE_NAME_MAX);

	if (!nul || !all_zero(nul, (size_t)(p + WIRE_NAME_MAX - nul)))
		return -EPROTO;
	memcpy(out, p, WIRE_NAME_MAX);
	return 0;
}

bool wire_name_valid(const char *s, bool may_be_empty)
{
	return name_ok(s, may_be_empty);
}

/* ---- per-type checks (shared by encoding and decoding) ----------------- */

static bool disk_ok(uint8_t d)
{
	return d <= GEN_DISK_UPTODATE;
}

static bool range_ok(uint64_t offset, uint64_t len)
{
	return len > 0 && offset <= UINT64_MAX - len;
}

static int check_hello(const struct wire_msg *m)
{
	const struct wire_hello *h = &m->u.hello;

	if (h->proto_min > h->proto_max || !h->proto_min)
		return -EINVAL;
	return 0;
}

static int check_volume(const struct wire_msg *m)
{
	const struct wire_volume *v = &m->u.volume;

	if (!name_ok(v->name, false) || !disk_ok(v->disk) || v->role > 1 ||
	    v->peer_disk > GEN_DISK_UNKNOWN)
		return -EINVAL;
	if (!v->region_size || (v->region_size & (v->region_size - 1)))
		return -EINVAL;
	return 0;
}

static int check_write(const struct wire_msg *m)
{
	const struct wire_write *w = &m->u.write;
	uint32_t allowed = m->type == WIRE_WRITE ? WIRE_WF_FUA : 0;

	if (!w->len || w->len > WIRE_DATA_MAX || !range_ok(w->offset, w->len))
		return -EINVAL;
	if (w->flags & ~allowed)
		return -EINVAL;
	if (!w->data)
		return -EINVAL;
	return 0;
}

static int check_ack(const struct wire_msg *m)
{
	return m->u.ack.error < 4096 ? 0 : -EINVAL;
}

static int check_range(const struct wire_msg *m)
{
	const struct wire_range *r = &m->u.range;
	uint32_t allowed = 0;

	if (!range_ok(r->offset, r->len))
		return -EINVAL;
	switch (m->type) {
	case WIRE_TRIM:
		allowed = WIRE_WF_FUA;
		break;
	case WIRE_ZERO:
		allowed = WIRE_WF_FUA | WIRE_WF_NO_HOLE;
		break;
	default:	/* RS_REQUEST, RS_ZERO, VERIFY_REQ, READ_REQ */
		if (r->len > WIRE_DATA_MAX)
			return -EINVAL;
		break;
	}
	return r->flags & ~allowed ? -EINVAL : 0;
}

static int check_verify(const struct wire_msg *m)
{
	const struct wire_verify *v = &m->u.verify;

	return v->len && v->len <= WIRE_DATA_MAX && range_ok(v->offset, v->len) ? 0 : -EINVAL;
}

static int check_state(const struct wire_msg *m)
{
	const struct wire_state *s = &m->u.state;

	if (s->role > 1 || !disk_ok(s->disk))
		return -EINVAL;
	if (!s->outdate_notice && s->outdated_node)
		return -EINVAL;
	if (s->outdate_notice && s->confirm)
		return -EINVAL;
	if (!s->outdate_notice && !s->confirm && s->token)
		return -EINVAL;
	return 0;
}

static int check_takeover(const struct wire_msg *m)
{
	return m->u.takeover.flags & ~WIRE_TO_SOFT ? -EINVAL : 0;
}

static int check_handover(const struct wire_msg *m)
{
	return m->u.handover.error < 4096 ? 0 : -EINVAL;
}

static int check_bye(const struct wire_msg *m)
{
	return m->u.bye_reason < WIRE_BYE_REASON_COUNT ? 0 : -EINVAL;
}

static int check_size(const struct wire_msg *m)
{
	return m->u.size && m->u.size % 512 == 0 ? 0 : -EINVAL;
}

static int check_ckpt(const struct wire_msg *m)
{
	const struct wire_ckpt *c = &m->u.ckpt;

	if (c->op < WIRE_CKPT_CREATE || c->op > WIRE_CKPT_DELETE)
		return -EINVAL;
	return name_ok(c->name, c->op == WIRE_CKPT_END) ? 0 : -EINVAL;
}

static int check_none(const struct wire_msg *m)
{
	(void)m;
	return 0;
}

/* ---- per-type encoders: write the fixed part, which the caller sized ---- */

static void enc_hello(const struct wire_msg *m, uint8_t *p)
{
	const struct wire_hello *h = &m->u.hello;

	memset(p, 0, WIRE_HELLO_LEN);
	put16(p, h->proto_min);
	put16(p + 2, h->proto_max);
	put32(p + 4, h->features);
	p[8] = h->initiator;
}

static void enc_nonce(const struct wire_msg *m, uint8_t *p)
{
	memcpy(p, m->u.nonce, WIRE_NONCE_LEN);
}

static void enc_mac(const struct wire_msg *m, uint8_t *p)
{
	memcpy(p, m->u.auth.mac, WIRE_MAC_LEN);
	memcpy(p + WIRE_MAC_LEN, m->u.auth.names, WIRE_NAMES_LEN);
}

static void enc_volume(const struct wire_msg *m, uint8_t *p)
{
	const struct wire_volume *v = &m->u.volume;

	memset(p, 0, WIRE_VOLUME_LEN);
	memcpy(p, v->uuid, WIRE_UUID_LEN);
	put_name(p + 16, v->name);
	put64(p + 80, v->size);
	put64(p + 88, v->current);
	put64(p + 96, v->bitmap);
	put64(p + 104, v->history[0]);
	put64(p + 112, v->history[1]);
	for (unsigned i = 2; i < WIRE_GEN_HISTORY; i++)
		put64(p + 144 + (i - 2) * 8, v->history[i]);
	put64(p + 120, v->dirty);
	put32(p + 128, v->node_id);
	put32(p + 132, v->region_size);
	p[136] = v->disk;
	p[137] = v->role;
	p[138] = (uint8_t)(v->crashed_primary | v->has_primary << 1 | v->lost_power << 2 |
			   v->host_restarted << 3 | v->no_quorum << 4 | v->partial << 5);
	p[139] = v->peer_disk;
}

static void enc_write(const struct wire_msg *m, uint8_t *p)
{
	put64(p, m->u.write.offset);
	put32(p + 8, m->u.write.len);
	put32(p + 12, m->u.write.flags);
}

static void enc_ack(const struct wire_msg *m, uint8_t *p)
{
	put64(p, m->u.ack.seq);
	put32(p + 8, m->u.ack.error);
	put32(p + 12, 0);
}

static void enc_range(const struct wire_msg *m, uint8_t *p)
{
	put64(p, m->u.range.offset);
	put64(p + 8, m->u.range.len);
	put32(p + 16, m->u.range.flags);
	put32(p + 20, 0);
}

static void enc_verify(const struct wire_msg *m, uint8_t *p)
{
	put64(p, m->u.verify.offset);
	put32(p + 8, m->u.verify.len);
	put32(p + 12, m->u.verify.crc);
}

static void enc_rs_range(const struct wire_msg *m, uint8_t *p)
{
	put64(p, m->u.range.offset);
	put32(p + 8, (uint32_t)m->u.range.len);
	put32(p + 12, 0);
}

static void enc_takeover(const struct wire_msg *m, uint8_t *p)
{
	put32(p, m->u.takeover.flags);
	put32(p + 4, 0);
}

static void enc_handover(const struct wire_msg *m, uint8_t *p)
{
	put32(p, m->u.handover.error);
	put32(p + 4, 0);
	put64(p + 8, m->u.handover.seq);
	put64(p + 16, m->u.handover.current);
}

static void enc_state(const struct wire_msg *m, uint8_t *p)
{
	p[0] = m->u.state.role;
	p[1] = m->u.state.disk;
	p[2] = (uint8_t)(m->u.state.outdate_notice | (m->u.state.confirm << 1) |
			 (m->u.state.partial << 2));
	p[3] = 0;
	put32(p + 4, m->u.state.outdated_node);
	put64(p + 8, m->u.state.current);
	put64(p + 16, m->u.state.token);
}

static void enc_size(const struct wire_msg *m, uint8_t *p)
{
	put64(p, m->u.size);
}

static void enc_ckpt(const struct wire_msg *m, uint8_t *p)
{
	put32(p, m->u.ckpt.op);
	put32(p + 4, 0);
	put_name(p + 8, m->u.ckpt.name);
}

static void enc_bye(const struct wire_msg *m, uint8_t *p)
{
	put32(p, m->u.bye_reason);
	put32(p + 4, 0);
}

/* ---- per-type decoders: len is within the type's bounds --------------- */

static int get_bool(bool *out, uint8_t v)
{
	if (v > 1)
		return -EPROTO;
	*out = v;
	return 0;
}

static int dec_hello(const uint8_t *p, uint32_t len, struct wire_msg *m)
{
	struct wire_hello *h = &m->u.hello;

	(void)len;
	h->proto_min = get16(p);
	h->proto_max = get16(p + 2);
	h->features = get32(p + 4);
	if (get_bool(&h->initiator, p[8]) || !all_zero(p + 9, 7))
		return -EPROTO;
	return 0;
}

static int dec_nonce(const uint8_t *p, uint32_t len, struct wire_msg *m)
{
	(void)len;
	memcpy(m->u.nonce, p, WIRE_NONCE_LEN);
	return 0;
}

static int dec_mac(const uint8_t *p, uint32_t len, struct wire_msg *m)
{
	(void)len;
	memcpy(m->u.auth.mac, p, WIRE_MAC_LEN);
	memcpy(m->u.auth.names, p + WIRE_MAC_LEN, WIRE_NAMES_LEN);
	return 0;
}

static int dec_volume(const uint8_t *p, uint32_t len, struct wire_msg *m)
{
	struct wire_volume *v = &m->u.volume;

	(void)len;
	memcpy(v->uuid, p, WIRE_UUID_LEN);
	if (get_name(v->name, p + 16))
		return -EPROTO;
	v->size = get64(p + 80);
	v->current = get64(p + 88);
	v->bitmap = get64(p + 96);
	v->history[0] = get64(p + 104);
	v->history[1] = get64(p + 112);
	for (unsigned i = 2; i < WIRE_GEN_HISTORY; i++)
		v->history[i] = get64(p + 144 + (i - 2) * 8);
	v->dirty = get64(p + 120);
	v->node_id = get32(p + 128);
	v->region_size = get32(p + 132);
	v->disk = p[136];
	v->role = p[137];
	if (p[138] > 63)
		return -EPROTO;
	v->crashed_primary = p[138] & 1;
	v->has_primary = (p[138] >> 1) & 1;
	v->lost_power = (p[138] >> 2) & 1;
	v->host_restarted = (p[138] >> 3) & 1;
	v->no_quorum = (p[138] >> 4) & 1;
	v->partial = p[138] >> 5;
	v->peer_disk = p[139];
	return all_zero(p + 140, 4) ? 0 : -EPROTO;
}

static int dec_write(const uint8_t *p, uint32_t len, struct wire_msg *m)
{
	m->u.write.offset = get64(p);
	m->u.write.len = get32(p + 8);
	m->u.write.flags = get32(p + 12);
	if (m->u.write.len != len - WIRE_DATA_FIXED)
		return -EPROTO;
	m->u.write.data = p + WIRE_DATA_FIXED;
	return 0;
}

static int dec_ack(const uint8_t *p, uint32_t len, struct wire_msg *m)
{
	(void)len;
	m->u.ack.seq = get64(p);
	m->u.ack.error = get32(p + 8);
	return all_zero(p + 12, 4) ? 0 : -EPROTO;
}

static int dec_range(const uint8_t *p, uint32_t len, struct wire_msg *m)
{
	(void)len;
	m->u.range.offset = get64(p);
	m->u.range.len = get64(p + 8);
	m->u.range.flags = get32(p + 16);
	return all_zero(p + 20, 4) ? 0 : -EPROTO;
}

static int dec_verify(const uint8_t *p, uint32_t len, struct wire_msg *m)
{
	(void)len;
	m->u.verify.offset = get64(p);
	m->u.verify.len = get32(p + 8);
	m->u.verify.crc = get32(p + 12);
	return 0;
}

static int dec_rs_range(const uint8_t *p, uint32_t len, struct wire_msg *m)
{
	(void)len;
	m->u.range.offset = get64(p);
	m->u.range.len = get32(p + 8);
	m->u.range.flags = 0;
	return all_zero(p + 12, 4) ? 0 : -EPROTO;
}

static int dec_state(const uint8_t *p, uint32_t len, struct wire_msg *m)
{
	(void)len;
	m->u.state.role = p[0];
	m->u.state.disk = p[1];
	if (p[2] > 7 || p[3])
		return -EPROTO;
	m->u.state.outdate_notice = p[2] & 1;
	m->u.state.confirm = p[2] & 2;
	m->u.state.partial = p[2] & 4;
	m->u.state.outdated_node = get32(p + 4);
	m->u.state.current = get64(p + 8);
	m->u.state.token = get64(p + 16);
	return 0;
}

static int dec_takeover(const uint8_t *p, uint32_t len, struct wire_msg *m)
{
	(void)len;
	m->u.takeover.flags = get32(p);
	return all_zero(p + 4, 4) ? 0 : -EPROTO;
}

static int dec_handover(const uint8_t *p, uint32_t len, struct wire_msg *m)
{
	(void)len;
	m->u.handover.error = get32(p);
	m->u.handover.seq = get64(p + 8);
	m->u.handover.current = get64(p + 16);
	return all_zero(p + 4, 4) ? 0 : -EPROTO;
}

static int dec_bye(const uint8_t *p, uint32_t len, struct wire_msg *m)
{
	(void)len;
	m->u.bye_reason = get32(p);
	return all_zero(p + 4, 4) ? 0 : -EPROTO;
}

static int dec_size(const uint8_t *p, uint32_t len, struct wire_msg *m)
{
	(void)len;
	m->u.size = get64(p);
	return 0;
}

static int dec_ckpt(const uint8_t *p, uint32_t len, struct wire_msg *m)
{
	(void)len;
	m->u.ckpt.op = get32(p);
	return all_zero(p + 4, 4) ? get_name(m->u.ckpt.name, p + 8) : -EPROTO;
}

static int dec_none(const uint8_t *p, uint32_t len, struct wire_msg *m)
{
	(void)p;
	(void)len;
	(void)m;
	return 0;
}

/* ---- the type table ------------------------------------------------- */

#define T(type, nm, fx, dt, ck, en, de) \
	[type] = { .name = nm, .fixed = fx, .data = dt, .check = ck, .enc = en, .dec = de }

const struct wire_type_info repl__wire_types[WIRE_TYPE_COUNT] = {
	T(WIRE_HELLO, "HELLO", WIRE_HELLO_LEN, false, check_hello, enc_hello, dec_hello),
	T(WIRE_CHALLENGE, "CHALLENGE", WIRE_NONCE_LEN, false, check_none, enc_nonce, dec_nonce),
	T(WIRE_AUTH, "AUTH", WIRE_AUTH_LEN, false, check_none, enc_mac, dec_mac),
	T(WIRE_AUTH_OK, "AUTH_OK", 0, false, check_none, NULL, dec_none),
	T(WIRE_VOLUME, "VOLUME", WIRE_VOLUME_LEN, false, check_volume, enc_volume, dec_volume),
	T(WIRE_WRITE, "WRITE", WIRE_DATA_FIXED, true, check_write, enc_write, dec_write),
	T(WIRE_WRITE_ACK, "WRITE_ACK", 16, false, check_ack, enc_ack, dec_ack),
	T(WIRE_FLUSH, "FLUSH", 0, false, check_none, NULL, dec_none),
	T(WIRE_FLUSH_ACK, "FLUSH_ACK", 16, false, check_ack, enc_ack, dec_ack),
	T(WIRE_TRIM, "TRIM", 24, false, check_range, enc_range, dec_range),
	T(WIRE_ZERO, "ZERO", 24, false, check_range, enc_range, dec_range),
	T(WIRE_RS_REQUEST, "RS_REQUEST", 16, false, check_range, enc_rs_range, dec_rs_range),
	T(WIRE_RS_DATA, "RS_DATA", WIRE_DATA_FIXED, true, check_write, enc_write, dec_write),
	T(WIRE_RS_ZERO, "RS_ZERO", 16, false, check_range, enc_rs_range, dec_rs_range),
	T(WIRE_STATE, "STATE", 24, false, check_state, enc_state, dec_state),
	T(WIRE_PING, "PING", 0, false, check_none, NULL, dec_none),
	T(WIRE_PING_ACK, "PING_ACK", 0, false, check_none, NULL, dec_none),
	T(WIRE_BYE, "BYE", 8, false, check_bye, enc_bye, dec_bye),
	T(WIRE_VERIFY_REQ, "VERIFY_REQ", 16, false, check_range, enc_rs_range, dec_rs_range),
	T(WIRE_VERIFY_REPLY, "VERIFY_REPLY", 16, false, check_verify, enc_verify, dec_verify),
	T(WIRE_TAKEOVER, "TAKEOVER", 8, false, check_takeover, enc_takeover, dec_takeover),
	T(WIRE_HANDOVER, "HANDOVER", 24, false, check_handover, enc_handover, dec_handover),
	T(WIRE_SIZE, "SIZE", 8, false, check_size, enc_size, dec_size),
	T(WIRE_CKPT, "CKPT", 8 + WIRE_NAME_MAX, false, check_ckpt, enc_ckpt, dec_ckpt),
	T(WIRE_READ_REQ, "READ_REQ", 16, false, check_range, enc_rs_range, dec_rs_range),
	T(WIRE_READ_DATA, "READ_DATA", WIRE_DATA_FIXED, true, check_write, enc_write, dec_write),
	T(WIRE_READ_FAIL, "READ_FAIL", 16, false, check_ack, enc_ack, dec_ack),
};
