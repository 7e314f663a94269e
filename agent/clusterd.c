/* clusterd.c: see clusterd.h.
 *
 * State exchange: on every membership change each member sends everything
 * it knows (its ANNOUNCE, every volume definition including tombstones,
 * its roles, the outdate records of its replicas); merging is idempotent,
 * so a node that was down, or on the other side of a partition, catches up
 * without a leader.  Messages arrive in the same (agreed) order on every
 * member; our own OUTDATE coming back means every member of this
 * configuration has it, which is what releases a Primary's acknowledgements
 * - and only while the partition is quorate.
 *
 * Its parts: what it sends is clusterd_send.c's, what it knows of the
 * members clusterd_nodes.c's, the group's Outdated records
 * clusterd_records.c's, how a volume definition becomes a replica
 * here clusterd_vol.c's, the promotion rules and control commands
 * clusterd_cmd.c's; this file handles what the group delivers, membership,
 * quorum and the corosync connection, and the engine's hooks. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "clmsg.h"
#include "clusterd.h"
#include "clusterd_int.h"
#include "clusterd_nodes.h"
#include "clusterd_records.h"
#include "clusterd_send.h"
#include "clusterd_vol.h"
#include "log.h"
#include "util.h"
#include "voldb.h"

static void notify(struct clusterd *cd)
{
	if (cd->notify)
		cd->notify(cd->notify_arg);
}

/* ---- delivery ------------------------------------------------------------------- */

static void apply_quorum(struct clusterd *cd);
static void on_sync_done(struct clusterd *cd, uint32_t nodeid);

static void on_announce(struct clusterd *cd, const struct clmsg_announce *a)
{
	struct known_node *kn = clusterd__node_by_name(cd, a->node);

	if (!kn) {
		if (cd->n_nodes == MAX_NODES)
			return;
		kn = &cd->nodes[cd->n_nodes++];
	} else if (kn->nodeid == a->nodeid && strcmp(kn->addr, a->addr) == 0) {
		return;
	}
	kn->nodeid = a->nodeid;
	snprintf(kn->node, sizeof(kn->node), "%s", a->node);
	snprintf(kn->addr, sizeof(kn->addr), "%s", a->addr);
	log_info("cluster: node %s (%" PRIu32 ") replicates at %s", kn->node, kn->nodeid,
		 kn->addr);
	clusterd__apply_addresses(cd, kn);
	notify(cd);
}

static void on_voldef(struct clusterd *cd, const struct voldef *d)
{
	const struct voldef *before = voldb_find(cd->db, d->name);
	uint16_t was_port = before && !before->deleted ? before->port : 0;
	int r = voldb_accept(cd->db, d);

	if (r < 0) {
		log_err_errno(-r, "cluster: cannot record the definition of %s", d->name);
		return;
	}
	if (r == VOLDB_NEW || r == VOLDB_UPDATED) {
		log_notice("cluster: volume %s %s (version %" PRIu64 ")", d->name,
			   d->deleted ? "deleted" : "defined", d->version);
		if (d->deleted && outdates_remove(&cd->records, d->name, NULL))
			clusterd__save_pending(cd);
		clusterd__apply_def(cd, voldb_find(cd->db, d->name), was_port);
	} else if (r == VOLDB_SAME) {
		clusterd__port_recheck(cd, voldb_find(cd->db, d->name));
	}
}

static void on_outdate(struct clusterd *cd, uint32_t from, const struct clmsg_outdate *o)
{
	struct repl_volume *vol = repl_volume_find(cd->eng, o->volume);
	struct pending_outdate **pp, *po;

	if (o->generation == 0) {
		clusterd__clear_record(cd, from, o);
		clusterd__on_in_sync(cd, from, vol, o);
		return;
	}
	if (vol && repl_volume_role(vol) == REPL_PRIMARY && strcmp(o->node, cd->cfg->node) == 0) {
		clusterd__record_about_us(cd, o);
		return;
	}
	clusterd__record_outdated(cd, o);
	/* A stale record about a replica we, the Primary, know is in sync:
	 * say so, which clears it everywhere.  "In sync" here is what we
	 * know, not what it says: an earlier copy of the same stale record
	 * may have made it Outdated already (its STATE said so before this
	 * copy came), and once it is, nobody but us can clear it: it
	 * follows our writes with nothing out of sync, so no resync comes
	 * (seen in CI: cluster-replagent-partition, two copies from the
	 * deposed Primary around our "in sync", the replica stayed Outdated). */
	if (vol && repl_volume_role(vol) == REPL_PRIMARY && from != cd->nodeid) {
		struct repl_volume_status st;
		repl_volume_status(vol, &st);
		for (unsigned i = 0; i < st.n_peers; i++)
			if ((st.peers[i].in_sync || st.peers[i].following_clean) &&
			    strcmp(st.peers[i].node, o->node) == 0) {
				clusterd__send_record(cd, o->volume, o->node, false);
				return;
			}
	}
	if (vol && strcmp(o->node, cd->cfg->node) == 0)
		repl_volume_mark_outdated(vol);
	else if (vol)
		repl_volume_peer_outdated(vol, o->node);
	if (from != cd->nodeid || !cd->effective)
		return;
	/* A member of another protocol version may not have it: not done
	 * (I/O waits); sent again when the group changes (other_version()). */
	if (cd->n_others) {
		log_warn("cluster: %s: the record that %s is Outdated is not acknowledged: "
			 "node %" PRIu32 " speaks another protocol version", o->volume, o->node,
			 cd->others[0].nodeid);
		return;
	}
	/* Our own record came back through a quorate group: every member of
	 * this configuration has it. */
	for (pp = &cd->pending; (po = *pp); pp = &po->next) {
		if (po->token != o->generation || strcmp(po->volume, o->volume) != 0 ||
		    strcmp(po->node, o->node) != 0)
			continue;
		/* A request of an earlier run: our replica holds the record
		 * now (above), and says it to whoever comes back.  Without one
		 * here (it failed to open), nobody else may hold it: the
		 * request stays, sent again at each state exchange. */
		if (po->replayed && !vol)
			return;
		*pp = po->next;
		if (vol && !po->replayed)
			repl_volume_outdate_done(vol, po->token);
		free(po);
		clusterd__save_pending(cd);
		return;
	}
}

static void drop_pending(struct clusterd *cd, const char *volume);

/* Two promotions of a volume that crossed (each made before it heard of
 * the other): the group's order decides, the same on every member.  A
 * Primary whose own claim the group has not delivered yet when another
 * member's arrives came second, and steps down: nothing it holds was
 * acknowledged, because its writes need the other replica (which refuses
 * them, a Primary itself) or an outdate of it that the group would deliver
 * after this claim.  Only between members of a steady configuration: after
 * a membership change the state exchange and check_lost_primaries() decide
 * (the side that lost quorum yields). */
static void crossed_claim(struct clusterd *cd, uint32_t from, const struct clmsg_role *r)
{
	struct repl_volume *vol = repl_volume_find(cd->eng, r->volume);
	const struct voldef *d = voldb_find(cd->db, r->volume);
	const struct primary_rec *pr;

	if (!vol || !d || d->deleted || from == cd->nodeid || !cd->synced ||
	    !clusterd__def_has_node(d, r->node))
		return;
	if (repl_volume_role(vol) == REPL_PRIMARY) {
		if (clusterd__primary_rec(cd, r->volume, cd->cfg->node))
			return;		/* ours came first: the sender steps down */
		log_warn("cluster: %s: %s was promoted too, and its claim came first: "
			 "stepping down", r->volume, r->node);
		drop_pending(cd, r->volume);
		repl_volume_step_down(vol);
		return;
	}
	/* Seen from a replica that is neither Primary: this claim arrives
	 * while another member is recorded Primary, so it came second and its
	 * sender is stepping down.  What we took from it was never
	 * acknowledged. */
	pr = clusterd__primary_of(cd, r->volume);
	if (!pr || !clusterd__is_member(cd, pr->nodeid))
		return;
	log_warn("cluster: %s: %s and %s were promoted at the same time; %s's claim came first",
		 r->volume, pr->node, r->node, pr->node);
	repl_volume_crossing_lost(vol, r->node);
}

static void on_role(struct clusterd *cd, uint32_t from, const struct clmsg_role *r)
{
	/* A handover's claim may be ordered before the old Primary's
	 * demotion: never a crossing. */
	if (r->role == CLMSG_ROLE_PRIMARY && !clusterd__primary_rec(cd, r->volume, r->node))
		crossed_claim(cd, from, r);
	clusterd__set_primary(cd, r->volume, r->node, from, r->role != CLMSG_ROLE_SECONDARY);
}

/* The name the group knows sender by: ours, the one it announced (checked
 * against corosync's then), else corosync's.  An ANNOUNCE is always
 * checked against corosync's: that is where a name comes from. */
static const char *sender_name(struct clusterd *cd, uint32_t sender, uint16_t type,
			       char *buf, size_t len)
{
	const char *known = clusterd__name_of(cd, sender);

	if (sender == cd->nodeid)
		return cd->cfg->node;
	if (known && type != CLMSG_ANNOUNCE)
		return known;
	return cluster_node_name(cd->cl, sender, buf, len) == 0 ? buf : NULL;
}

/* A message that names its sender must name the member corosync says sent
 * it: otherwise one member could announce another's address (and take its
 * replication links), claim its role, or end its state exchange. */
static bool sender_ok(struct clusterd *cd, uint32_t sender, const struct clmsg *m)
{
	char buf[CLMSG_NAME_MAX];
	struct clmsg_sender s = { sender, sender_name(cd, sender, m->type, buf, sizeof(buf)) };
	const char *why = "";

	if (clmsg_check_sender(m, &s, &why) == 0)
		return true;
	log_warn("cluster: node %" PRIu32 " (%s) sent a %s that is not its own: %s; dropped",
		 sender, s.name ? s.name : "name unknown", clmsg_type_name(m->type), why);
	return false;
}

static struct other_version *other_of(struct clusterd *cd, uint32_t nodeid)
{
	for (size_t i = 0; i < cd->n_others; i++)
		if (cd->others[i].nodeid == nodeid)
			return &cd->others[i];
	return NULL;
}

/* A member that speaks another protocol version: nothing it sends can be
 * read here, and we cannot know that it read what we sent.  It may have
 * sent an OUTDATE (a version may number its types otherwise: any of its
 * messages may be one), perhaps about a replica of ours; and it may not
 * have recorded our own OUTDATEs, although they come back to us through
 * the group.  So, while it is a member (the cluster is "mixed"):
 *  - our own outdate records are not acknowledged (on_outdate): a Primary
 *    that lost a peer keeps its I/O waiting, as without quorum, rather
 *    than take a record as done that a member may not have;
 *  - this node promotes nothing without --force (clusterd__mixed_rule):
 *    a record it could not read may say its replica is Outdated;
 *  - its SYNC_DONE cannot be read, so the state exchange does not wait for
 *    it (or it would never end and every volume would freeze);
 *  - status says so (degraded), and this is logged once, not per message. */
static void other_version(struct clusterd *cd, uint32_t nodeid, const void *msg, size_t len)
{
	uint16_t version = 0, type = 0;

	if (clmsg_peek(msg, len, &version, &type) < 0 || other_of(cd, nodeid) ||
	    cd->n_others == ARRAY_SIZE(cd->others))
		return;
	cd->others[cd->n_others++] = (struct other_version){ nodeid, version };
	log_warn("cluster: node %" PRIu32 " speaks cluster protocol version %u, this node %u: "
		 "its messages are ignored; until it leaves the group this node promotes "
		 "nothing without --force and holds I/O that waits for an outdate",
		 nodeid, version, CLMSG_VERSION);
	on_sync_done(cd, nodeid);
	notify(cd);
}

int clusterd__mixed_rule(const struct clusterd *cd, char *why, size_t len)
{
	if (!cd->n_others)
		return 0;
	snprintf(why, len, "node %" PRIu32 " speaks cluster protocol version %u (this node %u): "
		 "its records cannot be read here; upgrade it or stop it, or use --force",
		 cd->others[0].nodeid, cd->others[0].version, CLMSG_VERSION);
	return -EPERM;
}

static void deliver(void *arg, uint32_t nodeid, const void *msg, size_t len)
{
	struct clusterd *cd = arg;
	struct clmsg m;
	int r = clmsg_decode(msg, len, &m);

	if (r == -EPROTONOSUPPORT) {
		other_version(cd, nodeid, msg, len);
		return;
	}
	if (r < 0) {
		log_warn("cluster: node %" PRIu32 " sent an invalid message: %s", nodeid,
			 strerror(-r));
		return;
	}
	if (!sender_ok(cd, nodeid, &m))
		return;
	switch (m.type) {
	case CLMSG_ANNOUNCE: on_announce(cd, &m.u.announce); break;
	case CLMSG_VOLDEF: on_voldef(cd, &m.u.voldef); break;
	case CLMSG_OUTDATE: on_outdate(cd, nodeid, &m.u.outdate); break;
	case CLMSG_ROLE: on_role(cd, nodeid, &m.u.role); break;
	case CLMSG_SYNC_DONE: on_sync_done(cd, m.u.sync_done.nodeid); break;
	default: break;
	}
}

/* ---- membership, quorum, connection ----------------------------------------------- */

static void membership(void *arg, const uint32_t *members, size_t n, const uint32_t *joined,
		       size_t nj, const uint32_t *left, size_t nl)
{
	struct clusterd *cd = arg;

	cd->n_members = MIN(n, (size_t)MAX_NODES);
	memcpy(cd->members, members, cd->n_members * sizeof(*members));
	/* A Primary that left is no longer one we must respect here. */
	for (size_t i = 0; i < cd->n_primaries; )
		if (!clusterd__is_member(cd, cd->primaries[i].nodeid))
			cd->primaries[i] = cd->primaries[--cd->n_primaries];
		else
			i++;
	for (size_t i = 0; i < cd->n_others; )
		if (!clusterd__is_member(cd, cd->others[i].nodeid)) {
			log_notice("cluster: node %" PRIu32 " (protocol version %u) left",
				   cd->others[i].nodeid, cd->others[i].version);
			cd->others[i] = cd->others[--cd->n_others];
		} else {
			i++;
		}
	log_info("cluster: %zu member(s), %zu joined, %zu left", n, nj, nl);
	/* A node that left takes its replication links with it now, not at
	 * their ping timeout: a promotion here must not wait for them. */
	for (size_t i = 0; i < nl; i++) {
		const char *gone = clusterd__name_of(cd, left[i]);
		if (!gone || clusterd__is_member(cd, left[i]) || left[i] == cd->nodeid)
			continue;
		for (struct repl_volume *v = repl_volume_first(cd->eng); v; v = repl_volume_next(v))
			repl_volume_peer_gone(v, gone);
	}
	/* Members of another version never send a SYNC_DONE we can read. */
	cd->n_sync_wait = 0;
	for (size_t i = 0; i < cd->n_members; i++)
		if (!other_of(cd, cd->members[i]))
			cd->sync_wait[cd->n_sync_wait++] = cd->members[i];
	cd->synced = false;
	apply_quorum(cd);
	if (cd->ready)
		clusterd__send_state(cd);
	notify(cd);
}

/* Removes the requests match() picks, and saves the list if it changed. */
static void drop_where(struct clusterd *cd,
		       bool (*match)(struct clusterd *cd, const struct pending_outdate *po,
				     const void *arg), const void *arg)
{
	struct pending_outdate **pp = &cd->pending, *po;
	bool dropped = false;

	while ((po = *pp)) {
		if (match(cd, po, arg)) {
			*pp = po->next;
			free(po);
			dropped = true;
		} else {
			pp = &po->next;
		}
	}
	if (dropped)
		clusterd__save_pending(cd);
}

static bool of_volume(struct clusterd *cd, const struct pending_outdate *po, const void *volume)
{
	(void)cd;
	return strcmp(po->volume, volume) == 0;
}

static void drop_pending(struct clusterd *cd, const char *volume)
{
	drop_where(cd, of_volume, volume);
}

/* A request of an earlier run (the daemon stopped before the group
 * recorded it) is void once another member is Primary of the volume: that
 * one was promoted since, by the group's rules, and is ahead of us.  So is
 * one for a volume this node no longer replicates. */
static bool replay_void(struct clusterd *cd, const struct pending_outdate *po,
			const void *unused)
{
	const struct primary_rec *pr = clusterd__primary_of(cd, po->volume);
	const struct voldef *d = voldb_find(cd->db, po->volume);

	(void)unused;
	if (!po->replayed)
		return false;
	if (pr && pr->nodeid != cd->nodeid && clusterd__is_member(cd, pr->nodeid)) {
		log_notice("cluster: %s: %s is Primary now: the outdate of %s requested before "
			   "this daemon's restart is void", po->volume, pr->node, po->node);
		return true;
	}
	if (!repl_volume_find(cd->eng, po->volume) &&
	    (!d || d->deleted || !clusterd__def_has_node(d, cd->cfg->node))) {
		log_notice("cluster: %s: no longer replicated here: the outdate of %s requested "
			   "before this daemon's restart is void", po->volume, po->node);
		return true;
	}
	return false;
}

/* Outdate records wait for a quorate, synced group (and die with a step
 * down: that node's peers were right to go on without it). */
static void send_pending(struct clusterd *cd)
{
	drop_where(cd, replay_void, NULL);
	for (const struct pending_outdate *po = cd->pending; po; po = po->next)
		clusterd__send_outdate(cd, po);
}

/* Back in a quorate partition: if someone else became Primary of a volume
 * we were Primary of, we lost; step down.  Someone else did if a member
 * says it is Primary, or if the group records our replica Outdated (the
 * one promoted may have died since: record_about_us()). */
static void check_lost_primaries(struct clusterd *cd)
{
	bool heard = cd->heard_about_us;

	cd->heard_about_us = false;
	/* Only a node that was without quorum can have been overtaken; the
	 * node promoted in the quorate partition keeps its role, and clears
	 * what the group recorded of it before its promotion. */
	if (!cd->lost_quorum) {
		for (struct repl_volume *v = repl_volume_first(cd->eng); heard && v;
		     v = repl_volume_next(v))
			if (repl_volume_role(v) == REPL_PRIMARY)
				clusterd__send_record(cd, repl_volume_name(v), cd->cfg->node, false);
		return;
	}
	cd->lost_quorum = false;
	for (struct repl_volume *v = repl_volume_first(cd->eng); v; v = repl_volume_next(v)) {
		const char *name = repl_volume_name(v);
		struct primary_rec *pr = clusterd__primary_of(cd, name);
		bool rival = pr && pr->nodeid != cd->nodeid && clusterd__is_member(cd, pr->nodeid);

		if (repl_volume_role(v) != REPL_PRIMARY ||
		    (!rival && !outdates_find(cd->records, name, cd->cfg->node)))
			continue;
		if (!rival)
			log_warn("cluster: %s: the group records this replica Outdated: a replica "
				 "was promoted while it was cut off, and is gone since", name);
		drop_pending(cd, name);
		/* What it recorded of the other replicas while cut off is
		 * void; what it knew before the cut, every member of the
		 * majority knows. */
		outdates_remove(&cd->records, name, NULL);
		if (outdates_add_record(&cd->records, name, cd->cfg->node) < 0)
			log_err("cluster: %s: cannot keep the record that this replica is "
				"Outdated", name);
		clusterd__save_pending(cd);
		repl_volume_step_down(v);
	}
	/* Withheld until now (clusterd__withheld()). */
	for (struct repl_volume *v = repl_volume_first(cd->eng); v; v = repl_volume_next(v))
		clusterd__send_records(cd, v);
	clusterd__send_kept_records(cd);
}

/* The volumes run as quorate only when corosync says so and every member
 * has told its state since the last membership change: a Primary coming
 * back from a minority must first hear that another was promoted. */
static void apply_quorum(struct clusterd *cd)
{
	bool effective = cd->quorate && cd->synced;

	if (effective == cd->effective)
		return;
	cd->effective = effective;
	if (effective)
		check_lost_primaries(cd);
	for (struct repl_volume *v = repl_volume_first(cd->eng); v; v = repl_volume_next(v))
		repl_volume_set_quorate(v, effective);
	if (effective)
		send_pending(cd);
}

static void quorum(void *arg, bool quorate)
{
	struct clusterd *cd = arg;

	if (cd->quorate == quorate)
		return;
	cd->quorate = quorate;
	if (!quorate)
		cd->lost_quorum = true;
	log_notice("cluster: partition is %s", quorate ? "quorate" : "NOT quorate");
	apply_quorum(cd);
	if (quorate && cd->ready)
		clusterd__send_state(cd);
	notify(cd);
}

static void on_sync_done(struct clusterd *cd, uint32_t nodeid)
{
	for (size_t i = 0; i < cd->n_sync_wait; i++)
		if (cd->sync_wait[i] == nodeid) {
			cd->sync_wait[i] = cd->sync_wait[--cd->n_sync_wait];
			break;
		}
	if (cd->n_sync_wait == 0 && !cd->synced) {
		cd->synced = true;
		log_info("cluster: state exchanged with every member");
		apply_quorum(cd);
		notify(cd);
	}
}

static int learn_identity(struct clusterd *cd)
{
	char name[CLMSG_NAME_MAX];
	int r;

	cd->nodeid = cluster_local_nodeid(cd->cl);
	r = cluster_node_name(cd->cl, cd->nodeid, name, sizeof(name));
	if (r < 0)
		return r;
	if (cfg_set_node(cd->cfg, name) < 0)
		return -EINVAL;
	if (cd->cfg->repl_address)
		snprintf(cd->addr, sizeof(cd->addr), "%s", cd->cfg->repl_address);
	else if ((r = cluster_local_address(cd->cl, cd->addr, sizeof(cd->addr))) < 0)
		return r;
	log_notice("cluster: this is node %s (%" PRIu32 "), replicating at %s", name,
		   cd->nodeid, cd->addr);
	return 0;
}

static void attach_known(struct clusterd *cd)
{
	for (size_t i = 0; i < voldb_count(cd->db); i++)
		clusterd__apply_def(cd, voldb_at(cd->db, i), 0);
}

static void connection(void *arg, bool up)
{
	struct clusterd *cd = arg;

	if (!up) {
		log_warn("cluster: lost corosync; volumes freeze until it is back");
		voldb_sent_forget(cd->db);
		quorum(cd, false);
		notify(cd);
		return;
	}
	if (!cd->ready) {
		if (learn_identity(cd) < 0) {
			log_err("cluster: cannot learn this node's name and address from corosync");
			return;
		}
		cd->ready = true;
		attach_known(cd);
	}
	quorum(cd, cluster_quorate(cd->cl));
	clusterd__send_state(cd);
	notify(cd);
}

/* ---- engine hooks -------------------------------------------------------------------- */

int clusterd_hook_outdate(void *arg, struct repl_volume *vol, const char *node,
			  uint64_t token)
{
	struct clusterd *cd = arg;
	struct pending_outdate *po = calloc(1, sizeof(*po));

	if (!po)
		return -ENOMEM;
	snprintf(po->volume, sizeof(po->volume), "%s", repl_volume_name(vol));
	snprintf(po->node, sizeof(po->node), "%s", node);
	po->token = token;
	po->next = cd->pending;
	cd->pending = po;
	clusterd__save_pending(cd);
	if (cd->ready && cd->effective)
		clusterd__send_outdate(cd, po);
	return 0;
}

void clusterd_hook_changed(void *arg, struct repl_volume *vol)
{
	struct clusterd *cd = arg;

	if (cd->ready) {
		bool primary = repl_volume_role(vol) == REPL_PRIMARY;
		/* Promoted just now (the group has not delivered our claim
		 * yet): whatever the group recorded of this replica is void,
		 * it is the reference now; said after the claim, which is
		 * what makes the members take it (clear_record()).  Not at a
		 * state exchange: a deposed Primary back from a minority says
		 * its old claim again there. */
		bool fresh = primary && !clusterd__primary_rec(cd, repl_volume_name(vol),
							       cd->cfg->node);
		clusterd__send_role(cd, vol);
		if (fresh)
			clusterd__send_record(cd, repl_volume_name(vol), cd->cfg->node, false);
		if (primary)
			clusterd__send_records(cd, vol);
	}
}

/* Requests an earlier run made and the group never recorded: sent once
 * the group is quorate and synced (send_pending()), unless void by then.
 * A file we cannot read is left for a person to look at; starting without
 * it is what a daemon of the version before did. */
static void load_pending(struct clusterd *cd)
{
	char why[160] = "";
	int r = outdates_load(cd->cfg->state_dir, &cd->pending, &cd->records, why,
			      sizeof(why));

	if (r < 0) {
		log_err("cluster: %s/%s: %s; its outdate requests are not sent again, and "
			"the group's records it kept are not known here",
			cd->cfg->state_dir, OUTDATES_FILE, why[0] ? why : strerror(-r));
		return;
	}
	for (const struct pending_outdate *po = cd->pending; po; po = po->next)
		log_warn("cluster: %s: the outdate of %s that the group did not record before "
			 "this daemon stopped is sent again once the group is quorate",
			 po->volume, po->node);
}

int clusterd_open(struct evloop *loop, struct repl_engine *eng, struct cfg *cfg,
		  const uint8_t *key, size_t key_len, struct volfail *failed,
		  struct clusterd **out)
{
	static const struct cluster_ops ops = { deliver, membership, quorum, connection };
	struct clusterd *cd = calloc(1, sizeof(*cd));
	char dir[4096];
	int r;

	if (!cd)
		return -ENOMEM;
	cd->loop = loop;
	cd->eng = eng;
	cd->cfg = cfg;
	cd->key = key;
	cd->key_len = key_len;
	cd->failed = failed;
	snprintf(dir, sizeof(dir), "%s/volumes", cfg->state_dir);
	r = voldb_new(dir, &cd->db);
	if (r == 0 && (r = voldb_load(cd->db)) > 0)
		log_warn("cluster: %d volume definition file(s) skipped", r);
	if (r < 0)
		goto fail;
	load_pending(cd);
	/* Volumes of the configuration file run by the cluster's quorum too,
	 * from the start: not quorate until corosync says so (cd->effective
	 * starts false, and apply_quorum only acts on a change). */
	for (struct repl_volume *v = repl_volume_first(eng); v; v = repl_volume_next(v))
		repl_volume_set_quorate(v, false);
	r = cluster_open(loop, &ops, cd, &cd->cl);
	if (r < 0)
		goto fail;
	*out = cd;
	return 0;
fail:
	clusterd_close(cd);
	return r;
}

void clusterd_close(struct clusterd *cd)
{
	if (!cd)
		return;
	cluster_close(cd->cl);
	voldb_free(cd->db);
	outdates_free(cd->pending);	/* the file keeps what is pending */
	outdates_free(cd->records);
	free(cd);
}
