/* clusterd_vol.c: the group's volume definitions (voldb.c) applied to this
 * node: a replica attached to the engine with its files and peers, grown
 * online to a larger size, removed and its files set aside when the volume
 * is deleted or leaves this node, and told the peers' addresses as they
 * announce them.  Which definition wins is voldb.c's; when one arrives is
 * clusterd.c's. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cfg.h"
#include "clusterd_int.h"
#include "clusterd_nodes.h"
#include "clusterd_send.h"
#include "clusterd_vol.h"
#include "log.h"
#include "repl.h"
#include "util.h"
#include "voldb.h"
#include "volfail.h"

bool clusterd__def_has_node(const struct voldef *d, const char *node)
{
	for (unsigned i = 0; i < d->n_nodes; i++)
		if (strcmp(d->nodes[i], node) == 0)
			return true;
	return false;
}

static void attach(struct clusterd *cd, const struct voldef *d)
{
	const char *dir = cd->cfg->data_dir ? cd->cfg->data_dir : cd->cfg->state_dir;
	char backing[4096], meta[4096], marker[4096], port[8], error[512] = "";
	struct repl_volume_config vc = {
		.name = d->name, .backing = backing, .meta = meta, .size = d->size,
		.node = cd->cfg->node, .listen_port = port, .key = cd->key,
		/* The address the peers are told (replication-address, else
		 * corosync's), not every interface. */
		.listen_host = cd->addr,
		.key_len = cd->key_len, .uuid = d->uuid,
		.outdate_timeout_ms = cd->cfg->outdate_timeout_s * 1000,
		.error = error, .error_len = sizeof(error),
	};
	struct repl_volume *vol;
	int r;

	snprintf(backing, sizeof(backing), "%s/%s.img", dir, d->name);
	snprintf(meta, sizeof(meta), "%s/%s.meta", cd->cfg->state_dir, d->name);
	snprintf(port, sizeof(port), "%u", d->port);
	cfg_repl_tuning(cd->cfg, &vc);
	vc.loss_marker = cfg_loss_marker(cd->cfg, d->name, marker, sizeof(marker));
	for (unsigned i = 0; i < d->n_nodes && vc.n_peers < REPL_MAX_PEERS; i++) {
		struct known_node *kn;
		if (strcmp(d->nodes[i], cd->cfg->node) == 0)
			continue;
		kn = clusterd__node_by_name(cd, d->nodes[i]);
		vc.peers[vc.n_peers++] = (struct repl_peer_config){
			d->nodes[i], kn ? kn->addr : NULL, port };
	}
	mkdir(dir, 0700);
	r = repl_volume_add(cd->eng, &vc, NULL);
	if (r < 0) {
		/* Its peers see it Disconnected; status here says why. */
		log_err("cluster: volume %s failed: %s; it is not served, the other volumes "
			"are", d->name, error[0] ? error : strerror(-r));
		volfail_set(cd->failed, d->name, error[0] ? error : strerror(-r));
		return;
	}
	volfail_clear(cd->failed, d->name);
	vol = repl_volume_find(cd->eng, d->name);
	repl_volume_set_quorate(vol, cd->effective);
	log_notice("cluster: volume %s attached (%s)", d->name, backing);
	clusterd__apply_records(cd, vol);
}

/* A deleted volume's files are renamed, not removed: the data stays for a
 * person to look at, and the name is free for a new volume. */
static void set_aside(struct clusterd *cd, const char *name)
{
	const char *dir = cd->cfg->data_dir ? cd->cfg->data_dir : cd->cfg->state_dir;
	char from[4096], to[4200];
	long long now = (long long)time(NULL);

	snprintf(from, sizeof(from), "%s/%s.img", dir, name);
	snprintf(to, sizeof(to), "%s.deleted-%lld", from, now);
	if (rename(from, to) == 0)
		log_notice("cluster: volume %s deleted: its data is kept in %s", name, to);
	snprintf(from, sizeof(from), "%s/%s.meta", cd->cfg->state_dir, name);
	snprintf(to, sizeof(to), "%s.deleted-%lld", from, now);
	rename(from, to);
}

/* A new version of a volume this node holds: a larger size grows the
 * replica, online (the engine logs how it goes).  A definition of another
 * volume under the same name (deleted and made again while this one could
 * not go) is not ours to apply. */
static void grow_to_def(struct repl_volume *vol, const struct voldef *d)
{
	uint64_t have = repl_volume_size(vol);
	char uuid[37], mine[37], why[160] = "", a[32], b[32];

	uuid_format(d->uuid, uuid);
	repl_volume_uuid(vol, mine);
	if (strcmp(uuid, mine) != 0 || d->size == have)
		return;
	if (d->size < have) {
		log_warn("cluster: volume %s: version %" PRIu64 " says %s, this replica has "
			 "%s and a volume never shrinks: resize it to at least that", d->name,
			 d->version, format_size(d->size, a, sizeof(a)),
			 format_size(have, b, sizeof(b)));
		return;
	}
	log_notice("cluster: volume %s: version %" PRIu64 " grows it to %s (%" PRIu64
		   " bytes)", d->name, d->version, format_size(d->size, a, sizeof(a)), d->size);
	if (repl_volume_grow(vol, d->size, why, sizeof(why)) < 0)
		log_err("cluster: volume %s: cannot grow to %" PRIu64 " bytes: %s", d->name,
			d->size, why);
}

/* ---- ports ----------------------------------------------------------------- */

/* Two volumes created at the same moment on two nodes can get one port
 * (each node picks the lowest free in its view).  Every node gives it to
 * the same one (voldb_port_owner: the name that sorts first), whatever
 * order the definitions came in; the other is not served on it, and the
 * node that made it (its origin; moves_it()) sends it again on a free
 * port, a new version, so that the creation the CLI said ok to happens
 * after all.  Both are milliseconds old when this happens. */

/* Who moves a volume that lost its port: the node that made its
 * definition, or, if that one is not in the group (it may have died just
 * after), the member with the lowest nodeid.  Two nodes that move it at
 * once make two versions of one number; the merge rule keeps the same one
 * everywhere. */
static bool moves_it(const struct clusterd *cd, const struct voldef *d)
{
	uint32_t lowest = UINT32_MAX;

	if (clusterd__is_member(cd, d->origin))
		return d->origin == cd->nodeid;
	for (size_t i = 0; i < cd->n_members; i++)
		if (cd->members[i] < lowest)
			lowest = cd->members[i];
	return lowest == cd->nodeid;
}

/* d lost its port: if this node is the one to move it, it goes to
 * another. */
static void move_off(struct clusterd *cd, const struct voldef *d)
{
	struct clmsg m = { .type = CLMSG_VOLDEF };
	int r;

	if (!moves_it(cd, d))
		return;
	r = voldb_move(cd->db, d->name, cd->nodeid, BASE_PORT, &m.u.voldef);
	if (r == -EBUSY)
		return;			/* a move of it is on its way */
	if (r < 0) {
		log_err_errno(-r, "cluster: volume %s cannot be moved off port %u",
			      d->name, d->port);
		return;
	}
	if (clusterd__send_msg(cd, &m) < 0)
		return;
	voldb_sent(cd->db, &m.u.voldef);
	log_notice("cluster: volume %s: port %u is volume %s's (both created at once): "
		   "sent version %" PRIu64 " on port %u", d->name, d->port,
		   voldb_port_owner(cd->db, d->port)->name, m.u.voldef.version,
		   m.u.voldef.port);
}

/* d is not served here on its port: a replica attached on it (the
 * definitions came the other way round) is removed, and status says why
 * until it is moved. */
static void refuse(struct clusterd *cd, const struct voldef *d)
{
	struct repl_volume *vol = repl_volume_find(cd->eng, d->name);
	char why[320];

	if (!clusterd__def_has_node(d, cd->cfg->node))
		return;
	if (vol && repl_volume_remove(vol) < 0) {
		log_err("cluster: volume %s is Primary or in use here on port %u, which is "
			"volume %s's: that one cannot be served here", d->name, d->port,
			voldb_port_owner(cd->db, d->port)->name);
		return;
	}
	snprintf(why, sizeof(why), "its replication port %u is volume %s's (both created "
		 "at once): it is being moved to another port", d->port,
		 voldb_port_owner(cd->db, d->port)->name);
	log_warn("cluster: volume %s is not served: %s", d->name, why);
	volfail_set(cd->failed, d->name, why);
}

/* d owns its port: the others on it are refused and moved.  Or it does
 * not: it is.  False if d must not use its port. */
static bool settle_port(struct clusterd *cd, const struct voldef *d)
{
	const struct voldef *owner = voldb_port_owner(cd->db, d->port);

	if (owner && strcmp(owner->name, d->name) != 0) {
		refuse(cd, d);
		move_off(cd, d);
		return false;
	}
	for (size_t i = 0; i < voldb_count(cd->db); i++) {
		const struct voldef *o = voldb_at(cd->db, i);
		if (o->deleted || o->port != d->port || strcmp(o->name, d->name) == 0)
			continue;
		refuse(cd, o);
		move_off(cd, o);
	}
	return true;
}

/* port is free of the volume that had it (deleted, moved, or no longer
 * here): the one that owns it now, refused before, is attached. */
static void port_freed(struct clusterd *cd, uint16_t port)
{
	const struct voldef *o = voldb_port_owner(cd->db, port);

	if (o && !repl_volume_find(cd->eng, o->name) &&
	    clusterd__def_has_node(o, cd->cfg->node))
		clusterd__apply_def(cd, o, 0);
}

void clusterd__port_recheck(struct clusterd *cd, const struct voldef *d)
{
	if (!d->deleted && voldb_port_conflict(cd->db, d))
		move_off(cd, d);
}

void clusterd__apply_def(struct clusterd *cd, const struct voldef *d, uint16_t was_port)
{
	struct repl_volume *vol = repl_volume_find(cd->eng, d->name);
	bool mine = clusterd__def_has_node(d, cd->cfg->node);
	bool moved = was_port && was_port != d->port;

	if (d->deleted || !mine) {
		volfail_clear(cd->failed, d->name);
		if (vol && repl_volume_remove(vol) < 0)
			log_warn("cluster: volume %s is deleted but Primary or in use here: "
				 "it goes when demoted and unused", d->name);
		else if (d->deleted)
			set_aside(cd, d->name);	/* also if we were down at the delete */
		if (!d->deleted)
			settle_port(cd, d);
	} else if (settle_port(cd, d)) {	/* else refused, until it moves */
		if (vol && moved) {
			/* It had lost the old port where this node did not
			 * see it lose: served on the new one. */
			if (repl_volume_remove(vol) < 0)
				log_err("cluster: volume %s moved to port %u but is Primary "
					"or in use here: it stays on port %u until it is "
					"demoted and unused and this node restarts", d->name,
					d->port, was_port);
			else
				attach(cd, d);
		} else if (vol) {
			grow_to_def(vol, d);
		} else {
			attach(cd, d);
		}
	}
	if (was_port && (d->deleted || moved || !mine))
		port_freed(cd, was_port);
}

void clusterd__apply_addresses(struct clusterd *cd, const struct known_node *kn)
{
	char port[8];

	for (size_t i = 0; i < voldb_count(cd->db); i++) {
		const struct voldef *d = voldb_at(cd->db, i);
		struct repl_volume *vol = repl_volume_find(cd->eng, d->name);
		if (!vol || d->deleted || !clusterd__def_has_node(d, kn->node))
			continue;
		snprintf(port, sizeof(port), "%u", d->port);
		repl_volume_peer_address(vol, kn->node, kn->addr, port);
	}
}
