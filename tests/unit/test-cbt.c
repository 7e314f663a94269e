/* test-cbt.c: which checkpoint names cbt.c accepts (they become file
 * names beside the metadata and NBD context names), from a table. */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include "cbt.h"
#include "unit.h"

static const struct {
	const char *name;
	bool ok;
} names[] = {
	{ "c1", true },
	{ "daily-2026.12.04_0630", true },
	{ "A", true },
	{ "12345678901234567890123456789012", true },	/* CBT_NAME_MAX */
	{ "123456789012345678901234567890123", false },	/* one more */
	{ "", false },
	{ ".hidden", false },
	{ "-flag", false },
	{ "a/b", false },
	{ "..", false },
	{ "a b", false },
	{ "a:b", false },	/* would read as an NBD namespace */
	{ "x.tmp", false },	/* a file being made */
	{ "x.tmpl", true },
	{ "caf\xc3\xa9", false },
};

int main(void)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		CHECK_MSG(repl_checkpoint_name_ok(names[i].name) == names[i].ok, "\"%s\"",
			  names[i].name);
	CHECK(strlen(CBT_CONTEXT_PREFIX) + CBT_NAME_MAX < 256);	/* NBD_META_NAME_MAX */
	return unit_done("test-cbt");
}
