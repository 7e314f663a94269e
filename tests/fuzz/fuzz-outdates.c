/* fuzz-outdates.c: the file of the group's Outdated records and of the
 * outdate requests it has not recorded yet (agent/outdates.c): a node reads STATE_DIR/outdates at start, and a
 * damaged file must be refused whole with a reason, never crash the
 * daemon.  The input is the file's text: a list it accepts must format
 * and parse back to the same lines, in order, each marked replayed; a
 * refused one adds nothing to the list it was given. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "outdates.h"

static bool same(const struct pending_outdate *a, const struct pending_outdate *b)
{
	for (; a && b; a = a->next, b = b->next)
		if (strcmp(a->volume, b->volume) || strcmp(a->node, b->node) ||
		    a->token != b->token || !a->replayed || !b->replayed)
			return false;
	return !a && !b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pending_outdate *list = NULL, *again = NULL;
	char *text, err[160] = "", buf[65536];
	int n;

	fuzz_quiet();
	if (size > 65536)
		return 0;
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (outdates_parse(text, &list, err, sizeof(err)) == 0) {
		for (const struct pending_outdate *po = list; po; po = po->next)
			FUZZ_ASSERT(po->replayed && po->volume[0] && po->node[0]);
		n = outdates_format(list, buf, sizeof(buf));
		if (n >= 0) {
			FUZZ_ASSERT(outdates_parse(buf, &again, err, sizeof(err)) == 0);
			FUZZ_ASSERT(same(list, again));
		}
	} else {
		FUZZ_ASSERT(list == NULL);
		FUZZ_ASSERT(memchr(err, '\0', sizeof(err)) && err[0]);
	}
	outdates_free(again);
	outdates_free(list);
	free(text);
	return 0;
}
