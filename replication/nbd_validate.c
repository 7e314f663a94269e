/* nbd_validate.c: the checks every NBD request passes before it touches a
 * volume, as a pure function of the request header and the export: no I/O,
 * no connection state.  It says run it, answer with an error, or close the
 * connection (when the byte stream can no longer be trusted, e.g. a write
 * whose payload is too large to read and skip).  tests/unit/test-nbd-validate
 * runs it from a table. */
#include "config.h"

#include <stddef.h>
#include <string.h>

#include "nbd-protocol.h"
#include "repl_int.h"

static struct nbd_check ok(void)
{
	return (struct nbd_check){ NBD_V_OK, 0, NULL };
}

static struct nbd_check err(uint32_t error, const char *why)
{
	return (struct nbd_check){ NBD_V_ERROR, error, why };
}

static struct nbd_check closeit(const char *why)
{
	return (struct nbd_check){ NBD_V_CLOSE, 0, why };
}

/* Flags each command may carry (DF needs structured replies). */
static uint16_t allowed_flags(uint16_t type, bool structured)
{
	switch (type) {
	case NBD_CMD_READ:
		return structured ? NBD_CMD_FLAG_DF : 0;
	case NBD_CMD_WRITE:
	case NBD_CMD_TRIM:
		return NBD_CMD_FLAG_FUA;
	case NBD_CMD_WRITE_ZEROES:
		return NBD_CMD_FLAG_FUA | NBD_CMD_FLAG_NO_HOLE | NBD_CMD_FLAG_FAST_ZERO;
	case NBD_CMD_BLOCK_STATUS:
		return NBD_CMD_FLAG_REQ_ONE;
	default:
		return 0;
	}
}

static bool is_write_type(uint16_t type)
{
	return type == NBD_CMD_WRITE || type == NBD_CMD_TRIM ||
	       type == NBD_CMD_WRITE_ZEROES;
}

static struct nbd_check check_range(uint16_t type, uint64_t offset,
				    uint32_t count, uint64_t size)
{
	if (count == 0)
		return err(NBD_EINVAL, "zero-length request");
	if (offset > size || count > size - offset)
		return err(type == NBD_CMD_WRITE || type == NBD_CMD_WRITE_ZEROES ? NBD_ENOSPC
										  : NBD_EINVAL,
			   "request past the end of the export");
	return ok();
}

struct nbd_check repl__nbd_check_request(uint32_t magic, uint16_t flags,
					 uint16_t type, uint64_t offset,
					 uint32_t count,
					 const struct nbd_export_view *exp)
{
	if (magic != NBD_REQUEST_MAGIC)
		return closeit("bad request magic");
	/* A write payload follows the header: one we will not read means we
	 * can no longer find the next header, so the connection ends. */
	if (type == NBD_CMD_WRITE && count > NBD_MAX_PAYLOAD)
		return closeit("write payload over the maximum");
	switch (type) {
	case NBD_CMD_READ:
	case NBD_CMD_WRITE:
	case NBD_CMD_TRIM:
	case NBD_CMD_WRITE_ZEROES:
	case NBD_CMD_CACHE:
		break;
	case NBD_CMD_BLOCK_STATUS:
		if (!exp->contexts)
			return err(NBD_EINVAL, "BLOCK_STATUS without a metadata context selected");
		break;
	case NBD_CMD_FLUSH:
		if (flags)
			return err(NBD_EINVAL, "flags on FLUSH");
		if (offset || count)
			return err(NBD_EINVAL, "FLUSH with offset or length");
		return exp->read_only ? err(NBD_EPERM, "read-only export") : ok();
	case NBD_CMD_DISC:
		return ok();
	default:
		return err(NBD_EINVAL, "unsupported command");
	}
	if (flags & ~allowed_flags(type, exp->structured))
		return err(NBD_EINVAL, "unsupported flags for the command");
	if ((flags & NBD_CMD_FLAG_FAST_ZERO) && !exp->fast_zero)
		return err(NBD_EINVAL, "FAST_ZERO not advertised");
	if (exp->read_only && is_write_type(type))
		return err(NBD_EPERM, "read-only export");
	/* Zeroes that stay allocated are written: not fast.  The client
	 * then writes them itself, as the protocol intends. */
	if ((flags & NBD_CMD_FLAG_FAST_ZERO) && (flags & NBD_CMD_FLAG_NO_HOLE)) {
		struct nbd_check c = check_range(type, offset, count, exp->size);
		return c.verdict != NBD_V_OK ? c : err(NBD_ENOTSUP, "FAST_ZERO with NO_HOLE");
	}
	if (type == NBD_CMD_READ && count > NBD_MAX_PAYLOAD)
		return err(NBD_EINVAL, "read over the maximum length");
	return check_range(type, offset, count, exp->size);
}

uint16_t repl__nbd_export_flags(const struct repl_volume *vol, bool structured)
{
	/* SEND_FAST_ZERO only where a zero is a hole punched (store.c): the
	 * client counts on it to skip writing them itself.  CAN_MULTI_CONN: every connection writes through the same fd with
	 * no cache of ours, so a FLUSH (fdatasync) on any connection covers
	 * the acknowledged writes of all of them.  SEND_DF only with
	 * structured replies: the protocol says the server MUST NOT set it
	 * otherwise. */
	return NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | NBD_FLAG_SEND_FUA |
	       NBD_FLAG_SEND_TRIM | NBD_FLAG_SEND_WRITE_ZEROES |
	       (structured ? NBD_FLAG_SEND_DF : 0) | NBD_FLAG_CAN_MULTI_CONN |
	       NBD_FLAG_SEND_CACHE |
	       (repl__store_can_punch(vol->fd, vol->blockdev) ? NBD_FLAG_SEND_FAST_ZERO : 0);
}

/* The data of NBD_OPT_INFO and NBD_OPT_GO: a 32-bit name length, the
 * export name, a 16-bit count of information requests and that many 16-bit
 * requests (ignored: the server sends what it always sends).  Pure, so
 * that the fuzzer reaches it without a connection. */
uint32_t repl__nbd_parse_info_go(const uint8_t *d, uint32_t len,
				 char *name, const char **why)
{
	uint32_t namelen;
	uint16_t ninfo;

	if (len < 6) {
		*why = "option too short";
		return NBD_REP_ERR_INVALID;
	}
	memcpy(&namelen, d, 4);
	namelen = be32toh(namelen);
	if (namelen > NBD_MAX_NAME_LEN || namelen > len - 6) {
		*why = "bad export name length";
		return NBD_REP_ERR_INVALID;
	}
	memcpy(&ninfo, d + 4 + namelen, 2);
	ninfo = be16toh(ninfo);
	if (len != 6 + namelen + 2u * ninfo) {
		*why = "bad information request list";
		return NBD_REP_ERR_INVALID;
	}
	memcpy(name, d + 4, namelen);
	name[namelen] = '\0';
	if (strlen(name) != namelen) {
		*why = "NUL in export name";
		return NBD_REP_ERR_INVALID;
	}
	return 0;
}
