/* health.c: see health.h.  The rules are tables of state names; a state
 * that is in no table is unknown (exit 3), so a daemon newer than this
 * command line never looks healthy by accident. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "health.h"
#include "util.h"

struct rule {
	const char *state;
	enum health h;
	const char *what;	/* shown in parentheses, or NULL */
};

static const struct rule link_rules[] = {
	{ "Connected", HEALTH_OK, NULL },
	{ "SyncSource", HEALTH_DEGRADED, "resync running" },
	{ "SyncTarget", HEALTH_DEGRADED, "resync running" },
	{ "Connecting", HEALTH_DEGRADED, "not connected" },
	{ "Disconnected", HEALTH_DEGRADED, "not connected" },
	{ "StandAlone", HEALTH_CRITICAL, "split brain or refused peer" },
};

static const struct rule peer_disk_rules[] = {
	{ "UpToDate", HEALTH_OK, NULL },
	{ "Consistent", HEALTH_DEGRADED, NULL },
	{ "Outdated", HEALTH_DEGRADED, NULL },
	{ "Inconsistent", HEALTH_DEGRADED, NULL },
	{ "DUnknown", HEALTH_DEGRADED, NULL },
	{ "Negotiating", HEALTH_DEGRADED, NULL },
	{ "Attaching", HEALTH_DEGRADED, NULL },
	{ "Diskless", HEALTH_DEGRADED, NULL },
	{ "Failed", HEALTH_DEGRADED, NULL },
};

/* This node's disk; on a Primary anything but UpToDate is critical. */
static const struct rule disk_rules[] = {
	{ "UpToDate", HEALTH_OK, NULL },
	{ "Consistent", HEALTH_DEGRADED, NULL },
	{ "Outdated", HEALTH_DEGRADED, NULL },
	{ "Inconsistent", HEALTH_DEGRADED, NULL },
	{ "Negotiating", HEALTH_DEGRADED, NULL },
	{ "Attaching", HEALTH_DEGRADED, NULL },
	{ "DUnknown", HEALTH_DEGRADED, NULL },
	{ "Diskless", HEALTH_CRITICAL, "no local disk" },
	{ "Failed", HEALTH_CRITICAL, "local disk failed" },
};

static const char *const roles[] = { "Primary", "Secondary" };

static const struct rule *lookup(const struct rule *rules, size_t n, const char *state)
{
	for (size_t i = 0; state && i < n; i++)
		if (!strcmp(rules[i].state, state))
			return &rules[i];
	return NULL;
}

static unsigned rank(enum health h)
{
	static const unsigned ranks[] = {
		[HEALTH_OK] = 0, [HEALTH_DEGRADED] = 1,
		[HEALTH_UNKNOWN] = 2, [HEALTH_CRITICAL] = 3,
	};

	return (unsigned)h < ARRAY_SIZE(ranks) ? ranks[h] : ranks[HEALTH_UNKNOWN];
}

enum health health_worse(enum health a, enum health b)
{
	return rank(b) > rank(a) ? b : a;
}

const char *health_name(enum health h)
{
	switch (h) {
	case HEALTH_OK: return "OK";
	case HEALTH_DEGRADED: return "DEGRADED";
	case HEALTH_CRITICAL: return "CRITICAL";
	default: return "UNKNOWN";
	}
}

/* The running verdict: the worst so far and its explanation. */
struct verdict {
	enum health h;
	char *why;
	size_t whylen;
};

static const char *str(const char *s)
{
	return s ? s : "(none)";
}

/* Records problem msg (with what, in parentheses, if not NULL) if it is
 * worse than what was found so far. */
static void found(struct verdict *vd, enum health h, const char *msg, const char *what)
{
	if (rank(h) <= rank(vd->h))
		return;
	vd->h = h;
	if (vd->why && vd->whylen)
		snprintf(vd->why, vd->whylen, what ? "%s (%s)" : "%s", msg, what);
}

static bool known_role(const char *role)
{
	for (size_t i = 0; role && i < ARRAY_SIZE(roles); i++)
		if (!strcmp(role, roles[i]))
			return true;
	return false;
}

static void check_role(const struct health_volume *v, struct verdict *vd)
{
	char msg[256];

	if (known_role(v->role))
		return;
	snprintf(msg, sizeof(msg), "%s: unknown role %s", str(v->name), str(v->role));
	found(vd, HEALTH_UNKNOWN, msg, NULL);
}

static void check_disk(const struct health_volume *v, struct verdict *vd)
{
	const struct rule *r = lookup(disk_rules, ARRAY_SIZE(disk_rules), v->disk);
	bool primary = v->role && !strcmp(v->role, "Primary");
	char msg[256];

	if (!r) {
		snprintf(msg, sizeof(msg), "%s: unknown disk state %s", str(v->name),
			 str(v->disk));
		found(vd, HEALTH_UNKNOWN, msg, NULL);
		return;
	}
	snprintf(msg, sizeof(msg), "%s: %sdisk %s", str(v->name),
		 primary ? "Primary with " : "", str(v->disk));
	found(vd, primary && r->h != HEALTH_OK ? HEALTH_CRITICAL : r->h, msg, r->what);
}

/* Not served at all: the worst a volume can be, with the reason. */
static void check_failed(const struct health_volume *v, struct verdict *vd)
{
	char msg[256];

	if (!v->failed)
		return;
	snprintf(msg, sizeof(msg), "%s: failed", str(v->name));
	found(vd, HEALTH_CRITICAL, msg, *v->failed ? v->failed : "could not be opened");
}

static void check_frozen(const struct health_volume *v, struct verdict *vd)
{
	char msg[256];

	if (!v->io_frozen)
		return;
	snprintf(msg, sizeof(msg), "%s: I/O frozen", str(v->name));
	found(vd, HEALTH_DEGRADED, msg, "waiting to outdate a lost peer");
}

/* A replica that cannot grow to the volume's new size stays smaller, and
 * the Primary's NBD clients keep the old size until it has grown. */
static void check_grow(const struct health_volume *v, struct verdict *vd)
{
	char msg[256];

	if (!v->grow_error || !*v->grow_error)
		return;
	snprintf(msg, sizeof(msg), "%s: cannot grow", str(v->name));
	found(vd, HEALTH_DEGRADED, msg, v->grow_error);
}

/* Writes fail with EIO: the guest sees errors. */
static void check_meta(const struct health_volume *v, struct verdict *vd)
{
	char msg[256];

	if (!v->meta_error || !*v->meta_error)
		return;
	snprintf(msg, sizeof(msg), "%s: writes fail", str(v->name));
	found(vd, HEALTH_CRITICAL, msg, v->meta_error);
}

static void check_peer(const struct health_volume *v, const struct health_peer *p,
		       struct verdict *vd)
{
	const struct rule *l = lookup(link_rules, ARRAY_SIZE(link_rules), p->link);
	const struct rule *d = lookup(peer_disk_rules, ARRAY_SIZE(peer_disk_rules),
				      p->peer_disk);
	char msg[256], wait[192];
	const char *what = l ? l->what : NULL;

	snprintf(msg, sizeof(msg), "%s: peer %s %s%s", str(v->name), str(p->node),
		 l ? "" : "unknown link state ", str(p->link));
	/* a resync that waits says why (a full or failing disk) */
	if (l && l->h == HEALTH_DEGRADED && what && p->resync_error && *p->resync_error) {
		snprintf(wait, sizeof(wait), "resync waiting: %s", p->resync_error);
		what = wait;
	}
	found(vd, l ? l->h : HEALTH_UNKNOWN, msg, what);
	snprintf(msg, sizeof(msg), "%s: peer %s %s %s", str(v->name), str(p->node),
		 d ? "disk" : "unknown disk state", str(p->peer_disk));
	found(vd, d ? d->h : HEALTH_UNKNOWN, msg, NULL);
}

enum health health_volume(const struct health_volume *v, char *why, size_t whylen)
{
	struct verdict vd = { HEALTH_OK, why, whylen };

	if (why && whylen)
		why[0] = '\0';
	check_failed(v, &vd);
	check_role(v, &vd);
	check_disk(v, &vd);
	check_frozen(v, &vd);
	check_grow(v, &vd);
	check_meta(v, &vd);
	for (unsigned i = 0; i < v->n_peers; i++)
		check_peer(v, &v->peers[i], &vd);
	return vd.h;
}

/* ---- the cluster -------------------------------------------------------- */

static void check_tristate(const char *what, int v, struct verdict *vd)
{
	char msg[128];

	if (v >= 0)
		return;
	snprintf(msg, sizeof(msg), "cluster: no \"%s\" reported", what);
	found(vd, HEALTH_UNKNOWN, msg, NULL);
}

static void check_nodes(const struct health_cluster *c, struct verdict *vd)
{
	char msg[256];

	for (unsigned i = 0; i < c->n_nodes; i++) {
		if (c->nodes[i].member || !c->nodes[i].name)
			continue;
		snprintf(msg, sizeof(msg), "cluster: node %s gone", c->nodes[i].name);
		found(vd, HEALTH_DEGRADED, msg, "not a member of this partition");
	}
}

enum health health_cluster(const struct health_cluster *c, char *why, size_t whylen)
{
	struct verdict vd = { HEALTH_OK, why, whylen };
	char msg[128];

	if (why && whylen)
		why[0] = '\0';
	if (!c->mode || !strcmp(c->mode, "static"))
		return HEALTH_OK;
	if (strcmp(c->mode, "corosync")) {
		snprintf(msg, sizeof(msg), "cluster: unknown mode %s", c->mode);
		found(&vd, HEALTH_UNKNOWN, msg, NULL);
		return vd.h;
	}
	check_tristate("connected", c->connected, &vd);
	check_tristate("quorate", c->quorate, &vd);
	check_tristate("synced", c->synced, &vd);
	if (c->connected == 0)
		found(&vd, HEALTH_CRITICAL, "cluster: corosync not connected", "no quorum");
	if (c->quorate == 0)
		found(&vd, HEALTH_CRITICAL, "cluster: partition not quorate",
		      "promotions refused, Primaries frozen");
	if (c->synced == 0)
		found(&vd, HEALTH_DEGRADED, "cluster: state exchange running",
		      "promotions wait for it");
	if (c->mixed == 1)
		found(&vd, HEALTH_DEGRADED, "cluster: mixed protocol versions",
		      "promotions need --force, outdates of lost peers wait");
	check_nodes(c, &vd);
	return vd.h;
}
