/* clusterd_send.c: what cluster mode tells the group: the messages it
 * builds from this node's state (its ANNOUNCE, the volume definitions, its
 * roles, the outdate records of its replicas, SYNC_DONE), encoded and
 * multicast (cluster.c).  What the group tells us, and when to send the
 * state, are clusterd.c's; this file reads the clusterd's state and
 * changes none of it. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cluster.h"
#include "clmsg.h"
#include "clusterd_int.h"
#include "clusterd_send.h"
#include "log.h"
#include "repl.h"
#include "voldb.h"

/* Names are validated to fit before they get here; this only bounds. */
void clusterd__copy_str(char *dst, size_t cap, const char *src)
{
	size_t n = strnlen(src, cap - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

int clusterd__send_msg(struct clusterd *cd, const struct clmsg *m)
{
	uint8_t buf[CLMSG_MAX_LEN + 64];
	ssize_t n = clmsg_encode(m, buf, sizeof(buf));
	int r;

	if (n < 0) {
		log_err("cluster: cannot encode %s: %s", clmsg_type_name(m->type),
			strerror((int)-n));
		return (int)n;
	}
	r = cluster_send(cd->cl, buf, (size_t)n);
	if (r < 0)
		log_warn_errno(-r, "cluster: cannot send %s", clmsg_type_name(m->type));
	return r < 0 ? r : 0;
}

static void send_announce(struct clusterd *cd)
{
	struct clmsg m = { .type = CLMSG_ANNOUNCE };

	m.u.announce.nodeid = cd->nodeid;
	clusterd__copy_str(m.u.announce.node, sizeof(m.u.announce.node), cd->cfg->node);
	clusterd__copy_str(m.u.announce.addr, sizeof(m.u.announce.addr), cd->addr);
	clusterd__send_msg(cd, &m);
}

void clusterd__send_role(struct clusterd *cd, struct repl_volume *vol)
{
	struct clmsg m = { .type = CLMSG_ROLE };
	struct repl_volume_status st;

	repl_volume_status(vol, &st);
	clusterd__copy_str(m.u.role.volume, sizeof(m.u.role.volume), st.name);
	clusterd__copy_str(m.u.role.node, sizeof(m.u.role.node), cd->cfg->node);
	m.u.role.role = repl_volume_role(vol) != REPL_PRIMARY ? CLMSG_ROLE_SECONDARY :
			repl_volume_handed_over(vol) ? CLMSG_ROLE_HANDED_OVER : CLMSG_ROLE_PRIMARY;
	m.u.role.disk = 5;	/* GEN_DISK_UNKNOWN: informational only */
	clusterd__send_msg(cd, &m);
}

void clusterd__send_outdate(struct clusterd *cd, const struct pending_outdate *po)
{
	struct clmsg m = { .type = CLMSG_OUTDATE };

	snprintf(m.u.outdate.volume, sizeof(m.u.outdate.volume), "%s", po->volume);
	snprintf(m.u.outdate.node, sizeof(m.u.outdate.node), "%s", po->node);
	m.u.outdate.generation = po->token;
	m.u.outdate.from = cd->nodeid;
	clusterd__send_msg(cd, &m);
}

void clusterd__send_record(struct clusterd *cd, const char *vol, const char *node, bool outdated)
{
	struct clmsg m = { .type = CLMSG_OUTDATE };

	clusterd__copy_str(m.u.outdate.volume, sizeof(m.u.outdate.volume), vol);
	clusterd__copy_str(m.u.outdate.node, sizeof(m.u.outdate.node), node);
	m.u.outdate.generation = outdated ? 1 : 0;	/* 0: "in sync again" */
	m.u.outdate.from = cd->nodeid;
	clusterd__send_msg(cd, &m);
}

/* What we know of the other replicas: those that missed writes (so that
 * one coming back learns it, even from a Secondary), and, from a Primary,
 * those in sync again (which clears such records everywhere). */
void clusterd__send_records(struct clusterd *cd, struct repl_volume *vol)
{
	struct repl_volume_status st;
	bool inconsistent;

	if (clusterd__withheld(cd, repl_volume_name(vol)))
		return;
	repl_volume_status(vol, &st);
	/* An Inconsistent replica's word on what the others missed is
	 * nobody's reference: a deposed Primary that started over keeps in
	 * its metadata the replicas it lost at the cut, one of which may be
	 * the only one holding the writes of the Primary promoted since. */
	inconsistent = strcmp(st.disk, "Inconsistent") == 0;
	for (unsigned i = 0; i < st.n_peers; i++) {
		/* Following us with nothing out of sync is in sync: a replica
		 * the group records Outdated stays Outdated through its resync
		 * until this says so (repl_volume_uptodate_by()). */
		if (st.peers[i].in_sync || st.peers[i].following_clean)
			clusterd__send_record(cd, st.name, st.peers[i].node, false);
		else if (st.peers[i].recorded_outdated && !inconsistent)
			clusterd__send_record(cd, st.name, st.peers[i].node, true);
	}
}

/* A Primary back from a minority, not yet told whether another was
 * promoted meanwhile (check_lost_primaries()), says nothing of the
 * volume's replicas: what it recorded while cut off names the ones it lost
 * at the cut, and with the new Primary gone since, nobody would contradict
 * it: the group would record Outdated the replica that holds the new
 * Primary's writes. */
bool clusterd__withheld(const struct clusterd *cd, const char *volume)
{
	struct repl_volume *vol = repl_volume_find(cd->eng, volume);

	return cd->lost_quorum && vol && repl_volume_role(vol) == REPL_PRIMARY;
}

void clusterd__send_kept_records(struct clusterd *cd)
{
	for (const struct pending_outdate *po = cd->records; po; po = po->next)
		if (!clusterd__withheld(cd, po->volume))
			clusterd__send_record(cd, po->volume, po->node, true);
}

/* Everything we know, for members that may not know it. */
void clusterd__send_state(struct clusterd *cd)
{
	struct clmsg m = { .type = CLMSG_VOLDEF };

	send_announce(cd);
	for (size_t i = 0; i < voldb_count(cd->db); i++) {
		m.u.voldef = *voldb_at(cd->db, i);
		clusterd__send_msg(cd, &m);
	}
	for (struct repl_volume *v = repl_volume_first(cd->eng); v; v = repl_volume_next(v)) {
		clusterd__send_role(cd, v);
		clusterd__send_records(cd, v);
	}
	/* The group's records this node keeps, also of volumes it does not
	 * replicate: a member back from a crash hears them before the
	 * exchange ends, so before any promotion it could make. */
	clusterd__send_kept_records(cd);
	m.type = CLMSG_SYNC_DONE;
	m.u.sync_done.nodeid = cd->nodeid;
	clusterd__send_msg(cd, &m);
}
