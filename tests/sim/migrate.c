/* migrate.c: live migration as a fault.  The guest moves to another
 * node as libvirt and the OCF agent move it: a migration window opens on
 * the destination (a Secondary in sync with the Primary); the guest's
 * client attaches there while it is still attached to the source; the
 * source's requests drain (QEMU stops the guest there and flushes), then
 * the client sends to the destination, whose first write takes the
 * Primary role over (TAKEOVER, HANDOVER).  Now and then the source's
 * connection closes before the destination writes, and the role moves by
 * a soft takeover.  Once the destination is Primary the source's
 * connection closes.  A migration fails when the destination's window
 * ends without the role (its timeout, a cut link, a crash, a failover):
 * the destination's QEMU goes, the client is back on the Primary.
 *
 * What is checked is the engine's promise: one Primary at every moment,
 * the role moving without a write lost (the oracle's invariants: reads on
 * the destination see every acknowledged write, the new Primary holds all
 * of them, the generation moves with the role and no two Primaries
 * acknowledge in one generation). */
#include "config.h"

#include <string.h>

#include "replsim.h"

static struct {
	int src, dest;		/* dest -1: no migration */
	unsigned dest_inc;	/* the destination daemon's incarnation */
	bool drained;		/* the client sends to the destination now */
} mig = { -1, -1, 0, false };

void migrate_reset(void)
{
	mig.src = mig.dest = -1;
}

bool migrate_active(void)
{
	return mig.dest >= 0;
}

void migrate_fault(int d)
{
	char why[200];
	int p = cm_primary, r;

	if (mig.dest >= 0 || p < 0 || d == p || !nodes[d].alive || !nodes[p].alive ||
	    oracle_client_node() != p)
		return;
	ON(d, r = repl_volume_window_open(nodes[d].vol, 1 + (unsigned)rnd_below(20), why,
					  sizeof(why)));
	if (r < 0) {
		trace("FAULT live migration n%d -> n%d cannot start: %s", p, d, why);
		return;
	}
	trace("FAULT live migration n%d -> n%d: window open, the client attaches there too",
	      p, d);
	mig.src = p;
	mig.dest = d;
	mig.dest_inc = nodes[d].incarnation;
	mig.drained = false;
	oracle_client_attach(d);
}

/* The migration ends; the client runs on at to (-1: nowhere yet). */
static int end(const char *how, int to)
{
	trace("client: the live migration n%d -> n%d %s", mig.src, mig.dest, how);
	mig.src = mig.dest = -1;
	if (to >= 0 && nodes[to].alive)
		oracle_client_switch(to);
	return to;
}

/* Where the client's next request goes: a node, or -1 (not now). */
int migrate_route(unsigned inflight)
{
	struct repl_volume_status st;
	int d = mig.dest;

	if (d < 0)
		return cm_primary;
	if (!nodes[d].alive || nodes[d].incarnation != mig.dest_inc)
		return end("failed: the destination went down", cm_primary);
	repl_volume_status(nodes[d].vol, &st);
	if (!strcmp(st.role, "Primary")) {
		/* the role moved: the source's QEMU closes its disk */
		if (nodes[mig.src].alive && mig.src != d)
			oracle_client_detach(mig.src);
		return end("is done: the destination is Primary", d);
	}
	if (!strcmp(st.window, "none")) {
		/* its QEMU goes; the guest runs on where it was */
		oracle_client_detach(d);
		return end("failed: the window closed", cm_primary);
	}
	if (!mig.drained) {
		if (inflight)
			return -1;
		mig.drained = true;
		oracle_client_switch(d);
		trace("client: the source is drained, the guest runs on n%d", d);
		if (rnd_chance(300) && nodes[mig.src].alive) {
			trace("client: the source's connection closes before the first write");
			oracle_client_detach(mig.src);
		}
	}
	return d;
}
