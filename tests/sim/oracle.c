/* oracle.c: the client workload and the invariants it checks.
 *
 * The client sends writes (some FUA), FLUSH, TRIM, WRITE_ZEROES and reads
 * to whichever replica the cluster made Primary, through the engine's
 * request path (repl__volume_io, what an NBD request becomes), never two
 * at once to one 4 KiB block, so that the writes to a block are ordered.
 * Every 512-byte sector written carries the write's id, so a read says
 * which version it saw.  A block's floor is its newest write that must
 * survive: acknowledged and either durable (FUA, or a FLUSH acknowledged
 * after it) or held by a replica that has not lost power since (the
 * acknowledging Primary and the peers it reported in sync then).  A read
 * may see the floor or a later version of every sector, nothing older.
 * Also: each request is answered once; two Primaries never acknowledge
 * writes in one generation; a replica whose status says UpToDate, that the
 * cluster may promote, holds every write that must survive (checked every
 * 200 ms, oracle_check_status); and at the end, after every fault healed,
 * the replicas are byte-identical and every request was answered. */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "meta.h"
#include "repl_int.h"
#include "replsim.h"
#include "sys.h"

unsigned stat_ops, stat_acked, stat_failed;

enum op_type { OP_WRITE, OP_FLUSH, OP_TRIM, OP_ZERO, OP_READ };
static const char *op_names[] = { "WRITE", "FLUSH", "TRIM", "WRITE_ZEROES", "READ" };

struct op {
	struct repl_io io;	/* first: container of */
	enum op_type type;
	uint64_t id;		/* write version (0 for TRIM/ZERO content) */
	uint64_t seq;
	unsigned blk, nblk;
	int node;
	unsigned incarnation;
	bool fua;
	int br;			/* the branch it writes */
	unsigned replies;
	bool orphan;		/* its node crashed: no reply will come */
	bool acked, durable;
	uint8_t holders;
	uint64_t ack_seq, flush_cover;
	uint64_t issued;
	uint8_t *buf;
};

struct ver {
	struct op *op;		/* NULL: the initial zeroes */
	uint64_t id;
};

struct blk {
	struct ver *v;
	unsigned n, cap;
	bool busy;
};

/* The history of each block; two while a split brain lasts (split.c):
 * branch 1 forked off for fork_node, promoted while the Primary of branch
 * 0 went on; node_br says which branch a node's replica follows. */
static struct blk branch[2][NBLK_MAX];
static int node_br[SIM_NODES];
static uint64_t fork_seq;	/* the forked node holds the writes acked up to it */
/* the last ack a node held when it was made: in sync, or following clean */
static uint64_t last_sync_seq[SIM_NODES];
static unsigned client_blocks;	/* the size the client negotiated */
static int client_node;		/* where it sends (-1: nowhere yet) */
static uint8_t client_at;	/* nodes it is attached to (a migration: two) */
static struct op **ops;
static unsigned n_ops, cap_ops;
static uint64_t next_id, ack_counter;
static bool running;
static unsigned inflight;
static struct {
	uint64_t gen;
	int node;
} gens[256];
static unsigned n_gens;

void fail(const char *kind, const char *fmt, ...)
{
	va_list ap;

	printf("seed %" PRIu64 ": VIOLATION %s at t=%.6f: ", run_seed, kind, (double)sim_now / 1e9);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n  replay: replsim --seed %" PRIu64 " --trace\n", run_seed);
	fflush(stdout);
	_exit(strcmp(kind, "liveness") ? 1 : 3);
}

static void add_ver(unsigned b, struct op *o, uint64_t id)
{
	struct blk *k = &branch[o ? o->br : 0][b];

	if (k->n == k->cap && !(k->v = realloc(k->v, (k->cap = k->cap ? 2 * k->cap : 8) *
					       sizeof(*k->v))))
		exit(2);
	k->v[k->n++] = (struct ver){ o, id };
}

static void disk_torn(int node, const char *path);
/* sim_now when node last lost what it had not flushed (+1; 0: never). */
static uint64_t lost_at[SIM_NODES];

void oracle_reset(void)
{
	sim_disk_on_torn(disk_torn);
	memset(lost_at, 0, sizeof(lost_at));
	client_blocks = NBLK;
	client_node = -1;
	client_at = 0;
	for (unsigned b = 0; b < NBLK_MAX; b++) {
		for (int k = 0; k < 2; k++) {
			free(branch[k][b].v);
			branch[k][b] = (struct blk){ 0 };
		}
		add_ver(b, NULL, 0);
	}
	memset(node_br, 0, sizeof(node_br));
	memset(last_sync_seq, 0, sizeof(last_sync_seq));
	fork_seq = 0;
	for (unsigned i = 0; i < n_ops; i++) {
		free(ops[i]->buf);
		free(ops[i]);
	}
	n_ops = 0;
	next_id = 1;
	ack_counter = 0;
	inflight = 0;
	n_gens = 0;
	stat_ops = stat_acked = stat_failed = 0;
}

/* Must v survive on branch br?  One written before the branch forked
 * off is on the forked branch if its node was in sync when it or a later
 * write was acknowledged (the split-brain profile has no power loss). */
static bool protected(const struct ver *v, int br)
{
	const struct op *o = v->op;

	if (!o)
		return true;
	if (o->br != br)
		return o->acked && o->ack_seq <= fork_seq;
	return o->acked && (o->durable || o->holders);
}

static unsigned floor_of(int br, unsigned b)
{
	for (unsigned i = branch[br][b].n; i-- > 0;)
		if (protected(&branch[br][b].v[i], br))
			return i;
	return 0;
}

/* Sector s of block b as write id puts it there. */
static void fill_sector(uint8_t *sec, uint64_t id, unsigned b, unsigned s)
{
	uint64_t tag = (uint64_t)b * 8 + s;

	memset(sec, (int)(id * 31 + b), 512);
	memcpy(sec, &id, 8);
	memcpy(sec + 8, &tag, 8);
}

static void fill(uint8_t *p, uint64_t id, unsigned b)
{
	for (unsigned s = 0; s < BLOCK / 512; s++)
		fill_sector(p + s * 512, id, b, s);
}

/* Checks what a read of block b returned (sector by sector) against what
 * may be there. */
static void check_block_as(const char *kind, int br, unsigned b, const uint8_t *p,
			   const char *what)
{
	static const uint8_t zeroes[512];
	const struct blk *k = &branch[br][b];
	unsigned fl = floor_of(br, b);

	for (unsigned s = 0; s < BLOCK / 512; s++) {
		const uint8_t *sec = p + s * 512;
		uint64_t id = 0, tag;
		bool zero = true, ok = false;
		uint8_t want[512];

		zero = !memcmp(sec, zeroes, 512);
		if (!zero) {
			memcpy(&id, sec, 8);
			memcpy(&tag, sec + 8, 8);
			fill_sector(want, id, b, s);
			if (tag != (uint64_t)b * 8 + s || memcmp(sec, want, 512) || !id)
				fail("data", "%s: block %u sector %u holds data no write put there",
				     what, b, s);
		}
		for (unsigned i = fl; i < k->n && !ok; i++)
			ok = k->v[i].id == id;
		if (!ok) {
			const struct ver *f = &k->v[fl];
			fail(kind, "%s: block %u sector %u holds version %" PRIu64
			     " but version %" PRIu64 " (%s%s, acknowledged by n%d) must be there "
			     "or newer", what, b, s, id, f->id,
			     f->op ? op_names[f->op->type] : "initial",
			     f->op && f->op->durable ? ", durable" : ", not flushed",
			     f->op ? f->op->node : -1);
		}
	}
}

static void check_block(int br, unsigned b, const uint8_t *p, const char *what)
{
	check_block_as("lost-write", br, b, p, what);
}

static void check_gen(int node)
{
	uint64_t g = meta_get(nodes[node].vol->meta)->gen_current;

	for (unsigned i = 0; i < n_gens; i++) {
		if (gens[i].gen != g)
			continue;
		if (gens[i].node != node)
			fail("two-primaries", "n%d and n%d both acknowledged writes in "
			     "generation %016" PRIx64, gens[i].node, node, g);
		return;
	}
	if (n_gens < 256)
		gens[n_gens++] = (typeof(gens[0])){ g, node };
}

/* The replicas that hold every write node acknowledged so far, as its
 * status says: *in_sync, those it reports in sync (what must survive a
 * power loss counts them); *following, those following it clean too (a
 * resync to it sent everything, not yet counted in sync until it confirms
 * the end: resync.c), for a split's fork.  node itself is in both. */
static void holders(int node, uint8_t *in_sync, uint8_t *following)
{
	struct repl_volume_status st;

	*in_sync = *following = (uint8_t)(1u << node);
	repl_volume_status(nodes[node].vol, &st);
	for (unsigned k = 0; k < st.n_peers; k++) {
		uint8_t bit = (uint8_t)(1u << (st.peers[k].node[1] - '0'));

		if (st.peers[k].in_sync)
			*in_sync |= bit;
		if (st.peers[k].in_sync || st.peers[k].following_clean)
			*following |= bit;
	}
}

static uint8_t in_sync_holders(int node)
{
	uint8_t in_sync, following;

	holders(node, &in_sync, &following);
	return in_sync;
}

static void op_done(struct repl_io *io)
{
	struct op *o = (struct op *)io;
	uint8_t h;

	if (o->orphan)
		fail("reply", "%s %" PRIu64 " answered by n%d after it crashed", op_names[o->type],
		     o->seq, o->node);
	if (++o->replies > 1)
		fail("reply", "%s %" PRIu64 " answered twice", op_names[o->type], o->seq);
	inflight--;
	for (unsigned i = 0; i < o->nblk; i++)
		branch[o->br][o->blk + i].busy = false;
	trace("client: %s #%" PRIu64 " blk %u+%u -> %d", op_names[o->type], o->seq, o->blk,
	      o->nblk, io->result);
	if (io->result < 0) {
		stat_failed++;
	} else if (o->type == OP_READ) {
		for (unsigned i = 0; i < o->nblk; i++)
			check_block(o->br, o->blk + i, o->buf + (size_t)i * BLOCK,
				    "read from the Primary");
	} else if (o->type == OP_FLUSH && repl_volume_role(nodes[o->node].vol) != REPL_PRIMARY) {
		/* a migration window's, with no write of its own held: its
		 * local disk answers, it covers no write of the Primary's */
		stat_acked++;
	} else {
		stat_acked++;
		o->acked = true;
		check_gen(o->node);
		if (o->type == OP_FLUSH) {
			/* what the flushing Primary still holds (a write lost
			 * with a power loss before the flush stays lost) */
			for (unsigned i = 0; i < n_ops; i++)
				if (ops[i]->acked && ops[i]->ack_seq <= o->flush_cover &&
				    (ops[i]->holders & (1u << o->node)))
					ops[i]->durable = true;
		} else {
			o->ack_seq = ++ack_counter;
			o->durable = o->fua;
			holders(o->node, &o->holders, &h);
			for (int i = 0; i < SIM_NODES; i++) {
				if (h & (1u << i))
					last_sync_seq[i] = o->ack_seq;
				/* a replica that lost its unflushed data since
				 * the write began, before its Primary heard of
				 * it, holds it no more (a power loss just after
				 * its acknowledgement left) */
				if (lost_at[i] > o->issued)
					o->holders &= (uint8_t)~(1u << i);
			}
		}
	}
}

static struct op *op_new(enum op_type t, unsigned b, unsigned nb, int node)
{
	struct op *o = calloc(1, sizeof(*o));

	if (!o || (n_ops == cap_ops &&
		   !(ops = realloc(ops, (cap_ops = cap_ops ? 2 * cap_ops : 256) * sizeof(*ops)))))
		exit(2);
	ops[n_ops++] = o;
	o->type = t;
	o->blk = b;
	o->nblk = nb;
	o->seq = n_ops;
	o->br = node_br[node];
	o->io.done = op_done;
	o->io.offset = (uint64_t)b * BLOCK;
	o->io.len = nb * BLOCK;
	return o;
}

static void submit(struct op *o, int node)
{
	o->node = node;
	o->incarnation = nodes[node].incarnation;
	o->issued = sim_now;
	inflight++;
	stat_ops++;
	for (unsigned i = 0; i < o->nblk; i++)
		branch[o->br][o->blk + i].busy = true;
	trace("client: %s%s #%" PRIu64 " blk %u+%u to n%d", op_names[o->type],
	      o->fua ? "+FUA" : "", o->seq, o->blk, o->nblk, node);
	ON(node, repl__volume_io(nodes[node].vol, &o->io));
}

static void issue_one(void)
{
	int p = migrate_route(inflight);
	unsigned b, nb, r;
	enum op_type t;
	struct op *o;

	if (p < 0 || !nodes[p].alive || inflight >= 4)
		return;
	r = (unsigned)rnd_below(100);
	t = r < 50 ? OP_WRITE : r < 58 ? OP_FLUSH : r < 63 ? OP_TRIM : r < 68 ? OP_ZERO : OP_READ;
	if (t == OP_FLUSH) {
		o = op_new(t, 0, 0, p);
		o->io.op = REPL_IO_FLUSH;
		o->flush_cover = ack_counter;
		submit(o, p);
		return;
	}
	/* the guest's disk grew: now and then its client connects again
	 * and sees the new size */
	if ((uint64_t)client_blocks * BLOCK < cm_size && !migrate_active() && rnd_chance(50))
		oracle_client_connect(p);
	nb = 1 + (unsigned)rnd_below(4);
	b = (unsigned)rnd_below(client_blocks - nb + 1);
	/* a few hot blocks, so that versions pile up */
	if (rnd_chance(400))
		b = (unsigned)rnd_below(8) * 16;
	/* Half the reads on a node that cannot read some sectors go there:
	 * its peers answer them (pread.c), if one may.  Drawn only then, so
	 * that the other profiles' random streams stay as they were. */
	if (t == OP_READ && sim_diskcfg.bad_len[p] && rnd_chance(500)) {
		b = (unsigned)(sim_diskcfg.bad_off[p] / BLOCK);
		if (b > client_blocks - nb)
			b = client_blocks - nb;
	}
	for (unsigned i = 0; i < nb; i++)
		if (branch[node_br[p]][b + i].busy)
			return;
	o = op_new(t, b, nb, p);
	o->buf = calloc(nb, BLOCK);
	if (!o->buf)
		exit(2);
	o->io.buf = o->buf;
	if (t == OP_WRITE) {
		o->id = next_id++;
		o->fua = rnd_chance(200);
		if (o->fua)
			o->io.flags |= REPL_IO_FUA;
		o->io.op = REPL_IO_WRITE;
		for (unsigned i = 0; i < nb; i++) {
			fill(o->buf + (size_t)i * BLOCK, o->id, b + i);
			add_ver(b + i, o, o->id);
		}
	} else if (t == OP_READ) {
		o->io.op = REPL_IO_READ;
	} else {
		o->io.op = t == OP_TRIM ? REPL_IO_TRIM : REPL_IO_ZERO;
		for (unsigned i = 0; i < nb; i++)
			add_ver(b + i, o, 0);
	}
	submit(o, p);
}

static void schedule_next(void);

static void issue_ev(void *a, uint64_t b)
{
	(void)a;
	(void)b;
	if (!running)
		return;
	issue_one();
	schedule_next();
}

static void schedule_next(void)
{
	sim_at(sim_now + 2 * SIM_MS + rnd_below(60 * SIM_MS), -1, issue_ev, NULL, 0);
}

void workload_start(void)
{
	running = true;
	schedule_next();
}

void workload_stop(void)
{
	running = false;
}

unsigned workload_pending(void)
{
	return inflight;
}

static void forget_unflushed(int node)
{
	lost_at[node] = sim_now + 1;
	for (unsigned i = 0; i < n_ops; i++) {
		struct op *o = ops[i];

		if (o->acked && !o->durable)
			o->holders &= (uint8_t)~(1u << node);
	}
}

/* A flush of node's backing file failed and tore what it had not made
 * durable (sim_disk.c, as Linux's page cache does): node no longer holds
 * the writes it acknowledged unflushed. */
static void disk_torn(int node, const char *path)
{
	if (!strcmp(path, "/d/v.img"))
		forget_unflushed(node);
}

void oracle_crash(int node)
{
	forget_unflushed(node);
	oracle_exit(node);
}

/* The node's daemon exited (its host did not: the page cache keeps what
 * it wrote): only its clients' requests lose their answers. */
void oracle_exit(int node)
{
	client_at &= (uint8_t)~(1u << node);
	for (unsigned i = 0; i < n_ops; i++) {
		struct op *o = ops[i];

		if (o->node == node && !o->replies && !o->orphan && o->issued) {
			/* the client's connection died with it: no reply */
			o->orphan = true;
			inflight--;
			for (unsigned k = 0; k < o->nblk; k++)
				branch[o->br][o->blk + k].busy = false;
		}
	}
}

/* Every block of an image (of size bytes) that no request is writing
 * holds what must survive on branch br; a block beyond its size may only
 * be one no write must have reached (the client never used it). */
static void check_image(int br, const uint8_t *d, uint64_t size, const char *kind,
			const char *what)
{
	unsigned have = (unsigned)(size / BLOCK);

	for (unsigned b = 0; b < NBLK_MAX; b++) {
		const struct ver *f;

		if (branch[br][b].busy)
			continue;
		if (b < have) {
			check_block_as(kind, br, b, d + (size_t)b * BLOCK, what);
			continue;
		}
		f = &branch[br][b].v[floor_of(br, b)];
		if (f->op)
			fail(kind, "%s: block %u is beyond its %" PRIu64 " bytes, but version %"
			     PRIu64 " (acknowledged by n%d) must be there", what, b, size, f->id,
			     f->op->node);
	}
}

static void check_replica(int node, const char *kind, const char *what)
{
	uint64_t size;
	const uint8_t *d = sim_disk_view(node, "/d/v.img", &size);

	check_image(node_br[node], d, d ? size : 0, kind, what);
}

/* node's state changed: if it is Primary, a replica in sync with it, or
 * following it clean, holds every write acknowledged so far, those a
 * resync gave it included (split-brain seed 5028: a resync's target that
 * could not confirm the end before the split held them too).  What
 * a later split owes that replica starts there (oracle_fork()): counted
 * only from in-sync acknowledgements, a write acknowledged while its link
 * was cut and resynced before the split was taken for one its Primary
 * wrote after it (split-brain seed 14092). */
void oracle_changed(int node)
{
	struct repl_volume_status st;
	uint8_t in_sync, h;

	repl_volume_status(nodes[node].vol, &st);
	if (strcmp(st.role, "Primary"))
		return;
	holders(node, &in_sync, &h);
	h &= (uint8_t)~(1u << node);	/* itself: a split's new one */
	for (int i = 0; i < SIM_NODES; i++)
		if (h & (1u << i))
			last_sync_seq[i] = ack_counter;
}

/* The split-brain profile (split.c): node was promoted while from, the
 * Primary, went on.  node's replica follows a branch of its own from now
 * on, from's history up to here, where a write node was not in sync for
 * is not owed. */
void oracle_fork(int from, int node)
{
	for (unsigned b = 0; b < NBLK_MAX; b++) {
		const struct blk *src = &branch[node_br[from]][b];
		struct blk *dst = &branch[1][b];

		free(dst->v);
		dst->v = malloc(src->cap * sizeof(*dst->v));
		if (!dst->v)
			exit(2);
		memcpy(dst->v, src->v, src->n * sizeof(*dst->v));
		dst->n = src->n;
		dst->cap = src->cap;
		dst->busy = false;
	}
	fork_seq = last_sync_seq[node];
	node_br[node] = 1;
	trace("oracle: n%d's history forks off n%d's", node, from);
}

/* The split brain was resolved: keep's data survives; victim saved
 * what it wrote since the split in the image d (its discarded file; NULL:
 * none, the engine resolved it by itself) before it was replaced.  Every block of victim's whose newest write that must
 * survive keep does not hold is in d (that version or a newer one). */
void oracle_resolved(int keep, int victim, const uint8_t *d, uint64_t size)
{
	int kb = node_br[keep], vb = node_br[victim];
	unsigned n = 0;
	char what[96];

	snprintf(what, sizeof(what), "n%d's discarded file", victim);
	for (unsigned b = 0; b < NBLK_MAX; b++) {
		const struct ver *f = &branch[vb][b].v[floor_of(vb, b)];

		if (!f->op || f->op->br == kb || (kb == 1 && f->op->ack_seq <= fork_seq))
			continue;
		if (!d)
			fail("split-brain", "the split brain was resolved by itself, but n%d had "
			     "written block %u since the split (version %" PRIu64 "), which n%d "
			     "lacks", victim, b, f->id, keep);
		if ((uint64_t)(b + 1) * BLOCK > size)
			fail("split-brain", "%s has %" PRIu64 " bytes, but block %u, written "
			     "there since the split (version %" PRIu64 "), is beyond", what,
			     size, b, f->id);
		check_block_as("split-brain", vb, b, d + (size_t)b * BLOCK, what);
		n++;
	}
	for (int i = 0; i < SIM_NODES; i++)
		node_br[i] = kb;
	trace("oracle: %s holds the %u block(s) it wrote since the split; n%d's history "
	      "is the volume's again", what, n, keep);
}

/* Requests of the client's that node has not answered yet. */
unsigned oracle_pending_on(int node)
{
	unsigned n = 0;

	for (unsigned i = 0; i < n_ops; i++)
		n += ops[i]->node == node && ops[i]->issued && !ops[i]->replies && !ops[i]->orphan;
	return n;
}

/* A replica just became Primary: it must hold every write that must
 * survive (it was UpToDate). */
void oracle_promoted(int node)
{
	uint64_t g = meta_get(nodes[node].vol->meta)->gen_current;

	check_replica(node, "lost-write", "the data of a replica promoted");
	/* A promotion with every replica connected keeps the generation (as
	 * DRBD's does): it passes to the new Primary when the one that
	 * acknowledged in it is not Primary any more (a handover that the
	 * destination then refused, sim seed 15187); that one acknowledging
	 * in it afterwards is a violation (check_gen()). */
	for (unsigned i = 0; i < n_gens; i++) {
		int o = gens[i].node;
		if (gens[i].gen == g && o != node &&
		    (!nodes[o].alive || repl_volume_role(nodes[o].vol) != REPL_PRIMARY))
			gens[i].node = node;
	}
}

/* The client attaches to node (a migration's destination, the source
 * staying attached), with the size it negotiated at its last connect. */
void oracle_client_attach(int node)
{
	if (client_at & (1u << node) || !nodes[node].alive)
		return;
	client_at |= (uint8_t)(1u << node);
	repl_volume_set_local_client(nodes[node].vol, (uint64_t)client_blocks * BLOCK);
	trace("client: attached to n%d", node);
}

void oracle_client_detach(int node)
{
	if (!(client_at & (1u << node)))
		return;
	client_at &= (uint8_t)~(1u << node);
	if (nodes[node].alive)
		repl_volume_set_local_client(nodes[node].vol, 0);
	trace("client: detached from n%d", node);
}

/* Its requests go to node from now on (attached there). */
void oracle_client_switch(int node)
{
	oracle_client_attach(node);
	client_node = node;
}

int oracle_client_node(void)
{
	return client_node;
}

/* The client (re)connects to node, the Primary, and takes the size it
 * exports; the engine there knows it uses that much (an NBD client's
 * size, for the links between replicas of different sizes). */
void oracle_client_connect(int node)
{
	struct repl_volume_status st;

	for (int i = 0; i < SIM_NODES; i++)
		if (i != node)
			oracle_client_detach(i);
	repl_volume_status(nodes[node].vol, &st);
	client_blocks = (unsigned)(st.export_size / BLOCK);
	if (client_blocks > NBLK_MAX)
		client_blocks = NBLK_MAX;
	client_node = node;
	client_at |= (uint8_t)(1u << node);
	repl_volume_set_local_client(nodes[node].vol, (uint64_t)client_blocks * BLOCK);
	trace("client: connected to n%d, %u blocks", node, client_blocks);
}

/* The Primary role moved to node by a handover, with its generation:
 * node acknowledges in it from now on, its old Primary may not. */
void oracle_role_moved(int node)
{
	uint64_t g = meta_get(nodes[node].vol->meta)->gen_current;

	for (unsigned i = 0; i < n_gens; i++)
		if (gens[i].gen == g)
			gens[i].node = node;
	oracle_promoted(node);
}

/* Does node (its status st) say it is connected to the Primary, and the
 * Primary that node is in sync? */
static bool in_sync_with_primary(const struct repl_volume_status *st, int node)
{
	int p = cm_primary;
	bool conn = false;

	if (p < 0 || !nodes[p].alive)
		return false;
	for (unsigned k = 0; k < st->n_peers; k++)
		conn |= st->peers[k].node[1] - '0' == p && st->peers[k].link == REPL_LINK_CONNECTED;
	return conn && (in_sync_holders(p) & (1u << node));
}

/* What status says of each replica agrees with what it holds: one that
 * says UpToDate, without power_lost, or partial, and that the cluster has
 * not recorded Outdated (one the cluster manager may promote) holds every
 * write that must survive, on every block no request is writing.  Not
 * while its disk's loss is not yet heard of (a flush that failed on a
 * worker, its completion not yet taken by the loop: iopool.c): its status
 * cannot know yet, and a promotion's sync fails then. */
void oracle_check_status(void)
{
	for (int i = 0; i < (int)n_replicas; i++) {
		struct repl_volume_status st;
		char what[96];

		if (!nodes[i].alive)
			continue;
		repl_volume_status(nodes[i].vol, &st);
		if ((strcmp(st.disk, "UpToDate") || st.power_lost) && !st.partial)
			continue;
		if (cm_outdated_node(i) ||
		    (nodes[i].vol->pool && repl__iopool_loss_unheard(nodes[i].vol->pool)))
			continue;
		/* Static mode has no fencing: a Secondary cut off from its
		 * Primary says UpToDate without knowing better (as DRBD's
		 * does); only one in sync with the Primary must be. */
		if (static_mode && strcmp(st.role, "Primary") && !in_sync_with_primary(&st, i))
			continue;
		snprintf(what, sizeof(what), "n%d (%s, status %s)", i, st.role,
			 st.partial ? "partial" : "UpToDate");
		check_replica(i, "status", what);
	}
}

/* After every fault healed and the cluster settled: every request was
 * answered, the Primary's data is right, every replica equals it. */
void oracle_final(void)
{
	int p = cm_primary;
	uint64_t size;
	const uint8_t *pd;

	for (unsigned i = 0; i < n_ops; i++) {
		struct op *o = ops[i];
		if (!o->orphan && !o->replies)
			fail("reply", "%s #%" PRIu64 " to n%d (issued at %.3f s) never answered",
			     op_names[o->type], o->seq, o->node, (double)o->issued / 1e9);
	}
	check_replica(p, "lost-write", "the Primary's data at the end");
	pd = sim_disk_view(p, "/d/v.img", &size);
	for (int i = 0; i < (int)n_replicas; i++) {
		uint64_t s2;
		const uint8_t *d = sim_disk_view(i, "/d/v.img", &s2);

		if (i == p)
			continue;
		if (s2 != size || memcmp(d, pd, size)) {
			uint64_t off = 0;
			while (off < size && off < s2 && d[off] == pd[off])
				off++;
			fail("diverged", "after heal and resync n%d differs from the Primary n%d "
			     "at byte %" PRIu64 " (block %" PRIu64 ")", i, p, off, off / BLOCK);
		}
	}
}
