/* nbd_opt.c: the options of an NBD connection's fixed newstyle handshake:
 * which export a client may open and on what terms (its size, flags, the
 * node's limit of attached clients, promotion of a Secondary), LIST,
 * STRUCTURED_REPLY, STARTTLS (the session itself is nbd_tls.c's), the
 * metadata contexts (nbd_meta.c) and the move to the transmission phase.
 * The framing of options, the client flags and the limits on clients in
 * the handshake are nbd_conn.c's. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "nbd-protocol.h"
#include "nbd_conn_int.h"
#include "nbd_meta.h"
#include "nbd_opt.h"
#include "nbd_out.h"
#include "nbd_tls.h"
#include "repl_int.h"
#include "resize.h"
#include "util.h"

/* A client gets the size every connected replica has (resize.h), and
 * keeps it: NBD has no way to tell it of a new one. */
static int send_export_info(struct nbd_conn *c, uint32_t opt, struct repl_volume *vol,
			    uint64_t size)
{
	struct __attribute__((packed)) { uint16_t type; uint64_t size; uint16_t flags; } ie = {
		htobe16(NBD_INFO_EXPORT), htobe64(size),
		htobe16(repl__nbd_export_flags(vol, c->structured)),
	};
	struct __attribute__((packed)) { uint16_t type; uint32_t min, pref, max; } bs = {
		htobe16(NBD_INFO_BLOCK_SIZE), htobe32(1), htobe32(4096),
		htobe32(NBD_MAX_PAYLOAD),
	};
	int r = repl__nbd_opt_reply(c, opt, NBD_REP_INFO, &ie, sizeof(ie));

	return r < 0 ? r : repl__nbd_opt_reply(c, opt, NBD_REP_INFO, &bs, sizeof(bs));
}

static unsigned attached_clients(const struct repl_engine *eng)
{
	unsigned n = 0;

	for (const struct repl_volume *v = eng->volumes; v; v = v->next)
		n += v->clients;
	return n;
}

/* Which volume a client may open (go: and use now, which may auto-promote
 * it), or an NBD_REP_ERR_* with a message. */
static struct repl_volume *export_lookup(struct nbd_conn *c, const char *name, bool go,
					 uint32_t *err, char *msg, size_t msglen)
{
	struct repl_volume *vol = repl_volume_find(c->eng, name);

	if (!vol) {
		*err = NBD_REP_ERR_UNKNOWN;
		snprintf(msg, msglen, "no volume named \"%s\" on this node", name);
		return NULL;
	}
	if (vol->down) {
		*err = NBD_REP_ERR_POLICY;
		snprintf(msg, msglen, "volume \"%s\" is down on this node", name);
		return NULL;
	}
	if (vol->role != REPL_PRIMARY && !vol->window && !vol->auto_promote) {
		*err = NBD_REP_ERR_POLICY;
		snprintf(msg, msglen, "volume \"%s\" is Secondary on this node: "
			 "only the Primary serves I/O", name);
		return NULL;
	}
	if (go && attached_clients(c->eng) >= c->eng->nbd_clients_max) {
		*err = NBD_REP_ERR_POLICY;
		snprintf(msg, msglen, "too many NBD clients on this node (nbd-clients-max = %u)",
			 c->eng->nbd_clients_max);
		log_warn("NBD client refused for \"%s\": %u clients attached "
			 "(nbd-clients-max)", name, c->eng->nbd_clients_max);
		return NULL;
	}
	if (go && vol->role != REPL_PRIMARY) {
		char why[160];
		if (repl__volume_admit(vol, why, sizeof(why)) < 0) {
			*err = NBD_REP_ERR_POLICY;
			snprintf(msg, msglen, "volume \"%s\" is Secondary on this node and "
				 "cannot be promoted: %s", name, why);
			return NULL;
		}
	}
	return vol;
}

static void enter_transmission(struct nbd_conn *c, struct repl_volume *vol, uint64_t size)
{
	/* Contexts were chosen for one export: they do not carry over. */
	if (c->meta && strcmp(c->meta->export, vol->name)) {
		plog(LOG_INFO, vol->name, "metadata contexts of export \"%s\" dropped",
		     c->meta->export);
		c->meta->n = 0;
	}
	c->vol = vol;
	c->size = size;
	repl__timer_del(c->eng, &c->hs_timer);
	vol->clients++;
	repl__window_clients_changed(vol);
	c->state = CS_TRANSMISSION;
	plog(LOG_INFO, vol->name, "client attached (%s replies)",
	     c->structured ? "structured" : "simple");
}

static int opt_info_go(struct nbd_conn *c, uint32_t opt, const uint8_t *d, uint32_t len)
{
	char name[NBD_MAX_NAME_LEN + 1], msg[NBD_MAX_NAME_LEN + 128];
	struct repl_volume *vol;
	const char *why;
	uint32_t err;
	uint64_t size;

	err = repl__nbd_parse_info_go(d, len, name, &why);
	if (err)
		return repl__nbd_opt_error(c, opt, err, why);
	vol = export_lookup(c, name, opt == NBD_OPT_GO, &err, msg, sizeof(msg));
	if (!vol)
		return repl__nbd_opt_error(c, opt, err, msg);
	size = repl__volume_export_size(vol);
	if (send_export_info(c, opt, vol, size) < 0 ||
	    repl__nbd_opt_reply(c, opt, NBD_REP_ACK, NULL, 0) < 0)
		return -ENOMEM;
	if (opt == NBD_OPT_GO)
		enter_transmission(c, vol, size);
	return 0;
}

static int opt_export_name(struct nbd_conn *c, const uint8_t *d, uint32_t len)
{
	char name[NBD_MAX_NAME_LEN + 1], msg[NBD_MAX_NAME_LEN + 128];
	struct repl_volume *vol;
	uint32_t err;
	uint8_t reply[8 + 2 + 124] = { 0 };
	uint64_t size, be;
	uint16_t flags;

	if (len > NBD_MAX_NAME_LEN)
		return -EPROTO;
	memcpy(name, d, len);
	name[len] = '\0';
	vol = export_lookup(c, name, true, &err, msg, sizeof(msg));
	if (!vol) {
		/* This old option has no error reply: closing is the answer. */
		log_warn("NBD client refused: %s", msg);
		return -EPROTO;
	}
	size = repl__volume_export_size(vol);
	be = htobe64(size);
	flags = htobe16(repl__nbd_export_flags(vol, c->structured));
	memcpy(reply, &be, 8);
	memcpy(reply + 8, &flags, 2);
	if (repl__nbd_send_bytes(c, reply, c->no_zeroes ? 10 : sizeof(reply), NULL, 0) < 0)
		return -ENOMEM;
	enter_transmission(c, vol, size);
	return 0;
}

static int opt_list(struct nbd_conn *c, uint32_t len)
{
	if (len)
		return repl__nbd_opt_error(c, NBD_OPT_LIST, NBD_REP_ERR_INVALID, "LIST takes no data");
	for (struct repl_volume *v = c->eng->volumes; v; v = v->next) {
		uint32_t n = (uint32_t)strlen(v->name), be = htobe32(n);
		uint8_t buf[4 + 256];
		if (n > sizeof(buf) - 4)
			continue;
		memcpy(buf, &be, 4);
		memcpy(buf + 4, v->name, n);
		if (repl__nbd_opt_reply(c, NBD_OPT_LIST, NBD_REP_SERVER, buf, 4 + n) < 0)
			return -ENOMEM;
	}
	return repl__nbd_opt_reply(c, NBD_OPT_LIST, NBD_REP_ACK, NULL, 0);
}

static bool is_tcp(const struct nbd_conn *c)
{
	return c->src.b[0] == '4' || c->src.b[0] == '6';
}

/* The ACK goes out in clear before the session exists; a client sends its
 * ClientHello only once it has read it, so bytes already buffered behind
 * the option (injected before TLS) close the connection. */
static int opt_starttls(struct nbd_conn *c, const uint8_t *d, uint32_t len)
{
	int r;

	if (len)
		return repl__nbd_opt_error(c, NBD_OPT_STARTTLS, NBD_REP_ERR_INVALID, "option takes no data");
	if (c->tls)
		return repl__nbd_opt_error(c, NBD_OPT_STARTTLS, NBD_REP_ERR_INVALID, "TLS already started");
	if (!repl__nbd_tls_offered(c->eng, is_tcp(c)))
		return repl__nbd_opt_error(c, NBD_OPT_STARTTLS, NBD_REP_ERR_POLICY,
				 is_tcp(c) ? "TLS is not configured on this server (nbd-tls = off)"
				 : "no TLS on the Unix socket");
	if (d + len != c->in + c->in_end) {
		log_warn("NBD client sent data after NBD_OPT_STARTTLS before its reply");
		return -EPROTO;
	}
	if (repl__nbd_opt_reply(c, NBD_OPT_STARTTLS, NBD_REP_ACK, NULL, 0) < 0)
		return -ENOMEM;
	repl__nbd_conn_flush(c);
	if (c->out_head) {
		log_warn("NBD client does not read its option replies: closing at STARTTLS");
		return -EPROTO;
	}
	c->structured = false;		/* nothing negotiated in clear survives */
	if (c->meta)
		c->meta->n = 0;
	r = repl__nbd_tls_new(c->eng, c->fd, &c->tls);
	return r < 0 ? r : 0;
}

static int meta_reply(void *arg, uint32_t opt, uint32_t type, const void *d, uint32_t len)
{
	return repl__nbd_opt_reply(arg, opt, type, d, len);
}

int repl__nbd_handle_option(struct nbd_conn *c, uint32_t opt, const uint8_t *d, uint32_t len)
{
	switch (repl__nbd_tls_gate(repl__nbd_tls_required(c->eng, is_tcp(c)), c->tls, opt)) {
	case NBD_TLS_PASS:
		break;
	case NBD_TLS_REFUSE:
		return repl__nbd_opt_error(c, opt, NBD_REP_ERR_TLS_REQD,
				 "TLS is required: NBD_OPT_STARTTLS first (nbd-tls = require)");
	case NBD_TLS_CLOSE:
		log_warn("NBD client refused: NBD_OPT_EXPORT_NAME without TLS (nbd-tls = require)");
		return -EPROTO;
	}
	switch (opt) {
	case NBD_OPT_STARTTLS:
		return opt_starttls(c, d, len);
	case NBD_OPT_EXPORT_NAME:
		return opt_export_name(c, d, len);
	case NBD_OPT_ABORT:
		repl__nbd_conn_close_side(c, false);
		return repl__nbd_opt_reply(c, opt, NBD_REP_ACK, NULL, 0);
	case NBD_OPT_LIST:
		return opt_list(c, len);
	case NBD_OPT_INFO:
	case NBD_OPT_GO:
		return opt_info_go(c, opt, d, len);
	case NBD_OPT_STRUCTURED_REPLY:
		if (len)
			return repl__nbd_opt_error(c, opt, NBD_REP_ERR_INVALID, "option takes no data");
		c->structured = true;
		return repl__nbd_opt_reply(c, opt, NBD_REP_ACK, NULL, 0);
	case NBD_OPT_LIST_META_CONTEXT:
	case NBD_OPT_SET_META_CONTEXT:
		return repl__nbd_meta_option(c->eng, opt, d, len, c->structured, &c->meta,
					     meta_reply, c);
	default:
		return repl__nbd_opt_error(c, opt, NBD_REP_ERR_UNSUP, "option not supported");
	}
}
