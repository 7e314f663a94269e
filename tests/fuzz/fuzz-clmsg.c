/* fuzz-clmsg.c: the messages of the replagent CPG group (agent/clmsg.c),
 * as a node receives them from any other member.  Decoded as they are and
 * with the length field made right; a message that decodes must re-encode
 * to the same bytes (clmsg.h promises it), and a decoded definition must
 * pass voldef_check. */
#include "config.h"

#include <string.h>

#include "clmsg.h"
#include "fuzz.h"

static void check_msg(const uint8_t *buf, size_t len)
{
	uint8_t out[CLMSG_MAX_LEN];
	struct clmsg m;
	ssize_t n;

	if (clmsg_decode(buf, len, &m) != 0)
		return;
	FUZZ_ASSERT(clmsg_type_valid(m.type));
	n = clmsg_encode(&m, out, sizeof(out));
	FUZZ_ASSERT(n == (ssize_t)len);
	FUZZ_ASSERT(memcmp(out, buf, len) == 0);
	if (m.type == CLMSG_VOLDEF)
		FUZZ_ASSERT(voldef_check(&m.u.voldef, NULL) == 0);
	(void)clmsg_type_name(m.type);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t fixed[CLMSG_MAX_LEN + 64];
	uint32_t be;

	fuzz_quiet();
	check_msg(data, size);
	if (size < CLMSG_HDR_LEN || size > sizeof(fixed))
		return 0;
	memcpy(fixed, data, size);
	be = htobe32(CLMSG_MAGIC);
	memcpy(fixed, &be, 4);
	fixed[4] = 0;
	fixed[5] = CLMSG_VERSION;
	be = htobe32((uint32_t)(size - CLMSG_HDR_LEN));
	memcpy(fixed + 8, &be, 4);
	check_msg(fixed, size);
	return 0;
}
