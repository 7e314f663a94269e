/* clmsg.c: see clmsg.h.
 *
 * Payload layouts, in order (integers big-endian; "str" = u8 length 1..max
 * and that many bytes, no NUL):
 *
 *   ANNOUNCE   u32 nodeid, str node (63), str addr (255)
 *   VOLDEF     u64 size, u64 version, u32 origin, u16 port,
 *              u8 flags (bit 0: deleted; others 0), u8 n_nodes (2..3),
 *              uuid[16], str name (63), n_nodes x str node (63)
 *   OUTDATE    u64 generation, u32 from, str volume (63), str node (63)
 *   ROLE       u8 role (0 Secondary, 1 Primary, 2 Primary by a live
 *              migration's handover), u8 disk (0..GEN_DISK_UNKNOWN),
 *              str volume (63), str node (63)
 *   SYNC_DONE  u32 nodeid
 *
 * Decoding reads through a bounded cursor (a short payload sets an error,
 * it never reads past the end), then runs the same validity checks as
 * encoding.  Whether a valid message may come from the member that sent
 * it is a separate check (clmsg_check_sender): decoding knows no sender. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "clmsg.h"
#include "gen.h"
#include "util.h"

#define STR_MIN 2u			/* length byte + one character */
#define NAME_LEN_MAX (CLMSG_NAME_MAX - 1)
#define ADDR_LEN_MAX (CLMSG_ADDR_MAX - 1)
#define NAME_WIRE_MAX (1u + NAME_LEN_MAX)
#define ADDR_WIRE_MAX (1u + ADDR_LEN_MAX)
#define VOLDEF_FIXED (8u + 8 + 4 + 2 + 1 + 1 + CLMSG_UUID_LEN)
#define VOLDEF_FLAG_DELETED 0x1u

struct type_info {
	const char *name;
	uint32_t min, max;		/* payload bytes */
};

static const struct type_info types[CLMSG_TYPE_COUNT] = {
	[CLMSG_ANNOUNCE] = { "ANNOUNCE", 4 + 2 * STR_MIN, 4 + NAME_WIRE_MAX + ADDR_WIRE_MAX },
	[CLMSG_VOLDEF] = { "VOLDEF", VOLDEF_FIXED + (1 + CLMSG_NODES_MIN) * STR_MIN,
			   VOLDEF_FIXED + (1 + CLMSG_NODES_MAX) * NAME_WIRE_MAX },
	[CLMSG_OUTDATE] = { "OUTDATE", 12 + 2 * STR_MIN, 12 + 2 * NAME_WIRE_MAX },
	[CLMSG_ROLE] = { "ROLE", 2 + 2 * STR_MIN, 2 + 2 * NAME_WIRE_MAX },
	[CLMSG_SYNC_DONE] = { "SYNC_DONE", 4, 4 },
};

_Static_assert(CLMSG_MAX_LEN == CLMSG_HDR_LEN + 4 + NAME_WIRE_MAX + ADDR_WIRE_MAX,
	       "CLMSG_MAX_LEN is the longest ANNOUNCE");
_Static_assert(VOLDEF_FIXED + (1 + CLMSG_NODES_MAX) * NAME_WIRE_MAX <=
	       CLMSG_MAX_LEN - CLMSG_HDR_LEN, "CLMSG_MAX_LEN covers VOLDEF");

bool clmsg_type_valid(uint16_t type)
{
	return type > 0 && type < CLMSG_TYPE_COUNT;
}

const char *clmsg_type_name(uint16_t type)
{
	return clmsg_type_valid(type) ? types[type].name : "?";
}

/* ---- names ------------------------------------------------------------ */

static bool alnum(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool str_ok(const char *s, size_t max, const char *extra)
{
	size_t n = strnlen(s, max + 1);

	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!alnum((unsigned char)s[i]) && !strchr(extra, s[i]))
			return false;
	return true;
}

bool clmsg_volume_name_ok(const char *s)
{
	return str_ok(s, NAME_LEN_MAX, "_.-") && s[0] != '.' && s[0] != '-';
}

bool clmsg_node_name_ok(const char *s)
{
	return str_ok(s, NAME_LEN_MAX, "_.:-");
}

bool clmsg_addr_ok(const char *s)
{
	return str_ok(s, ADDR_LEN_MAX, "_.:%-");
}

/* ---- per-type checks (shared by encoding and decoding) ----------------- */

static int fail(const char **why, const char *msg)
{
	if (why)
		*why = msg;
	return -EINVAL;
}

static int check_nodes(const struct voldef *v, const char **why)
{
	if (v->n_nodes < CLMSG_NODES_MIN || v->n_nodes > CLMSG_NODES_MAX)
		return fail(why, "a volume needs 2 or 3 nodes");
	for (size_t i = 0; i < v->n_nodes; i++) {
		if (!clmsg_node_name_ok(v->nodes[i]))
			return fail(why, "node names are 1-63 characters of A-Z a-z 0-9 _ . : -");
		for (size_t j = 0; j < i; j++)
			if (!strcmp(v->nodes[i], v->nodes[j]))
				return fail(why, "a node is listed twice");
	}
	for (size_t i = v->n_nodes; i < CLMSG_NODES_MAX; i++)
		if (v->nodes[i][0])
			return fail(why, "unused node slots must be empty");
	return 0;
}

int voldef_check(const struct voldef *v, const char **why)
{
	if (!clmsg_volume_name_ok(v->name))
		return fail(why, "volume names are 1-63 characters of A-Z a-z 0-9 _ . - "
				 "not starting with . or -");
	if (!v->size || v->size % CLMSG_SECTOR || v->size > INT64_MAX)
		return fail(why, "the size must be a positive multiple of 512 bytes");
	if (!v->port)
		return fail(why, "the port must not be 0");
	if (!v->version)
		return fail(why, "the version must not be 0");
	if (!v->origin)
		return fail(why, "the origin nodeid must not be 0");
	return check_nodes(v, why);
}

static int check_msg(const struct clmsg *m)
{
	const struct clmsg_announce *a = &m->u.announce;
	const struct clmsg_outdate *o = &m->u.outdate;
	const struct clmsg_role *r = &m->u.role;

	switch (m->type) {
	case CLMSG_ANNOUNCE:
		return a->nodeid && clmsg_node_name_ok(a->node) && clmsg_addr_ok(a->addr) ?
			0 : -EINVAL;
	case CLMSG_VOLDEF:
		return voldef_check(&m->u.voldef, NULL);
	case CLMSG_OUTDATE:
		return o->from && clmsg_volume_name_ok(o->volume) &&
			clmsg_node_name_ok(o->node) ? 0 : -EINVAL;
	case CLMSG_ROLE:
		return r->role <= CLMSG_ROLE_HANDED_OVER && r->disk <= GEN_DISK_UNKNOWN &&
			clmsg_volume_name_ok(r->volume) && clmsg_node_name_ok(r->node) ?
			0 : -EINVAL;
	case CLMSG_SYNC_DONE:
		return m->u.sync_done.nodeid ? 0 : -EINVAL;
	default:
		return -EINVAL;
	}
}

/* ---- writer ------------------------------------------------------------ */

struct writer {
	uint8_t *p;
	size_t left;
	bool overflow;
};

static uint8_t *wspace(struct writer *w, size_t n)
{
	uint8_t *p = w->p;

	if (w->overflow || n > w->left) {
		w->overflow = true;
		return NULL;
	}
	w->p += n;
	w->left -= n;
	return p;
}

static void put_u8(struct writer *w, uint8_t v)
{
	uint8_t *p = wspace(w, 1);

	if (p)
		*p = v;
}

static void put_u16(struct writer *w, uint16_t v)
{
	uint8_t *p = wspace(w, 2);

	v = htobe16(v);
	if (p)
		memcpy(p, &v, 2);
}

static void put_u32(struct writer *w, uint32_t v)
{
	uint8_t *p = wspace(w, 4);

	v = htobe32(v);
	if (p)
		memcpy(p, &v, 4);
}

static void put_u64(struct writer *w, uint64_t v)
{
	uint8_t *p = wspace(w, 8);

	v = htobe64(v);
	if (p)
		memcpy(p, &v, 8);
}

static void put_bytes(struct writer *w, const void *src, size_t n)
{
	uint8_t *p = wspace(w, n);

	if (p)
		memcpy(p, src, n);
}

/* Checked strings only: 1..255 characters. */
static void put_str(struct writer *w, const char *s)
{
	size_t n = strlen(s);

	put_u8(w, (uint8_t)n);
	put_bytes(w, s, n);
}

static void put_payload(struct writer *w, const struct clmsg *m)
{
	const struct voldef *v = &m->u.voldef;

	switch (m->type) {
	case CLMSG_ANNOUNCE:
		put_u32(w, m->u.announce.nodeid);
		put_str(w, m->u.announce.node);
		put_str(w, m->u.announce.addr);
		break;
	case CLMSG_VOLDEF:
		put_u64(w, v->size);
		put_u64(w, v->version);
		put_u32(w, v->origin);
		put_u16(w, v->port);
		put_u8(w, v->deleted ? VOLDEF_FLAG_DELETED : 0);
		put_u8(w, v->n_nodes);
		put_bytes(w, v->uuid, CLMSG_UUID_LEN);
		put_str(w, v->name);
		for (size_t i = 0; i < v->n_nodes; i++)
			put_str(w, v->nodes[i]);
		break;
	case CLMSG_OUTDATE:
		put_u64(w, m->u.outdate.generation);
		put_u32(w, m->u.outdate.from);
		put_str(w, m->u.outdate.volume);
		put_str(w, m->u.outdate.node);
		break;
	case CLMSG_ROLE:
		put_u8(w, m->u.role.role);
		put_u8(w, m->u.role.disk);
		put_str(w, m->u.role.volume);
		put_str(w, m->u.role.node);
		break;
	case CLMSG_SYNC_DONE:
		put_u32(w, m->u.sync_done.nodeid);
		break;
	}
}

ssize_t clmsg_encode(const struct clmsg *m, uint8_t *buf, size_t cap)
{
	struct writer w = { buf, cap, false };
	size_t len;

	if (!clmsg_type_valid(m->type) || check_msg(m) < 0)
		return -EINVAL;
	put_u32(&w, CLMSG_MAGIC);
	put_u16(&w, CLMSG_VERSION);
	put_u16(&w, m->type);
	put_u32(&w, 0);		/* length, filled in below */
	put_u32(&w, 0);		/* flags */
	put_payload(&w, m);
	if (w.overflow)
		return -ENOBUFS;
	len = (size_t)(w.p - buf);
	w = (struct writer){ buf + 8, 4, false };
	put_u32(&w, (uint32_t)(len - CLMSG_HDR_LEN));
	return (ssize_t)len;
}

/* ---- reader ------------------------------------------------------------ */

struct reader {
	const uint8_t *p;
	size_t left;
	bool bad;
};

static const uint8_t *rtake(struct reader *r, size_t n)
{
	const uint8_t *p = r->p;

	if (r->bad || n > r->left) {
		r->bad = true;
		return NULL;
	}
	r->p += n;
	r->left -= n;
	return p;
}

static uint8_t get_u8(struct reader *r)
{
	const uint8_t *p = rtake(r, 1);

	return p ? *p : 0;
}

static uint16_t get_u16(struct reader *r)
{
	const uint8_t *p = rtake(r, 2);
	uint16_t v = 0;

	if (p)
		memcpy(&v, p, 2);
	return be16toh(v);
}

static uint32_t get_u32(struct reader *r)
{
	const uint8_t *p = rtake(r, 4);
	uint32_t v = 0;

	if (p)
		memcpy(&v, p, 4);
	return be32toh(v);
}

static uint64_t get_u64(struct reader *r)
{
	const uint8_t *p = rtake(r, 8);
	uint64_t v = 0;

	if (p)
		memcpy(&v, p, 8);
	return be64toh(v);
}

static void get_bytes(struct reader *r, void *out, size_t n)
{
	const uint8_t *p = rtake(r, n);

	if (p)
		memcpy(out, p, n);
}

/* Into out[cap] (zeroed by the caller): 1..cap-1 bytes, no NUL.  The
 * characters are checked later, with the message. */
static void get_str(struct reader *r, char *out, size_t cap)
{
	size_t n = get_u8(r);
	const uint8_t *p;

	if (!r->bad && (n == 0 || n >= cap)) {
		r->bad = true;
		return;
	}
	p = rtake(r, n);
	if (!p)
		return;
	if (memchr(p, 0, n)) {
		r->bad = true;
		return;
	}
	memcpy(out, p, n);
}

static void get_voldef(struct reader *r, struct voldef *v)
{
	uint8_t flags;

	v->size = get_u64(r);
	v->version = get_u64(r);
	v->origin = get_u32(r);
	v->port = get_u16(r);
	flags = get_u8(r);
	v->deleted = flags & VOLDEF_FLAG_DELETED;
	if (flags & ~VOLDEF_FLAG_DELETED)
		r->bad = true;
	v->n_nodes = get_u8(r);
	if (v->n_nodes < CLMSG_NODES_MIN || v->n_nodes > CLMSG_NODES_MAX)
		r->bad = true;
	get_bytes(r, v->uuid, CLMSG_UUID_LEN);
	get_str(r, v->name, sizeof(v->name));
	for (size_t i = 0; i < v->n_nodes && !r->bad; i++)
		get_str(r, v->nodes[i], sizeof(v->nodes[i]));
}

static void get_payload(struct reader *r, struct clmsg *m)
{
	switch (m->type) {
	case CLMSG_ANNOUNCE:
		m->u.announce.nodeid = get_u32(r);
		get_str(r, m->u.announce.node, sizeof(m->u.announce.node));
		get_str(r, m->u.announce.addr, sizeof(m->u.announce.addr));
		break;
	case CLMSG_VOLDEF:
		get_voldef(r, &m->u.voldef);
		break;
	case CLMSG_OUTDATE:
		m->u.outdate.generation = get_u64(r);
		m->u.outdate.from = get_u32(r);
		get_str(r, m->u.outdate.volume, sizeof(m->u.outdate.volume));
		get_str(r, m->u.outdate.node, sizeof(m->u.outdate.node));
		break;
	case CLMSG_ROLE:
		m->u.role.role = get_u8(r);
		m->u.role.disk = get_u8(r);
		get_str(r, m->u.role.volume, sizeof(m->u.role.volume));
		get_str(r, m->u.role.node, sizeof(m->u.role.node));
		break;
	case CLMSG_SYNC_DONE:
		m->u.sync_done.nodeid = get_u32(r);
		break;
	}
}

static int decode_hdr(const uint8_t *buf, size_t len, uint16_t *type)
{
	struct reader r = { buf, len, false };
	uint32_t magic, length, flags;
	uint16_t version;

	if (len < CLMSG_HDR_LEN)
		return -EPROTO;
	magic = get_u32(&r);
	version = get_u16(&r);
	*type = get_u16(&r);
	length = get_u32(&r);
	flags = get_u32(&r);
	if (magic != CLMSG_MAGIC)
		return -EPROTO;
	if (version != CLMSG_VERSION)
		return -EPROTONOSUPPORT;
	if (!clmsg_type_valid(*type) || flags)
		return -EPROTO;
	if (length != len - CLMSG_HDR_LEN)
		return -EMSGSIZE;
	if (length < types[*type].min || length > types[*type].max)
		return -EMSGSIZE;
	return 0;
}

int clmsg_peek(const uint8_t *buf, size_t len, uint16_t *version, uint16_t *type)
{
	struct reader r = { buf, len, false };

	if (len < CLMSG_HDR_LEN || get_u32(&r) != CLMSG_MAGIC)
		return -EPROTO;
	*version = get_u16(&r);
	*type = get_u16(&r);
	return 0;
}

int clmsg_decode(const uint8_t *buf, size_t len, struct clmsg *out)
{
	struct reader r;
	uint16_t type;
	int err;

	memset(out, 0, sizeof(*out));
	err = decode_hdr(buf, len, &type);
	if (err < 0)
		return err;
	out->type = type;
	r = (struct reader){ buf + CLMSG_HDR_LEN, len - CLMSG_HDR_LEN, false };
	get_payload(&r, out);
	if (r.bad || r.left || check_msg(out) < 0) {
		memset(out, 0, sizeof(*out));
		return -EPROTO;
	}
	return 0;
}

/* ---- the sender ---------------------------------------------------------- */

static int not_sender(const char **why, const char *msg)
{
	if (why)
		*why = msg;
	return -EPERM;
}

int clmsg_check_sender(const struct clmsg *m, const struct clmsg_sender *s, const char **why)
{
	switch (m->type) {
	case CLMSG_ANNOUNCE:
		if (m->u.announce.nodeid != s->nodeid)
			return not_sender(why, "it announces another nodeid than its own");
		if (s->name && strcmp(m->u.announce.node, s->name))
			return not_sender(why, "it announces another name than corosync's");
		return 0;
	case CLMSG_OUTDATE:
		return m->u.outdate.from == s->nodeid ? 0 :
			not_sender(why, "its outdate record names another sender");
	case CLMSG_ROLE:
		if (!s->name)
			return not_sender(why, "it claims a role before it announced itself");
		return strcmp(m->u.role.node, s->name) == 0 ? 0 :
			not_sender(why, "it claims another node's role");
	case CLMSG_SYNC_DONE:
		return m->u.sync_done.nodeid == s->nodeid ? 0 :
			not_sender(why, "it ends another node's state exchange");
	default:
		return 0;
	}
}
