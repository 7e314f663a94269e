/* voldb.c: see voldb.h.  The set is an array sorted by name (a cluster has
 * tens of volumes, not millions); the directory stays open so that files
 * are written and renamed relative to it and the directory itself can be
 * fsync'ed. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "util.h"
#include "voldb.h"

#define SUFFIX ".vol"
#define TMP_SUFFIX ".tmp"
#define PATH_NAME_MAX (CLMSG_NAME_MAX + 16)	/* ".NAME.vol.tmp" and NUL */

/* A creation (or a move, voldb_move) this node sent that has not come
 * back through the group. */
struct voldb_sent {
	char name[CLMSG_NAME_MAX];
	uint16_t port;
	uint64_t version;
};

struct voldb {
	char *dir;		/* NULL: memory only */
	int dirfd;
	struct voldef *v;	/* sorted by name */
	size_t n, cap;
	struct voldb_sent sent[VOLDB_SENT_MAX];
	size_t n_sent;
};

int voldb_new(const char *dir, struct voldb **out)
{
	struct voldb *db = calloc(1, sizeof(*db));

	if (!db)
		return -ENOMEM;
	db->dirfd = -1;
	if (dir) {
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			goto fail_errno;
		db->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (db->dirfd < 0)
			goto fail_errno;
		db->dir = strdup(dir);
		if (!db->dir) {
			errno = ENOMEM;
			goto fail_errno;
		}
	}
	*out = db;
	return 0;
fail_errno:;
	int err = -errno;
	voldb_free(db);
	return err;
}

void voldb_free(struct voldb *db)
{
	if (!db)
		return;
	if (db->dirfd >= 0)
		close(db->dirfd);
	free(db->dir);
	free(db->v);
	free(db);
}

/* Sets *why (a static sentence for people) and returns err. */
static int fail(const char **why, const char *msg, int err)
{
	*why = msg;
	return err;
}

/* ---- the set ------------------------------------------------------------ */

/* Index of name, or (if absent, *found false) where it would go. */
static size_t lookup(const struct voldb *db, const char *name, bool *found)
{
	size_t lo = 0, hi = db->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(db->v[mid].name, name);
		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

static int insert_at(struct voldb *db, size_t i, const struct voldef *v)
{
	if (db->n == db->cap) {
		size_t cap = db->cap ? db->cap * 2 : 16;
		struct voldef *nv = realloc(db->v, cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		db->v = nv;
		db->cap = cap;
	}
	memmove(&db->v[i + 1], &db->v[i], (db->n - i) * sizeof(*db->v));
	db->v[i] = *v;
	db->n++;
	return 0;
}

const struct voldef *voldb_find(const struct voldb *db, const char *name)
{
	bool found;
	size_t i = lookup(db, name, &found);

	return found ? &db->v[i] : NULL;
}

size_t voldb_count(const struct voldb *db)
{
	return db->n;
}

const struct voldef *voldb_at(const struct voldb *db, size_t i)
{
	return i < db->n ? &db->v[i] : NULL;
}

/* ---- the merge rule ------------------------------------------------------ */

static int cmp_u64(uint64_t a, uint64_t b)
{
	return (a > b) - (a < b);
}

/* Last resort between two different definitions with the same version and
 * origin: their canonical encodings. */
static int cmp_encoding(const struct voldef *a, const struct voldef *b)
{
	struct clmsg ma = { .type = CLMSG_VOLDEF, .u.voldef = *a };
	struct clmsg mb = { .type = CLMSG_VOLDEF, .u.voldef = *b };
	uint8_t ea[CLMSG_MAX_LEN] = { 0 }, eb[CLMSG_MAX_LEN] = { 0 };
	ssize_t la = clmsg_encode(&ma, ea, sizeof(ea));
	ssize_t lb = clmsg_encode(&mb, eb, sizeof(eb));
	int c = memcmp(ea, eb, sizeof(ea));

	return c ? (c > 0) - (c < 0) : cmp_u64((uint64_t)la, (uint64_t)lb);
}

int voldef_cmp(const struct voldef *a, const struct voldef *b)
{
	int c = cmp_u64(a->version, b->version);

	if (!c)
		c = (int)a->deleted - (int)b->deleted;
	/* Two resizes made at once: the larger wins everywhere, so that a
	 * replica that already grew to it is never left larger than its
	 * volume (a volume only grows). */
	if (!c)
		c = cmp_u64(a->size, b->size);
	if (!c)
		c = cmp_u64(a->origin, b->origin);
	if (!c)
		c = cmp_encoding(a, b);
	return c;
}

/* The decision alone; *slot is where the definition is or goes. */
static int decide(const struct voldb *db, const struct voldef *in, size_t *slot, bool *found)
{
	int c;

	if (voldef_check(in, NULL) < 0)
		return -EINVAL;
	*slot = lookup(db, in->name, found);
	if (!*found)
		return VOLDB_NEW;
	c = voldef_cmp(in, &db->v[*slot]);
	return c > 0 ? VOLDB_UPDATED : c == 0 ? VOLDB_SAME : VOLDB_OLDER;
}

/* A definition of that name came back (or came from elsewhere), at the
 * version this node sent or a later one: what it sent is settled, whichever
 * won.  An older one (a member's copy sent when the group changed) is not
 * the answer. */
static void came_back(struct voldb *db, const struct voldef *in)
{
	for (size_t i = 0; i < db->n_sent; i++)
		if (strcmp(db->sent[i].name, in->name) == 0 &&
		    in->version >= db->sent[i].version) {
			db->sent[i] = db->sent[--db->n_sent];
			return;
		}
}

/* The decision carried out (any of enum voldb_merge); a creation of that
 * name this node sent is settled either way. */
static int apply(struct voldb *db, int r, size_t slot, const struct voldef *in)
{
	came_back(db, in);
	if (r == VOLDB_NEW) {
		int err = insert_at(db, slot, in);
		if (err < 0)
			return err;
	} else if (r == VOLDB_UPDATED) {
		db->v[slot] = *in;
	}
	return r;
}

int voldb_merge(struct voldb *db, const struct voldef *in)
{
	size_t slot;
	bool found;
	int r = decide(db, in, &slot, &found);

	return r < 0 ? r : apply(db, r, slot, in);
}

/* ---- the file format ----------------------------------------------------- */

int voldef_format(const struct voldef *v, char *buf, size_t cap)
{
	char uuid[37], nodes[CLMSG_NODES_MAX * CLMSG_NAME_MAX] = "";
	int n;

	uuid_format(v->uuid, uuid);
	for (size_t i = 0; i < v->n_nodes && i < CLMSG_NODES_MAX; i++) {
		if (i)
			strcat(nodes, ",");
		strncat(nodes, v->nodes[i], CLMSG_NAME_MAX - 1);
	}
	n = snprintf(buf, cap,
		     "# replagent volume definition, written by replagentd: do not edit\n"
		     "format = 1\nname = %s\nuuid = %s\nsize = %" PRIu64 "\nnodes = %s\n"
		     "port = %u\nversion = %" PRIu64 "\norigin = %" PRIu32 "\ndeleted = %s\n",
		     v->name, uuid, v->size, nodes, (unsigned)v->port, v->version, v->origin,
		     v->deleted ? "yes" : "no");
	if (n < 0)
		return -EINVAL;
	return (size_t)n < cap ? n : -ENOBUFS;
}

static int parse_nodes(char *s, struct voldef *v)
{
	char *save = NULL;

	v->n_nodes = 0;
	if (!*s || s[strlen(s) - 1] == ',' || strstr(s, ",,") || *s == ',')
		return -EINVAL;
	for (char *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (v->n_nodes == CLMSG_NODES_MAX || strlen(t) >= CLMSG_NAME_MAX)
			return -EINVAL;
		strcpy(v->nodes[v->n_nodes++], t);
	}
	return 0;
}

static int parse_bool(const char *s, bool *out)
{
	if (!strcmp(s, "yes") || !strcmp(s, "no")) {
		*out = s[0] == 'y';
		return 0;
	}
	return -EINVAL;
}

enum key { K_FORMAT, K_NAME, K_UUID, K_SIZE, K_NODES, K_PORT, K_VERSION, K_ORIGIN,
	   K_DELETED, K_COUNT };
static const char *const keys[K_COUNT] = {
	"format", "name", "uuid", "size", "nodes", "port", "version", "origin", "deleted",
};

static int parse_value(enum key k, char *val, struct voldef *v)
{
	uint64_t u = 0;

	switch (k) {
	case K_FORMAT:
		return parse_uint(val, 1, 1, &u);
	case K_NAME:
		if (strlen(val) >= CLMSG_NAME_MAX)
			return -EINVAL;
		strcpy(v->name, val);
		return 0;
	case K_UUID:
		return parse_uuid(val, v->uuid);
	case K_SIZE:
		return parse_uint(val, 1, INT64_MAX, &v->size);
	case K_NODES:
		return parse_nodes(val, v);
	case K_PORT:
		if (parse_uint(val, 1, UINT16_MAX, &u) < 0)
			return -EINVAL;
		v->port = (uint16_t)u;
		return 0;
	case K_VERSION:
		return parse_uint(val, 1, UINT64_MAX, &v->version);
	case K_ORIGIN:
		if (parse_uint(val, 1, UINT32_MAX, &u) < 0)
			return -EINVAL;
		v->origin = (uint32_t)u;
		return 0;
	case K_DELETED:
		return parse_bool(val, &v->deleted);
	default:
		return -EINVAL;
	}
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

static int find_key(const char *k)
{
	for (int i = 0; i < K_COUNT; i++)
		if (!strcmp(k, keys[i]))
			return i;
	return -1;
}

/* One "key = value" line (comments and blank lines were skipped): 0, or
 * -EINVAL with the reason in err. */
static int parse_line(char *line, unsigned lineno, struct voldef *v, unsigned *seen,
		      char *err, size_t errlen)
{
	char *eq = strchr(line, '=');
	const char *why = NULL;
	int k;

	if (!eq) {
		snprintf(err, errlen, "line %u: expected key = value", lineno);
		return -EINVAL;
	}
	*eq = '\0';
	line = trim(line);
	k = find_key(line);
	if (k < 0)
		why = "unknown key";
	else if (*seen & (1u << k))
		why = "given twice";
	else if (parse_value((enum key)k, trim(eq + 1), v) < 0)
		why = "bad value";
	if (!why) {
		*seen |= 1u << k;
		return 0;
	}
	snprintf(err, errlen, "line %u: %.32s: %s", lineno, line, why);
	return -EINVAL;
}

int voldef_parse(const char *text, struct voldef *out, char *err, size_t errlen)
{
	char buf[VOLDB_FILE_MAX + 1], *line = buf, *nl;
	unsigned lineno = 0, seen = 0;
	const char *why = NULL;

	memset(out, 0, sizeof(*out));
	if (strlen(text) > VOLDB_FILE_MAX) {
		snprintf(err, errlen, "file too large");
		return -EINVAL;
	}
	strcpy(buf, text);
	for (; line; line = nl) {
		nl = strchr(line, '\n');
		if (nl)
			*nl++ = '\0';
		lineno++;
		char *t = trim(line);
		if (*t && *t != '#' && parse_line(t, lineno, out, &seen, err, errlen) < 0)
			return -EINVAL;
	}
	for (int k = 0; k < K_COUNT; k++) {
		if (!(seen & (1u << k))) {
			snprintf(err, errlen, "missing key %s", keys[k]);
			return -EINVAL;
		}
	}
	if (voldef_check(out, &why) < 0) {
		snprintf(err, errlen, "%s", why);
		return -EINVAL;
	}
	return 0;
}

/* ---- files ----------------------------------------------------------------- */

/* .NAME.vol.tmp, fsync, rename to NAME.vol, fsync the directory. */
static int write_file(struct voldb *db, const struct voldef *v)
{
	char text[VOLDB_FILE_MAX], tmp[PATH_NAME_MAX], path[PATH_NAME_MAX];
	int len = voldef_format(v, text, sizeof(text));

	if (len < 0)
		return len;
	snprintf(tmp, sizeof(tmp), ".%s" SUFFIX TMP_SUFFIX, v->name);
	snprintf(path, sizeof(path), "%s" SUFFIX, v->name);
	return file_replace_at(db->dirfd, path, tmp, text, (size_t)len);
}

int voldb_accept(struct voldb *db, const struct voldef *in)
{
	size_t slot;
	bool found;
	int r = decide(db, in, &slot, &found);

	if (r != VOLDB_NEW && r != VOLDB_UPDATED)
		return r < 0 ? r : apply(db, r, slot, in);
	if (db->dirfd >= 0) {
		int err = write_file(db, in);
		if (err < 0) {
			came_back(db, in);
			return err;
		}
	}
	return apply(db, r, slot, in);
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* One NAME.vol: 0 (loaded), or -errno (logged, skipped). */
static int load_one(struct voldb *db, const char *fname)
{
	char text[VOLDB_FILE_MAX + 1], err[128];
	const char *why = NULL;
	struct voldef v;
	size_t base = strlen(fname) - strlen(SUFFIX);
	int r;

	r = file_read_text_at(db->dirfd, fname, text, sizeof(text), &why);
	if (!r && voldef_parse(text, &v, err, sizeof(err)) < 0)
		r = -EINVAL, why = err;
	if (!r && (strlen(v.name) != base || strncmp(v.name, fname, base)))
		r = -EINVAL, why = "the name inside is not the file's name";
	if (!r && (r = voldb_merge(db, &v)) >= 0)
		return 0;
	log_warn("%s/%s: %s; skipped", db->dir, fname, why ? why : strerror(-r));
	return r;
}

int voldb_load(struct voldb *db)
{
	DIR *d;
	struct dirent *e;
	int skipped = 0, fd;

	if (db->dirfd < 0)
		return 0;
	fd = openat(db->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		int err = -errno;
		if (fd >= 0)
			close(fd);
		return err;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (e->d_name[0] == '.' && has_suffix(e->d_name, SUFFIX TMP_SUFFIX)) {
			log_notice("%s/%s: removing an unfinished write", db->dir, e->d_name);
			unlinkat(db->dirfd, e->d_name, 0);
		} else if (e->d_name[0] == '.' || !has_suffix(e->d_name, SUFFIX)) {
			log_warn("%s/%s: not a volume definition (NAME" SUFFIX "); skipped",
				 db->dir, e->d_name);
			skipped++;
		} else if (load_one(db, e->d_name) < 0) {
			skipped++;
		}
	}
	closedir(d);
	return skipped;
}

/* ---- making definitions -------------------------------------------------- */

static bool port_used(const struct voldb *db, uint16_t port)
{
	for (size_t i = 0; i < db->n; i++)
		if (!db->v[i].deleted && db->v[i].port == port)
			return true;
	for (size_t i = 0; i < db->n_sent; i++)
		if (db->sent[i].port == port)
			return true;
	return false;
}

static bool being_created(const struct voldb *db, const char *name)
{
	for (size_t i = 0; i < db->n_sent; i++)
		if (strcmp(db->sent[i].name, name) == 0)
			return true;
	return false;
}

int voldb_sent(struct voldb *db, const struct voldef *v)
{
	if (db->n_sent == VOLDB_SENT_MAX || being_created(db, v->name))
		return -EBUSY;
	strcpy(db->sent[db->n_sent].name, v->name);
	db->sent[db->n_sent].version = v->version;
	db->sent[db->n_sent++].port = v->port;
	return 0;
}

void voldb_sent_forget(struct voldb *db)
{
	db->n_sent = 0;
}

static int pick_port(const struct voldb *db, uint16_t base, uint16_t *out)
{
	for (uint32_t p = base ? base : 1; p <= UINT16_MAX; p++) {
		if (!port_used(db, (uint16_t)p)) {
			*out = (uint16_t)p;
			return 0;
		}
	}
	return -ENOSPC;
}

static int fill_nodes(struct voldef *v, const char *const *nodes, size_t n, const char **why)
{
	if (n < CLMSG_NODES_MIN || n > CLMSG_NODES_MAX)
		return fail(why, "a volume needs 2 or 3 nodes", -EINVAL);
	for (size_t i = 0; i < n; i++) {
		if (strlen(nodes[i]) >= CLMSG_NAME_MAX)
			return fail(why, "node names are at most 63 characters", -EINVAL);
		strcpy(v->nodes[i], nodes[i]);
	}
	v->n_nodes = (uint8_t)n;
	return 0;
}

int voldb_create(const struct voldb *db, const char *name, uint64_t size,
		 const char *const *nodes, size_t n_nodes, uint32_t local_nodeid,
		 uint16_t base_port, struct voldef *out, const char **why)
{
	struct voldef v = { .size = size, .port = 1, .version = 1, .origin = local_nodeid };
	const struct voldef *old;
	const char *dummy;
	int r;

	why = why ? why : &dummy;
	if (strlen(name) >= CLMSG_NAME_MAX)
		return fail(why, "volume names are at most 63 characters", -EINVAL);
	strcpy(v.name, name);
	r = fill_nodes(&v, nodes, n_nodes, why);
	if (r < 0 || (r = voldef_check(&v, why)) < 0)
		return r;
	old = voldb_find(db, name);
	if (old && !old->deleted)
		return fail(why, "a volume of that name exists", -EEXIST);
	if (being_created(db, name))
		return fail(why, "a volume of that name is being created", -EEXIST);
	if (db->n_sent == VOLDB_SENT_MAX)
		return fail(why, "too many volumes are being created at once: try again",
			    -EBUSY);
	if (old)
		v.version = old->version + 1;
	if (pick_port(db, base_port, &v.port) < 0)
		return fail(why, "no free replication port at or above the base port", -ENOSPC);
	r = random_bytes(v.uuid, sizeof(v.uuid));
	if (r < 0)
		return r;
	*out = v;
	return 0;
}

/* The next version of old, a live definition, made by this node: what a
 * delete, a resize and a move start from.  0, or -EOVERFLOW. */
static int next_version(const struct voldef *old, uint32_t local_nodeid, struct voldef *out)
{
	if (old->version == UINT64_MAX)
		return -EOVERFLOW;
	*out = *old;
	out->version++;
	out->origin = local_nodeid;
	return 0;
}

int voldb_delete(const struct voldb *db, const char *name, uint32_t local_nodeid,
		 struct voldef *out)
{
	const struct voldef *old = voldb_find(db, name);
	int r;

	if (!old || old->deleted)
		return -ENOENT;
	r = next_version(old, local_nodeid, out);
	if (!r)
		out->deleted = true;
	return r;
}

const struct voldef *voldb_port_owner(const struct voldb *db, uint16_t port)
{
	for (size_t i = 0; i < db->n; i++)	/* in name order: the first */
		if (!db->v[i].deleted && db->v[i].port == port)
			return &db->v[i];
	return NULL;
}

bool voldb_port_conflict(const struct voldb *db, const struct voldef *v)
{
	const struct voldef *o = voldb_port_owner(db, v->port);

	return o && strcmp(o->name, v->name) < 0;
}

int voldb_move(const struct voldb *db, const char *name, uint32_t local_nodeid,
	       uint16_t base_port, struct voldef *out)
{
	const struct voldef *old = voldb_find(db, name);
	struct voldef v;

	if (!old || old->deleted)
		return -ENOENT;
	if (being_created(db, name) || db->n_sent == VOLDB_SENT_MAX)
		return -EBUSY;
	if (next_version(old, local_nodeid, &v) < 0)
		return -EOVERFLOW;
	if (pick_port(db, base_port, &v.port) < 0)
		return -ENOSPC;
	*out = v;
	return 0;
}

int voldb_resize(const struct voldb *db, const char *name, uint64_t size,
		 uint32_t local_nodeid, struct voldef *out, const char **why)
{
	const struct voldef *old = voldb_find(db, name);
	const char *dummy;

	why = why ? why : &dummy;
	if (!old || old->deleted)
		return fail(why, "no such volume", -ENOENT);
	if (!size || size % CLMSG_SECTOR || size > INT64_MAX)
		return fail(why, "the size must be a positive multiple of 512 bytes", -EINVAL);
	if (size == old->size)
		return fail(why, "the volume has that size already", -EALREADY);
	if (size < old->size)
		return fail(why, "the volume is larger than that: a volume only grows "
			    "(shrinking would lose the data at its end)", -EINVAL);
	if (next_version(old, local_nodeid, out) < 0)
		return fail(why, "the volume's version numbers are exhausted", -EOVERFLOW);
	out->size = size;
	return 0;
}
