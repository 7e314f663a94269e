/* agree.c: a Primary's ranges being made to agree.
 *
 * Where the Primary's own disk fails a write that its peers applied, they
 * get the range back from it, one peer after the other (replicate.c's
 * local_failed(), resync.c).  Until none lacks it, the write's seq bounds
 * the peer-ack (replicate.c's peer_ack()): the Secondaries keep the range
 * among their recent regions, so that if this Primary is lost before
 * every peer has it back, the replicas left make it agree (recent.c).
 * Without that, one that had it back and one that had not kept different
 * data there for good (sim seed 18404 of the full-disk profile); nor is
 * the role handed over while a connected peer lacks such a range (window.c:
 * the new Primary would not know, seed 78682).  A peer
 * that is away keeps its bits, and the bound, until it has the range: a
 * long way behind, the Secondaries' recent regions only grow (a new
 * Primary then makes more of them agree than needed, never fewer).  Loop
 * thread only. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "agree.h"
#include "log.h"
#include "meta.h"
#include "peer.h"
#include "repl_int.h"
#include "util.h"

struct agree {
	struct agree *next;
	uint64_t seq, offset, len;
};

int repl__agree_add(struct repl_volume *vol, uint64_t seq, uint64_t offset, uint64_t len)
{
	struct agree *a = calloc(1, sizeof(*a));

	if (!a) {
		plog(LOG_ERR, vol->name, "out of memory: if this Primary is lost before its "
		     "peers have the range at %llu back, they may differ there",
		     (unsigned long long)offset);
		return -ENOMEM;
	}
	*a = (struct agree){ vol->agree, seq, offset, len };
	vol->agree = a;
	return 0;
}

/* Does any peer (a connected one, if up_only) still lack a's range? */
static bool pending(const struct repl_volume *vol, const struct agree *a, bool up_only)
{
	unsigned shift = meta_get(vol->meta)->region_shift;

	for (unsigned i = 0; i < vol->n_peers; i++) {
		if (up_only && !repl__peer_up(vol->peers[i]))
			continue;
		for (uint64_t r = a->offset >> shift; r <= (a->offset + a->len - 1) >> shift; r++)
			if (meta_bit_test(vol->meta, i, r))
				return true;
	}
	return false;
}

bool repl__agree_waiting(const struct repl_volume *vol)
{
	for (const struct agree *a = vol->agree; a; a = a->next)
		if (a->len && pending(vol, a, true))
			return true;
	return false;
}

uint64_t repl__agree_bound(struct repl_volume *vol, uint64_t seq)
{
	for (struct agree **pp = &vol->agree, *a; (a = *pp);) {
		if (a->len && pending(vol, a, false)) {
			seq = MIN(seq, a->seq);
			pp = &a->next;
		} else {
			*pp = a->next;
			free(a);
		}
	}
	return seq;
}

void repl__agree_free(struct repl_volume *vol)
{
	for (struct agree *a = vol->agree, *next; a; a = next) {
		next = a->next;
		free(a);
	}
	vol->agree = NULL;
}
