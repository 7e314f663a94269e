/* test-clcrypto.c: when the daemon warns that corosync runs without
 * encryption, from a table of totem settings as cmap has them. */
#include "config.h"

#include <stdbool.h>

#include "clcrypto.h"
#include "unit.h"
#include "util.h"

static const struct row {
	const char *cipher, *hash, *secauth;
	bool warn;
} rows[] = {
	{ NULL, NULL, NULL, true },		/* corosync's default: none */
	{ "none", "none", NULL, true },
	{ "", "", NULL, true },
	{ "aes256", "sha256", NULL, false },
	{ "aes128", "sha1", NULL, false },
	{ "none", "sha256", NULL, true },	/* signed, in clear */
	{ NULL, "sha256", NULL, true },
	{ "aes256", "none", NULL, true },	/* corosync refuses it; still warn */
	{ NULL, NULL, "on", false },		/* secauth: on = aes256/sha256 */
	{ NULL, NULL, "off", true },
	{ "none", "none", "on", true },		/* explicit none wins */
	{ "aes256", "sha256", "off", false },
};

int main(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		const struct row *r = &rows[i];
		const char *why = clcrypto_problem(r->cipher, r->hash, r->secauth);
		CHECK_MSG((why != NULL) == r->warn, "row %zu: %s, expected %s", i,
			  why ? why : "no warning", r->warn ? "a warning" : "none");
	}
	return unit_done("test-clcrypto");
}
