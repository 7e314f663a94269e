/* nbd_meta.c: the NBD metadata contexts this server offers, as a table
 * (name, how to list the ones a volume has, how to compute extents), and
 * the pieces of the protocol around them: the query of
 * NBD_OPT_LIST/SET_META_CONTEXT matched against the table, and the
 * structured reply to NBD_CMD_BLOCK_STATUS.  A new context is a new row.
 *
 * base:allocation comes from SEEK_DATA/SEEK_HOLE on a file backing: a hole
 * is NBD_STATE_HOLE|NBD_STATE_ZERO (a punched or never written region
 * reads as zeroes), data is 0.  A block device says nothing we could
 * trust, so all of it is allocated (0), which the protocol allows.  The
 * status is the local replica's: only a Primary (or a migration window)
 * serves NBD, and its replica is the one clients read.
 *
 * Queries: a context's full name selects it; with LIST a bare namespace
 * ("base:") or no query lists every context of the export.  A query
 * without a namespace is malformed (NBD_REP_ERR_INVALID); one that names
 * nothing we have selects nothing, which the protocol says is no error. */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cbt.h"
#include "nbd_meta.h"
#include "repl_int.h"
#include "util.h"

typedef void (*meta_add_fn)(void *ctx, const char *name);

struct meta_kind {
	const char *name;	/* the context's name, or a family's prefix */
	bool family;		/* name is a prefix; list() gives the members */
	void (*list)(struct repl_volume *vol, meta_add_fn add, void *ctx);
	int (*extents)(struct repl_volume *vol, const char *name, uint64_t off,
		       uint32_t len, struct nbd_extent *e, unsigned max, unsigned *n);
};

static int allocation_extents(struct repl_volume *vol, const char *name, uint64_t off,
			      uint32_t len, struct nbd_extent *e, unsigned max, unsigned *n)
{
	(void)name;
	return repl__nbd_meta_allocation(vol->fd, vol->blockdev, off, len, e, max, n);
}

static const struct meta_kind kinds[] = {
	{ "base:allocation", false, NULL, allocation_extents },
	/* changed since a checkpoint (cbt.c): flag 1 = changed */
	{ CBT_CONTEXT_PREFIX, true, repl__cbt_contexts, repl__cbt_extents },
};
#define N_KINDS (sizeof(kinds) / sizeof(kinds[0]))

/* ---- negotiation ---------------------------------------------------------- */

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return be32toh(v);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

uint32_t repl__nbd_meta_export(const uint8_t *d, uint32_t len, char *export,
			       const char **why)
{
	uint32_t n;

	if (len < 8) {
		*why = "option too short";
		return NBD_REP_ERR_INVALID;
	}
	n = get32(d);
	if (n > NBD_MAX_NAME_LEN || n > len - 8) {
		*why = "bad export name length";
		return NBD_REP_ERR_INVALID;
	}
	memcpy(export, d + 4, n);
	export[n] = '\0';
	if (strlen(export) != n) {
		*why = "NUL in export name";
		return NBD_REP_ERR_INVALID;
	}
	return 0;
}

struct adder {
	struct nbd_meta_sel *sel;
	unsigned kind;
	const char *prefix;	/* add only names starting with it */
	size_t prefix_len;
	bool too_many;
};

static void add_ctx(void *arg, const char *name)
{
	struct adder *a = arg;
	struct nbd_meta_sel *sel = a->sel;

	if (strncmp(name, a->prefix, a->prefix_len) || strlen(name) >= NBD_META_NAME_MAX)
		return;
	for (unsigned i = 0; i < sel->n; i++)
		if (!strcmp(sel->ctx[i].name, name))
			return;		/* asked for twice: selected once */
	if (sel->n == NBD_META_MAX) {
		a->too_many = true;
		return;
	}
	sel->ctx[sel->n].kind = a->kind;
	strcpy(sel->ctx[sel->n].name, name);
	sel->n++;
}

/* Every context of vol starting with prefix (whole names only unless
 * wildcard). */
static void match(struct repl_volume *vol, const char *q, bool wildcard, struct adder *a)
{
	size_t qlen = strlen(q);

	for (unsigned k = 0; k < N_KINDS; k++) {
		a->kind = k;
		a->prefix = q;
		a->prefix_len = wildcard ? qlen : 0;
		if (!kinds[k].family) {
			if (wildcard ? !strncmp(kinds[k].name, q, qlen) : !strcmp(kinds[k].name, q))
				add_ctx(a, kinds[k].name);
			continue;
		}
		if (wildcard) {
			kinds[k].list(vol, add_ctx, a);
		} else if (!strncmp(q, kinds[k].name, strlen(kinds[k].name))) {
			/* a member by its full name: only if the volume has it */
			struct adder one = *a;
			struct nbd_meta_sel found = { .n = 0 };
			one.sel = &found;
			one.prefix = q;
			one.prefix_len = qlen + 1;	/* the NUL too: exactly q */
			kinds[k].list(vol, add_ctx, &one);
			if (found.n)
				add_ctx(a, q);
		}
	}
}

uint32_t repl__nbd_meta_query(struct repl_volume *vol, bool list, const uint8_t *d,
			      uint32_t len, struct nbd_meta_sel *sel, const char **why)
{
	struct adder a = { .sel = sel };
	uint32_t err, n, nq, pos;
	char q[NBD_META_NAME_MAX];

	sel->n = 0;
	err = repl__nbd_meta_export(d, len, sel->export, why);
	if (err)
		return err;
	pos = 4 + (uint32_t)strlen(sel->export);
	nq = get32(d + pos);
	pos += 4;
	/* the whole option must be well formed before anything is selected */
	for (uint32_t i = 0, p = pos; i < nq; i++) {
		if (len - p < 4 || (n = get32(d + p)) > len - p - 4) {
			*why = "bad query list";
			return NBD_REP_ERR_INVALID;
		}
		p += 4 + n;
		if (i + 1 == nq && p != len) {
			*why = "bytes after the last query";
			return NBD_REP_ERR_INVALID;
		}
	}
	if (nq == 0 && pos != len) {
		*why = "bytes after an empty query list";
		return NBD_REP_ERR_INVALID;
	}
	if (!vol) {
		*why = "no such export";
		return NBD_REP_ERR_UNKNOWN;
	}
	if (nq == 0 && list)
		match(vol, "", true, &a);
	for (uint32_t i = 0; i < nq; i++) {
		n = get32(d + pos);
		pos += 4;
		if (n == 0 || !memchr(d + pos, ':', n) || memchr(d + pos, '\0', n)) {
			sel->n = 0;
			*why = "a query must start with a namespace (such as \"base:\")";
			return NBD_REP_ERR_INVALID;
		}
		if (n < sizeof(q)) {	/* longer: names no context of ours */
			bool bare;
			memcpy(q, d + pos, n);
			q[n] = '\0';
			bare = q[n - 1] == ':';
			/* SET takes whole names; LIST also namespaces */
			if (!bare || list)
				match(vol, q, bare, &a);
		}
		pos += n;
	}
	if (a.too_many && !list) {
		sel->n = 0;
		*why = "too many metadata contexts";
		return NBD_REP_ERR_TOO_BIG;
	}
	return 0;
}

int repl__nbd_meta_option(struct repl_engine *eng, uint32_t opt, const uint8_t *d,
			  uint32_t len, bool structured, struct nbd_meta_sel **cur,
			  int (*reply)(void *arg, uint32_t opt, uint32_t type, const void *data,
				       uint32_t len),
			  void *arg)
{
	bool list = opt == NBD_OPT_LIST_META_CONTEXT;
	char name[NBD_MAX_NAME_LEN + 1];
	struct nbd_meta_sel *sel;
	const char *why;
	uint32_t err;

	if (!structured) {
		why = "structured replies not negotiated";
		return reply(arg, opt, NBD_REP_ERR_INVALID, why, (uint32_t)strlen(why));
	}
	if (!(sel = calloc(1, sizeof(*sel))))
		return -ENOMEM;
	err = repl__nbd_meta_export(d, len, name, &why);
	if (!err)
		err = repl__nbd_meta_query(repl_volume_find(eng, name), list, d, len, sel, &why);
	if (err) {
		free(sel);
		return reply(arg, opt, err, why, (uint32_t)strlen(why));
	}
	for (unsigned i = 0; i < sel->n; i++) {
		uint8_t buf[4 + NBD_META_NAME_MAX];
		uint32_t n = (uint32_t)strlen(sel->ctx[i].name);
		/* LIST: the id is reserved and zero */
		put32(buf, list ? 0 : i + 1);
		memcpy(buf + 4, sel->ctx[i].name, n);
		if (reply(arg, opt, NBD_REP_META_CONTEXT, buf, 4 + n) < 0) {
			free(sel);
			return -ENOMEM;
		}
	}
	if (list) {
		free(sel);
	} else {
		free(*cur);	/* a SET replaces what an earlier one chose */
		*cur = sel;
	}
	return reply(arg, opt, NBD_REP_ACK, NULL, 0);
}

/* ---- block status ------------------------------------------------------- */

/* Appends [len bytes with flags] to e, merging with the last one. */
static void push(struct nbd_extent *e, unsigned *n, uint32_t len, uint32_t flags)
{
	if (*n && e[*n - 1].flags == flags) {
		e[*n - 1].len += len;
		return;
	}
	e[*n] = (struct nbd_extent){ len, flags };
	(*n)++;
}

int repl__nbd_meta_allocation(int fd, bool blockdev, uint64_t off, uint32_t len,
			      struct nbd_extent *e, unsigned max, unsigned *n)
{
	uint64_t pos = off, end = off + len;

	*n = 0;
	if (blockdev) {
		push(e, n, len, 0);
		return 0;
	}
	while (pos < end) {
		off_t d = lseek(fd, (off_t)pos, SEEK_DATA), h;
		uint64_t stop;
		uint32_t flags;

		if (d < 0 && errno != ENXIO)
			break;			/* unknown: allocated, below */
		if (d < 0 || (uint64_t)d > pos) {
			/* no data to the end of the file (ENXIO), or until d */
			stop = d < 0 ? end : MIN((uint64_t)d, end);
			flags = NBD_STATE_HOLE | NBD_STATE_ZERO;
		} else {
			h = lseek(fd, (off_t)pos, SEEK_HOLE);
			if (h < 0 || (uint64_t)h <= pos)
				break;
			stop = MIN((uint64_t)h, end);
			flags = 0;
		}
		if (*n == max && e[*n - 1].flags != flags)
			return 0;		/* full: the client asks for the rest */
		push(e, n, (uint32_t)(stop - pos), flags);
		pos = stop;
	}
	if (pos < end) {
		if (*n == max && e[*n - 1].flags != 0)
			return 0;
		push(e, n, (uint32_t)(end - pos), 0);
	}
	return 0;
}

int repl__nbd_meta_reply(struct repl_volume *vol, const struct nbd_meta_sel *sel,
			 uint64_t cookie, uint64_t off, uint32_t len, bool req_one,
			 void **bufp, size_t *buflen)
{
	const size_t hdr = sizeof(struct nbd_structured_reply);
	unsigned max = req_one ? 1 : NBD_META_EXTENTS_MAX;
	struct nbd_extent *e;
	uint8_t *buf, *p;
	int r = 0;

	if (sel->n == 0)
		return -EINVAL;
	e = malloc(max * sizeof(*e));
	buf = malloc(sel->n * (hdr + 4 + (size_t)max * 8));
	if (!e || !buf) {
		free(e);
		free(buf);
		return -ENOMEM;
	}
	p = buf;
	for (unsigned i = 0; i < sel->n && r == 0; i++) {
		const struct meta_kind *k = &kinds[sel->ctx[i].kind];
		struct nbd_structured_reply h;
		unsigned n = 0;

		r = k->extents(vol, sel->ctx[i].name, off, len, e, max, &n);
		if (r == 0 && n == 0)
			r = -EIO;	/* every chunk describes at least one extent */
		if (r < 0)
			break;
		h = (struct nbd_structured_reply){
			.magic = htobe32(NBD_STRUCTURED_REPLY_MAGIC),
			.flags = htobe16(i + 1 == sel->n ? NBD_REPLY_FLAG_DONE : 0),
			.type = htobe16(NBD_REPLY_TYPE_BLOCK_STATUS),
			.cookie = htobe64(cookie),
			.length = htobe32(4 + 8 * n),
		};
		memcpy(p, &h, hdr);
		p += hdr;
		put32(p, i + 1);
		p += 4;
		for (unsigned j = 0; j < n; j++, p += 8) {
			put32(p, e[j].len);
			put32(p + 4, e[j].flags);
		}
	}
	free(e);
	if (r < 0) {
		free(buf);
		return r;
	}
	*bufp = buf;
	*buflen = (size_t)(p - buf);
	return 0;
}
