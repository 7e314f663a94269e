/* handshake.h: what a replica does with its peer's VOLUME frame, the last
 * step of making a connection, as pure functions of what both sides said
 * and what this replica sees of its other peers.  hs_identity(): the same
 * volume (name, UUID; a blank replica takes the UUID of the first replica
 * with data it meets).  hs_decide(): gen.c's decision, the automatic
 * split-brain recovery, the crashed-Primary and waiting-Secondaries
 * rules, and so whether the link comes up, goes to be tried again, or goes
 * StandAlone.  No I/O, no clock, no global state: peer_state.c gathers the
 * inputs and carries the verdict out; tests/unit/test-handshake.c checks
 * it from a table.  Not here: the sizes (resize.h), which peer_state.c
 * checks once the link would come up. */
#ifndef REPL_HANDSHAKE_H
#define REPL_HANDSHAKE_H

#include <stdbool.h>
#include <stdint.h>

#include "gen.h"

/* A Primary stepping down because it lost a promotion crossing. */
#define HS_LOST_CROSSING "its promotion crossed another and came second: nothing of it is taken"
/* The longest reason kept (struct peer's reason). */
#define HS_WHY_MAX 128

enum hs_identity {
	HS_ID_SAME,		/* the same volume */
	HS_ID_ADOPT,		/* we are blank: take the peer's UUID, then go on */
	HS_ID_KEEP,		/* the peer is blank: it takes ours */
	HS_ID_NAME_DIFFERS,	/* StandAlone: another volume's name */
	HS_ID_UUID_DIFFERS,	/* StandAlone: two volumes with data */
};

/* uuid_cmp: memcmp(peer's UUID, ours); blank: current generation 0. */
enum hs_identity hs_identity(bool same_name, bool blank, bool peer_blank, int uuid_cmp);

struct hs_in {
	const char *volume;		/* its name, for the split-brain advice */
	struct gen_side local, peer;
	uint64_t local_dirty;		/* regions in our bitmap for the peer */
	bool bitmap_blind;		/* it started at our promotion, the peer
					 * away (meta.h, META_PF_BLIND) */
	uint64_t peer_dirty;		/* in its bitmap for us (its VOLUME) */
	struct sb_config after_sb;
	bool lost_crossing;		/* the peer lost a promotion crossing */
	bool told_has_primary;		/* our VOLUME said a Primary is connected here */
	bool peer_has_primary;		/* its VOLUME said one is connected there */
	bool other_primary;		/* a Primary other than the peer is up here now */
	bool peer_says_outdated;	/* its VOLUME records us as Outdated */
	bool in_sync_with_primary;	/* in sync with a Primary other than the peer */
	bool resynced_by_other;		/* an UpToDate peer in sync resynced us on its
					 * present link */
	bool keeping;			/* "replagent resolve --keep" named this node
					 * and no link came up since: the peer is to
					 * discard its side of the split brain */
	bool quorate;			/* this replica's quorum (always in static
					 * mode): its cluster's records are known */
	bool peer_quorate;		/* the peer's, as its VOLUME said */
};

enum hs_action {
	HS_UP,			/* the link comes up (subject to the sizes) */
	HS_DROP,		/* the link goes; tried again (Disconnected) */
	HS_STANDALONE,		/* the link goes with a BYE; not retried */
};

struct hs_verdict {
	enum hs_action action;
	uint32_t bye;			/* HS_STANDALONE: enum wire_bye_reason */
	char why[HS_WHY_MAX];		/* HS_DROP, HS_STANDALONE: for log and status */
	bool decided;			/* gen_decide() ran: gv (and it is logged) */
	struct gen_verdict gv;		/* after the recovery and crash rules */
	const char *auto_resolved;	/* a split brain resolved: the policy's reason */
	const char *wait;		/* two Secondaries that wait: state only, why */
	/* HS_UP: we record ourselves Outdated, as the peer says (we are not
	 * the source, nor in sync with our Primary or resynced since). */
	bool outdated;
	/* HS_UP: two Secondaries of the same generation: our bits for the
	 * peer may be stale (peer_state.c forgets them if both UpToDate). */
	bool forget_stale;
};

void hs_decide(const struct hs_in *in, struct hs_verdict *out);

#endif
