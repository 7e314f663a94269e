/* volfail.c: see volfail.h. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "volfail.h"

struct entry {
	char *name, *reason;
};

struct volfail {
	struct entry *v;
	size_t n, cap;
};

int volfail_new(struct volfail **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void volfail_free(struct volfail *vf)
{
	if (!vf)
		return;
	for (size_t i = 0; i < vf->n; i++) {
		free(vf->v[i].name);
		free(vf->v[i].reason);
	}
	free(vf->v);
	free(vf);
}

static struct entry *find(const struct volfail *vf, const char *name)
{
	for (size_t i = 0; vf && i < vf->n; i++)
		if (!strcmp(vf->v[i].name, name))
			return &vf->v[i];
	return NULL;
}

int volfail_set(struct volfail *vf, const char *name, const char *reason)
{
	struct entry *e = find(vf, name);
	char *r = strdup(reason);

	if (!r)
		return -ENOMEM;
	if (e) {
		free(e->reason);
		e->reason = r;
		return 0;
	}
	if (vf->n == vf->cap) {
		size_t cap = vf->cap ? 2 * vf->cap : 8;
		struct entry *v = realloc(vf->v, cap * sizeof(*v));
		if (!v) {
			free(r);
			return -ENOMEM;
		}
		vf->v = v;
		vf->cap = cap;
	}
	e = &vf->v[vf->n];
	e->name = strdup(name);
	if (!e->name) {
		free(r);
		return -ENOMEM;
	}
	e->reason = r;
	vf->n++;
	return 0;
}

void volfail_clear(struct volfail *vf, const char *name)
{
	struct entry *e = find(vf, name);

	if (!e)
		return;
	free(e->name);
	free(e->reason);
	memmove(e, e + 1, (size_t)(vf->v + vf->n - (e + 1)) * sizeof(*e));
	vf->n--;
}

const char *volfail_reason(const struct volfail *vf, const char *name)
{
	const struct entry *e = find(vf, name);

	return e ? e->reason : NULL;
}

size_t volfail_count(const struct volfail *vf)
{
	return vf ? vf->n : 0;
}

const char *volfail_name(const struct volfail *vf, size_t i)
{
	return vf && i < vf->n ? vf->v[i].name : NULL;
}
