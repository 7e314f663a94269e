/* linkcrypt.c: see linkcrypt.h.  Why an AEAD of our own and not TLS 1.3
 * with a PSK: the handshake already authenticates both sides with the key
 * and yields a fresh session key, frames are already delimited, and one
 * AES-GCM call per frame (a 4 MiB WRITE is one record, where TLS cuts it
 * into 256 records of 16 KiB) keeps the simulator's sockets (repl__sys)
 * and the event loop as they are.
 *
 * Whose AES-GCM: a 1 MiB replicated write is sealed once and opened once
 * per peer, so the cipher's speed is the cost of protection.  OpenSSL 3.0
 * (Debian 12) seals at about 4 GB/s a core with AES-NI; intel-ipsec-mb
 * (Intel's library for DPDK and IPsec gateways, packaged in Debian) has
 * AES-GCM on VAES and VPCLMULQDQ over 512-bit registers and seals at about
 * 15 GB/s on such CPUs (bench/link-security-bench.sh, the README).  So:
 * intel-ipsec-mb where it is built in and the CPU has VAES, OpenSSL
 * otherwise.  Both are the same AES-256-GCM (same bytes on the wire;
 * test-linkcrypt seals with one and opens with the other), so two nodes
 * need not agree on it.  ChaCha20-Poly1305 (3.8 GB/s here) buys nothing.
 *
 * Keys: HKDF-SHA256 (RFC 5869) with the initiator's and the acceptor's
 * nonces as salt and the session key as input, one expansion per
 * direction.  Nonce: 4 zero bytes and the direction's record counter,
 * big-endian; the counter is never sent, so each side knows which record
 * must come next. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#ifdef HAVE_IPSEC_MB
#include <intel-ipsec-mb.h>
#endif

#include "linkcrypt.h"

#define LC_KEY_LEN 32
#define LC_IV_LEN 12

struct lc_dir {
	EVP_CIPHER_CTX *ctx;		/* OpenSSL's, or NULL */
#ifdef HAVE_IPSEC_MB
	struct gcm_key_data *imb;	/* intel-ipsec-mb's key schedule, or NULL */
#endif
	uint64_t counter;		/* records sealed / opened so far */
};

struct link_crypt {
	struct lc_dir tx, rx;
};

/* ---- which implementation ---------------------------------------------- */

static pthread_once_t impl_once = PTHREAD_ONCE_INIT;
static enum lc_impl impl = LC_IMPL_OPENSSL;
#ifdef HAVE_IPSEC_MB
/* Its function table for this CPU (the GCM calls keep no state in it). */
static IMB_MGR *imb;
/* The library is built with its key data 64-byte aligned and padded to a
 * multiple of 64 (its header does that only where LINUX is defined). */
#define IMB_KEY_SIZE ((sizeof(struct gcm_key_data) + 63) & ~(size_t)63)
#endif

static void impl_choose(void)
{
#ifdef HAVE_IPSEC_MB
	const uint64_t need = IMB_FEATURE_VAES | IMB_FEATURE_VPCLMULQDQ;
	const char *env = getenv("REPLAGENT_LINK_AEAD");	/* tests and benches */

	imb = alloc_mb_mgr(0);
	if (!imb)
		return;
	init_mb_mgr_auto(imb, NULL);
	if (imb_get_errno(imb)) {
		free_mb_mgr(imb);
		imb = NULL;
		return;
	}
	if (env && !strcmp(env, "openssl"))
		return;
	if ((imb->features & need) == need || (env && !strcmp(env, "ipsec-mb")))
		impl = LC_IMPL_IPSEC_MB;
#endif
}

enum lc_impl repl__lc_impl(void)
{
	pthread_once(&impl_once, impl_choose);
	return impl;
}

bool repl__lc_set_impl(enum lc_impl i)
{
	pthread_once(&impl_once, impl_choose);
#ifdef HAVE_IPSEC_MB
	if (i == LC_IMPL_IPSEC_MB && !imb)
		return false;
#else
	if (i == LC_IMPL_IPSEC_MB)
		return false;
#endif
	impl = i;
	return true;
}

const char *repl__lc_impl_name(enum lc_impl i)
{
	return i == LC_IMPL_IPSEC_MB ? "intel-ipsec-mb" : "OpenSSL";
}

static const char label_i2a[] = "replagent-v1 link initiator to acceptor";
static const char label_a2i[] = "replagent-v1 link acceptor to initiator";

/* HKDF-Expand of one block (32 bytes) with info = label. */
static int expand(const uint8_t prk[32], const char *label, uint8_t out[LC_KEY_LEN])
{
	uint8_t info[64];
	size_t n = strlen(label);
	unsigned int outlen = 0;

	memcpy(info, label, n);
	info[n++] = 1;
	if (!HMAC(EVP_sha256(), prk, 32, info, n, out, &outlen) || outlen != LC_KEY_LEN)
		return -EIO;
	return 0;
}

static int derive(const struct wire_auth *a, uint8_t k_i2a[LC_KEY_LEN],
		  uint8_t k_a2i[LC_KEY_LEN])
{
	uint8_t session[WIRE_SESSION_KEY_LEN], salt[2 * WIRE_NONCE_LEN], prk[32];
	unsigned int outlen = 0;
	int r;

	r = wire_auth_session_key(a, session);
	if (r < 0)
		return r;
	memcpy(salt, a->initiator ? a->nonce : a->peer_nonce, WIRE_NONCE_LEN);
	memcpy(salt + WIRE_NONCE_LEN, a->initiator ? a->peer_nonce : a->nonce, WIRE_NONCE_LEN);
	if (!HMAC(EVP_sha256(), salt, sizeof(salt), session, sizeof(session), prk, &outlen) ||
	    outlen != sizeof(prk))
		r = -EIO;
	if (r == 0)
		r = expand(prk, label_i2a, k_i2a);
	if (r == 0)
		r = expand(prk, label_a2i, k_a2i);
	OPENSSL_cleanse(session, sizeof(session));
	OPENSSL_cleanse(prk, sizeof(prk));
	return r;
}

static int dir_init(struct lc_dir *d, const uint8_t key[LC_KEY_LEN], bool enc)
{
#ifdef HAVE_IPSEC_MB
	if (repl__lc_impl() == LC_IMPL_IPSEC_MB) {
		d->imb = aligned_alloc(64, IMB_KEY_SIZE);
		if (!d->imb)
			return -ENOMEM;
		IMB_AES256_GCM_PRE(imb, key, d->imb);
		return imb_get_errno(imb) ? -EIO : 0;
	}
#endif
	d->ctx = EVP_CIPHER_CTX_new();
	if (!d->ctx)
		return -ENOMEM;
	if ((enc ? EVP_EncryptInit_ex(d->ctx, EVP_aes_256_gcm(), NULL, key, NULL)
		 : EVP_DecryptInit_ex(d->ctx, EVP_aes_256_gcm(), NULL, key, NULL)) != 1)
		return -EIO;
	return 0;
}

static void dir_free(struct lc_dir *d)
{
	EVP_CIPHER_CTX_free(d->ctx);
#ifdef HAVE_IPSEC_MB
	if (d->imb) {
		OPENSSL_cleanse(d->imb, IMB_KEY_SIZE);
		free(d->imb);
	}
#endif
}

struct link_crypt *repl__lc_new(const struct wire_auth *a)
{
	struct link_crypt *c = calloc(1, sizeof(*c));
	uint8_t k_i2a[LC_KEY_LEN], k_a2i[LC_KEY_LEN];
	int r;

	if (!c)
		return NULL;
	r = derive(a, k_i2a, k_a2i);
	if (r == 0)
		r = dir_init(&c->tx, a->initiator ? k_i2a : k_a2i, true);
	if (r == 0)
		r = dir_init(&c->rx, a->initiator ? k_a2i : k_i2a, false);
	OPENSSL_cleanse(k_i2a, sizeof(k_i2a));
	OPENSSL_cleanse(k_a2i, sizeof(k_a2i));
	if (r < 0) {
		repl__lc_free(c);
		errno = -r;
		return NULL;
	}
	return c;
}

void repl__lc_free(struct link_crypt *c)
{
	if (!c)
		return;
	dir_free(&c->tx);
	dir_free(&c->rx);
	free(c);
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void next_iv(struct lc_dir *d, uint8_t iv[LC_IV_LEN])
{
	uint64_t n = d->counter++;

	memset(iv, 0, 4);
	for (int i = 11; i >= 4; i--, n >>= 8)
		iv[i] = (uint8_t)n;
}

#ifdef HAVE_IPSEC_MB
static ssize_t imb_seal(struct lc_dir *d, const uint8_t iv[LC_IV_LEN], const struct iovec *iov,
			unsigned n, uint8_t *out)
{
	struct gcm_context_data cd;
	uint8_t *p = out + LC_LEN_BYTES;

	IMB_AES256_GCM_INIT(imb, d->imb, &cd, iv, out, LC_LEN_BYTES);
	for (unsigned i = 0; i < n; i++) {
		if (!iov[i].iov_len)
			continue;
		IMB_AES256_GCM_ENC_UPDATE(imb, d->imb, &cd, p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}
	IMB_AES256_GCM_ENC_FINALIZE(imb, d->imb, &cd, p, LC_TAG_LEN);
	OPENSSL_cleanse(&cd, sizeof(cd));
	return imb_get_errno(imb) ? -EIO : (ssize_t)(p + LC_TAG_LEN - out);
}

static ssize_t imb_open(struct lc_dir *d, const uint8_t iv[LC_IV_LEN],
			const uint8_t f[LC_LEN_BYTES], uint8_t *body, size_t ct)
{
	struct gcm_context_data cd;
	uint8_t tag[LC_TAG_LEN];
	int differ;

	IMB_AES256_GCM_INIT(imb, d->imb, &cd, iv, f, LC_LEN_BYTES);
	if (ct)
		IMB_AES256_GCM_DEC_UPDATE(imb, d->imb, &cd, body, body, ct);
	IMB_AES256_GCM_DEC_FINALIZE(imb, d->imb, &cd, tag, LC_TAG_LEN);
	OPENSSL_cleanse(&cd, sizeof(cd));
	if (imb_get_errno(imb))
		return -EIO;
	differ = CRYPTO_memcmp(tag, body + ct, LC_TAG_LEN);	/* constant time */
	return differ ? -EBADMSG : (ssize_t)ct;
}
#endif

ssize_t repl__lc_seal(struct link_crypt *c, const struct iovec *iov, unsigned n, uint8_t *out)
{
	EVP_CIPHER_CTX *ctx = c->tx.ctx;
	uint8_t iv[LC_IV_LEN], *p = out + LC_LEN_BYTES;
	size_t total = 0;
	int outl;

	for (unsigned i = 0; i < n; i++)
		total += iov[i].iov_len;
	if (total == 0 || total > LC_FRAME_MAX)
		return -EMSGSIZE;
	put_be32(out, (uint32_t)(total + LC_TAG_LEN));
	next_iv(&c->tx, iv);
#ifdef HAVE_IPSEC_MB
	if (c->tx.imb)
		return imb_seal(&c->tx, iv, iov, n, out);
#endif
	if (EVP_EncryptInit_ex(ctx, NULL, NULL, NULL, iv) != 1 ||
	    EVP_EncryptUpdate(ctx, NULL, &outl, out, LC_LEN_BYTES) != 1)
		return -EIO;
	for (unsigned i = 0; i < n; i++) {
		if (!iov[i].iov_len)
			continue;
		if (EVP_EncryptUpdate(ctx, p, &outl, iov[i].iov_base, (int)iov[i].iov_len) != 1)
			return -EIO;
		p += outl;
	}
	if (EVP_EncryptFinal_ex(ctx, p, &outl) != 1)
		return -EIO;
	p += outl;
	if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, LC_TAG_LEN, p) != 1)
		return -EIO;
	return (ssize_t)(LC_OVERHEAD + total);
}

ssize_t repl__lc_body_len(const uint8_t f[LC_LEN_BYTES])
{
	uint32_t len = (uint32_t)f[0] << 24 | (uint32_t)f[1] << 16 | (uint32_t)f[2] << 8 | f[3];

	if (len < WIRE_HDR_LEN + LC_TAG_LEN || len > LC_FRAME_MAX + LC_TAG_LEN)
		return -EMSGSIZE;
	return len;
}

ssize_t repl__lc_open(struct link_crypt *c, const uint8_t f[LC_LEN_BYTES], uint8_t *body,
		      size_t len)
{
	EVP_CIPHER_CTX *ctx = c->rx.ctx;
	size_t ct = len - LC_TAG_LEN;
	uint8_t iv[LC_IV_LEN];
	int outl, fin;

	if (len < LC_TAG_LEN)
		return -EBADMSG;
	next_iv(&c->rx, iv);
#ifdef HAVE_IPSEC_MB
	if (c->rx.imb)
		return imb_open(&c->rx, iv, f, body, ct);
#endif
	if (EVP_DecryptInit_ex(ctx, NULL, NULL, NULL, iv) != 1 ||
	    EVP_DecryptUpdate(ctx, NULL, &outl, f, LC_LEN_BYTES) != 1 ||
	    EVP_DecryptUpdate(ctx, body, &outl, body, (int)ct) != 1 ||
	    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, LC_TAG_LEN, body + ct) != 1)
		return -EIO;
	fin = EVP_DecryptFinal_ex(ctx, body + outl, &outl);
	return fin == 1 ? (ssize_t)ct : -EBADMSG;
}
