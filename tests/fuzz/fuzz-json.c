/* fuzz-json.c: the JSON parser the replagent command line reads the
 * daemon's answers and events with (agent/json.c).  Whatever it parses
 * must be a tree the typed lookups can walk and json_value_free can free. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "json.h"

static unsigned walk(const struct json_value *v, unsigned depth)
{
	unsigned n = 0;

	FUZZ_ASSERT(depth <= JSON_DEPTH_MAX + 1);
	for (; v; v = v->next) {
		int64_t i;
		uint64_t u;

		n++;
		FUZZ_ASSERT(v->type <= JSON_OBJECT);
		if (v->type == JSON_STRING || v->type == JSON_NUMBER)
			FUZZ_ASSERT(v->str != NULL);
		if (v->type == JSON_OBJECT) {
			for (const struct json_value *c = v->child; c; c = c->next) {
				FUZZ_ASSERT(c->key != NULL);
				FUZZ_ASSERT(json_get(v, c->key) != NULL);
				(void)json_get_str(v, c->key);
				(void)json_get_bool(v, c->key);
				(void)json_get_i64(v, c->key, &i);
				(void)json_get_u64(v, c->key, &u);
			}
		}
		n += walk(v->child, depth + 1);
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_value *v = NULL;
	int r;

	fuzz_quiet();
	r = json_parse((const char *)data, size, &v);
	FUZZ_ASSERT(r == 0 || r == -EINVAL || r == -ENOMEM);
	if (r == 0) {
		FUZZ_ASSERT(v != NULL);
		walk(v, 0);
	}
	json_value_free(v);
	return 0;
}
