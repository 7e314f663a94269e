/* al.c: the activity log's set of extents (al.h): a fixed array of slots,
 * a hash from extent number to slot, and a list of the idle slots in LRU
 * order.  A slot with writes in flight is on no list, so it cannot be
 * chosen for eviction; when its last write ends it goes to the most
 * recently used end.  al_begin() takes all of a write's slots or none, so
 * a write never holds slots while it waits for more (no deadlock between
 * waiting writes). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "al.h"

#define NONE UINT32_MAX

struct al_slot {
	uint64_t ext;
	uint64_t tag;
	uint32_t busy;
	uint32_t prev, next;		/* idle list (NONE: ends, or not on it) */
	uint32_t hnext;			/* hash chain */
};

struct al {
	unsigned cap, count, idle;
	uint32_t lru, mru;		/* idle list: lru is evicted first */
	uint32_t free_top;		/* never used slots: cap - free_top left */
	uint32_t hmask;
	uint32_t *hash;
	struct al_slot *s;
};

static uint32_t hash_of(const struct al *a, uint64_t ext)
{
	return (uint32_t)((ext * UINT64_C(0x9e3779b97f4a7c15)) >> 32) & a->hmask;
}

static uint32_t find(const struct al *a, uint64_t ext)
{
	uint32_t i;

	for (i = a->hash[hash_of(a, ext)]; i != NONE; i = a->s[i].hnext)
		if (a->s[i].ext == ext)
			return i;
	return NONE;
}

int al_new(unsigned capacity, struct al **out)
{
	struct al *a;
	uint32_t buckets = 1;

	*out = NULL;
	if (capacity < AL_EXTENTS_MIN || capacity > AL_EXTENTS_MAX)
		return -EINVAL;
	while (buckets < 2 * capacity)
		buckets <<= 1;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->s = calloc(capacity, sizeof(*a->s));
	a->hash = malloc(buckets * sizeof(*a->hash));
	if (!a->s || !a->hash) {
		al_free(a);
		return -ENOMEM;
	}
	a->cap = capacity;
	a->hmask = buckets - 1;
	for (uint32_t b = 0; b < buckets; b++)
		a->hash[b] = NONE;
	a->lru = a->mru = NONE;
	*out = a;
	return 0;
}

void al_free(struct al *a)
{
	if (!a)
		return;
	free(a->s);
	free(a->hash);
	free(a);
}

unsigned al_capacity(const struct al *a) { return a->cap; }
unsigned al_count(const struct al *a) { return a->count; }

bool al_contains(const struct al *a, uint64_t ext)
{
	return find(a, ext) != NONE;
}

unsigned al_busy(const struct al *a, uint64_t ext)
{
	uint32_t i = find(a, ext);

	return i == NONE ? 0 : a->s[i].busy;
}

static void idle_unlink(struct al *a, uint32_t i)
{
	struct al_slot *s = &a->s[i];

	if (s->prev != NONE)
		a->s[s->prev].next = s->next;
	else
		a->lru = s->next;
	if (s->next != NONE)
		a->s[s->next].prev = s->prev;
	else
		a->mru = s->prev;
	s->prev = s->next = NONE;
	a->idle--;
}

static void idle_push_mru(struct al *a, uint32_t i)
{
	struct al_slot *s = &a->s[i];

	s->next = NONE;
	s->prev = a->mru;
	if (a->mru != NONE)
		a->s[a->mru].next = i;
	else
		a->lru = i;
	a->mru = i;
	a->idle++;
}

static void hash_unlink(struct al *a, uint32_t i)
{
	uint32_t *pp = &a->hash[hash_of(a, a->s[i].ext)];

	while (*pp != i)
		pp = &a->s[*pp].hnext;
	*pp = a->s[i].hnext;
}

/* A slot for a new extent: a never used one, else the least recently used
 * idle one (its extent is recorded as evicted). */
static uint32_t take_slot(struct al *a, struct al_txn *t)
{
	uint32_t i;

	if (a->free_top < a->cap)
		return a->free_top++;
	i = a->lru;
	idle_unlink(a, i);
	hash_unlink(a, i);
	t->evicted[t->n_evicted++] = a->s[i].ext;
	a->count--;
	return i;
}

int al_begin(struct al *a, uint64_t first, uint64_t last, struct al_txn *t)
{
	unsigned missing = 0, idle_here = 0;
	uint32_t i;

	t->n_added = t->n_evicted = 0;
	if (last < first || last - first >= AL_SPAN_MAX)
		return -EINVAL;
	for (uint64_t e = first; e <= last; e++) {
		i = find(a, e);
		if (i == NONE)
			missing++;
		else if (!a->s[i].busy)
			idle_here++;
	}
	/* This write's own idle extents are not for eviction. */
	if (missing > (a->cap - a->free_top) + (a->idle - idle_here))
		return AL_WAIT;
	for (uint64_t e = first; e <= last; e++) {
		i = find(a, e);
		if (i == NONE)
			continue;
		if (!a->s[i].busy++)
			idle_unlink(a, i);
	}
	for (uint64_t e = first; e <= last; e++) {
		if (find(a, e) != NONE)
			continue;
		i = take_slot(a, t);
		a->s[i] = (struct al_slot){ .ext = e, .busy = 1,
					    .prev = NONE, .next = NONE };
		a->s[i].hnext = a->hash[hash_of(a, e)];
		a->hash[hash_of(a, e)] = i;
		a->count++;
		t->added[t->n_added++] = e;
	}
	return missing ? AL_MISS : AL_HIT;
}

unsigned al_end(struct al *a, uint64_t first, uint64_t last)
{
	unsigned idled = 0;
	uint32_t i;

	for (uint64_t e = first; e <= last; e++) {
		i = find(a, e);
		if (i == NONE || !a->s[i].busy)
			continue;	/* a caller bug; nothing to undo */
		if (!--a->s[i].busy) {
			idle_push_mru(a, i);
			idled++;
		}
	}
	return idled;
}

void al_set_tag(struct al *a, uint64_t ext, uint64_t tag)
{
	uint32_t i = find(a, ext);

	if (i != NONE)
		a->s[i].tag = tag;
}

uint64_t al_tag(const struct al *a, uint64_t ext)
{
	uint32_t i = find(a, ext);

	return i == NONE ? 0 : a->s[i].tag;
}

int al_clear(struct al *a)
{
	if (a->idle != a->count)
		return -EBUSY;
	for (uint32_t b = 0; b <= a->hmask; b++)
		a->hash[b] = NONE;
	a->lru = a->mru = NONE;
	a->count = a->idle = a->free_top = 0;
	return 0;
}
