/* clcrypto.c: see clcrypto.h.  Corosync's knet transport encrypts and
 * authenticates its packets only with crypto_cipher and crypto_hash set
 * (and an authkey); without them anyone on the cluster network can join
 * the membership and send CPG messages, the volume table and role
 * messages among them, so the daemon says so at start.  Not a policy: the
 * daemon runs either way. */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include "clcrypto.h"

static bool off(const char *v)
{
	return !v || !*v || !strcmp(v, "none");
}

const char *clcrypto_problem(const char *cipher, const char *hash, const char *secauth)
{
	if (!cipher && !hash && secauth && !strcmp(secauth, "on"))
		return NULL;		/* secauth: on = aes256 + sha256 */
	if (off(cipher) && off(hash))
		return "neither encrypted nor authenticated (crypto_cipher and crypto_hash "
		       "are none)";
	if (off(hash))
		return "not authenticated (crypto_hash is none)";
	if (off(cipher))
		return "authenticated but not encrypted (crypto_cipher is none)";
	return NULL;
}
