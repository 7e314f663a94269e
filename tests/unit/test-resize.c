/* test-resize.c: table tests of the pure decisions of replication/resize.c:
 * the sizes at open (grow, or refuse), an online grow's request, and whether
 * a link between replicas of different sizes may come up (every row also
 * with local and peer swapped where no NBD client is involved). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "resize.h"
#include "unit.h"
#include "util.h"

#define M (UINT64_C(1) << 20)
#define T (UINT64_C(1) << 40)

static const struct open_row {
	const char *what;
	uint64_t backing;
	bool blockdev;
	uint64_t meta, want;
	int err;
	uint64_t grow_to;
} open_rows[] = {
	{ "file, no size asked", 64 * M, false, 64 * M, 0, 0, 0 },
	{ "file, the same size", 64 * M, false, 64 * M, 64 * M, 0, 0 },
	{ "file, a larger size: grow", 64 * M, false, 64 * M, 96 * M, 0, 96 * M },
	{ "file extended, metadata not yet (crash)", 96 * M, false, 64 * M, 96 * M, 0, 96 * M },
	{ "file half way from an earlier grow", 80 * M, false, 64 * M, 96 * M, 0, 96 * M },
	{ "file larger than metadata and size", 96 * M, false, 64 * M, 64 * M, -EINVAL, 0 },
	{ "file larger, no size asked", 96 * M, false, 64 * M, 0, -EINVAL, 0 },
	{ "file larger than the size asked", 128 * M, false, 64 * M, 96 * M, -EINVAL, 0 },
	{ "file truncated", 32 * M, false, 64 * M, 64 * M, -EINVAL, 0 },
	{ "smaller size asked: never shrinks", 64 * M, false, 64 * M, 32 * M, -EINVAL, 0 },
	{ "device, the same size", 64 * M, true, 64 * M, 64 * M, 0, 0 },
	{ "device larger (LVM extents)", 68 * M, true, 64 * M, 64 * M, 0, 0 },
	{ "device large enough to grow", 100 * M, true, 64 * M, 96 * M, 0, 96 * M },
	{ "device too small: the grow says so", 64 * M, true, 64 * M, 96 * M, 0, 96 * M },
	{ "device smaller than the metadata", 32 * M, true, 64 * M, 64 * M, -EINVAL, 0 },
	{ "device, smaller size asked", 100 * M, true, 64 * M, 32 * M, -EINVAL, 0 },
};

static void test_open(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(open_rows); i++) {
		const struct open_row *r = &open_rows[i];
		struct resize_open o = resize_open_decide(r->backing, r->blockdev, r->meta,
							  r->want);

		CHECK_MSG(o.err == r->err && o.grow_to == r->grow_to,
			  "%s: got %d/%llu, want %d/%llu", r->what, o.err,
			  (unsigned long long)o.grow_to, r->err, (unsigned long long)r->grow_to);
		CHECK_MSG(!o.err || (o.why && *o.why), "%s: a refusal without a reason", r->what);
	}
}

static const struct check_row {
	const char *what;
	uint64_t cur, want;
	unsigned shift;
	int err;
} check_rows[] = {
	{ "grow", 64 * M, 96 * M, 16, 0 },
	{ "by one sector", 64 * M, 64 * M + 512, 16, 0 },
	{ "the same size", 64 * M, 64 * M, 16, -EALREADY },
	{ "smaller", 64 * M, 32 * M, 16, -EINVAL },
	{ "not a multiple of 512", 64 * M, 96 * M + 100, 16, -EINVAL },
	{ "zero", 64 * M, 0, 16, -EINVAL },
	{ "the bitmap limit at 64 KiB regions", 64 * M, 128 * T, 16, 0 },
	{ "past the bitmap limit", 64 * M, 128 * T + 512, 16, -EINVAL },
	{ "past the limit at 4 KiB regions", 64 * M, 8 * T + 512, 12, -EINVAL },
	{ "huge", 64 * M, UINT64_MAX - 511, 30, -EINVAL },
};

static void test_check(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(check_rows); i++) {
		const struct check_row *r = &check_rows[i];
		const char *why = "unset";
		int err = resize_check(r->cur, r->want, r->shift, &why);

		CHECK_MSG(err == r->err, "%s: got %d, want %d", r->what, err, r->err);
		CHECK_MSG(err != -EINVAL || (why && *why), "%s: no reason", r->what);
	}
	{
		const char *why;
		CHECK(resize_check(64 * M, 32 * M, 16, &why) == -EINVAL && strstr(why, "only grows"));
	}
}

static const struct link_row {
	const char *what;
	struct resize_link_in in;
	bool wait;
} link_rows[] = {
	{ "equal sizes", { 64 * M, 64 * M, false, 64 * M }, false },
	{ "equal sizes, resync due", { 64 * M, 64 * M, false, 0 }, false },
	{ "peer grew first, in sync", { 64 * M, 96 * M, true, 0 }, false },
	{ "we grew first, in sync", { 96 * M, 64 * M, true, 0 }, false },
	{ "differ, a resync is due", { 96 * M, 64 * M, false, 0 }, true },
	{ "differ, a resync is due (smaller here)", { 64 * M, 96 * M, false, 0 }, true },
	{ "grew here, its clients within the peer's size", { 96 * M, 64 * M, true, 64 * M }, false },
	{ "grew here, a client uses more than the peer has", { 96 * M, 64 * M, true, 96 * M }, true },
	{ "smaller here, with clients", { 64 * M, 96 * M, true, 64 * M }, false },
	{ "grew here, clients, resync due", { 96 * M, 64 * M, false, 64 * M }, true },
};

static void test_link(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(link_rows); i++) {
		const struct link_row *r = &link_rows[i];
		struct resize_link_verdict v = resize_link_decide(&r->in);
		struct resize_link_in sw = r->in;

		CHECK_MSG(v.wait == r->wait, "%s: got %s", r->what, v.wait ? "wait" : "up");
		CHECK_MSG((v.why == NULL) == (r->in.local == r->in.peer), "%s: reason %s",
			  r->what, v.why ? v.why : "(none)");
		if (r->in.clients_max)
			continue;
		/* Both sides of a link without clients decide alike. */
		sw.local = r->in.peer;
		sw.peer = r->in.local;
		CHECK_MSG(resize_link_decide(&sw).wait == r->wait, "%s, swapped", r->what);
	}
}

int main(void)
{
	test_open();
	test_check();
	test_link();
	return unit_done("test-resize");
}
