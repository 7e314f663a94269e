/* clusterd_records.c: the group's records that replicas are Outdated, as
 * this node keeps them (outdates.h: the list and its file): which message
 * adds or clears one, what they tell this node's replicas, and the
 * promotion rule they make.  When a message arrives is clusterd.c's. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cfg.h"
#include "clmsg.h"
#include "clusterd_int.h"
#include "clusterd_nodes.h"
#include "clusterd_records.h"
#include "clusterd_send.h"
#include "clusterd_vol.h"
#include "log.h"
#include "outdates.h"
#include "repl.h"
#include "voldb.h"

/* The pending requests and the group's records go to the state directory
 * at each change, before the group hears of a new request: a daemon that
 * stops before the group records it sends it again at its next start
 * (clusterd_open()), and one that restarts still knows every record. */
void clusterd__save_pending(struct clusterd *cd)
{
	int r = outdates_save(cd->cfg->state_dir, cd->pending, cd->records);

	if (r < 0)
		log_err_errno(-r, "cluster: cannot write %s/%s: an outdate request not yet "
			      "recorded by the group, or the group's record, is lost if this "
			      "daemon stops", cd->cfg->state_dir, OUTDATES_FILE);
}

/* Every member keeps the group's word that a replica is Outdated
 * (outdates.h says why), whoever says it: the Primary that lost the
 * replica, or a member that knew it (the state exchange).  Not about a
 * member that says it is Primary of the volume (a deposed Primary's
 * metadata may still name the one promoted since), nor about a volume or
 * a node the group does not know. */
void clusterd__record_outdated(struct clusterd *cd, const struct clmsg_outdate *o)
{
	const struct voldef *d = voldb_find(cd->db, o->volume);
	const struct primary_rec *pr = clusterd__primary_rec(cd, o->volume, o->node);
	int r;

	if (!d || d->deleted || !clusterd__def_has_node(d, o->node) ||
	    (pr && clusterd__is_member(cd, pr->nodeid)))
		return;
	r = outdates_add_record(&cd->records, o->volume, o->node);
	if (r < 0) {
		log_err_errno(-r, "cluster: %s: cannot keep the record that %s is Outdated",
			      o->volume, o->node);
		return;
	}
	if (r == 0)
		return;
	log_info("cluster: %s: the group records %s as Outdated", o->volume, o->node);
	clusterd__save_pending(cd);
}

/* "node is in sync again" (or, from a Primary promoted just now, "I am
 * current"): a record goes only on the word of the one member that says
 * it is Primary of the volume, in a configuration whose state exchange is
 * over; while two claim it (a deposed Primary back from a minority), or
 * before the exchange ends, the record stays: the Primary says it again
 * at its next change. */
void clusterd__clear_record(struct clusterd *cd, uint32_t from, const struct clmsg_outdate *o)
{
	const char *sender = from == cd->nodeid ? cd->cfg->node : clusterd__name_of(cd, from);
	const struct primary_rec *pr = sender ? clusterd__primary_rec(cd, o->volume, sender) :
		NULL;

	if (!cd->synced || !pr || pr->nodeid != from || clusterd__other_claim(cd, o->volume, from) ||
	    !outdates_remove(&cd->records, o->volume, o->node))
		return;
	log_info("cluster: %s: %s says %s is %s: the group's record that it is Outdated "
		 "is cleared", o->volume, sender, o->node,
		 strcmp(sender, o->node) == 0 ? "Primary" : "in sync");
	clusterd__save_pending(cd);
}

int clusterd__record_rule(struct clusterd *cd, const char *volume, char *why, size_t len)
{
	if (!outdates_find(cd->records, volume, cd->cfg->node))
		return 0;
	snprintf(why, len, "the cluster recorded this replica Outdated: it lacks writes a "
		 "Primary acknowledged without it; promote the replica that has them (it "
		 "resyncs this one), or, if none is left, use --force and lose those writes");
	return -EPERM;
}

void clusterd__apply_records(struct clusterd *cd, struct repl_volume *vol)
{
	const char *name = repl_volume_name(vol);

	for (const struct pending_outdate *po = cd->records; po; po = po->next) {
		if (strcmp(po->volume, name) != 0)
			continue;
		if (strcmp(po->node, cd->cfg->node) == 0)
			repl_volume_mark_outdated(vol);
		else
			repl_volume_peer_outdated(vol, po->node);
	}
}

/* "node is in sync again", from the Primary. */
void clusterd__on_in_sync(struct clusterd *cd, uint32_t from, struct repl_volume *vol,
		       const struct clmsg_outdate *o)
{
	const char *sender = clusterd__name_of(cd, from);

	if (!vol || !sender || from == cd->nodeid)
		return;
	if (strcmp(o->node, cd->cfg->node) == 0) {
		repl_volume_uptodate_by(vol, sender);	/* checks it is our Primary */
	} else {
		struct primary_rec *pr = clusterd__primary_of(cd, o->volume);
		if (pr && pr->nodeid == from)
			repl_volume_peer_uptodate(vol, o->node);
	}
}

/* The group says a volume we are Primary of is Outdated here.  Back from
 * a minority (lost_quorum), that is how we learn that another replica was
 * promoted while we were cut off and acknowledged writes we lack: kept,
 * check_lost_primaries() steps down on it before any I/O resumes, also
 * when that Primary has died since (no member claims the volume then, and
 * the replicas left may hold its writes).  A Primary that kept quorum
 * throughout cannot have been overtaken: the record is older than its
 * promotion (its holder was away when the promotion cleared it), and the
 * Primary says it is current once the state exchange is over. */
void clusterd__record_about_us(struct clusterd *cd, const struct clmsg_outdate *o)
{
	int r;

	cd->heard_about_us = true;
	if (!cd->lost_quorum) {
		if (cd->synced)
			clusterd__send_record(cd, o->volume, o->node, false);
		return;
	}
	r = outdates_add_record(&cd->records, o->volume, o->node);
	if (r < 0)
		log_err_errno(-r, "cluster: %s: cannot keep the record that this replica is "
			      "Outdated", o->volume);
	if (r <= 0)
		return;
	log_info("cluster: %s: back from a minority as Primary, the group records this replica "
		 "Outdated", o->volume);
	clusterd__save_pending(cd);
}

