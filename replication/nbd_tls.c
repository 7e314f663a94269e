/* nbd_tls.c: TLS for NBD clients over TCP, with GnuTLS and X.509
 * certificates laid out as QEMU's tls-creds-x509 dir (ca-cert.pem,
 * server-cert.pem, server-key.pem), so one directory serves qemu-nbd,
 * libvirt's nbd_tls_x509_cert_dir and this daemon.  A client must present
 * a certificate signed by that CA (qemu-nbd's verify-peer default), and,
 * with an allow list, one whose DN matches a pattern of it (fnmatch, the
 * DN as gnutls_x509_crt_get_dn writes it, like libvirt's
 * tls_allowed_dn_list).  It is not the NBD state machine: nbd_conn.c calls
 * repl__nbd_recv()/repl__nbd_sendmsg() where it called recv()/sendmsg(),
 * and this file does the handshake inside the first reads.
 *
 * Threads: the loop thread reads, and sends happen under the connection's
 * lock on the loop or a volume worker.  GnuTLS allows one sender and one
 * receiver on a session at once; renegotiation (which would break that) is
 * refused, as a server GnuTLS never starts it. */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <poll.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "nbd-protocol.h"
#include "nbd_tls.h"
#include "repl_int.h"
#include "util.h"

#define RECORD_MAX	16384		/* TLS plaintext per record */
#define READAHEAD	(64 * 1024)	/* ciphertext read at once */
#define ALLOW_MAX	32

struct nbd_tls_creds {
	gnutls_certificate_credentials_t x509;
	bool require;
	unsigned n_allow;
	char *allow[ALLOW_MAX];
};

struct nbd_tls {
	gnutls_session_t s;
	const struct nbd_tls_creds *cr;
	bool handshaking;
	bool wants_write;
	bool send_stalled;		/* a record waits: resend with NULL, 0 */
	int fd;
	size_t ra_start, ra_end;	/* ciphertext read ahead, not yet pulled */
	uint8_t ra[READAHEAD];
	uint8_t stage[RECORD_MAX];	/* small iovecs gathered into one record */
};

enum nbd_tls_gate repl__nbd_tls_gate(bool required, bool active, uint32_t opt)
{
	if (!required || active || opt == NBD_OPT_STARTTLS || opt == NBD_OPT_ABORT)
		return NBD_TLS_PASS;
	return opt == NBD_OPT_EXPORT_NAME ? NBD_TLS_CLOSE : NBD_TLS_REFUSE;
}

bool repl__nbd_tls_required(const struct repl_engine *eng, bool tcp)
{
	return tcp && eng->nbd_tls && eng->nbd_tls->require;
}

bool repl__nbd_tls_offered(const struct repl_engine *eng, bool tcp)
{
	return tcp && eng->nbd_tls;
}

void repl__nbd_tls_creds_free(struct nbd_tls_creds *cr)
{
	if (!cr)
		return;
	if (cr->x509)
		gnutls_certificate_free_credentials(cr->x509);
	for (unsigned i = 0; i < cr->n_allow; i++)
		free(cr->allow[i]);
	free(cr);
}

static int load_creds(struct nbd_tls_creds *cr, const char *dir)
{
	char ca[4096], cert[4096], key[4096];
	int r;

	if (snprintf(ca, sizeof(ca), "%s/ca-cert.pem", dir) >= (int)sizeof(ca) ||
	    snprintf(cert, sizeof(cert), "%s/server-cert.pem", dir) >= (int)sizeof(cert) ||
	    snprintf(key, sizeof(key), "%s/server-key.pem", dir) >= (int)sizeof(key))
		return -ENAMETOOLONG;
	r = gnutls_certificate_allocate_credentials(&cr->x509);
	if (r < 0)
		return -ENOMEM;
	r = gnutls_certificate_set_x509_trust_file(cr->x509, ca, GNUTLS_X509_FMT_PEM);
	if (r <= 0) {
		log_err("NBD TLS: cannot load the CA certificate %s: %s", ca,
			r < 0 ? gnutls_strerror(r) : "no certificate in it");
		return -EINVAL;
	}
	r = gnutls_certificate_set_x509_key_file(cr->x509, cert, key, GNUTLS_X509_FMT_PEM);
	if (r < 0) {
		log_err("NBD TLS: cannot load %s with its key %s: %s", cert, key,
			gnutls_strerror(r));
		return -EINVAL;
	}
	return 0;
}

int repl_nbd_tls_set(struct repl_engine *eng, const char *dir, const char *const *allow,
		     bool require)
{
	struct nbd_tls_creds *cr = calloc(1, sizeof(*cr));
	int r;

	if (!cr)
		return -ENOMEM;
	cr->require = require;
	r = load_creds(cr, dir);
	for (; r == 0 && allow && *allow; allow++) {
		if (cr->n_allow == ALLOW_MAX)
			r = -E2BIG;
		else if (!(cr->allow[cr->n_allow++] = strdup(*allow)))
			r = -ENOMEM;
	}
	if (r < 0) {
		repl__nbd_tls_creds_free(cr);
		return r;
	}
	repl__nbd_tls_creds_free(eng->nbd_tls);
	eng->nbd_tls = cr;
	log_info("NBD over TCP: TLS %s, certificates in %s, %u allowed DN pattern(s)%s",
		 require ? "required" : "offered", dir, cr->n_allow,
		 cr->n_allow ? "" : " (any client certificate signed by the CA)");
	return 0;
}

/* GnuTLS reads a record's header and then its body, two syscalls per 16
 * KiB record; reading ahead makes it one per 64 KiB.  What is read ahead
 * counts as pending (repl__nbd_tls_pending): the socket has no POLLIN for it. */
static ssize_t pull(gnutls_transport_ptr_t p, void *buf, size_t len)
{
	struct nbd_tls *t = p;
	size_t take;

	if (t->ra_start == t->ra_end) {
		ssize_t n = recv(t->fd, t->ra, sizeof(t->ra), MSG_DONTWAIT);
		if (n <= 0) {
			if (n < 0)
				gnutls_transport_set_errno(t->s, errno);
			return n;
		}
		t->ra_start = 0;
		t->ra_end = (size_t)n;
	}
	take = MIN(len, t->ra_end - t->ra_start);
	memcpy(buf, t->ra + t->ra_start, take);
	t->ra_start += take;
	return (ssize_t)take;
}

static int pull_timeout(gnutls_transport_ptr_t p, unsigned ms)
{
	struct nbd_tls *t = p;
	struct pollfd pfd = { .fd = t->fd, .events = POLLIN };

	if (t->ra_start < t->ra_end)
		return 1;
	return poll(&pfd, 1, ms == GNUTLS_INDEFINITE_TIMEOUT ? -1 : (int)ms);
}

int repl__nbd_tls_new(struct repl_engine *eng, int fd, struct nbd_tls **out)
{
	struct nbd_tls *t = calloc(1, sizeof(*t));
	int r;

	if (!t)
		return -ENOMEM;
	t->cr = eng->nbd_tls;
	r = gnutls_init(&t->s, GNUTLS_SERVER | GNUTLS_NONBLOCK | GNUTLS_NO_SIGNAL);
	if (r < 0) {
		free(t);
		return -ENOMEM;
	}
	if (gnutls_set_default_priority(t->s) < 0 ||
	    gnutls_credentials_set(t->s, GNUTLS_CRD_CERTIFICATE, t->cr->x509) < 0) {
		repl__nbd_tls_free(t);
		return -EINVAL;
	}
	gnutls_certificate_server_set_request(t->s, GNUTLS_CERT_REQUIRE);
	gnutls_session_set_verify_cert(t->s, NULL, 0);
	t->fd = fd;
	gnutls_transport_set_ptr2(t->s, t, (gnutls_transport_ptr_t)(intptr_t)fd);
	gnutls_transport_set_pull_function(t->s, pull);
	gnutls_transport_set_pull_timeout_function(t->s, pull_timeout);
	gnutls_handshake_set_timeout(t->s, 0);	/* nbd_conn.c's handshake timer */
	t->handshaking = true;
	*out = t;
	return 0;
}

void repl__nbd_tls_free(struct nbd_tls *t)
{
	if (!t)
		return;
	if (t->s) {
		/* A close_notify if the socket takes it now; never waits. */
		if (!t->handshaking)
			gnutls_bye(t->s, GNUTLS_SHUT_WR);
		gnutls_deinit(t->s);
	}
	free(t);
}

/* The client certificate's DN against the allow list: 0, or -EACCES
 * with the DN in the log so that it can be copied into the list. */
static int check_allowed(struct nbd_tls *t)
{
	const gnutls_datum_t *chain;
	unsigned n = 0;
	gnutls_x509_crt_t crt;
	char dn[1024];
	size_t dnlen = sizeof(dn);
	int r;

	chain = gnutls_certificate_get_peers(t->s, &n);
	if (!chain || n == 0) {
		log_warn("NBD TLS client refused: it sent no certificate");
		return -EACCES;
	}
	if (gnutls_x509_crt_init(&crt) < 0)
		return -ENOMEM;
	r = gnutls_x509_crt_import(crt, &chain[0], GNUTLS_X509_FMT_DER);
	if (r == 0)
		r = gnutls_x509_crt_get_dn(crt, dn, &dnlen);
	gnutls_x509_crt_deinit(crt);
	if (r < 0) {
		log_warn("NBD TLS client refused: unreadable certificate DN: %s",
			 gnutls_strerror(r));
		return -EACCES;
	}
	if (t->cr->n_allow == 0) {
		log_info("NBD TLS client %s", dn);
		return 0;
	}
	for (unsigned i = 0; i < t->cr->n_allow; i++) {
		if (fnmatch(t->cr->allow[i], dn, 0) == 0) {
			log_info("NBD TLS client %s (allowed by \"%s\")", dn, t->cr->allow[i]);
			return 0;
		}
	}
	log_warn("NBD TLS client refused: certificate DN \"%s\" matches no nbd-tls-allow", dn);
	return -EACCES;
}

static void log_handshake_error(struct nbd_tls *t, int r)
{
	gnutls_datum_t why = { NULL, 0 };
	unsigned status;

	if (r == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
		status = gnutls_session_get_verify_cert_status(t->s);
		if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509,
								 &why, 0) == 0) {
			log_warn("NBD TLS handshake failed: client certificate: %s",
				 (const char *)why.data);
			gnutls_free(why.data);
			return;
		}
	}
	if (r == GNUTLS_E_CERTIFICATE_REQUIRED || r == GNUTLS_E_NO_CERTIFICATE_FOUND) {
		/* GnuTLS clients send only a certificate of a CA we named. */
		log_warn("NBD TLS handshake failed: the client sent no certificate signed "
			 "by our CA (ca-cert.pem)");
		return;
	}
	log_warn("NBD TLS handshake failed: %s", gnutls_strerror(r));
}

/* 1: done, 0: wait (errno EAGAIN), -1: failed (errno EPROTO). */
static int handshake_step(struct nbd_tls *t)
{
	int r = gnutls_handshake(t->s);

	if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) {
		t->wants_write = gnutls_record_get_direction(t->s) == 1;
		errno = EAGAIN;
		return 0;
	}
	t->wants_write = false;
	if (r < 0) {
		log_handshake_error(t, r);
		errno = EPROTO;
		return -1;
	}
	t->handshaking = false;
	if (check_allowed(t) < 0) {
		errno = EACCES;
		return -1;
	}
	return 1;
}

ssize_t repl__nbd_recv(struct nbd_tls *t, int fd, void *buf, size_t len)
{
	ssize_t n;

	if (!t)
		return recv(fd, buf, len, MSG_DONTWAIT);
	if (t->handshaking) {
		int r = handshake_step(t);
		if (r <= 0)
			return -1;
	}
	n = gnutls_record_recv(t->s, buf, len);
	if (n >= 0)
		return n;
	switch (n) {
	case GNUTLS_E_AGAIN:
	case GNUTLS_E_INTERRUPTED:
		errno = EAGAIN;
		return -1;
	case GNUTLS_E_PREMATURE_TERMINATION:
		return 0;			/* gone without close_notify */
	default:
		log_warn("NBD TLS client: %s", gnutls_strerror((int)n));
		errno = EPROTO;
		return -1;
	}
}

/* One record's worth from the front of msg: straight from a large iovec,
 * else the small ones gathered into t->stage. */
static ssize_t send_record(struct nbd_tls *t, const struct msghdr *msg)
{
	const struct iovec *iov = msg->msg_iov;
	size_t have = 0;

	if (msg->msg_iovlen > 0 && iov[0].iov_len >= RECORD_MAX)
		return gnutls_record_send(t->s, iov[0].iov_base, RECORD_MAX);
	for (size_t i = 0; i < msg->msg_iovlen && have < RECORD_MAX; i++) {
		size_t take = MIN(iov[i].iov_len, RECORD_MAX - have);
		memcpy(t->stage + have, iov[i].iov_base, take);
		have += take;
	}
	return gnutls_record_send(t->s, t->stage, have);
}

/* Drops the first n bytes of a private copy of the iovec array. */
static void iov_advance(struct iovec *iov, size_t *cnt, size_t n)
{
	size_t i = 0;

	while (i < *cnt && n >= iov[i].iov_len)
		n -= iov[i++].iov_len;
	if (i < *cnt) {
		iov[i].iov_base = (char *)iov[i].iov_base + n;
		iov[i].iov_len -= n;
	}
	memmove(iov, iov + i, (*cnt - i) * sizeof(*iov));
	*cnt -= i;
}

ssize_t repl__nbd_sendmsg(struct nbd_tls *t, int fd, const struct msghdr *msg)
{
	struct iovec iov[64];
	struct msghdr m = { .msg_iov = iov };
	size_t cnt = MIN(msg->msg_iovlen, sizeof(iov) / sizeof(iov[0]));
	ssize_t total = 0, n;

	if (!t)
		return sendmsg(fd, msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	memcpy(iov, msg->msg_iov, cnt * sizeof(*iov));
	for (;;) {
		m.msg_iovlen = cnt;
		if (cnt == 0 || (cnt == 1 && iov[0].iov_len == 0))
			return total;
		/* The caller's first bytes are those of the stalled record. */
		n = t->send_stalled ? gnutls_record_send(t->s, NULL, 0) : send_record(t, &m);
		if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) {
			t->send_stalled = true;
			if (total)
				return total;
			errno = EAGAIN;
			return -1;
		}
		t->send_stalled = false;
		if (n < 0) {
			log_warn("NBD TLS client: sending: %s", gnutls_strerror((int)n));
			if (total)
				return total;
			errno = EPIPE;
			return -1;
		}
		total += n;
		iov_advance(iov, &cnt, (size_t)n);
	}
}

bool repl__nbd_tls_pending(const struct nbd_tls *t)
{
	return t && !t->handshaking &&
	       (t->ra_start < t->ra_end || gnutls_record_check_pending(t->s) > 0);
}

bool repl__nbd_tls_handshaking(const struct nbd_tls *t)
{
	return t && t->handshaking;
}

bool repl__nbd_tls_wants_write(const struct nbd_tls *t)
{
	return t && t->wants_write;
}
