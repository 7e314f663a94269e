/* test-al.c: table tests of replication/al.c, the activity log's extent
 * set.  Each row is a sequence of steps on a fresh set of 16 slots (the
 * minimum): a write beginning on extents first..last with the result,
 * the extents that entered and those evicted it must give, or a write
 * ending with how many extents went idle.  Then the bounds, tags and
 * clearing, and a long random run checked against a simple model. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "al.h"
#include "unit.h"
#include "util.h"

#define MAXSTEPS 40
#define X 0xffffffffffffffffull	/* end of an extent list */

struct step {
	char op;		/* 'b' begin, 'e' end, 0 end of row */
	uint64_t first, last;
	int result;		/* begin: enum al_result or -errno; end: extents idled */
	uint64_t added[5], evicted[5];
};

#define B(f, l, r, ...) { 'b', (f), (l), (r), __VA_ARGS__ }
#define E(f, l, n) { 'e', (f), (l), (n), { X }, { X } }
#define L(...) { __VA_ARGS__, X }

struct row {
	const char *name;
	struct step s[MAXSTEPS];
};

/* Fills extents 0..15 (each begun and ended): the set is full, LRU order
 * 0 (oldest) .. 15. */
#define FILL \
	B(0, 0, AL_MISS, L(0), L(X)), E(0, 0, 1), B(1, 1, AL_MISS, L(1), L(X)), E(1, 1, 1), \
	B(2, 2, AL_MISS, L(2), L(X)), E(2, 2, 1), B(3, 3, AL_MISS, L(3), L(X)), E(3, 3, 1), \
	B(4, 4, AL_MISS, L(4), L(X)), E(4, 4, 1), B(5, 5, AL_MISS, L(5), L(X)), E(5, 5, 1), \
	B(6, 6, AL_MISS, L(6), L(X)), E(6, 6, 1), B(7, 7, AL_MISS, L(7), L(X)), E(7, 7, 1), \
	B(8, 15, AL_MISS, L(8, 9, 10, 11), L(X)), E(8, 15, 8)

static const struct row rows[] = {
	{ "first write misses, second hits", {
		B(5, 5, AL_MISS, L(5), L(X)), B(5, 5, AL_HIT, L(X), L(X)),
		E(5, 5, 0), E(5, 5, 1), B(5, 5, AL_HIT, L(X), L(X)) } },
	{ "a write across two extents adds only the missing one", {
		B(7, 7, AL_MISS, L(7), L(X)), B(7, 8, AL_MISS, L(8), L(X)),
		E(7, 8, 1), E(7, 7, 1), B(7, 8, AL_HIT, L(X), L(X)) } },
	{ "full set: a miss evicts the least recently used idle extent", {
		FILL, B(16, 16, AL_MISS, L(16), L(0)), B(17, 17, AL_MISS, L(17), L(1)) } },
	{ "a hit makes an extent the most recently used", {
		FILL, B(0, 0, AL_HIT, L(X), L(X)), E(0, 0, 1),
		B(16, 16, AL_MISS, L(16), L(1)), B(17, 17, AL_MISS, L(17), L(2)) } },
	{ "busy extents are never evicted", {
		FILL, B(0, 1, AL_HIT, L(X), L(X)),
		B(16, 16, AL_MISS, L(16), L(2)), E(0, 1, 2),
		B(17, 17, AL_MISS, L(17), L(3)), B(18, 18, AL_MISS, L(18), L(4)) } },
	{ "all busy: the write waits, nothing changes, then fits", {
		B(0, 7, AL_MISS, L(0, 1, 2, 3), L(X)), B(8, 15, AL_MISS, L(8, 9, 10, 11), L(X)),
		B(16, 16, AL_WAIT, L(X), L(X)), B(3, 3, AL_HIT, L(X), L(X)),
		E(8, 15, 8), B(16, 17, AL_MISS, L(16, 17), L(8, 9)) } },
	{ "a write's own idle extents are not its victims", {
		FILL, B(0, 14, AL_HIT, L(X), L(X)), B(15, 16, AL_WAIT, L(X), L(X)),
		E(0, 0, 1), B(15, 16, AL_MISS, L(16), L(0)) } },
	{ "a span over the maximum is refused", {
		B(0, AL_SPAN_MAX, -EINVAL, L(X), L(X)), B(3, 2, -EINVAL, L(X), L(X)),
		B(0, AL_SPAN_MAX - 1, AL_MISS, L(0, 1, 2, 3), L(X)) } },
	{ "high extent numbers hash like the others", {
		B(UINT64_C(1) << 40, (UINT64_C(1) << 40) + 1, AL_MISS,
		  L(UINT64_C(1) << 40, (UINT64_C(1) << 40) + 1), L(X)),
		B(UINT64_C(1) << 40, UINT64_C(1) << 40, AL_HIT, L(X), L(X)) } },
};

static unsigned list_len(const uint64_t *l)
{
	unsigned n = 0;

	while (n < 4 && l[n] != X)
		n++;
	return n;
}

static void run_row(const struct row *r)
{
	struct al *a;
	struct al_txn t;

	CHECK(al_new(16, &a) == 0);
	for (unsigned i = 0; i < MAXSTEPS && r->s[i].op; i++) {
		const struct step *s = &r->s[i];
		if (s->op == 'e') {
			unsigned n = al_end(a, s->first, s->last);
			CHECK_MSG(n == (unsigned)s->result, "%s step %u: %u idled, want %d",
				  r->name, i, n, s->result);
			continue;
		}
		int res = al_begin(a, s->first, s->last, &t);
		CHECK_MSG(res == s->result, "%s step %u: result %d, want %d", r->name, i,
			  res, s->result);
		if (res != AL_MISS)
			continue;
		/* Lists longer than 4 are checked by their first 4. */
		unsigned na = list_len(s->added), ne = list_len(s->evicted);
		CHECK_MSG(t.n_added == na || (na == 4 && t.n_added > 4),
			  "%s step %u: %u added, want %u", r->name, i, t.n_added, na);
		CHECK_MSG(t.n_evicted == ne || (ne == 4 && t.n_evicted > 4),
			  "%s step %u: %u evicted, want %u", r->name, i, t.n_evicted, ne);
		for (unsigned k = 0; k < na && k < t.n_added; k++)
			CHECK_MSG(t.added[k] == s->added[k], "%s step %u: added[%u] %llu",
				  r->name, i, k, (unsigned long long)t.added[k]);
		for (unsigned k = 0; k < ne && k < t.n_evicted; k++)
			CHECK_MSG(t.evicted[k] == s->evicted[k], "%s step %u: evicted[%u] %llu",
				  r->name, i, k, (unsigned long long)t.evicted[k]);
	}
	al_free(a);
}

static void test_bounds_tags_clear(void)
{
	struct al *a;
	struct al_txn t;

	CHECK(al_new(AL_EXTENTS_MIN - 1, &a) == -EINVAL && !a);
	CHECK(al_new(AL_EXTENTS_MAX + 1, &a) == -EINVAL && !a);
	CHECK(al_new(AL_EXTENTS_MAX, &a) == 0 && al_capacity(a) == AL_EXTENTS_MAX);
	al_free(a);
	CHECK(al_new(AL_EXTENTS_DEFAULT, &a) == 0);
	CHECK(al_begin(a, 3, 4, &t) == AL_MISS);
	CHECK(al_tag(a, 3) == 0);
	al_set_tag(a, 3, 7);
	al_set_tag(a, 99, 7);		/* not in the set: ignored */
	CHECK(al_tag(a, 3) == 7 && al_tag(a, 99) == 0 && !al_contains(a, 99));
	CHECK(al_busy(a, 3) == 1 && al_busy(a, 99) == 0);
	CHECK(al_clear(a) == -EBUSY && al_count(a) == 2);
	CHECK(al_end(a, 3, 4) == 2);
	CHECK(al_end(a, 3, 4) == 0);	/* a second end changes nothing */
	CHECK(al_clear(a) == 0 && al_count(a) == 0 && !al_contains(a, 3));
	CHECK(al_begin(a, 3, 3, &t) == AL_MISS && al_tag(a, 3) == 0);
	al_free(a);
	al_free(NULL);
}

/* Random begins and ends against a model: the set never exceeds its
 * capacity, a busy extent never leaves it, every begun extent is in it,
 * and a wait happens only when the write could not fit. */
static void test_random(void)
{
	enum { CAP = 16, NEXT = 40, INFLIGHT = 12 };
	struct { uint64_t f, l; } fl[INFLIGHT];
	unsigned busy[NEXT] = { 0 }, n = 0;
	uint64_t seed = 42;
	struct al *a;
	struct al_txn t;

	CHECK(al_new(CAP, &a) == 0);
	for (int it = 0; it < 200000; it++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		unsigned r = (unsigned)(seed >> 33);
		if (n == INFLIGHT || (n && r % 3 == 0)) {
			unsigned k = r % n;
			al_end(a, fl[k].f, fl[k].l);
			for (uint64_t e = fl[k].f; e <= fl[k].l; e++)
				busy[e]--;
			fl[k] = fl[--n];
			continue;
		}
		uint64_t f = (r >> 4) % NEXT, l = MIN(f + (r >> 12) % 3, NEXT - 1);
		unsigned nbusy = 0, need = 0;
		for (unsigned e = 0; e < NEXT; e++)
			nbusy += busy[e] || (e >= f && e <= l);
		need = nbusy;
		int res = al_begin(a, f, l, &t);
		CHECK(res == AL_HIT || res == AL_MISS || res == AL_WAIT);
		CHECK_MSG((res == AL_WAIT) == (need > CAP), "it %d: result %d with %u needed",
			  it, res, need);
		for (unsigned k = 0; k < t.n_evicted && res == AL_MISS; k++)
			CHECK(!busy[t.evicted[k]] && (t.evicted[k] < f || t.evicted[k] > l));
		if (res == AL_WAIT)
			continue;
		for (uint64_t e = f; e <= l; e++)
			busy[e]++;
		fl[n].f = f;
		fl[n++].l = l;
		CHECK(al_count(a) <= CAP);
		for (unsigned e = 0; e < NEXT; e++)
			if (busy[e])
				CHECK(al_contains(a, e) && al_busy(a, e) == busy[e]);
	}
	al_free(a);
}

int main(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++)
		run_row(&rows[i]);
	test_bounds_tags_clear();
	test_random();
	return unit_done("test-al");
}
