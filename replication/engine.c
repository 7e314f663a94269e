/* engine.c: the engine object: the loop it was given, its volumes, its NBD
 * listeners and connections, the clean stop that drains them, and the
 * tables through which the engine's lower files report up.  The fd and
 * timer helpers on that loop are loop.c's. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "bufpool.h"
#include "log.h"
#include "nbd_tls.h"
#include "peer.h"
#include "repl_int.h"
#include "resize.h"

/* The tables through which files low in the engine tell or ask those
 * above them (repl_int.h): only this file names both sides. */
static void writing(struct repl_volume *vol, uint64_t off, uint64_t len)
{
	repl__rs_note_write(vol, off, len);
	repl__verify_note_write(vol, off, len);
}

static void applying(struct repl_volume *vol, uint64_t seq, uint64_t off, uint64_t len)
{
	if (!(seq & WIRE_RS_SEQ_BIT))	/* not a resync block */
		repl__recent_note(vol, seq, off, len);
	/* a region this replica is verifying against its Primary: compared
	 * again */
	repl__verify_note_write(vol, off, len);
}

static const struct repl_write_observers write_obs = {
	.writing = writing,		/* resync.c, verify.c */
	.applying = applying,		/* recent.c, verify.c */
	.missed = repl__rs_note_failed,		/* resync.c */
	.peer_failed = repl__rep_peer_failed_write,	/* outdate.c */
	.disk_lost = repl__rep_disk_lost,	/* outdate.c */
};

static int promote(struct repl_volume *vol, bool handed_over, char *why, size_t len)
{
	return repl__volume_promote(vol, false, handed_over, why, len);
}

static void drop_clients(struct repl_volume *vol)
{
	repl__nbd_conns_drop_volume(vol->eng, vol);
}

static uint64_t clients_max_size(const struct repl_volume *vol)
{
	return repl__nbd_clients_max_size(vol->eng, vol);
}

static const struct repl_upcalls upcalls = {
	.promote = promote,			/* role.c */
	.demote = repl_volume_demote,
	.io = repl__volume_io,			/* gate.c */
	.drop_clients = drop_clients,		/* nbd_conn.c */
	.clients_max_size = clients_max_size,
};

int repl_engine_new(const struct repl_loop *loop, struct repl_engine **out)
{
	struct repl_engine *eng;
	int r;

	if (!loop || !loop->ops)
		return -EINVAL;
	eng = calloc(1, sizeof(*eng));
	if (!eng)
		return -ENOMEM;
	eng->loop = *loop;
	eng->nbd_clients_max = REPL_NBD_CLIENTS_MAX_DEFAULT;
	eng->changed_first = repl__resize_changed;
	eng->write_obs = &write_obs;
	eng->up = &upcalls;
	r = repl__nbd_notify_new(eng);
	if (r < 0) {
		free(eng);
		return r;
	}
	*out = eng;
	return 0;
}

void repl_engine_set_hooks(struct repl_engine *eng, const struct repl_hooks *hooks)
{
	eng->hooks = *hooks;
}

void repl_engine_stop(struct repl_engine *eng)
{
	if (eng->stopping)
		return;
	eng->stopping = true;
	log_info("stopping: no new clients, finishing in-flight requests");
	repl__nbd_listeners_close(eng);
	repl__nbd_conns_stop(eng);
}

bool repl_engine_stopped(const struct repl_engine *eng)
{
	return eng->stopping && !eng->conns && !eng->listeners;
}

void repl_engine_free(struct repl_engine *eng)
{
	struct repl_volume *vol;

	if (!eng)
		return;
	repl__nbd_listeners_close(eng);
	/* Completions still reference their connections: drain them first. */
	for (vol = eng->volumes; vol; vol = vol->next)
		repl__volume_disconnect(vol);
	for (vol = eng->volumes; vol; vol = vol->next)
		repl__volume_quiesce(vol);
	repl__nbd_conns_free(eng);
	while ((vol = eng->volumes)) {
		eng->volumes = vol->next;
		repl__volume_free(vol);
	}
	repl__nbd_notify_free(eng);
	repl__nbd_tls_creds_free(eng->nbd_tls);
	free(eng);
	repl__buf_drain();
}
