/* gate.c: how clients reach a volume.  The NBD server finds it by name
 * here and submits its I/O here (repl__volume_io); so do the modules that
 * hold I/O and later let it go (the quorum below, the migration window).
 * Reads only look at this replica (replicate.c's repl__rep_read), unless
 * a Primary's disk fails one that a peer can answer (pread.c).  A
 * write is held while a Primary with peers lacks quorum, waits in a
 * Secondary's migration window or behind a handover (window.c), is
 * replicated by a Primary with peers (replicate.c) and otherwise goes
 * straight to the workers. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "log.h"
#include "peer.h"
#include "pread.h"
#include "repl_int.h"

/* The engine's volumes, and the one an NBD client names. */
struct repl_volume *repl_volume_first(struct repl_engine *eng) { return eng->volumes; }
struct repl_volume *repl_volume_next(struct repl_volume *vol) { return vol->next; }

struct repl_volume *repl_volume_find(struct repl_engine *eng, const char *name)
{
	for (struct repl_volume *v = eng->volumes; v; v = v->next)
		if (strcmp(v->name, name) == 0)
			return v;
	return NULL;
}

/* What only looks at the local replica (a read, a read-ahead, a block
 * status lookup): it is not replicated and needs no role. */
static bool io_reads(enum repl_io_op op)
{
	return op == REPL_IO_READ || op == REPL_IO_CACHE || op == REPL_IO_LOOKUP;
}

void repl__volume_io(struct repl_volume *vol, struct repl_io *io)
{
	if (io_reads(io->op)) {
		/* A Secondary whose data is not UpToDate (one that stepped
		 * down and starts over, say) has nothing a client may read;
		 * its NBD clients are being dropped. */
		if (vol->role != REPL_PRIMARY && vol->disk_state != GEN_DISK_UPTODATE) {
			io->result = -EIO;
			io->done(io);
			return;
		}
		if (vol->role == REPL_PRIMARY && vol->n_peers)
			repl__pread_arm(vol, io);
		repl__rep_read(vol, io);
		return;
	}
	if (!vol->n_peers) {
		repl__iopool_submit(vol->pool, io);
		return;
	}
	/* A Primary without quorum holds everything.  A Secondary's clients
	 * are a migration window's: their writes wait for the role; a
	 * Primary handing the role over keeps new writes. */
	if (repl__rep_hold(vol, io))
		return;
	if (vol->role != REPL_PRIMARY)
		repl__window_io(vol, io);
	else if (!repl__handing_over(vol, io))
		repl__rep_io(vol, io);
}

void repl_volume_set_quorate(struct repl_volume *vol, bool quorate)
{
	struct repl_io *io, *next;

	if (vol->quorate == quorate)
		return;
	vol->quorate = quorate;
	if (!quorate) {
		if (vol->role == REPL_PRIMARY && vol->n_peers)
			plog(LOG_WARNING, vol->name, "partition lost quorum: I/O frozen "
			     "until it returns");
		repl__changed(vol);
		return;
	}
	plog(LOG_NOTICE, vol->name, "quorum is back: I/O resumes");
	repl__rep_thaw(vol);
	for (io = repl__rep_take_held(vol); io; io = next) {
		next = io->next;
		repl__volume_io(vol, io);
	}
	repl__changed(vol);
}

