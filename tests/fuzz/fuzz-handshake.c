/* fuzz-handshake.c: the authentication handshake (replication/wire.c) as
 * one side runs it against frames from an unknown peer.  The input is a
 * role byte (bit 0: we are the initiator) and then frames, each a 16-bit
 * big-endian length and that many bytes.  Our nonce is fixed, so a recorded
 * exchange (the corpus) replays to the end.  Whatever comes, the state
 * machine must answer with its return codes, never read or write out of
 * bounds, and never call a handshake done whose peer did not prove the
 * key. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "wire.h"

#define KEY "fuzz-key-0123456789abcdef"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t nonce[WIRE_NONCE_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct wire_auth_params p = {
		.key = (const uint8_t *)KEY,
		.keylen = sizeof(KEY) - 1,
		.node = "alpha",
		.peer = "beta",
		.resource = "vol0",
		.features = WIRE_FEAT_TRIM | WIRE_FEAT_ZERO,
	};
	uint8_t out[WIRE_CONTROL_FRAME_MAX], session[WIRE_SESSION_KEY_LEN];
	struct wire_auth a;
	size_t off = 1, outlen;
	int r = WIRE_AUTH_CONTINUE;

	fuzz_quiet();
	if (size < 1)
		return 0;
	p.initiator = data[0] & 1;
	FUZZ_ASSERT(wire_auth_init(&a, &p, nonce) == 0);
	while (wire_auth_next(&a, out, sizeof(out), &outlen) == 1)
		FUZZ_ASSERT(outlen <= sizeof(out));
	while (off + 2 <= size && r >= 0) {
		size_t len = (size_t)data[off] << 8 | data[off + 1];

		off += 2;
		if (len > size - off)
			len = size - off;
		r = wire_auth_receive(&a, data + off, len);
		off += len;
		while (wire_auth_next(&a, out, sizeof(out), &outlen) == 1)
			FUZZ_ASSERT(outlen <= sizeof(out));
	}
	if (wire_auth_done(&a)) {
		const char *peer = wire_auth_peer_node(&a);
		const struct wire_names *c;

		FUZZ_ASSERT(a.verified);
		FUZZ_ASSERT(peer && !strcmp(peer, "beta"));
		FUZZ_ASSERT(wire_auth_refusal(&a, &c) == WIRE_REFUSE_NONE);
		FUZZ_ASSERT(c && !strcmp(c->resource, "vol0"));
		FUZZ_ASSERT(wire_auth_session_key(&a, session) == 0);
	} else {
		/* wire.h: a key once the peer's proof is verified, though the
		 * OKs may not both have gone yet (a fuzzer's input in CI, now
		 * tests/fuzz/corpus/handshake/verified-not-done). */
		bool keyed = a.verified && !a.error && !a.refuse;

		FUZZ_ASSERT(wire_auth_session_key(&a, session) == (keyed ? 0 : -EAGAIN));
	}
	wire_auth_clear(&a);
	return 0;
}
