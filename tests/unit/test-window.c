/* test-window.c: the Primary's answer to a migration window's request for
 * the role (replication/window.c, repl__takeover_verdict), from a table. */
#include "config.h"

#include <errno.h>

#include "repl_int.h"
#include "unit.h"

#define P 1	/* primary */
#define Q 1	/* quorate */
#define S 1	/* asker in sync */

static const struct {
	struct takeover_view v;
	int want;
	const char *what;
} cases[] = {
	/*  primary quorate frozen in_sync busy soft clients */
	{ { P, Q, 0, S, 0, 0, 0 }, 0, "a Primary without clients hands over" },
	{ { P, Q, 0, S, 0, 0, 2 }, 0, "a write of the window: over, its clients stay" },
	{ { P, Q, 0, S, 0, 1, 0 }, 0, "soft, no client here: over" },
	{ { P, Q, 0, S, 0, 1, 1 }, -EBUSY, "soft, a client here: not now" },
	{ { 0, Q, 0, S, 0, 0, 0 }, -EINVAL, "not Primary (it demoted, or never was)" },
	{ { 0, 0, 1, 0, 1, 1, 1 }, -EINVAL, "not Primary comes first" },
	{ { P, 0, 0, S, 0, 0, 0 }, -EAGAIN, "no quorum: it acknowledges nothing" },
	{ { P, Q, 1, S, 0, 0, 0 }, -EAGAIN, "frozen: a lost peer is being outdated" },
	{ { P, 0, 0, 0, 0, 0, 0 }, -EAGAIN, "no quorum before the asker's state" },
	{ { P, Q, 0, 0, 0, 0, 0 }, -ESTALE, "the asker is not in sync: never" },
	{ { P, Q, 0, 0, 1, 1, 1 }, -ESTALE, "not in sync before busy" },
	{ { P, Q, 0, S, 1, 0, 0 }, -EBUSY, "handing over already or verifying" },
};

int main(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = repl__takeover_verdict(&cases[i].v);
		CHECK_MSG(got == cases[i].want, "%s: %d, expected %d", cases[i].what, got,
			  cases[i].want);
	}
	return unit_done("test-window");
}
