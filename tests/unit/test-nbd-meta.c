/* test-nbd-meta.c: the metadata-context table (nbd_meta.c): which contexts
 * a LIST/SET_META_CONTEXT query selects and which it refuses, from a
 * table; base:allocation extents of a sparse file (from SEEK_DATA, with
 * REQ_ONE, from an offset inside an extent); the BLOCK_STATUS reply's
 * bytes. */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nbd_meta.h"
#include "repl_int.h"
#include "unit.h"
#include "util.h"

#define K 1024u

/* option data: export name, then the queries (NULL ends the list) */
static uint32_t opt(uint8_t *buf, const char *export, const char *const *q)
{
	uint32_t pos = 0, n = 0, v;

	v = htobe32((uint32_t)strlen(export));
	memcpy(buf, &v, 4);
	memcpy(buf + 4, export, strlen(export));
	pos = 4 + (uint32_t)strlen(export);
	while (q && q[n])
		n++;
	v = htobe32(n);
	memcpy(buf + pos, &v, 4);
	pos += 4;
	for (uint32_t i = 0; i < n; i++) {
		v = htobe32((uint32_t)strlen(q[i]));
		memcpy(buf + pos, &v, 4);
		memcpy(buf + pos + 4, q[i], strlen(q[i]));
		pos += 4 + (uint32_t)strlen(q[i]);
	}
	return pos;
}

static const struct qrow {
	bool list;
	const char *q[4];
	int extra;		/* bytes added (+) or cut (-) at the end */
	uint32_t err;
	unsigned n;		/* contexts selected (base:allocation if 1) */
} qrows[] = {
	{ false, { "base:allocation" }, 0, 0, 1 },
	{ true, { "base:allocation" }, 0, 0, 1 },
	{ true, { NULL }, 0, 0, 1 },		/* LIST of everything */
	{ false, { NULL }, 0, 0, 0 },		/* SET of nothing: none */
	{ true, { "base:" }, 0, 0, 1 },		/* a namespace lists */
	{ false, { "base:" }, 0, 0, 0 },	/* ... and does not select */
	{ false, { "base:allocation", "base:allocation" }, 0, 0, 1 },
	{ false, { "nosuch:thing" }, 0, 0, 0 },	/* unknown: nothing, no error */
	{ false, { "base:allocationX" }, 0, 0, 0 },
	{ false, { "qemu:dirty-bitmap:x", "base:allocation" }, 0, 0, 1 },
	{ false, { "nonamespace" }, 0, NBD_REP_ERR_INVALID, 0 },
	{ true, { "" }, 0, NBD_REP_ERR_INVALID, 0 },
	{ false, { "base:allocation" }, 1, NBD_REP_ERR_INVALID, 0 },
	{ false, { "base:allocation" }, -1, NBD_REP_ERR_INVALID, 0 },
	{ false, { NULL }, 2, NBD_REP_ERR_INVALID, 0 },
	{ false, { NULL }, -1, NBD_REP_ERR_INVALID, 0 },
};

static void test_queries(void)
{
	struct repl_volume vol = { .name = (char *)"vol0", .fd = -1 };
	static uint8_t buf[8192];
	static struct nbd_meta_sel sel;
	const char *why;

	for (size_t i = 0; i < ARRAY_SIZE(qrows); i++) {
		const struct qrow *r = &qrows[i];
		uint32_t len = opt(buf, "vol0", r->q), err;

		memset(buf + len, 0, 4);
		len = (uint32_t)((int)len + r->extra);
		err = repl__nbd_meta_query(&vol, r->list, buf, len, &sel, &why);
		CHECK_MSG(err == r->err, "row %zu: error %#x, expected %#x", i, err, r->err);
		CHECK_MSG(sel.n == r->n, "row %zu: %u contexts, expected %u", i, sel.n, r->n);
		if (sel.n == 1)
			CHECK_MSG(!strcmp(sel.ctx[0].name, "base:allocation"), "row %zu: %s", i,
				  sel.ctx[0].name);
		if (!err)
			CHECK(!strcmp(sel.export, "vol0"));
	}
	/* an export that does not exist */
	{
		const char *q[] = { "base:allocation", NULL };
		uint32_t len = opt(buf, "nosuch", q);
		CHECK(repl__nbd_meta_query(NULL, false, buf, len, &sel, &why) ==
		      NBD_REP_ERR_UNKNOWN);
	}
}

static const struct arow {
	uint64_t off;
	uint32_t len;
	unsigned max;
	unsigned n;
	struct nbd_extent e[6];
} arows[] = {
	/* data at [64K, 128K) and [512K, 576K) of 1 MiB */
	{ 0, 1024 * K, 16, 5, { { 64 * K, 3 }, { 64 * K, 0 }, { 384 * K, 3 }, { 64 * K, 0 },
				{ 448 * K, 3 } } },
	{ 100 * K, 500 * K, 16, 4, { { 28 * K, 0 }, { 384 * K, 3 }, { 64 * K, 0 }, { 24 * K, 3 } } },
	{ 0, 1024 * K, 1, 1, { { 64 * K, 3 } } },		/* REQ_ONE */
	{ 70 * K, 1, 1, 1, { { 1, 0 } } },
	{ 0, 1024 * K, 2, 2, { { 64 * K, 3 }, { 64 * K, 0 } } },	/* a short answer */
	{ 600 * K, 424 * K, 16, 1, { { 424 * K, 3 } } },	/* hole to the end */
	{ 1024 * K, 64 * K, 16, 1, { { 64 * K, 3 } } },		/* past EOF: zeroes */
};

static void test_allocation(void)
{
	char path[] = "test-nbd-meta.XXXXXX";
	static char data[64 * K];
	struct nbd_extent e[16];
	int fd = mkstemp(path);
	unsigned n;

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	unlink(path);
	memset(data, 0x5a, sizeof(data));
	CHECK(ftruncate(fd, 1024 * K) == 0);
	CHECK(pwrite(fd, data, sizeof(data), 64 * K) == (ssize_t)sizeof(data));
	CHECK(pwrite(fd, data, sizeof(data), 512 * K) == (ssize_t)sizeof(data));
	if (lseek(fd, 0, SEEK_DATA) != 64 * K) {
		printf("test-nbd-meta: no SEEK_DATA holes here: allocation rows skipped\n");
		close(fd);
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(arows); i++) {
		const struct arow *r = &arows[i];
		CHECK(repl__nbd_meta_allocation(fd, false, r->off, r->len, e, r->max, &n) == 0);
		CHECK_MSG(n == r->n, "row %zu: %u extents, expected %u", i, n, r->n);
		for (unsigned j = 0; j < n && j < r->n; j++)
			CHECK_MSG(e[j].len == r->e[j].len && e[j].flags == r->e[j].flags,
				  "row %zu extent %u: %u/%u, expected %u/%u", i, j, e[j].len,
				  e[j].flags, r->e[j].len, r->e[j].flags);
	}
	/* a device: all of it allocated */
	CHECK(repl__nbd_meta_allocation(fd, true, 4096, 1000, e, 16, &n) == 0);
	CHECK(n == 1 && e[0].len == 1000 && e[0].flags == 0);

	/* the reply: one chunk, done, context id 1, extents from the offset */
	{
		struct repl_volume vol = { .name = (char *)"vol0", .fd = fd };
		struct nbd_meta_sel sel = { .n = 1 };
		struct nbd_structured_reply h;
		uint32_t v[5];
		void *buf;
		size_t len;

		strcpy(sel.ctx[0].name, "base:allocation");
		CHECK(repl__nbd_meta_reply(&vol, &sel, 0x1122, 0, 192 * K, false, &buf, &len) == 0);
		CHECK(len == sizeof(h) + 4 + 3 * 8);
		memcpy(&h, buf, sizeof(h));
		CHECK(be32toh(h.magic) == NBD_STRUCTURED_REPLY_MAGIC);
		CHECK(be16toh(h.flags) == NBD_REPLY_FLAG_DONE);
		CHECK(be16toh(h.type) == NBD_REPLY_TYPE_BLOCK_STATUS);
		CHECK(be64toh(h.cookie) == 0x1122);
		CHECK(be32toh(h.length) == 4 + 3 * 8);
		memcpy(v, (char *)buf + sizeof(h), sizeof(v));
		CHECK(be32toh(v[0]) == 1);
		CHECK(be32toh(v[1]) == 64 * K && be32toh(v[2]) == 3);
		CHECK(be32toh(v[3]) == 64 * K && be32toh(v[4]) == 0);
		free(buf);
		sel.n = 0;
		CHECK(repl__nbd_meta_reply(&vol, &sel, 1, 0, 512, false, &buf, &len) == -EINVAL);
	}
	close(fd);
}

int main(void)
{
	test_queries();
	test_allocation();
	return unit_done("test-nbd-meta");
}
