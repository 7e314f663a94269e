/* nbd_notify.h: the notify list (nbd_notify.c), how a volume worker hands
 * an NBD connection back to the loop thread. */
#ifndef REPL_NBD_NOTIFY_H
#define REPL_NBD_NOTIFY_H

struct nbd_conn;
struct repl_engine;

/* Any thread, with c->lock held (so the loop cannot free c meanwhile):
 * puts c on the list, once until the loop takes it off (c->notified). */
void repl__nbd_conn_notify_locked(struct nbd_conn *c);
/* Loop thread: the engine's list and its eventfd in the loop; service(c)
 * runs on the loop for every connection taken off the list.  0 or -errno.
 * repl__nbd_notify_free() (repl_int.h) undoes it. */
int repl__nbd_notify_open(struct repl_engine *eng, void (*service)(struct nbd_conn *c));

#endif
