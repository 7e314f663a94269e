/* test-clmsg.c: unit tests of agent/clmsg.c: round trips of every type,
 * every truncation and extension rejected, header rejects, bad names,
 * sizes and node counts refused both ways, and random garbage (fixed
 * seed) never accepted unless it re-encodes to itself.  Buffers are
 * malloc'd to their exact length so that ASan catches any read past the
 * end. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "clmsg.h"
#include "unit.h"
#include "util.h"

static struct voldef sample_voldef(void)
{
	struct voldef v = { .size = 10ull << 30, .n_nodes = 2, .port = 7789, .version = 1,
			    .origin = 2 };

	strcpy(v.name, "vm-disk_0.raw");
	strcpy(v.nodes[0], "node-a");
	strcpy(v.nodes[1], "node-b.example");
	for (size_t i = 0; i < sizeof(v.uuid); i++)
		v.uuid[i] = (uint8_t)(0xa0 + i);
	return v;
}

/* One valid message of every type, several for some. */
static size_t samples(struct clmsg *out)
{
	size_t n = 0;
	struct clmsg m;

	m = (struct clmsg){ .type = CLMSG_ANNOUNCE };
	m.u.announce.nodeid = 1;
	strcpy(m.u.announce.node, "n1");
	strcpy(m.u.announce.addr, "192.168.122.11");
	out[n++] = m;
	m = (struct clmsg){ .type = CLMSG_ANNOUNCE };	/* longest strings */
	m.u.announce.nodeid = UINT32_MAX;
	memset(m.u.announce.node, 'x', CLMSG_NAME_MAX - 1);
	memset(m.u.announce.addr, 'a', CLMSG_ADDR_MAX - 1);
	out[n++] = m;
	m = (struct clmsg){ .type = CLMSG_ANNOUNCE };
	m.u.announce.nodeid = 3;
	strcpy(m.u.announce.node, "c");
	strcpy(m.u.announce.addr, "fe80::1%eth0");
	out[n++] = m;

	m = (struct clmsg){ .type = CLMSG_VOLDEF };
	m.u.voldef = sample_voldef();
	out[n++] = m;
	m.u.voldef.n_nodes = 3;			/* three nodes, tombstone, extremes */
	strcpy(m.u.voldef.nodes[2], "n3");
	m.u.voldef.deleted = true;
	m.u.voldef.version = UINT64_MAX;
	m.u.voldef.origin = UINT32_MAX;
	m.u.voldef.port = UINT16_MAX;
	m.u.voldef.size = INT64_MAX - 511;
	memset(m.u.voldef.name, 'v', CLMSG_NAME_MAX - 1);
	for (int i = 0; i < 3; i++) {
		memset(m.u.voldef.nodes[i], 'n', CLMSG_NAME_MAX - 1);
		m.u.voldef.nodes[i][0] = (char)('a' + i);
	}
	out[n++] = m;

	m = (struct clmsg){ .type = CLMSG_OUTDATE };
	strcpy(m.u.outdate.volume, "vm1");
	strcpy(m.u.outdate.node, "n2");
	m.u.outdate.generation = 0x0123456789abcdefull;
	m.u.outdate.from = 1;
	out[n++] = m;

	m = (struct clmsg){ .type = CLMSG_ROLE };
	strcpy(m.u.role.volume, "vm1");
	strcpy(m.u.role.node, "n1");
	m.u.role.role = 1;
	m.u.role.disk = 4;
	out[n++] = m;
	m.u.role.role = 0;
	m.u.role.disk = 5;
	out[n++] = m;
	m.u.role.role = CLMSG_ROLE_HANDED_OVER;	/* Primary by a handover */
	out[n++] = m;

	m = (struct clmsg){ .type = CLMSG_SYNC_DONE };
	m.u.sync_done.nodeid = 7;
	out[n++] = m;
	return n;
}

static uint8_t *exact_copy(const uint8_t *src, size_t len)
{
	uint8_t *p = malloc(len ? len : 1);

	memcpy(p, src, len);
	return p;
}

static int decode_exact(const uint8_t *src, size_t len, struct clmsg *out)
{
	uint8_t *p = exact_copy(src, len);
	int r = clmsg_decode(p, len, out);

	free(p);
	return r;
}

static void test_round_trip(void)
{
	struct clmsg s[16], d;
	size_t n = samples(s);
	bool seen[CLMSG_TYPE_COUNT] = { false };

	for (size_t i = 0; i < n; i++) {
		uint8_t buf[CLMSG_MAX_LEN], again[CLMSG_MAX_LEN];
		ssize_t len = clmsg_encode(&s[i], buf, sizeof(buf));
		CHECK_MSG(len >= CLMSG_HDR_LEN, "sample %zu: %zd", i, len);
		if (len < 0)
			continue;
		CHECK(decode_exact(buf, (size_t)len, &d) == 0);
		CHECK_MSG(memcmp(&d, &s[i], sizeof(d)) == 0, "sample %zu (%s)", i,
			  clmsg_type_name(s[i].type));
		CHECK(clmsg_encode(&d, again, sizeof(again)) == len);
		CHECK(memcmp(buf, again, (size_t)len) == 0);
		/* Exactly enough room, and one byte less. */
		CHECK(clmsg_encode(&s[i], again, (size_t)len) == len);
		CHECK(clmsg_encode(&s[i], again, (size_t)len - 1) == -ENOBUFS);
		seen[s[i].type] = true;
	}
	for (uint16_t t = 1; t < CLMSG_TYPE_COUNT; t++)
		CHECK_MSG(seen[t], "type %s has no sample", clmsg_type_name(t));
	/* The longest ANNOUNCE is CLMSG_MAX_LEN. */
	{
		uint8_t buf[CLMSG_MAX_LEN];
		CHECK(clmsg_encode(&s[1], buf, sizeof(buf)) == CLMSG_MAX_LEN);
	}
}

static void test_header_bytes(void)
{
	struct clmsg m = { .type = CLMSG_SYNC_DONE, .u.sync_done.nodeid = 0x01020304 };
	static const uint8_t want[] = {
		0x52, 0x50, 0x4c, 0x43, 0x00, 0x01, 0x00, 0x05,
		0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00,
		0x01, 0x02, 0x03, 0x04,
	};
	uint8_t buf[64];

	CHECK(clmsg_encode(&m, buf, sizeof(buf)) == (ssize_t)sizeof(want));
	CHECK(memcmp(buf, want, sizeof(want)) == 0);
}

static void test_truncation(void)
{
	struct clmsg s[16], d;
	size_t n = samples(s);

	for (size_t i = 0; i < n; i++) {
		uint8_t buf[CLMSG_MAX_LEN + 1];
		ssize_t len = clmsg_encode(&s[i], buf, sizeof(buf));

		for (size_t cut = 0; cut < (size_t)len; cut++) {
			int r = decode_exact(buf, cut, &d);
			CHECK_MSG(r == -EPROTO || r == -EMSGSIZE, "sample %zu cut %zu: %d", i, cut, r);
		}
		/* A byte more than the header says. */
		buf[len] = 0;
		CHECK(decode_exact(buf, (size_t)len + 1, &d) == -EMSGSIZE);
		/* Header and buffer agree on one byte more: trailing garbage. */
		if (s[i].type != CLMSG_SYNC_DONE) {
			uint32_t l = htobe32((uint32_t)len + 1 - CLMSG_HDR_LEN);
			memcpy(buf + 8, &l, 4);
			int r = decode_exact(buf, (size_t)len + 1, &d);
			CHECK_MSG(r == -EPROTO || r == -EMSGSIZE, "sample %zu longer: %d", i, r);
		}
	}
}

static void test_header_rejects(void)
{
	struct clmsg m = { .type = CLMSG_SYNC_DONE, .u.sync_done.nodeid = 9 }, d;
	uint8_t buf[64], bad[64];
	ssize_t len = clmsg_encode(&m, buf, sizeof(buf));

	memcpy(bad, buf, (size_t)len);
	bad[0] ^= 1;			/* magic */
	CHECK(decode_exact(bad, (size_t)len, &d) == -EPROTO);
	memcpy(bad, buf, (size_t)len);
	bad[5] = 2;			/* version */
	CHECK(decode_exact(bad, (size_t)len, &d) == -EPROTONOSUPPORT);
	memcpy(bad, buf, (size_t)len);
	bad[7] = 0;			/* type 0 */
	CHECK(decode_exact(bad, (size_t)len, &d) == -EPROTO);
	bad[7] = CLMSG_TYPE_COUNT;	/* one past the last */
	CHECK(decode_exact(bad, (size_t)len, &d) == -EPROTO);
	memcpy(bad, buf, (size_t)len);
	bad[15] = 1;			/* flags */
	CHECK(decode_exact(bad, (size_t)len, &d) == -EPROTO);
	memcpy(bad, buf, (size_t)len);
	bad[7] = CLMSG_ANNOUNCE;	/* 4 bytes is too short for an ANNOUNCE */
	CHECK(decode_exact(bad, (size_t)len, &d) == -EMSGSIZE);
	CHECK(decode_exact(buf, 0, &d) == -EPROTO);
	CHECK(clmsg_type_name(0)[0] == '?' && clmsg_type_name(CLMSG_TYPE_COUNT)[0] == '?');
	CHECK(!strcmp(clmsg_type_name(CLMSG_OUTDATE), "OUTDATE"));
}

/* Encoding refuses m. */
static void check_refused(const struct clmsg *m, const char *what)
{
	uint8_t buf[CLMSG_MAX_LEN];

	CHECK_MSG(clmsg_encode(m, buf, sizeof(buf)) == -EINVAL, "%s encoded", what);
}

static void test_voldef_rejects(void)
{
	struct clmsg m = { .type = CLMSG_VOLDEF };
	const char *why;

	m.u.voldef = sample_voldef();
	CHECK(voldef_check(&m.u.voldef, &why) == 0);

	struct { const char *what; struct voldef v; } rows[32];
	size_t n = 0;
#define ROW(desc, stmt) do { rows[n].what = desc; rows[n].v = sample_voldef(); \
		{ struct voldef *v = &rows[n].v; stmt; } n++; } while (0)
	ROW("empty name", v->name[0] = 0);
	ROW("name with /", strcpy(v->name, "a/b"));
	ROW("name with space", strcpy(v->name, "a b"));
	ROW("name starting with .", strcpy(v->name, ".hidden"));
	ROW("name ..", strcpy(v->name, ".."));
	ROW("name starting with -", strcpy(v->name, "-rf"));
	ROW("name of 64 characters", memset(v->name, 'a', CLMSG_NAME_MAX); v->name[0] = 'a');
	ROW("size 0", v->size = 0);
	ROW("size 511", v->size = 511);
	ROW("size 1000", v->size = 1000);
	ROW("size > INT64_MAX", v->size = (uint64_t)INT64_MAX + 1);
	ROW("one node", v->n_nodes = 1; v->nodes[1][0] = 0);
	ROW("zero nodes", v->n_nodes = 0; v->nodes[0][0] = 0; v->nodes[1][0] = 0);
	ROW("four nodes", v->n_nodes = 4);
	ROW("the same node twice", strcpy(v->nodes[1], v->nodes[0]));
	ROW("three nodes, one repeated", v->n_nodes = 3; strcpy(v->nodes[2], v->nodes[0]));
	ROW("empty node name", v->nodes[1][0] = 0);
	ROW("node name with comma", strcpy(v->nodes[1], "a,b"));
	ROW("stray third node", strcpy(v->nodes[2], "n3"));
	ROW("port 0", v->port = 0);
	ROW("version 0", v->version = 0);
	ROW("origin 0", v->origin = 0);
#undef ROW
	for (size_t i = 0; i < n; i++) {
		why = NULL;
		CHECK_MSG(voldef_check(&rows[i].v, &why) == -EINVAL && why, "%s", rows[i].what);
		/* name[64] with no NUL must not be read past: copy into a message. */
		m.u.voldef = rows[i].v;
		check_refused(&m, rows[i].what);
	}
}

static void test_other_rejects(void)
{
	struct clmsg s[16], m;
	size_t n = samples(s);

	(void)n;
	m = s[0];
	m.u.announce.nodeid = 0;
	check_refused(&m, "announce nodeid 0");
	m = s[0];
	strcpy(m.u.announce.addr, "1.2.3.4 x");
	check_refused(&m, "address with a space");
	m = s[0];
	memset(m.u.announce.addr, 'a', CLMSG_ADDR_MAX);	/* no NUL at all */
	check_refused(&m, "address of 256 characters");
	m = s[0];
	m.u.announce.node[0] = 0;
	check_refused(&m, "empty node");
	m = s[5];
	m.u.outdate.from = 0;
	check_refused(&m, "outdate from 0");
	m = s[5];
	strcpy(m.u.outdate.volume, "x y");
	check_refused(&m, "outdate bad volume");
	m = s[6];
	m.u.role.role = 3;
	check_refused(&m, "role 3");
	m = s[6];
	m.u.role.disk = 6;
	check_refused(&m, "disk 6");
	m = s[9];
	m.u.sync_done.nodeid = 0;
	check_refused(&m, "sync_done 0");
	m.type = 0;
	check_refused(&m, "type 0");
	m.type = CLMSG_TYPE_COUNT;
	check_refused(&m, "unknown type");
}

/* Byte-level corruptions of valid encodings that must not decode. */
static void test_payload_rejects(void)
{
	struct clmsg s[16], d;
	uint8_t buf[CLMSG_MAX_LEN];
	size_t n = samples(s);
	ssize_t len;
	size_t str0;

	(void)n;
	/* VOLDEF: flags, node count, a NUL inside the name, a bad character. */
	len = clmsg_encode(&s[3], buf, sizeof(buf));
	CHECK(len > 0);
	buf[CLMSG_HDR_LEN + 22] = 0x2;		/* flags: unknown bit */
	CHECK(decode_exact(buf, (size_t)len, &d) == -EPROTO);
	clmsg_encode(&s[3], buf, sizeof(buf));
	buf[CLMSG_HDR_LEN + 23] = 4;		/* n_nodes */
	CHECK(decode_exact(buf, (size_t)len, &d) == -EPROTO);
	buf[CLMSG_HDR_LEN + 23] = 1;
	CHECK(decode_exact(buf, (size_t)len, &d) == -EPROTO);
	clmsg_encode(&s[3], buf, sizeof(buf));
	str0 = CLMSG_HDR_LEN + 24 + CLMSG_UUID_LEN;	/* name length byte */
	buf[str0 + 2] = 0;
	CHECK(decode_exact(buf, (size_t)len, &d) == -EPROTO);
	buf[str0 + 2] = '/';
	CHECK(decode_exact(buf, (size_t)len, &d) == -EPROTO);
	clmsg_encode(&s[3], buf, sizeof(buf));
	buf[str0] = 0;				/* empty name */
	CHECK(decode_exact(buf, (size_t)len, &d) == -EPROTO);
	buf[str0] = 200;			/* longer than the message */
	CHECK(decode_exact(buf, (size_t)len, &d) == -EPROTO);
	/* ANNOUNCE: a node name of 64 characters (one too many). */
	{
		uint8_t a[CLMSG_HDR_LEN + 4 + 1 + 64 + 2];
		uint32_t l = htobe32(sizeof(a) - CLMSG_HDR_LEN);

		len = clmsg_encode(&s[0], a, sizeof(a));
		CHECK(len > 0);
		memcpy(a + 8, &l, 4);
		a[CLMSG_HDR_LEN + 4] = 64;
		memset(a + CLMSG_HDR_LEN + 5, 'n', 64);
		a[CLMSG_HDR_LEN + 5 + 64] = 1;
		a[CLMSG_HDR_LEN + 6 + 64] = 'a';
		CHECK(decode_exact(a, sizeof(a), &d) == -EPROTO);
		a[CLMSG_HDR_LEN + 4] = 63;		/* 63 + a stray byte */
		CHECK(decode_exact(a, sizeof(a), &d) == -EPROTO);
	}
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 11);
}

/* Random bytes, and valid messages with random bytes flipped: whatever
 * decodes must be valid and re-encode to exactly the input. */
static void test_garbage(void)
{
	struct clmsg s[16], d;
	size_t n = samples(s);
	unsigned accepted = 0, bad = 0;

	for (int i = 0; i < 100000; i++) {
		uint8_t buf[CLMSG_MAX_LEN + 8], again[CLMSG_MAX_LEN];
		size_t len;

		if (i & 1) {
			len = rnd() % sizeof(buf);
			for (size_t k = 0; k < len; k++)
				buf[k] = (uint8_t)rnd();
			if (len >= CLMSG_HDR_LEN && (i & 2)) {	/* a plausible header */
				uint32_t v = htobe32(CLMSG_MAGIC), l = htobe32((uint32_t)len - CLMSG_HDR_LEN);
				memcpy(buf, &v, 4);
				buf[4] = 0, buf[5] = 1, buf[6] = 0;
				buf[7] = (uint8_t)(1 + rnd() % (CLMSG_TYPE_COUNT - 1));
				memcpy(buf + 8, &l, 4);
				memset(buf + 12, 0, 4);
			}
		} else {
			len = (size_t)clmsg_encode(&s[rnd() % n], buf, sizeof(buf));
			for (unsigned k = 1 + rnd() % 3; k; k--)
				buf[CLMSG_HDR_LEN + rnd() % (len - CLMSG_HDR_LEN)] ^= (uint8_t)(1 + rnd() % 255);
		}
		if (decode_exact(buf, len, &d) < 0)
			continue;
		accepted++;
		if (clmsg_encode(&d, again, sizeof(again)) != (ssize_t)len ||
		    memcmp(again, buf, len))
			bad++;
	}
	CHECK_MSG(bad == 0, "%u of %u accepted garbage messages do not re-encode", bad, accepted);
	printf("garbage: %u of 100000 decoded (all canonical)\n", accepted);
}

static void test_names(void)
{
	char longname[CLMSG_NAME_MAX + 1];

	CHECK(clmsg_volume_name_ok("vm1") && clmsg_volume_name_ok("_a.b-c") &&
	      clmsg_volume_name_ok("9"));
	CHECK(!clmsg_volume_name_ok("") && !clmsg_volume_name_ok("a:b") &&
	      !clmsg_volume_name_ok(".x") && !clmsg_volume_name_ok("é"));
	CHECK(clmsg_node_name_ok("n1.example.com") && clmsg_node_name_ok("fd00::1"));
	CHECK(!clmsg_node_name_ok("a b") && !clmsg_node_name_ok("a,b") && !clmsg_node_name_ok(""));
	CHECK(clmsg_addr_ok("10.0.0.1") && clmsg_addr_ok("fe80::1%eth0") && clmsg_addr_ok("h.ex"));
	CHECK(!clmsg_addr_ok("[::1]:7789") && !clmsg_addr_ok(""));
	memset(longname, 'a', sizeof(longname) - 1);
	longname[CLMSG_NAME_MAX] = 0;
	CHECK(!clmsg_volume_name_ok(longname) && !clmsg_node_name_ok(longname));
	longname[CLMSG_NAME_MAX - 1] = 0;
	CHECK(clmsg_volume_name_ok(longname) && clmsg_node_name_ok(longname));
}

/* clmsg_peek: the version and type of any version's header; garbage is
 * still garbage. */
static void test_peek(void)
{
	static const struct {
		uint8_t hdr[CLMSG_HDR_LEN + 4];
		size_t len;
		int want;
		uint16_t version, type;
	} rows[] = {
		/* version 1 ROLE */
		{ { 0x52, 0x50, 0x4c, 0x43, 0, 1, 0, 4 }, CLMSG_HDR_LEN, 0, 1, 4 },
		/* version 2, a type we do not know, bytes we could not read */
		{ { 0x52, 0x50, 0x4c, 0x43, 0, 2, 0, 0x21, 0xff, 0xff, 0xff, 0xff },
		  CLMSG_HDR_LEN + 4, 0, 2, 0x21 },
		{ { 0x52, 0x50, 0x4c, 0x43, 0xff, 0xff, 0, 3 }, CLMSG_HDR_LEN, 0, 0xffff, 3 },
		/* not ours */
		{ { 0x52, 0x50, 0x4c, 0x44, 0, 2, 0, 3 }, CLMSG_HDR_LEN, -EPROTO, 0, 0 },
		{ { 0 }, CLMSG_HDR_LEN, -EPROTO, 0, 0 },
		/* shorter than a header */
		{ { 0x52, 0x50, 0x4c, 0x43, 0, 2, 0, 3 }, CLMSG_HDR_LEN - 1, -EPROTO, 0, 0 },
		{ { 0 }, 0, -EPROTO, 0, 0 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		uint16_t v = 0, t = 0;
		uint8_t *p = exact_copy(rows[i].hdr, rows[i].len);
		int r = clmsg_peek(p, rows[i].len, &v, &t);

		free(p);
		CHECK_MSG(r == rows[i].want, "row %zu: %d", i, r);
		if (r == 0)
			CHECK_MSG(v == rows[i].version && t == rows[i].type,
				  "row %zu: version %u type %u", i, v, t);
	}
}

/* clmsg_check_sender: what each type says about its sender, against the
 * CPG sender (nodeid 2, corosync name "n2", or unknown). */
static void test_sender(void)
{
	enum { ANN, ROLE, OUTD, SYNC, VDEF };
	static const struct {
		int kind;
		uint32_t id;		/* the message's nodeid / from / origin */
		const char *node;	/* the message's node name */
		uint32_t sender;
		const char *sender_name;
		int want;
	} rows[] = {
		/* ANNOUNCE: its nodeid, and corosync's name when known */
		{ ANN, 2, "n2", 2, "n2", 0 },
		{ ANN, 2, "n2", 2, NULL, 0 },
		{ ANN, 1, "n1", 2, "n2", -EPERM },	/* n2 poses as n1 */
		{ ANN, 1, "n2", 2, "n2", -EPERM },
		{ ANN, 2, "n1", 2, "n2", -EPERM },	/* its own id, n1's name */
		{ ANN, 1, "n1", 2, NULL, -EPERM },
		/* ROLE: the sender's own name, which must be known */
		{ ROLE, 0, "n2", 2, "n2", 0 },
		{ ROLE, 0, "n1", 2, "n2", -EPERM },	/* claims n1's role */
		{ ROLE, 0, "n2", 2, NULL, -EPERM },	/* not announced yet */
		{ ROLE, 0, "n22", 2, "n2", -EPERM },
		/* OUTDATE: from is the sender (the node it is about may be any) */
		{ OUTD, 2, "n1", 2, "n2", 0 },
		{ OUTD, 2, "n3", 2, NULL, 0 },
		{ OUTD, 1, "n3", 2, "n2", -EPERM },
		/* SYNC_DONE: its own exchange only */
		{ SYNC, 2, NULL, 2, "n2", 0 },
		{ SYNC, 2, NULL, 2, NULL, 0 },
		{ SYNC, 3, NULL, 2, "n2", -EPERM },
		/* VOLDEF: the author, repeated by every member */
		{ VDEF, 1, NULL, 2, "n2", 0 },
		{ VDEF, 7, NULL, 2, NULL, 0 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		struct clmsg m = { 0 };
		struct clmsg_sender snd = { rows[i].sender, rows[i].sender_name };
		const char *why = NULL;
		int r;

		switch (rows[i].kind) {
		case ANN:
			m.type = CLMSG_ANNOUNCE;
			m.u.announce.nodeid = rows[i].id;
			strcpy(m.u.announce.node, rows[i].node);
			strcpy(m.u.announce.addr, "10.0.0.2");
			break;
		case ROLE:
			m.type = CLMSG_ROLE;
			strcpy(m.u.role.volume, "vol0");
			strcpy(m.u.role.node, rows[i].node);
			m.u.role.role = CLMSG_ROLE_PRIMARY;
			break;
		case OUTD:
			m.type = CLMSG_OUTDATE;
			strcpy(m.u.outdate.volume, "vol0");
			strcpy(m.u.outdate.node, rows[i].node);
			m.u.outdate.from = rows[i].id;
			m.u.outdate.generation = 5;
			break;
		case SYNC:
			m.type = CLMSG_SYNC_DONE;
			m.u.sync_done.nodeid = rows[i].id;
			break;
		default:
			m.type = CLMSG_VOLDEF;
			m.u.voldef = sample_voldef();
			m.u.voldef.origin = rows[i].id;
			break;
		}
		r = clmsg_check_sender(&m, &snd, &why);
		CHECK_MSG(r == rows[i].want, "row %zu (%s): %d", i, clmsg_type_name(m.type), r);
		CHECK_MSG(r == 0 || (why && *why), "row %zu: no reason", i);
	}
}

int main(void)
{
	test_round_trip();
	test_header_bytes();
	test_truncation();
	test_header_rejects();
	test_voldef_rejects();
	test_other_rejects();
	test_payload_rejects();
	test_garbage();
	test_names();
	test_peek();
	test_sender();
	return unit_done("test-clmsg");
}
