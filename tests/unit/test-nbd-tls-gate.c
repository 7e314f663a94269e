/* test-nbd-tls-gate.c: which options a client may send before TLS, from a
 * table (nbd_tls.c's repl__nbd_tls_gate). */
#include "config.h"

#include "nbd-protocol.h"
#include "nbd_tls.h"
#include "unit.h"
#include "util.h"

enum { OFF, REQ };
enum { PLAIN, TLS };

static const struct row {
	int required, active;
	uint32_t opt;
	enum nbd_tls_gate want;
} rows[] = {
	/* nbd-tls = off, or the Unix socket: everything goes through */
	{ OFF, PLAIN, NBD_OPT_GO, NBD_TLS_PASS },
	{ OFF, PLAIN, NBD_OPT_EXPORT_NAME, NBD_TLS_PASS },
	{ OFF, PLAIN, NBD_OPT_LIST, NBD_TLS_PASS },
	/* require, before TLS: only STARTTLS and ABORT */
	{ REQ, PLAIN, NBD_OPT_STARTTLS, NBD_TLS_PASS },
	{ REQ, PLAIN, NBD_OPT_ABORT, NBD_TLS_PASS },
	{ REQ, PLAIN, NBD_OPT_GO, NBD_TLS_REFUSE },
	{ REQ, PLAIN, NBD_OPT_INFO, NBD_TLS_REFUSE },
	{ REQ, PLAIN, NBD_OPT_LIST, NBD_TLS_REFUSE },
	{ REQ, PLAIN, NBD_OPT_STRUCTURED_REPLY, NBD_TLS_REFUSE },
	{ REQ, PLAIN, NBD_OPT_SET_META_CONTEXT, NBD_TLS_REFUSE },
	{ REQ, PLAIN, 0x12345, NBD_TLS_REFUSE },
	{ REQ, PLAIN, NBD_OPT_EXPORT_NAME, NBD_TLS_CLOSE },
	/* require, after TLS: everything (a second STARTTLS is refused later) */
	{ REQ, TLS, NBD_OPT_GO, NBD_TLS_PASS },
	{ REQ, TLS, NBD_OPT_EXPORT_NAME, NBD_TLS_PASS },
	{ REQ, TLS, NBD_OPT_STARTTLS, NBD_TLS_PASS },
};

int main(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		const struct row *r = &rows[i];
		enum nbd_tls_gate g = repl__nbd_tls_gate(r->required == REQ, r->active == TLS,
							 r->opt);
		CHECK_MSG(g == r->want, "row %zu: gate %d, expected %d", i, g, r->want);
	}
	return unit_done("test-nbd-tls-gate");
}
