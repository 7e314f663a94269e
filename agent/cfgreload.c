/* cfgreload.c: see cfgreload.h.  Every key of cfg.c's table is in exactly
 * one of the comparisons below: applied (log-level, tuning) or named for a
 * restart; a key added to the parser must be added here too (test-cfgreload
 * has one case per key). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfgreload.h"
#include "repl.h"
#include "util.h"

static bool str_eq(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static bool tls_allow_eq(const struct cfg *a, const struct cfg *b)
{
	if (a->n_nbd_tls_allow != b->n_nbd_tls_allow)
		return false;
	for (unsigned i = 0; i < a->n_nbd_tls_allow; i++)
		if (strcmp(a->nbd_tls_allow[i], b->nbd_tls_allow[i]))
			return false;
	return true;
}

/* Names key (of [volume vol], if vol is not NULL) for a restart. */
static void restart(struct cfgreload *r, const char *vol, const char *key)
{
	if (r->n_restart < CFGRELOAD_ITEMS_MAX && vol)
		snprintf(r->restart[r->n_restart], CFGRELOAD_ITEM_LEN, "[volume %s] %s", vol, key);
	else if (r->n_restart < CFGRELOAD_ITEMS_MAX)
		snprintf(r->restart[r->n_restart], CFGRELOAD_ITEM_LEN, "%s", key);
	r->n_restart++;
}

static void global_restart(struct cfgreload *r, const char *key, bool same)
{
	if (!same)
		restart(r, NULL, key);
}

static void applied(struct cfgreload *r, const char *key, bool same)
{
	if (!same && r->n_applied < ARRAY_SIZE(r->applied))
		r->applied[r->n_applied++] = key;
}

static void compare_globals(const struct cfg *a, const struct cfg *b, struct cfgreload *r)
{
	static const char *const sb_keys[3] = { "after-sb-0pri", "after-sb-1pri", "after-sb-2pri" };
	struct repl_volume_config ta = { 0 }, tb = { 0 };

	global_restart(r, "node", !strcmp(a->node, b->node));
	global_restart(r, "nbd-socket", str_eq(a->nbd_socket, b->nbd_socket));
	global_restart(r, "nbd-listen", str_eq(a->nbd_host, b->nbd_host) &&
			  str_eq(a->nbd_port, b->nbd_port));
	global_restart(r, "nbd-socket-group", str_eq(a->nbd_socket_group, b->nbd_socket_group));
	global_restart(r, "nbd-clients-max", a->nbd_clients_max == b->nbd_clients_max);
	global_restart(r, "nbd-tls", a->nbd_tls == b->nbd_tls &&
			  str_eq(a->nbd_tls_dir, b->nbd_tls_dir) && tls_allow_eq(a, b));
	global_restart(r, "control-socket", str_eq(a->control_socket, b->control_socket));
	global_restart(r, "state-dir", str_eq(a->state_dir, b->state_dir));
	global_restart(r, "pidfile", str_eq(a->pidfile, b->pidfile));
	global_restart(r, "key-file", str_eq(a->key_file, b->key_file));
	global_restart(r, "link-security", a->link_plain == b->link_plain);
	global_restart(r, "cluster", a->cluster == b->cluster);
	global_restart(r, "replication-address", str_eq(a->repl_address, b->repl_address));
	global_restart(r, "data-dir", str_eq(a->data_dir, b->data_dir));
	global_restart(r, "metrics-listen", str_eq(a->metrics_host, b->metrics_host) &&
			  str_eq(a->metrics_port, b->metrics_port));

	r->log_level = a->log_level != b->log_level;
	applied(r, "log-level", !r->log_level);
	/* The tuning as the engine gets it: "after-sb-0pri = discard-zero-
	 * changes" written out is no change from the default. */
	cfg_repl_tuning(a, &ta);
	cfg_repl_tuning(b, &tb);
	applied(r, "resync-rate-max", ta.resync_rate_max == tb.resync_rate_max);
	applied(r, "outdate-timeout", ta.outdate_timeout_ms == tb.outdate_timeout_ms);
	for (unsigned i = 0; i < 3; i++)
		applied(r, sb_keys[i], ta.after_sb[i] == tb.after_sb[i]);
	r->tuning = r->n_applied > (r->log_level ? 1u : 0u);
}

static bool replicas_eq(const struct cfg_volume *a, const struct cfg_volume *b)
{
	if (a->n_replicas != b->n_replicas)
		return false;
	/* In order: a replica's place is its peer slot in the metadata. */
	for (unsigned i = 0; i < a->n_replicas; i++)
		if (strcmp(a->replicas[i].node, b->replicas[i].node) ||
		    strcmp(a->replicas[i].host, b->replicas[i].host) ||
		    strcmp(a->replicas[i].port, b->replicas[i].port))
			return false;
	return true;
}

static void compare_volume(const struct cfg_volume *a, const struct cfg_volume *b,
			   struct cfgreload *r)
{
	if (!str_eq(a->backing, b->backing))
		restart(r, a->name, "backing");
	if (a->size != b->size)
		restart(r, a->name, "size");
	if (!str_eq(a->meta, b->meta))
		restart(r, a->name, "meta");
	if (a->io_threads != b->io_threads)
		restart(r, a->name, "io-threads");
	if (a->io_inline_off != b->io_inline_off)
		restart(r, a->name, "io-inline");
	if (a->al_extents != b->al_extents)
		restart(r, a->name, "al-extents");
	if (!replicas_eq(a, b))
		restart(r, a->name, "replica");
}

static const struct cfg_volume *running_volume(const struct cfg *c, const char *name)
{
	const struct cfg_volume *v = cfg_volume_find(c, name);

	return v && cfg_volume_here(c, v) ? v : NULL;
}

void cfgreload_plan(const struct cfg *running, const struct cfg *next, struct cfgreload *out)
{
	memset(out, 0, sizeof(*out));
	compare_globals(running, next, out);
	for (unsigned i = 0; i < next->n_volumes; i++) {
		const struct cfg_volume *nv = &next->volumes[i];
		const struct cfg_volume *ov = running_volume(running, nv->name);

		if (!cfg_volume_here(next, nv))
			continue;
		if (ov)
			compare_volume(ov, nv, out);
		else if (running->cluster)	/* its quorum would be clusterd's to set */
			restart(out, nv->name, "new (in cluster mode)");
		else if (out->n_added < CFGRELOAD_ITEMS_MAX)
			out->added[out->n_added++] = i;
		else
			restart(out, nv->name, "new (too many at once)");
	}
	for (unsigned i = 0; i < running->n_volumes; i++) {
		const struct cfg_volume *ov = &running->volumes[i];

		if (cfg_volume_here(running, ov) && !running_volume(next, ov->name))
			restart(out, ov->name, "removed");
	}
}

void cfgreload_take_settings(struct cfg *to, const struct cfg *from)
{
	to->log_level = from->log_level;
	to->resync_rate_max = from->resync_rate_max;
	to->outdate_timeout_s = from->outdate_timeout_s;
	memcpy(to->after_sb, from->after_sb, sizeof(to->after_sb));
	memcpy(to->after_sb_set, from->after_sb_set, sizeof(to->after_sb_set));
}

int cfgreload_take_volume(struct cfg *to, struct cfg *from, unsigned i)
{
	struct cfg_volume *v = realloc(to->volumes, (to->n_volumes + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	to->volumes = v;
	to->volumes[to->n_volumes++] = from->volumes[i];
	from->volumes[i].backing = NULL;
	from->volumes[i].meta = NULL;
	return 0;
}

static void add(char *buf, size_t len, const char *s)
{
	size_t n = strlen(buf);

	if (n < len)
		snprintf(buf + n, len - n, "%s", s);
}

static void list(char *buf, size_t len, const char *sep, bool *first, const char *s)
{
	add(buf, len, *first ? sep : ", ");
	add(buf, len, s);
	*first = false;
}

void cfgreload_summary(const struct cfgreload *r, const struct cfg *next, const bool *failed,
		       char *buf, size_t len)
{
	bool first = true, any;
	char more[32];

	buf[0] = '\0';
	for (unsigned i = 0; i < r->n_applied; i++)
		list(buf, len, "applied ", &first, r->applied[i]);
	any = !first;
	for (unsigned pass = 0; pass < 2; pass++) {
		first = true;
		for (unsigned k = 0; k < r->n_added; k++) {
			if ((failed && failed[k]) != (pass == 1))
				continue;
			list(buf, len, any ? (pass ? "; could not add volume " : "; added volume ")
					   : (pass ? "could not add volume " : "added volume "),
			     &first, next->volumes[r->added[k]].name);
		}
		any |= !first;
	}
	first = true;
	for (unsigned i = 0; i < MIN(r->n_restart, (unsigned)CFGRELOAD_ITEMS_MAX); i++)
		list(buf, len, any ? "; restart needed for " : "restart needed for ", &first,
		     r->restart[i]);
	if (r->n_restart > CFGRELOAD_ITEMS_MAX) {
		snprintf(more, sizeof(more), " and %u more", r->n_restart - CFGRELOAD_ITEMS_MAX);
		add(buf, len, more);
	}
	any |= !first;
	if (!any)
		add(buf, len, "nothing changed");
}
