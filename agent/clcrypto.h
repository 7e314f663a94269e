/* clcrypto.h: is corosync's traffic protected?  A pure decision from the
 * totem settings read from cmap (cluster.c), tested from a table. */
#ifndef REPL_AGENT_CLCRYPTO_H
#define REPL_AGENT_CLCRYPTO_H

/* cipher, hash: totem.crypto_cipher / totem.crypto_hash, NULL if not set;
 * secauth: totem.secauth, NULL if not set (corosync's older switch, which
 * means aes256/sha256 when the two are not set).  NULL when the traffic is
 * encrypted and authenticated, else what is missing, for a warning. */
const char *clcrypto_problem(const char *cipher, const char *hash, const char *secauth);

#endif
