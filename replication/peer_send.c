/* peer_send.c: the frames this replica sends to its peers, built from its
 * own state: a guest write cut into WRITE frames (their payload CRCs summed
 * once for every peer), acknowledgements, resync data, STATE (our role and
 * disk; outdate notices and their confirmations) and VOLUME (what the
 * handshake decides on).  Also the generations as gen.c sees them, and
 * node ids.  It only builds and queues frames on the link (link.c); it
 * decides nothing and calls nothing above it.  Loop thread only. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "link.h"
#include "meta.h"
#include "nbd-protocol.h"
#include "peer.h"
#include "util.h"
#include "wire.h"

/* The generations copied between metadata, gen.c and the wire. */
_Static_assert(GEN_HISTORY == META_GEN_HISTORY && GEN_HISTORY == WIRE_GEN_HISTORY,
	       "history depths differ");

uint32_t repl__peer_node_id(const struct repl_volume *vol, const char *node)
{
	uint32_t id = 1;

	for (unsigned i = 0; i < vol->n_peers; i++)
		if (strcmp(vol->peers[i]->node, node) < 0)
			id++;
	if (strcmp(vol->node, node) < 0)
		id++;
	return id;
}

/* Our generations as seen by peer idx: the bitmap generation is the one
 * of that peer's bitmap (each peer has its own, so replicas away at
 * different times each resync only what they missed).  idx < 0: none. */
void repl__peer_gen_side(const struct repl_volume *vol, int idx, struct gen_side *g)
{
	const struct meta_super *sb = meta_get(vol->meta);

	memset(g, 0, sizeof(*g));
	g->current = sb->gen_current;
	g->bitmap = idx >= 0 ? sb->peers[idx].bitmap_gen : 0;
	memcpy(g->history, sb->gen_history, sizeof(g->history));
	g->disk_state = vol->disk_state;
	g->primary = vol->role == REPL_PRIMARY;
	g->crashed_primary = sb->flags & META_F_PRIMARY_CRASHED;
	g->lost_power = sb->flags & META_F_POWER_LOST;
	g->host_restarted = sb->flags & META_F_HOST_RESTARTED;
	g->partial = repl__partial(vol);
	g->node_id = repl__peer_node_id(vol, vol->node);
}

static int send_msg(struct peer *p, const struct wire_msg *m)
{
	if (!p->l || p->conn < PC_HANDSHAKE)
		return -ENOTCONN;
	return repl__link_send(p->l, m, NULL, 0, NULL);
}

int repl__peer_send_msg(struct peer *p, const struct wire_msg *m)
{
	return send_msg(p, m);
}

/* A write larger than a frame goes as several frames with the same seq;
 * returns how many (each is acknowledged), or -errno. */
static int send_write_chunks(struct peer *p, struct vwrite *w, uint32_t fua)
{
	const struct repl_io *io = w->io;
	struct wire_msg m = { .type = WIRE_WRITE, .seq = w->seq };
	uint32_t done = 0;
	int n = 0, r;

	_Static_assert(NBD_MAX_PAYLOAD <= VWRITE_MAX_FRAMES * (uint64_t)WIRE_DATA_MAX,
		       "a guest write has more WRITE frames than vwrite keeps CRCs of");
	if (!p->l)
		return -ENOTCONN;
	while (done < io->len) {
		uint32_t len = MIN(io->len - done, WIRE_DATA_MAX);
		const uint8_t *data = (const uint8_t *)io->buf + done;
		m.u.write = (struct wire_write){ io->offset + done, len, fua, data };
		/* The payload (offset, length, flags, data) is the same for
		 * every peer, so is its CRC: sum it once per write.  A sealed
		 * link sends none (the record's tag covers the payload). */
		if (n < VWRITE_MAX_FRAMES && !repl__link_sealed(p->l)) {
			if ((unsigned)n >= w->crc_n) {
				w->crc[n] = wire_payload_crc(&m);
				w->crc_n = (unsigned)n + 1;
			}
			m.u.write.have_crc = true;
			m.u.write.payload_crc = w->crc[n];
		}
		r = repl__link_send(p->l, &m, data, len, NULL);
		if (r < 0)
			return r;
		done += len;
		n++;
	}
	return n;
}

int repl__peer_send_io(struct peer *p, struct vwrite *w)
{
	const struct repl_io *io = w->io;
	struct wire_msg m = { .seq = w->seq };
	uint32_t fua = (io->flags & REPL_IO_FUA) ? WIRE_WF_FUA : 0;
	int r;

	switch (io->op) {
	case REPL_IO_WRITE:
		return send_write_chunks(p, w, fua);
	case REPL_IO_FLUSH:
		m.type = WIRE_FLUSH;
		break;
	case REPL_IO_TRIM:
		m.type = WIRE_TRIM;
		m.u.range = (struct wire_range){ io->offset, io->len, fua };
		break;
	case REPL_IO_ZERO:
		m.type = WIRE_ZERO;
		m.u.range = (struct wire_range){ io->offset, io->len,
			fua | ((io->flags & REPL_IO_NO_HOLE) ? WIRE_WF_NO_HOLE : 0) };
		break;
	default:
		return -EINVAL;
	}
	r = send_msg(p, &m);
	return r < 0 ? r : 1;
}

int repl__peer_send_ack(struct peer *p, uint64_t seq, int result)
{
	struct wire_msg m = { .type = WIRE_WRITE_ACK };

	m.u.ack = (struct wire_ack){ seq, result < 0 ? (uint32_t)MIN(-result, 4095) : 0 };
	return send_msg(p, &m);
}

int repl__peer_send_rs_data(struct peer *p, uint64_t seq, uint64_t offset, uint32_t len,
			    void *data, bool zero)
{
	struct wire_msg m = { .seq = seq };

	if (zero) {
		m.type = WIRE_RS_ZERO;
		m.u.range = (struct wire_range){ offset, len, 0 };
		free(data);
		return send_msg(p, &m);
	}
	m.type = WIRE_RS_DATA;
	m.u.write = (struct wire_write){ offset, len, 0, data };
	if (!p->l) {
		free(data);
		return -ENOTCONN;
	}
	return repl__link_send(p->l, &m, data, len, data);
}

void *repl__peer_answer_new(struct peer *p, size_t size, uint64_t seq, uint64_t off,
			    uint32_t len, unsigned flags, void (*done)(struct repl_io *io))
{
	struct peer_answer *a = calloc(1, size);
	void *buf = malloc(len);

	if (!a || !buf) {
		free(a);
		free(buf);
		repl__peer_drop(p, "out of memory");
		return NULL;
	}
	a->p = p;
	a->conn_id = p->conn_id;
	a->seq = seq;
	a->io = (struct repl_io){ .op = REPL_IO_READ, .flags = flags, .offset = off,
				  .len = len, .buf = buf, .done = done };
	return a;
}

bool repl__peer_answer_live(const struct peer_answer *a)
{
	return repl__peer_up(a->p) && a->p->conn_id == a->conn_id;
}

bool repl__peer_answers_reads(const struct peer *p)
{
	return p->l && (repl__link_features(p->l) & WIRE_FEAT_READ);
}

int repl__peer_send_read_data(struct peer *p, uint64_t seq, uint64_t offset, uint32_t len,
			      void *data)
{
	struct wire_msg m = { .type = WIRE_READ_DATA, .seq = seq };

	m.u.write = (struct wire_write){ offset, len, 0, data };
	if (!p->l || p->conn < PC_HANDSHAKE) {
		free(data);
		return -ENOTCONN;
	}
	return repl__link_send(p->l, &m, data, len, data);
}

bool repl__partial(const struct repl_volume *vol)
{
	const struct meta_super *sb = meta_get(vol->meta);

	return vol->role != REPL_PRIMARY && vol->disk_state == GEN_DISK_INCONSISTENT &&
	       sb->disk_state == META_INCONSISTENT && (sb->flags & META_F_PARTIAL) &&
	       !(sb->flags & META_F_POWER_LOST) && !vol->cluster_outdated;
}

/* Our state; and (notice) that another replica is now Outdated, or
 * (confirm) that we recorded the notice with that token. */
static int send_state_token(struct peer *p, const struct peer *outdated, bool confirm,
			    uint64_t token)
{
	struct repl_volume *vol = p->vol;
	struct wire_msg m = { .type = WIRE_STATE };

	m.u.state.role = (uint8_t)vol->role;
	m.u.state.disk = vol->disk_state;
	m.u.state.partial = repl__partial(vol);
	m.u.state.current = meta_get(vol->meta)->gen_current;
	if (outdated) {
		m.u.state.outdate_notice = true;
		m.u.state.outdated_node = repl__peer_node_id(vol, outdated->node);
	}
	m.u.state.confirm = confirm;
	m.u.state.token = outdated || confirm ? token : 0;
	return send_msg(p, &m);
}

static int send_state(struct peer *p, const struct peer *outdated)
{
	return send_state_token(p, outdated, false, 0);
}

int repl__peer_send_state(struct peer *p, const struct peer *outdated)
{
	return send_state(p, outdated);
}

int repl__peer_send_outdate(struct peer *p, const struct peer *outdated, uint64_t token)
{
	return send_state_token(p, outdated, false, token);
}

int repl__peer_send_confirm(struct peer *p, uint64_t token)
{
	return send_state_token(p, NULL, true, token);
}

/* A Primary other than except is connected to this replica. */
bool repl__peer_has_primary(const struct repl_volume *vol, const struct peer *except)
{
	for (unsigned i = 0; i < vol->n_peers; i++) {
		const struct peer *o = vol->peers[i];
		if (o != except && repl__peer_up(o) && o->peer_role == REPL_PRIMARY)
			return true;
	}
	return false;
}

static void fill_volume(struct peer *p, struct wire_volume *v)
{
	struct repl_volume *vol = p->vol;
	const struct meta_super *sb = meta_get(vol->meta);

	memset(v, 0, sizeof(*v));
	memcpy(v->uuid, sb->uuid, sizeof(v->uuid));
	snprintf(v->name, sizeof(v->name), "%s", vol->name);
	v->size = vol->size;
	v->current = sb->gen_current;
	v->bitmap = sb->peers[p->idx].bitmap_gen;
	memcpy(v->history, sb->gen_history, sizeof(v->history));
	v->dirty = meta_bits_count(vol->meta, p->idx);
	v->node_id = repl__peer_node_id(vol, vol->node);
	v->region_size = 1u << sb->region_shift;
	v->disk = vol->disk_state;
	v->role = (uint8_t)vol->role;
	v->crashed_primary = sb->flags & META_F_PRIMARY_CRASHED;
	v->lost_power = sb->flags & META_F_POWER_LOST;
	v->host_restarted = sb->flags & META_F_HOST_RESTARTED;
	v->partial = repl__partial(vol);
	v->peer_disk = sb->peers[p->idx].disk_state == META_OUTDATED ? GEN_DISK_OUTDATED
								    : GEN_DISK_UNKNOWN;
	v->has_primary = p->told_has_primary = repl__peer_has_primary(vol, p);
	v->no_quorum = !vol->quorate;
	p->told_role = v->role;
	p->told_disk = v->disk;
	p->told_current = v->current;
}

int repl__peer_send_volume(struct peer *p)
{
	struct wire_msg m = { .type = WIRE_VOLUME };

	fill_volume(p, &m.u.volume);
	return send_msg(p, &m);
}

void repl__gen_store(struct meta_super *sb, int idx, const struct gen_side *g)
{
	sb->gen_current = g->current;
	memcpy(sb->gen_history, g->history, sizeof(sb->gen_history));
	if (idx >= 0) {
		/* A bitmap that starts here starts with the peer lost by us
		 * while it followed us: what it had not flushed is in it. */
		if (!sb->peers[idx].bitmap_gen || !g->bitmap)
			sb->peers[idx].flags &= (uint8_t)~META_PF_BLIND;
		sb->peers[idx].bitmap_gen = g->bitmap;
	}
}
