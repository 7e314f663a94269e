/* fuzz-cfg.c: the replagentd configuration parser (agent/cfg.c), on any
 * text: the file is the administrator's, but a parser that crashes on a
 * typo, or reads past a line, is a bug all the same.  A file it accepts
 * must have the invariants cfg.h states. */
#include "config.h"

#include <string.h>

#include "cfg.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), err[512];
	struct cfg *cfg = NULL;

	fuzz_quiet();
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	err[0] = '\0';
	if (cfg_parse_string("fuzz.conf", text, &cfg, err, sizeof(err)) == 0) {
		FUZZ_ASSERT(cfg != NULL);
		for (unsigned i = 0; i < cfg->n_volumes; i++) {
			const struct cfg_volume *v = &cfg->volumes[i];

			FUZZ_ASSERT(cfg_name_valid(v->name));
			FUZZ_ASSERT(v->meta != NULL);
			FUZZ_ASSERT(v->n_replicas == 0 || (v->n_replicas >= 2 &&
							   v->n_replicas <= CFG_REPLICAS_MAX));
			FUZZ_ASSERT(cfg_volume_find(cfg, v->name) != NULL);
			(void)cfg_volume_here(cfg, v);
		}
	} else {
		FUZZ_ASSERT(memchr(err, '\0', sizeof(err)) && err[0]);
	}
	cfg_free(cfg);
	free(text);
	return 0;
}
