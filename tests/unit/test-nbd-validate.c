/* test-nbd-validate.c: every rule of the NBD request checker, from a table:
 * what the server does with a request header before it touches a volume. */
#include "config.h"

#include "nbd-protocol.h"
#include "repl_int.h"
#include "unit.h"
#include "util.h"

#define M NBD_REQUEST_MAGIC
#define SZ (1024ull * 1024 * 1024)	/* export size in the table */
#define MAXP NBD_MAX_PAYLOAD

enum { RW, RO };	/* export writable / read-only */
enum { SIMPLE, STRUCT };

static const struct row {
	uint32_t magic;
	uint16_t flags, type;
	uint64_t offset;
	uint32_t count;
	int ro, structured;
	enum nbd_verdict verdict;
	uint32_t error;
	int fast_zero, contexts;	/* advertised / selected (0 if omitted) */
} rows[] = {
	/* magic */
	{ 0x12345678, 0, NBD_CMD_READ, 0, 512, RW, SIMPLE, NBD_V_CLOSE, 0 },
	{ 0, 0, NBD_CMD_WRITE, 0, 512, RW, SIMPLE, NBD_V_CLOSE, 0 },
	/* plain valid requests */
	{ M, 0, NBD_CMD_READ, 0, 512, RW, SIMPLE, NBD_V_OK, 0 },
	{ M, 0, NBD_CMD_READ, SZ - 1, 1, RW, SIMPLE, NBD_V_OK, 0 },
	{ M, 0, NBD_CMD_WRITE, 4096, 4096, RW, SIMPLE, NBD_V_OK, 0 },
	{ M, NBD_CMD_FLAG_FUA, NBD_CMD_WRITE, 0, 4096, RW, SIMPLE, NBD_V_OK, 0 },
	{ M, 0, NBD_CMD_FLUSH, 0, 0, RW, SIMPLE, NBD_V_OK, 0 },
	{ M, 0, NBD_CMD_TRIM, 0, SZ, RW, SIMPLE, NBD_V_OK, 0 },
	{ M, NBD_CMD_FLAG_FUA, NBD_CMD_TRIM, 0, 512, RW, SIMPLE, NBD_V_OK, 0 },
	{ M, NBD_CMD_FLAG_NO_HOLE, NBD_CMD_WRITE_ZEROES, 0, 512, RW, SIMPLE, NBD_V_OK, 0 },
	{ M, NBD_CMD_FLAG_FUA | NBD_CMD_FLAG_NO_HOLE, NBD_CMD_WRITE_ZEROES, 0, 512, RW, SIMPLE, NBD_V_OK, 0 },
	{ M, 0, NBD_CMD_DISC, 0, 0, RW, SIMPLE, NBD_V_OK, 0 },
	{ M, 0, NBD_CMD_READ, 0, MAXP, RW, SIMPLE, NBD_V_OK, 0 },
	/* DF only with structured replies, and only on READ */
	{ M, NBD_CMD_FLAG_DF, NBD_CMD_READ, 0, 512, RW, STRUCT, NBD_V_OK, 0 },
	{ M, NBD_CMD_FLAG_DF, NBD_CMD_READ, 0, 512, RW, SIMPLE, NBD_V_ERROR, NBD_EINVAL },
	{ M, NBD_CMD_FLAG_DF, NBD_CMD_WRITE, 0, 512, RW, STRUCT, NBD_V_ERROR, NBD_EINVAL },
	/* flags a command does not take */
	{ M, NBD_CMD_FLAG_FUA, NBD_CMD_READ, 0, 512, RW, SIMPLE, NBD_V_ERROR, NBD_EINVAL },
	{ M, NBD_CMD_FLAG_NO_HOLE, NBD_CMD_WRITE, 0, 512, RW, SIMPLE, NBD_V_ERROR, NBD_EINVAL },
	{ M, NBD_CMD_FLAG_FAST_ZERO, NBD_CMD_WRITE_ZEROES, 0, 512, RW, SIMPLE, NBD_V_ERROR, NBD_EINVAL },
	{ M, 0x8000, NBD_CMD_WRITE, 0, 512, RW, SIMPLE, NBD_V_ERROR, NBD_EINVAL },
	{ M, NBD_CMD_FLAG_FUA, NBD_CMD_FLUSH, 0, 0, RW, SIMPLE, NBD_V_ERROR, NBD_EINVAL },
	{ M, 0, NBD_CMD_FLUSH, 0, 512, RW, SIMPLE, NBD_V_ERROR, NBD_EINVAL },
	/* unknown and unsupported commands keep the connection */
	{ M, 0, 99, 0, 512, RW, SIMPLE, NBD_V_ERROR, NBD_EINVAL },
	{ M, 0, NBD_CMD_BLOCK_STATUS, 0, 512, RW, STRUCT, NBD_V_ERROR, NBD_EINVAL },
	{ M, 0, 0xffff, 0, 0xffffffff, RW, SIMPLE, NBD_V_ERROR, NBD_EINVAL },
	/* past the end: EINVAL for reads and trims, ENOSPC for writes */
	{ M, 0, NBD_CMD_READ, SZ, 512, RW, SIMPLE, NBD_V_ERROR, NBD_EINVAL },
	{ M, 0, NBD_CMD_READ, SZ - 511, 512, RW, SIMPLE, NBD_V_ERROR, NBD_EINVAL },
	{ M, 0, NBD_CMD_WRITE, SZ - 511, 512, RW, SIMPLE, NBD_V_ERROR, NBD_ENOSPC },
	{ M, 0, NBD_CMD_WRITE_ZEROES, SZ, 1, RW, SIMPLE, NBD_V_ERROR, NBD_ENOSPC },
	{ M, 0, NBD_CMD_TRIM, SZ - 1, 2, RW, SIMPLE, NBD_V_ERROR, NBD_EINVAL },
	{ M, 0, NBD_CMD_READ, UINT64_MAX, 512, RW, SIMPLE, NBD_V_ERROR, NBD_EINVAL },
	{ M, 0, NBD_CMD_WRITE, UINT64_MAX - 100, 512, RW, SIMPLE, NBD_V_ERROR, NBD_ENOSPC },
	/* zero length */
	{ M, 0, NBD_CMD_READ, 0, 0, RW, SIMPLE, NBD_V_ERROR, NBD_EINVAL },
	{ M, 0, NBD_CMD_WRITE, 0, 0, RW, SIMPLE, NBD_V_ERROR, NBD_EINVAL },
	/* lengths over the maximum: a read is refused, a write ends the stream */
	{ M, 0, NBD_CMD_READ, 0, MAXP + 1, RW, SIMPLE, NBD_V_ERROR, NBD_EINVAL },
	{ M, 0, NBD_CMD_WRITE, 0, MAXP + 1, RW, SIMPLE, NBD_V_CLOSE, 0 },
	{ M, 0, NBD_CMD_WRITE, 0, 0xffffffff, RW, SIMPLE, NBD_V_CLOSE, 0 },
	/* a large trim/zero is fine: no payload */
	{ M, 0, NBD_CMD_TRIM, 0, 0xffffffff, RW, SIMPLE, NBD_V_ERROR, NBD_EINVAL },
	/* read-only exports refuse every write-type command with EPERM */
	{ M, 0, NBD_CMD_WRITE, 0, 512, RO, SIMPLE, NBD_V_ERROR, NBD_EPERM },
	{ M, 0, NBD_CMD_TRIM, 0, 512, RO, SIMPLE, NBD_V_ERROR, NBD_EPERM },
	{ M, 0, NBD_CMD_WRITE_ZEROES, 0, 512, RO, SIMPLE, NBD_V_ERROR, NBD_EPERM },
	{ M, 0, NBD_CMD_FLUSH, 0, 0, RO, SIMPLE, NBD_V_ERROR, NBD_EPERM },
	{ M, 0, NBD_CMD_READ, 0, 512, RO, SIMPLE, NBD_V_OK, 0 },
	/* CACHE: a read-ahead, any export, no flags */
	{ M, 0, NBD_CMD_CACHE, 0, 512, RW, SIMPLE, NBD_V_OK, 0 },
	{ M, 0, NBD_CMD_CACHE, 0, 512, RO, SIMPLE, NBD_V_OK, 0 },
	{ M, 0, NBD_CMD_CACHE, SZ - 1, 2, RW, SIMPLE, NBD_V_ERROR, NBD_EINVAL },
	{ M, NBD_CMD_FLAG_FUA, NBD_CMD_CACHE, 0, 512, RW, SIMPLE, NBD_V_ERROR, NBD_EINVAL },
	/* BLOCK_STATUS: only with a context selected; REQ_ONE only here */
	{ M, 0, NBD_CMD_BLOCK_STATUS, 0, 512, RW, STRUCT, NBD_V_OK, 0, 0, 1 },
	{ M, 0, NBD_CMD_BLOCK_STATUS, 0, 0xffffffff, RO, STRUCT, NBD_V_ERROR, NBD_EINVAL, 0, 1 },
	{ M, NBD_CMD_FLAG_REQ_ONE, NBD_CMD_BLOCK_STATUS, 0, SZ - 1, RO, STRUCT, NBD_V_OK, 0, 0, 2 },
	{ M, 0, NBD_CMD_BLOCK_STATUS, SZ, 1, RW, STRUCT, NBD_V_ERROR, NBD_EINVAL, 0, 1 },
	{ M, 0, NBD_CMD_BLOCK_STATUS, 0, 0, RW, STRUCT, NBD_V_ERROR, NBD_EINVAL, 0, 1 },
	{ M, NBD_CMD_FLAG_REQ_ONE, NBD_CMD_READ, 0, 512, RW, STRUCT, NBD_V_ERROR, NBD_EINVAL, 0, 1 },
	{ M, NBD_CMD_FLAG_FUA, NBD_CMD_BLOCK_STATUS, 0, 512, RW, STRUCT, NBD_V_ERROR, NBD_EINVAL, 0, 1 },
	/* FAST_ZERO: only when advertised, only on WRITE_ZEROES; with
	 * NO_HOLE it would write: ENOTSUP at once */
	{ M, NBD_CMD_FLAG_FAST_ZERO, NBD_CMD_WRITE_ZEROES, 0, 512, RW, SIMPLE, NBD_V_OK, 0, 1 },
	{ M, NBD_CMD_FLAG_FAST_ZERO | NBD_CMD_FLAG_FUA, NBD_CMD_WRITE_ZEROES, 0, 512, RW, SIMPLE, NBD_V_OK, 0, 1 },
	{ M, NBD_CMD_FLAG_FAST_ZERO | NBD_CMD_FLAG_NO_HOLE, NBD_CMD_WRITE_ZEROES, 0, 512, RW, SIMPLE, NBD_V_ERROR, NBD_ENOTSUP, 1 },
	{ M, NBD_CMD_FLAG_FAST_ZERO | NBD_CMD_FLAG_NO_HOLE, NBD_CMD_WRITE_ZEROES, SZ, 512, RW, SIMPLE, NBD_V_ERROR, NBD_ENOSPC, 1 },
	{ M, NBD_CMD_FLAG_FAST_ZERO, NBD_CMD_WRITE_ZEROES, 0, 512, RO, SIMPLE, NBD_V_ERROR, NBD_EPERM, 1 },
	{ M, NBD_CMD_FLAG_FAST_ZERO, NBD_CMD_TRIM, 0, 512, RW, SIMPLE, NBD_V_ERROR, NBD_EINVAL, 1 },
};

int main(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		const struct row *r = &rows[i];
		struct nbd_export_view exp = { SZ, r->ro == RO, r->structured == STRUCT,
					       r->fast_zero, (unsigned)r->contexts };
		struct nbd_check c = repl__nbd_check_request(r->magic, r->flags, r->type,
							     r->offset, r->count, &exp);
		CHECK_MSG(c.verdict == r->verdict, "row %zu: verdict %d, expected %d (%s)",
			  i, c.verdict, r->verdict, c.why ? c.why : "-");
		if (r->verdict == NBD_V_ERROR)
			CHECK_MSG(c.error == r->error, "row %zu: error %u, expected %u",
				  i, c.error, r->error);
		if (r->verdict != NBD_V_OK)
			CHECK_MSG(c.why != NULL, "row %zu: no reason given", i);
	}
	return unit_done("test-nbd-validate");
}
