/* handshake.c: the connect-time decisions of a link between two replicas
 * (handshake.h), as pure functions: the rules below in the order they
 * apply, each returning what to do.  gen.c compares the generations; this
 * file adds what the connection knows besides them: a crossing the peer
 * lost, two Primaries, the split-brain policies, a crashed Primary on
 * either side, Secondaries that wait for a Primary, another Primary
 * connected meanwhile, and the peer's record that we missed writes.  It
 * does not touch a peer, the metadata or a socket (peer_state.c does,
 * from the verdict). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "handshake.h"
#include "wire.h"

enum hs_identity hs_identity(bool same_name, bool blank, bool peer_blank, int uuid_cmp)
{
	if (!same_name)
		return HS_ID_NAME_DIFFERS;
	if (uuid_cmp == 0)
		return HS_ID_SAME;
	/* The lower UUID wins between two blanks. */
	if (blank && (!peer_blank || uuid_cmp < 0))
		return HS_ID_ADOPT;
	if (peer_blank)
		return HS_ID_KEEP;
	return HS_ID_UUID_DIFFERS;
}

static void verdict(struct hs_verdict *out, enum hs_action a, uint32_t bye, const char *why)
{
	out->action = a;
	out->bye = bye;
	snprintf(out->why, sizeof(out->why), "%s", why);
}

/* DRBD's after-sb policies, with the safe defaults: resolve only when the
 * side that loses wrote nothing since the split. */
static void try_auto_recovery(const struct hs_in *in, struct hs_verdict *out)
{
	struct sb_side ls = { in->local.primary, in->local_dirty, in->local.node_id };
	struct sb_side ps = { in->peer.primary, in->peer_dirty, in->peer.node_id };
	struct sb_verdict sv = sb_decide(&ls, &ps, &in->after_sb);
	struct gen_verdict after;

	if (sv.outcome == SB_STAY_STANDALONE)
		return;
	after = gen_after_split_brain(&in->local, &in->peer, sv.outcome);
	if (after.decision == GEN_SPLIT_BRAIN || after.decision == GEN_REFUSE)
		return;
	out->gv = after;
	out->auto_resolved = sv.reason;
}

void hs_decide(const struct hs_in *in, struct hs_verdict *out)
{
	const struct gen_side *local = &in->local, *peer = &in->peer;
	enum gen_decision d;
	bool source;

	memset(out, 0, sizeof(*out));
	if (peer->primary && in->lost_crossing) {
		verdict(out, HS_DROP, 0, HS_LOST_CROSSING);	/* no resync from it either */
		return;
	}
	/* Two Primaries: no data flows until one demotes (in a cluster, the
	 * one whose promotion came second steps down by itself), so keep
	 * trying rather than give up StandAlone. */
	if (local->primary && peer->primary) {
		verdict(out, HS_DROP, 0, "the peer is Primary too: waiting for one of them "
			"to demote");
		return;
	}
	out->gv = gen_decide(local, peer);
	if (out->gv.decision == GEN_SPLIT_BRAIN)
		try_auto_recovery(in, out);
	/* A crashed Primary that is the source carries its activity log in
	 * its bitmaps (merged at start); one that is the target cannot tell
	 * the source which regions it wrote alone, so it takes a full sync. */
	if (out->gv.decision == GEN_SOURCE_BITMAP && peer->crashed_primary)
		out->gv.decision = GEN_SOURCE_FULL;
	else if (out->gv.decision == GEN_TARGET_BITMAP && local->crashed_primary)
		out->gv.decision = GEN_TARGET_FULL;
	/* A Secondary that lost its power lost what it had acknowledged and
	 * not flushed.  Its Primary then kept those regions and puts them in
	 * its bitmap when it loses it (peer_unflushed.c); a bitmap we started
	 * at our promotion, with it away, holds none of them, and it cannot
	 * say which they were: it takes everything (sim seed 2649 of the EIO
	 * profile: the replicas left different).  Only the source knows; the
	 * target's side says bitmap, which changes nothing there. */
	if (out->gv.decision == GEN_SOURCE_BITMAP && in->bitmap_blind && peer->lost_power &&
	    !peer->primary)
		out->gv.decision = GEN_SOURCE_FULL;
	out->decided = true;
	d = out->gv.decision;
	/* Two Secondaries resync each other only with no Primary about and
	 * from an UpToDate source; else they stay connected for state only
	 * and re-decide when one is promoted (it reconnects them), or resync
	 * from the Primary.  Each side decides on what both said. */
	out->wait = gen_secondaries_wait(out->gv, local, peer, in->told_has_primary,
					 in->peer_has_primary);
	/* The source of a resync between Secondaries, without quorum: the
	 * cluster may hold a record that it is Outdated, which its metadata
	 * failed to keep (sim seed 178 of the EIO profile: a replica back
	 * from a restart gave its stale data to the others before the
	 * cluster told it).  It waits for its partition's records, and its
	 * target with it: starting, the target would make itself
	 * Inconsistent for a resync that does not come (sim seed 28152 of
	 * the EIO profile: a crashed Primary that lost power, whose only
	 * peer turned out Outdated once the records came, was Inconsistent
	 * too, and neither could be promoted). */
	source = d == GEN_SOURCE_BITMAP || d == GEN_SOURCE_FULL;
	if (!out->wait && !local->primary && !peer->primary &&
	    (source ? !in->quorate
		    : (d == GEN_TARGET_BITMAP || d == GEN_TARGET_FULL) && !in->peer_quorate)) {
		verdict(out, HS_DROP, 0, source ? "no quorum here: the source of a resync "
			"between Secondaries waits for the cluster's records" :
			"no quorum at the source of a resync between Secondaries: it waits for "
			"the cluster's records");
		return;
	}
	if (!out->wait && !local->primary && !peer->primary && d != GEN_NO_SYNC &&
	    in->other_primary) {
		verdict(out, HS_DROP, 0, "a Primary connected meanwhile: the resync comes from it");
		return;
	}
	/* Our data is kept: the peer has not discarded its own yet (its
	 * resolve runs, or is still to be run there), and will connect once
	 * it has.  Keep trying, as DRBD's survivor waits in WFConnection; a
	 * StandAlone here would leave the peer nobody to connect to. */
	if (!out->wait && d == GEN_SPLIT_BRAIN && in->keeping) {
		verdict(out, HS_DROP, 0, "split brain: this node's data is kept (replagent "
			"resolve); waiting for the peer to discard its own");
		return;
	}
	if (!out->wait && (d == GEN_SPLIT_BRAIN || d == GEN_UNRELATED || d == GEN_REFUSE)) {
		out->action = HS_STANDALONE;
		out->bye = d == GEN_SPLIT_BRAIN ? WIRE_BYE_SPLIT_BRAIN : WIRE_BYE_REFUSED;
		if (d == GEN_SPLIT_BRAIN)
			snprintf(out->why, sizeof(out->why), "split brain: resolve with "
				 "\"replagent resolve %s --keep NODE\" on both nodes", in->volume);
		else
			snprintf(out->why, sizeof(out->why), "%s: %s", gen_decision_name(d),
				 out->gv.reason);
		return;
	}
	out->action = HS_UP;
	/* The peer says we missed writes: believe it unless we are the source
	 * or in sync with our Primary (or resynced since by another), or the
	 * Primary: a Primary is the reference, and a record of the peer's
	 * from before our promotion says nothing of it (sim seed 586 of the
	 * EIO profile: a Primary that could not write its new generation
	 * took an old record of a peer for its own state, became Outdated,
	 * and the resync it then gave made its target Outdated). */
	out->outdated = in->peer_says_outdated && !local->primary &&
			local->disk_state == GEN_DISK_UPTODATE && !source &&
			!in->in_sync_with_primary && !in->resynced_by_other;
	out->forget_stale = !local->primary && !peer->primary && out->gv.rule == GEN_R_SAME;
}
