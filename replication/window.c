/* window.c: the live-migration window, and auto-promote.
 *
 * During a live migration two QEMUs hold the guest's disk at once: the
 * source's, which runs the guest, and the destination's, which waits for
 * its memory and writes nothing until the source has stopped and flushed.
 * A window lets a Secondary that is connected to the Primary and UpToDate
 * take NBD clients: it serves their reads from its own replica (which has
 * every acknowledged write, synchronously) and holds their first write
 * while it asks the Primary for the role (TAKEOVER).  The Primary stops
 * taking writes, lets the ones in flight finish on every replica, becomes
 * Secondary and answers (HANDOVER); the asker becomes Primary and lets the
 * held writes go.  So there is one Primary at every moment, and two
 * writers only inside the window, one after the other.  The old Primary's
 * clients stay attached as the window's other side (a failed migration's
 * source may resume and write: the role then comes back the same way).
 *
 * The window closes when its clients have gone, when none came in time,
 * when the link to the Primary breaks (its clients are dropped then: they
 * must not read a replica that no longer receives every write), or when
 * the Primary's clients left first and the role came here by itself (a
 * soft TAKEOVER, granted only to a Primary without clients).
 *
 * Auto-promote (DRBD 9's auto-promote): a Secondary without a window
 * becomes Primary for its first NBD client, by the usual promotion rules,
 * and Secondary again after its last client.  Loop thread only. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agree.h"
#include "log.h"
#include "meta.h"
#include "peer.h"
#include "util.h"

#define WINDOW_TICK_MS 250
#define WINDOW_ASK_SOFT_MS 1000		/* soft takeover requests, at most */
#define WINDOW_ASK_RETRY_MS 5000	/* an unanswered request is asked again */
#define WINDOW_DEFAULT_TIMEOUT_S 60

struct window {
	unsigned partner;		/* the Primary's peer slot */
	uint64_t deadline_ms;		/* closes if no client came by then */
	bool had_clients;
	bool asked;			/* a TAKEOVER is unanswered */
	bool asked_soft;
	uint64_t asked_ms;
	uint64_t ask_seq;
	void *timer;
	struct repl_io *held_head, **held_tail;	/* client writes waiting */
};

/* A Primary's side: the TAKEOVER it is answering, and auto-demote. */
struct handover {
	int to;				/* the asker's peer slot, or -1 */
	uint64_t seq;			/* its TAKEOVER's */
	void *timer;
	struct repl_io *held_head, **held_tail;	/* client writes meanwhile */
	int flush;			/* HO_FLUSH_*: the FLUSH it waits for */
	uint64_t flush_gen;		/* which handover that FLUSH is for */
	bool auto_promoted;		/* demote after the last client */
	void *auto_demote_timer;
};

static void window_tick(void *arg);

/* ---- small helpers ------------------------------------------------------ */

/* The peer has every write we acknowledged and receives the next ones. */
static bool peer_in_sync(const struct peer *p)
{
	return repl__peer_up(p) && p->link == REPL_LINK_CONNECTED && !p->suppressed &&
	       p->peer_disk == GEN_DISK_UPTODATE;
}

static int guard(struct repl_volume *vol, bool takeover, char *why, size_t len)
{
	const struct repl_hooks *h = &vol->eng->hooks;

	return h->may_promote ? h->may_promote(h->arg, vol, takeover, why, len) : 0;
}

static void send_takeover(struct repl_volume *vol, struct window *w, bool soft)
{
	struct peer *p = vol->peers[w->partner];
	struct wire_msg m = { .type = WIRE_TAKEOVER, .seq = ++w->ask_seq };

	m.u.takeover.flags = soft ? WIRE_TO_SOFT : 0;
	if (repl__peer_send_msg(p, &m) < 0)
		return;
	w->asked = true;
	w->asked_soft = soft;
	w->asked_ms = now_mono_ms();
}

static void send_handover(struct peer *p, uint64_t seq, int err)
{
	struct repl_volume *vol = p->vol;
	struct wire_msg m = { .type = WIRE_HANDOVER, .seq = seq };

	m.u.handover.error = (uint32_t)(err < 0 ? MIN(-err, 4095) : 0);
	m.u.handover.seq = vol->seq + 1;
	m.u.handover.current = meta_get(vol->meta)->gen_current;
	repl__peer_send_msg(p, &m);
}

/* Requests of a list, failed or started again. */
static void ios_fail(struct repl_io *io, int err)
{
	for (struct repl_io *next; io; io = next) {
		next = io->next;
		io->result = err;
		io->done(io);
	}
}

static void ios_restart(struct repl_volume *vol, struct repl_io *io)
{
	for (struct repl_io *next; io; io = next) {
		next = io->next;
		vol->eng->up->io(vol, io);
	}
}

static struct repl_io *held_take(struct window *w)
{
	struct repl_io *io = w->held_head;

	w->held_head = NULL;
	w->held_tail = &w->held_head;
	return io;
}

/* ---- opening and closing ------------------------------------------------- */

static struct window *window_new(struct repl_volume *vol, unsigned partner, unsigned timeout_s)
{
	struct window *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->partner = partner;
	w->deadline_ms = now_mono_ms() + (uint64_t)timeout_s * 1000;
	w->held_tail = &w->held_head;
	vol->window = w;
	repl__timer_add(vol->eng, WINDOW_TICK_MS, window_tick, vol, &w->timer);
	return w;
}

/* Ends the window; held writes are failed (err) unless the caller took
 * them; with drop, its clients are dropped too. */
static void window_end(struct repl_volume *vol, int err, bool drop, const char *why)
{
	struct window *w = vol->window;

	if (!w)
		return;
	vol->window = NULL;
	repl__timer_del(vol->eng, &w->timer);
	ios_fail(held_take(w), err);
	free(w);
	if (why)
		plog(drop ? LOG_WARNING : LOG_NOTICE, vol->name, "migration window closed: %s%s",
		     why, drop && vol->clients ? "; its NBD clients are dropped" : "");
	if (drop)
		vol->eng->up->drop_clients(vol);
	repl__changed(vol);
}

int repl_volume_window_open(struct repl_volume *vol, unsigned timeout_s, char *why, size_t len)
{
	struct peer *pp = NULL;
	int r;

	if (!timeout_s)
		timeout_s = WINDOW_DEFAULT_TIMEOUT_S;
	if (vol->role == REPL_PRIMARY) {
		snprintf(why, len, "this replica is Primary: it serves I/O already");
		return -EALREADY;
	}
	if (vol->down) {
		snprintf(why, len, "the volume is down on this node");
		return -EPERM;
	}
	if (vol->disk_state != GEN_DISK_UPTODATE) {
		snprintf(why, len, "the local disk is %s, not UpToDate",
			 gen_disk_name(vol->disk_state));
		return -EPERM;
	}
	for (unsigned i = 0; i < vol->n_peers; i++)
		if (repl__peer_up(vol->peers[i]) && vol->peers[i]->peer_role == REPL_PRIMARY)
			pp = vol->peers[i];
	if (!pp) {
		snprintf(why, len, "no connected Primary to take the role from");
		return -ENOTCONN;
	}
	if (pp->link != REPL_LINK_CONNECTED || pp->suppressed) {
		snprintf(why, len, "not in sync with the Primary %s (%s)", pp->node,
			 pp->link == REPL_LINK_SYNC_TARGET ? "resync running" : "differs");
		return -EPERM;
	}
	r = guard(vol, true, why, len);
	if (r < 0)
		return r;
	if (vol->window) {
		vol->window->partner = pp->idx;
		vol->window->deadline_ms = now_mono_ms() + (uint64_t)timeout_s * 1000;
		return 0;
	}
	if (!window_new(vol, pp->idx, timeout_s)) {
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	plog(LOG_NOTICE, vol->name, "migration window open (from %s, %u s for a client): "
	     "NBD clients may attach here, the Primary role follows their first write",
	     pp->node, timeout_s);
	repl__changed(vol);
	return 0;
}

int repl_volume_window_close(struct repl_volume *vol, char *why, size_t len)
{
	if (!vol->window) {
		snprintf(why, len, "no migration window is open here");
		return -ENOENT;
	}
	window_end(vol, -EIO, true, "closed on request");
	return 0;
}

/* ---- the Secondary's side: clients, their writes, the takeover ---------- */

int repl__volume_admit(struct repl_volume *vol, char *why, size_t len)
{
	int r;

	if (vol->role == REPL_PRIMARY || vol->window)
		return 0;
	if (!vol->auto_promote) {
		snprintf(why, len, "only the Primary serves I/O");
		return -EPERM;
	}
	r = guard(vol, false, why, len);
	if (r == 0)
		r = vol->eng->up->promote(vol, false, why, len);
	if (r < 0)
		return r;
	vol->ho->auto_promoted = true;
	plog(LOG_NOTICE, vol->name, "auto-promoted for an NBD client");
	return 0;
}

/* A window client's FLUSH that only the local disk answers. */
struct wflush {
	struct repl_io io;
	struct repl_io *client;
	struct repl_volume *vol;
};

static void wflush_done(struct repl_io *io)
{
	struct wflush *f = (struct wflush *)io;
	struct repl_io *c = f->client;

	/* Writes this replica acknowledged to its Primary may be gone with
	 * it (iopool.c): Inconsistent before the client hears (sim seed
	 * 4062 of the --inline profile: it stayed UpToDate, and a failed
	 * migration left it a Secondary that lacked them). */
	if (io->result < 0 && io->flush_lost)
		f->vol->eng->write_obs->disk_lost(f->vol);
	c->result = io->result;
	free(f);
	c->done(c);
}

void repl__window_io(struct repl_volume *vol, struct repl_io *io)
{
	struct window *w = vol->window;
	char why[160];

	if (!w) {
		io->result = -EROFS;
		io->done(io);
		return;
	}
	/* A flush with nothing of ours held covers no write of ours: the
	 * local disk alone answers it. */
	if (io->op == REPL_IO_FLUSH && !w->held_head) {
		struct wflush *f = calloc(1, sizeof(*f));

		if (!f) {
			io->result = -ENOMEM;
			io->done(io);
			return;
		}
		f->io = (struct repl_io){ .op = REPL_IO_FLUSH, .done = wflush_done };
		f->client = io;
		f->vol = vol;
		repl__iopool_submit(vol->pool, &f->io);
		return;
	}
	io->next = NULL;
	*w->held_tail = io;
	w->held_tail = &io->next;
	if (w->asked && !w->asked_soft)
		return;
	if (guard(vol, true, why, sizeof(why)) < 0) {
		plog(LOG_WARNING, vol->name, "a migration client writes, but the role cannot "
		     "move here: %s (held)", why);
		return;
	}
	plog(LOG_NOTICE, vol->name, "first write of a migration client: asking %s for "
	     "the Primary role", vol->peers[w->partner]->node);
	send_takeover(vol, w, false);
}

static void partner_left_role(struct repl_volume *vol, struct window *w);

/* The Primary handed over: we are Primary, with its sequence and
 * generation, and the held writes go. */
static void take_role(struct repl_volume *vol, struct peer *p, const struct wire_handover *h)
{
	struct window *w = vol->window;
	struct meta_super sb = *meta_get(vol->meta);
	struct repl_io *held = held_take(w);
	char why[160];
	int r;

	if (h->current && h->current != sb.gen_current) {
		if (sb.gen_current) {
			memmove(&sb.gen_history[1], &sb.gen_history[0],
				sizeof(sb.gen_history) - sizeof(sb.gen_history[0]));
			sb.gen_history[0] = sb.gen_current;
		}
		sb.gen_current = h->current;
		if (meta_update(vol->meta, &sb) < 0)
			plog(LOG_ERR, vol->name, "cannot record the generation of %s", p->node);
	}
	vol->seq = MAX(vol->seq, h->seq);
	r = vol->eng->up->promote(vol, true, why, sizeof(why));
	if (r < 0) {
		plog(LOG_ERR, vol->name, "%s handed the Primary role over, but it cannot be "
		     "taken here: %s", p->node, why);
		w->held_head = held;
		window_end(vol, -EIO, true, "the takeover failed");
		return;
	}
	vol->ho->auto_promoted = vol->auto_promote;
	plog(LOG_NOTICE, vol->name, "took the Primary role over from %s (live migration)",
	     p->node);
	window_end(vol, 0, false, NULL);
	ios_restart(vol, held);
}

void repl__window_on_handover(struct peer *p, uint64_t seq, const struct wire_handover *h)
{
	struct repl_volume *vol = p->vol;
	struct window *w = vol->window;
	int err = -(int)h->error;

	if (!w || w->partner != p->idx || seq != w->ask_seq || vol->role == REPL_PRIMARY)
		return;		/* an answer to a request we no longer make */
	w->asked = false;
	if (!err) {
		take_role(vol, p, h);
		return;
	}
	if (err == -EBUSY || err == -EAGAIN)
		return;		/* asked again later */
	if (err == -EINVAL && p->peer_role != REPL_PRIMARY) {
		/* It demoted by itself (its last client left) before it saw
		 * the request: the role is free. */
		partner_left_role(vol, w);
		return;
	}
	plog(LOG_WARNING, vol->name, "%s refused the Primary role: %s", p->node,
	     strerror(-err));
	if (err == -ESTALE)
		window_end(vol, -EIO, true, "this replica is not in sync");
}

/* Clients on a Secondary are only right while it gets every write. */
static bool window_still_valid(struct repl_volume *vol, const char **why)
{
	struct peer *p = vol->peers[vol->window->partner];

	if (!repl__peer_up(p) || p->link != REPL_LINK_CONNECTED || p->suppressed) {
		*why = "the link to the Primary is gone";
		return false;
	}
	if (vol->disk_state != GEN_DISK_UPTODATE || vol->down) {
		*why = "this replica is no longer UpToDate";
		return false;
	}
	return true;
}

/* The Primary demoted without handing over: the role is free, take it
 * for our clients by the ordinary rules. */
static void partner_left_role(struct repl_volume *vol, struct window *w)
{
	char why[160];

	if (!vol->clients && !w->held_head)
		return;
	if (guard(vol, false, why, sizeof(why)) < 0 ||
	    vol->eng->up->promote(vol, false, why, sizeof(why)) < 0) {
		plog(LOG_INFO, vol->name, "migration window: the Primary demoted; not "
		     "promoting yet: %s", why);
		return;
	}
	vol->ho->auto_promoted = vol->auto_promote;
	plog(LOG_NOTICE, vol->name, "took the Primary role for the migration's clients "
	     "(%s had demoted)", vol->peers[w->partner]->node);
	ios_restart(vol, held_take(w));
	window_end(vol, 0, false, NULL);
}

static void window_tick(void *arg)
{
	struct repl_volume *vol = arg;
	struct window *w = vol->window;
	struct peer *p = vol->peers[w->partner];
	uint64_t now = now_mono_ms();
	const char *why;

	w->timer = NULL;
	if (vol->role == REPL_PRIMARY) {
		window_end(vol, -EIO, false, NULL);
		return;
	}
	if (!window_still_valid(vol, &why)) {
		window_end(vol, -EIO, true, why);
		return;
	}
	if (vol->clients)
		w->had_clients = true;
	if (!vol->clients && !w->held_head && (w->had_clients || now >= w->deadline_ms)) {
		window_end(vol, -EIO, false, w->had_clients ? "its NBD clients left"
			   : "no NBD client came in time");
		return;
	}
	if (w->asked && now - w->asked_ms >= WINDOW_ASK_RETRY_MS)
		w->asked = false;
	/* The role went elsewhere (a third replica): ask that one. */
	for (unsigned i = 0; i < vol->n_peers && p->peer_role != REPL_PRIMARY && !w->asked; i++) {
		struct peer *o = vol->peers[i];
		if (o != p && peer_in_sync(o) && o->peer_role == REPL_PRIMARY) {
			plog(LOG_INFO, vol->name, "migration window: the Primary is %s now",
			     o->node);
			w->partner = o->idx;
			p = o;
		}
	}
	if (p->peer_role != REPL_PRIMARY && !w->asked) {
		partner_left_role(vol, w);
		if (!vol->window)
			return;
	} else if (!w->asked && w->held_head) {
		send_takeover(vol, w, false);
	} else if (!w->asked && vol->clients && now - w->asked_ms >= WINDOW_ASK_SOFT_MS) {
		send_takeover(vol, w, true);
	}
	repl__timer_add(vol->eng, WINDOW_TICK_MS, window_tick, vol, &w->timer);
}

/* ---- the Primary's side: handing over ---------------------------------- */

static void handover_finish(void *arg);

/* The FLUSH a handover sends through the write path before the role goes
 * (struct handover's flush): */
enum { HO_FLUSH_NONE, HO_FLUSH_RUNNING, HO_FLUSH_DONE, HO_FLUSH_FAILED };

struct ho_flush {
	struct repl_io io;		/* first: the write path's done gets it */
	struct repl_volume *vol;
	uint64_t gen;
};

static void ho_flush_done(struct repl_io *io)
{
	struct ho_flush *f = (struct ho_flush *)io;
	struct repl_volume *vol = f->vol;
	struct handover *h = vol->ho;

	if (f->gen == h->flush_gen && h->flush == HO_FLUSH_RUNNING)
		h->flush = io->result < 0 ? HO_FLUSH_FAILED : HO_FLUSH_DONE;
	free(f);
}

/* A new handover, or the end of one: a FLUSH still running is no longer
 * its (it may not cover writes since). */
static void ho_flush_forget(struct repl_volume *vol)
{
	struct handover *h = vol->ho;

	h->flush = HO_FLUSH_NONE;
	h->flush_gen++;
}

int repl__takeover_verdict(const struct takeover_view *v)
{
	if (!v->primary)
		return -EINVAL;		/* the asker looks for the role elsewhere */
	if (!v->quorate || v->frozen)
		return -EAGAIN;		/* asked again later */
	if (!v->asker_in_sync)
		return -ESTALE;		/* its clients must go */
	if (v->busy || (v->soft && v->clients))
		return -EBUSY;		/* asked again later */
	return 0;
}

void repl__window_on_takeover(struct peer *p, uint64_t seq, uint32_t flags)
{
	struct repl_volume *vol = p->vol;
	struct handover *h = vol->ho;
	struct takeover_view v = {
		.primary = vol->role == REPL_PRIMARY,
		.quorate = vol->quorate,
		.frozen = vol->freeze > 0,
		.asker_in_sync = peer_in_sync(p),
		/* a verify, or an agreement resync (agree.h), runs here */
		.busy = h->to >= 0 || repl__verify_running(vol) || repl__agree_waiting(vol),
		.soft = flags & WIRE_TO_SOFT,
		.clients = vol->clients,
	};
	int err = repl__takeover_verdict(&v);

	if (err) {
		send_handover(p, seq, err);
		return;
	}
	h->to = (int)p->idx;
	h->seq = seq;
	ho_flush_forget(vol);
	plog(LOG_NOTICE, vol->name, "%s asks for the Primary role%s: new writes wait, "
	     "the ones in flight finish", p->node, flags & WIRE_TO_SOFT ? " (no client here)" : "");
	repl__timer_add(vol->eng, 0, handover_finish, vol, &h->timer);
}

/* Writes of our clients while we hand over wait for the outcome. */
bool repl__handing_over(struct repl_volume *vol, struct repl_io *io)
{
	struct handover *h = vol->ho;

	if (h->to < 0 || io->op == REPL_IO_READ)
		return false;
	io->next = NULL;
	*h->held_tail = io;
	h->held_tail = &io->next;
	return true;
}

static struct repl_io *ho_take(struct repl_volume *vol)
{
	struct handover *h = vol->ho;
	struct repl_io *io = h->held_head;

	h->held_head = NULL;
	h->held_tail = &h->held_head;
	return io;
}

static void handover_abort(struct repl_volume *vol, const char *why)
{
	struct handover *h = vol->ho;

	plog(LOG_WARNING, vol->name, "handing over aborted: %s", why);
	h->to = -1;
	ho_flush_forget(vol);
	repl__timer_del(vol->eng, &h->timer);
	ios_restart(vol, ho_take(vol));
}

/* Once nothing is in flight: Secondary, tell everyone, then the asker. */
static void handover_finish(void *arg)
{
	struct repl_volume *vol = arg;
	struct handover *h = vol->ho;
	struct peer *p;
	struct meta_super sb;

	h->timer = NULL;
	if (h->to < 0)
		return;
	p = vol->peers[h->to];
	if (!peer_in_sync(p) || vol->role != REPL_PRIMARY) {
		if (repl__peer_up(p))
			send_handover(p, h->seq, -ESTALE);
		handover_abort(vol, "the asker is no longer in sync");
		return;
	}
	if (vol->writes || vol->bm_flushing) {
		repl__timer_add(vol->eng, 1, handover_finish, vol, &h->timer);
		return;
	}
	/* A write in flight failed here and the peers get the range back
	 * from us: not before they have it (agree.c; asked again later). */
	if (repl__agree_waiting(vol)) {
		send_handover(p, h->seq, -EBUSY);
		handover_abort(vol, "the peers are getting back ranges this disk failed");
		return;
	}
	/* What we acknowledged as Primary goes to disk first, here and on
	 * every peer: from now on the new Primary tracks what it sends and a
	 * peer has not flushed (peer_unflushed.c), not what we sent before.
	 * Without it, power lost right after a handover left a region written
	 * before it in nobody's bitmap, and the resync left the replicas
	 * different: here (sim seed 8925, when this was a local fdatasync)
	 * and on a third replica, whose Primary's record of it stayed with
	 * us (seed 10922).  A FLUSH through the write path: each peer's ack
	 * empties its unflushed set, one that cannot flush is dropped and
	 * outdated as for a guest's FLUSH.  Rare enough to wait for here. */
	if (h->flush == HO_FLUSH_NONE) {
		struct ho_flush *f = calloc(1, sizeof(*f));

		if (!f) {
			send_handover(p, h->seq, -ENOMEM);
			handover_abort(vol, "out of memory");
			return;
		}
		f->vol = vol;
		f->gen = h->flush_gen;
		f->io.op = REPL_IO_FLUSH;
		f->io.done = ho_flush_done;
		h->flush = HO_FLUSH_RUNNING;
		repl__rep_io(vol, &f->io);
	}
	if (h->flush == HO_FLUSH_RUNNING) {
		repl__timer_add(vol->eng, 1, handover_finish, vol, &h->timer);
		return;
	}
	if (h->flush == HO_FLUSH_FAILED) {
		plog(LOG_ERR, vol->name, "flushing the replicas before handing over failed");
		send_handover(p, h->seq, -EIO);
		handover_abort(vol, "cannot flush the backing");
		return;
	}
	sb = *meta_get(vol->meta);
	sb.role = REPL_SECONDARY;
	if (meta_update(vol->meta, &sb) < 0) {
		send_handover(p, h->seq, -EIO);
		handover_abort(vol, "cannot write the metadata");
		return;
	}
	vol->role = REPL_SECONDARY;
	h->auto_promoted = false;
	h->to = -1;
	ho_flush_forget(vol);
	repl__peers_tell_state(vol);	/* before the answer: the asker sees us Secondary */
	send_handover(p, h->seq, 0);
	plog(LOG_NOTICE, vol->name, "handed the Primary role over to %s: Secondary now%s",
	     p->node, vol->clients ? ", its NBD clients stay as the window's other side" : "");
	if (vol->clients && !window_new(vol, p->idx, WINDOW_DEFAULT_TIMEOUT_S))
		vol->eng->up->drop_clients(vol);
	ios_restart(vol, ho_take(vol));
	repl__changed(vol);
}

/* ---- events from elsewhere in the engine --------------------------------- */

void repl__window_peer_down(struct peer *p)
{
	struct repl_volume *vol = p->vol;

	if (vol->ho->to == (int)p->idx)
		handover_abort(vol, "the link to the asker is gone");
	if (vol->window && vol->window->partner == p->idx && vol->role != REPL_PRIMARY)
		window_end(vol, -EIO, true, "the link to the Primary is gone");
}

static void auto_demote(void *arg)
{
	struct repl_volume *vol = arg;
	struct handover *h = vol->ho;
	char why[160];

	h->auto_demote_timer = NULL;
	if (vol->clients || vol->role != REPL_PRIMARY || !h->auto_promoted)
		return;
	if (vol->writes || h->to >= 0) {
		repl__timer_add(vol->eng, 50, auto_demote, vol, &h->auto_demote_timer);
		return;
	}
	if (vol->eng->up->demote(vol, why, sizeof(why)) == 0)
		plog(LOG_NOTICE, vol->name, "auto-demoted: its last NBD client left");
	else
		plog(LOG_WARNING, vol->name, "cannot auto-demote: %s", why);
	h->auto_promoted = false;
}

void repl__window_clients_changed(struct repl_volume *vol)
{
	struct handover *h = vol->ho;

	if (vol->clients == 0 && h->auto_promoted && !h->auto_demote_timer)
		repl__timer_add(vol->eng, 0, auto_demote, vol, &h->auto_demote_timer);
}

int repl__window_new(struct repl_volume *vol)
{
	struct handover *h = calloc(1, sizeof(*h));

	if (!h)
		return -ENOMEM;
	h->to = -1;
	h->held_tail = &h->held_head;
	vol->ho = h;
	return 0;
}

void repl__window_free(struct repl_volume *vol)
{
	free(vol->ho);
	vol->ho = NULL;
}

void repl__window_stop(struct repl_volume *vol)
{
	struct handover *h = vol->ho;

	if (vol->window)
		window_end(vol, -ESHUTDOWN, false, NULL);
	if (!h)
		return;		/* its opening failed before repl__window_new() */
	repl__timer_del(vol->eng, &h->timer);
	repl__timer_del(vol->eng, &h->auto_demote_timer);
	h->to = -1;
	ios_fail(ho_take(vol), -ESHUTDOWN);
}

const char *repl__window_state(const struct repl_volume *vol)
{
	if (vol->ho->to >= 0)
		return "handing-over";
	if (!vol->window)
		return "none";
	return vol->window->asked && !vol->window->asked_soft ? "taking-over" : "open";
}
