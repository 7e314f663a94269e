/* pread.h: a Primary's client read that its own disk failed, answered
 * from a peer that holds every acknowledged write there (pread.c), as
 * DRBD reads from its peer after a local read error; and the peer's side,
 * which reads for it. */
#ifndef REPL_PREAD_H
#define REPL_PREAD_H

#include <stdint.h>

struct peer;
struct repl_io;
struct repl_volume;
struct wire_write;

/* Before a client's READ on a Primary goes to the disk (gate.c): if a
 * peer could answer it, a failure comes back to pread.c on the loop
 * thread instead of to the client. */
void repl__pread_arm(struct repl_volume *vol, struct repl_io *io);
/* A peer asks for [off, off + len) of our replica (READ_REQ). */
void repl__pread_on_request(struct peer *p, uint64_t seq, uint64_t off, uint32_t len);
/* Its answer to our READ_REQ seq: the bytes (w), or a failure (w NULL,
 * err a negative errno). */
void repl__pread_on_answer(struct peer *p, uint64_t seq, const struct wire_write *w, int err);
/* The link to p went: what it was asked is asked elsewhere, or fails. */
void repl__pread_peer_down(struct peer *p);
/* Every read waiting for a peer fails (the volume closes). */
void repl__pread_free(struct repl_volume *vol);

#endif
