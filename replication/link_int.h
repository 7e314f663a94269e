/* link_int.h: what link.c and link_accept.c, the two halves of the link
 * module, tell each other; nothing outside the module includes it. */
#ifndef REPL_LINK_INT_H
#define REPL_LINK_INT_H

#include "link.h"

/* link.c: l failed with r (-errno): its owner hears of it, or, without
 * one, it is refused (below) and closed. */
void repl__link_fail(struct peer_link *l, int r);

/* link_accept.c: l, accepted, proved the key: off the pending list. */
void repl__link_unpend(struct peer_link *l);
/* l, accepted, never got an owner and goes for why: logged, unpended. */
void repl__link_refused(struct peer_link *l, const char *why);

#endif
