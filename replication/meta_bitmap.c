/* meta_bitmap.c: the dirty bitmaps of struct meta (meta.h) in memory: set,
 * clear, test, count and search regions, and the per-page state that says
 * which pages a flush must write (meta_io.c writes them).  No I/O; the
 * words are kept in on-disk byte order so that a flush only copies them. */
#include "config.h"

#include <endian.h>

#include "meta.h"
#include "meta_int.h"
#include "util.h"

uint64_t meta_regions(const struct meta *m)
{
	return m->regions;
}

static void mark_page(struct meta *m, unsigned peer, size_t word, uint8_t state)
{
	uint8_t *ps = &m->pstate[peer][word / WORDS_PER_PAGE];

	if (*ps >= state)
		return;
	if (*ps == PAGE_CLEAN)
		m->pages_dirty++;
	if (state == PAGE_SET)
		m->pages_set++;
	*ps = state;
}

/* Sets or clears regions [first, end); returns how many bits changed. */
uint64_t repl__meta_bits_change(struct meta *m, unsigned peer, uint64_t first,
				uint64_t end, bool set)
{
	uint64_t *bm = m->bm[peer];
	uint64_t changed = 0;

	while (first < end) {
		size_t w = (size_t)(first / 64);
		unsigned lo = first % 64;
		uint64_t n = MIN(end - first, 64 - lo);
		uint64_t mask = (n == 64 ? ~UINT64_C(0) : (UINT64_C(1) << n) - 1) << lo;
		uint64_t old = le64toh(bm[w]);
		uint64_t val = set ? old | mask : old & ~mask;

		if (val != old) {
			changed += (uint64_t)__builtin_popcountll(val ^ old);
			bm[w] = htole64(val);
			mark_page(m, peer, w, set ? PAGE_SET : PAGE_CLEARED);
		}
		first += n;
	}
	return changed;
}

/* End of [offset, offset + len) clamped to the volume, without overflow. */
static uint64_t range_end(const struct meta *m, uint64_t offset, uint64_t len)
{
	if (len > m->sb.size - offset)
		return m->sb.size;
	return offset + len;
}

bool meta_bit_test(const struct meta *m, unsigned peer, uint64_t region)
{
	if (peer >= META_BITMAPS || region >= m->regions)
		return false;
	return (le64toh(m->bm[peer][region / 64]) >> (region % 64)) & 1;
}

uint64_t meta_bits_set_range(struct meta *m, unsigned peer, uint64_t offset,
			     uint64_t len)
{
	uint64_t end;

	if (peer >= META_BITMAPS || len == 0 || offset >= m->sb.size)
		return 0;
	end = range_end(m, offset, len);
	return repl__meta_bits_change(m, peer, offset >> m->sb.region_shift,
				      ((end - 1) >> m->sb.region_shift) + 1, true);
}

uint64_t meta_bits_clear_range(struct meta *m, unsigned peer, uint64_t offset,
			       uint64_t len)
{
	uint64_t rsize = UINT64_C(1) << m->sb.region_shift;
	uint64_t first, last, end;

	if (peer >= META_BITMAPS || len == 0 || offset >= m->sb.size)
		return 0;
	end = range_end(m, offset, len);
	first = repl__meta_regions_of(offset, m->sb.region_shift);
	last = end == m->sb.size ? m->regions : end / rsize;
	return first < last ? repl__meta_bits_change(m, peer, first, last, false) : 0;
}

void meta_bits_set_all(struct meta *m, unsigned peer)
{
	if (peer < META_BITMAPS)
		repl__meta_bits_change(m, peer, 0, m->regions, true);
}

uint64_t meta_bits_count(const struct meta *m, unsigned peer)
{
	size_t nwords = (size_t)DIV_ROUND_UP(m->regions, 64);
	uint64_t n = 0;

	if (peer >= META_BITMAPS)
		return 0;
	for (size_t w = 0; w < nwords; w++)
		n += (uint64_t)__builtin_popcountll(le64toh(m->bm[peer][w]));
	return n;
}

uint64_t meta_bit_next(const struct meta *m, unsigned peer, uint64_t from)
{
	size_t nwords = (size_t)DIV_ROUND_UP(m->regions, 64);
	size_t w;
	uint64_t word;

	if (peer >= META_BITMAPS || from >= m->regions)
		return m->regions;
	w = (size_t)(from / 64);
	word = le64toh(m->bm[peer][w]) & (~UINT64_C(0) << (from % 64));
	for (;;) {
		if (word) {
			uint64_t r = (uint64_t)w * 64 + (uint64_t)__builtin_ctzll(word);
			return MIN(r, m->regions);
		}
		if (++w >= nwords)
			return m->regions;
		word = le64toh(m->bm[peer][w]);
	}
}

bool meta_bitmap_needs_flush(const struct meta *m)
{
	return m->pages_set != 0;
}

bool meta_bits_in_flush(const struct meta *m, unsigned bitmap, uint64_t offset,
			uint64_t len)
{
	uint64_t regions_per_page = (uint64_t)WORDS_PER_PAGE * 64, end;
	size_t p, last;

	if (bitmap >= META_BITMAPS || len == 0 || offset >= m->sb.size)
		return false;
	end = range_end(m, offset, len);
	p = (size_t)((offset >> m->sb.region_shift) / regions_per_page);
	last = (size_t)(((end - 1) >> m->sb.region_shift) / regions_per_page);
	for (; p <= last; p++)
		if (m->pflush[bitmap][p])
			return true;
	return false;
}
