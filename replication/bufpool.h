/* bufpool.h: large I/O buffers kept for reuse (see bufpool.c). */
#ifndef REPL_BUFPOOL_H
#define REPL_BUFPOOL_H

#include <stddef.h>

/* A buffer of at least len bytes, or NULL (out of memory).  Small ones
 * come straight from malloc.  Any thread. */
void *repl__buf_get(size_t len);
/* Gives a buffer from repl__buf_get() (or any malloc'ed one) back: kept
 * for the next large request, or freed.  NULL is a no-op.  Any thread.
 * Passing a repl__buf_get() buffer to plain free() is also correct. */
void repl__buf_put(void *p);
/* Frees every kept buffer (at engine teardown). */
void repl__buf_drain(void);

#endif
