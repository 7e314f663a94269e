/* fuzz-wire.c: replication frames (replication/wire.c) as a replica reads
 * them from a peer.  Each input is decoded twice: as it is, and with its
 * length and both CRCs made right (the payload CRC 0 where the header says
 * sealed; so that the fuzzer gets past the
 * checksums to the fields).  A frame that decodes must re-encode to the
 * same bytes (wire.h promises it), and its header alone must decode too. */
#include "config.h"

#include <string.h>

#include "fuzz.h"
#include "util.h"
#include "wire.h"

static void put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static void check_frame(const uint8_t *buf, size_t len)
{
	static uint8_t out[WIRE_HDR_LEN + WIRE_DATA_FIXED + WIRE_DATA_MAX];
	struct wire_msg m;
	struct wire_hdr h;
	ssize_t n;

	if (wire_decode(buf, len, &m) != 0)
		return;
	FUZZ_ASSERT(wire_hdr_decode(buf, len, &h) == 0);
	FUZZ_ASSERT(h.type == m.type && h.seq == m.seq);
	n = wire_frame_len(&m);
	FUZZ_ASSERT(n == (ssize_t)len);
	n = wire_encode(&m, out, sizeof(out));
	FUZZ_ASSERT(n == (ssize_t)len);
	FUZZ_ASSERT(memcmp(out, buf, len) == 0);
	(void)wire_type_name(m.type);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *fixed;

	fuzz_quiet();
	check_frame(data, size);
	if (size < WIRE_HDR_LEN || size - WIRE_HDR_LEN > UINT32_MAX)
		return 0;
	fixed = malloc(size);
	if (!fixed)
		return 0;
	memcpy(fixed, data, size);
	put32(fixed, WIRE_MAGIC);
	fixed[4] = 0;
	fixed[5] = WIRE_VERSION;
	put32(fixed + 8, (uint32_t)(size - WIRE_HDR_LEN));
	/* A sealed frame (flags bit 0) has no payload CRC. */
	put32(fixed + 24, (fixed[15] & WIRE_HF_SEALED) ? 0 :
	      crc32c(0, fixed + WIRE_HDR_LEN, size - WIRE_HDR_LEN));
	put32(fixed + 28, crc32c(0, fixed, 28));
	check_frame(fixed, size);
	free(fixed);
	return 0;
}
