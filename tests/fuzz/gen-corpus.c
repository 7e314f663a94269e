/* gen-corpus.c: writes the seed corpora of the fuzz targets into
 * DIR/NAME/ (make fuzz-corpus; the files are committed): real messages
 * made with the project's own encoders, in the shapes the tests send
 * (tests/unit/test-wire.c, test-clmsg.c, test-voldb.c, the shell tests'
 * configurations and CLI requests), plus recorded handshakes and NBD
 * option streams.  Regression inputs (crash reproducers) are added by
 * hand, as corpus/NAME/regress-*, and are never overwritten here. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clmsg.h"
#include "gen.h"
#include "meta.h"
#include "nbd-protocol.h"
#include "util.h"
#include "voldb.h"
#include "wire.h"

static const char *outdir;

static void put(const char *target, const char *name, const void *data, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, target);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", outdir, target, name);
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
}

static void put_str(const char *target, const char *name, const char *s)
{
	put(target, name, s, strlen(s));
}

/* ---- wire --------------------------------------------------------------- */

static void wire_one(struct wire_msg *m)
{
	static uint8_t buf[WIRE_HDR_LEN + WIRE_DATA_FIXED + 4096];
	char name[64];
	ssize_t n = wire_encode(m, buf, sizeof(buf));

	if (n < 0) {
		fprintf(stderr, "wire_encode %s: %zd\n", wire_type_name(m->type), n);
		exit(1);
	}
	snprintf(name, sizeof(name), "%02u-%s", m->type, wire_type_name(m->type));
	put("wire", name, buf, (size_t)n);
}

static void gen_wire(void)
{
	static uint8_t data[512];
	struct wire_msg m;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 3);
	m = (struct wire_msg){ .type = WIRE_HELLO, .seq = 1 };
	m.u.hello = (struct wire_hello){ .proto_min = 1, .proto_max = 1, .features = 3,
					 .initiator = true };
	wire_one(&m);
	m = (struct wire_msg){ .type = WIRE_CHALLENGE, .seq = 2 };
	memset(m.u.nonce, 0x5a, sizeof(m.u.nonce));
	wire_one(&m);
	m = (struct wire_msg){ .type = WIRE_AUTH, .seq = 3 };
	memset(&m.u.auth, 0xa5, sizeof(m.u.auth));
	wire_one(&m);
	wire_one(&(struct wire_msg){ .type = WIRE_AUTH_OK, .seq = 4 });
	m = (struct wire_msg){ .type = WIRE_VOLUME, .seq = 5 };
	m.u.volume = (struct wire_volume){
		.uuid = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 },
		.size = 64 << 20, .current = 0x1122334455667788ull, .bitmap = 2,
		.history = { 3, 4 }, .dirty = 12, .node_id = 1, .region_size = 1u << 16,
		.disk = GEN_DISK_UPTODATE, .role = 1, .peer_disk = GEN_DISK_UNKNOWN,
	};
	strcpy(m.u.volume.name, "vol0");
	wire_one(&m);
	m = (struct wire_msg){ .type = WIRE_WRITE, .seq = 6 };
	m.u.write = (struct wire_write){ .offset = 4096, .len = sizeof(data),
					 .flags = WIRE_WF_FUA, .data = data };
	wire_one(&m);
	m = (struct wire_msg){ .type = WIRE_WRITE_ACK, .seq = 7 };
	m.u.ack = (struct wire_ack){ .seq = 6, .error = 0 };
	wire_one(&m);
	wire_one(&(struct wire_msg){ .type = WIRE_FLUSH, .seq = 8 });
	m = (struct wire_msg){ .type = WIRE_FLUSH_ACK, .seq = 9 };
	m.u.ack = (struct wire_ack){ .seq = 8, .error = 5 };
	wire_one(&m);
	m = (struct wire_msg){ .type = WIRE_TRIM, .seq = 10 };
	m.u.range = (struct wire_range){ .offset = 0, .len = 1 << 20, .flags = WIRE_WF_FUA };
	wire_one(&m);
	m = (struct wire_msg){ .type = WIRE_ZERO, .seq = 11 };
	m.u.range = (struct wire_range){ .offset = 1 << 20, .len = 1 << 16,
					 .flags = WIRE_WF_NO_HOLE };
	wire_one(&m);
	m = (struct wire_msg){ .type = WIRE_RS_REQUEST, .seq = 12 };
	m.u.range = (struct wire_range){ .offset = 65536, .len = 65536 };
	wire_one(&m);
	m = (struct wire_msg){ .type = WIRE_RS_DATA, .seq = 13 };
	m.u.write = (struct wire_write){ .offset = 0, .len = 512, .data = data };
	wire_one(&m);
	m = (struct wire_msg){ .type = WIRE_RS_ZERO, .seq = 14 };
	m.u.range = (struct wire_range){ .offset = 0, .len = 65536 };
	wire_one(&m);
	m = (struct wire_msg){ .type = WIRE_READ_REQ, .seq = 19 };
	m.u.range = (struct wire_range){ .offset = 4096, .len = 8192 };
	wire_one(&m);
	m = (struct wire_msg){ .type = WIRE_READ_DATA, .seq = 19 };
	m.u.write = (struct wire_write){ .offset = 4096, .len = 512, .data = data };
	wire_one(&m);
	m = (struct wire_msg){ .type = WIRE_READ_FAIL, .seq = 0 };
	m.u.ack = (struct wire_ack){ .seq = 19, .error = 5 };
	wire_one(&m);
	m = (struct wire_msg){ .type = WIRE_STATE, .seq = 15 };
	m.u.state = (struct wire_state){ .role = 1, .disk = GEN_DISK_UPTODATE,
					 .outdate_notice = true, .outdated_node = 2,
					 .current = 77 };
	wire_one(&m);
	wire_one(&(struct wire_msg){ .type = WIRE_PING, .seq = 16 });
	wire_one(&(struct wire_msg){ .type = WIRE_PING_ACK, .seq = 17 });
	m = (struct wire_msg){ .type = WIRE_BYE, .seq = 18 };
	m.u.bye_reason = WIRE_BYE_SPLIT_BRAIN;
	wire_one(&m);
	m = (struct wire_msg){ .type = WIRE_VERIFY_REQ, .seq = 19 };
	m.u.range = (struct wire_range){ .offset = 0, .len = 65536 };
	wire_one(&m);
	m = (struct wire_msg){ .type = WIRE_VERIFY_REPLY, .seq = 20 };
	m.u.verify = (struct wire_verify){ .offset = 0, .len = 65536, .crc = 0xdeadbeef };
	wire_one(&m);
	m = (struct wire_msg){ .type = WIRE_TAKEOVER, .seq = 21 };
	m.u.takeover.flags = WIRE_TO_SOFT;
	wire_one(&m);
	m = (struct wire_msg){ .type = WIRE_HANDOVER, .seq = 22 };
	m.u.handover = (struct wire_handover){ .error = 0, .seq = 99, .current = 77 };
	wire_one(&m);
	m = (struct wire_msg){ .type = WIRE_SIZE, .seq = 23 };
	m.u.size = 128 << 20;
	wire_one(&m);
}

/* ---- handshake: what peer "beta" sends to fuzz-handshake's "alpha" ------- */

#define KEY "fuzz-key-0123456789abcdef"

static void gen_handshake(bool alpha_initiator)
{
	static const uint8_t nonce_a[WIRE_NONCE_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	static const uint8_t nonce_b[WIRE_NONCE_LEN] = { 9, 9, 9 };
	struct wire_auth_params pa = {
		.key = (const uint8_t *)KEY, .keylen = sizeof(KEY) - 1,
		.initiator = alpha_initiator, .node = "alpha", .peer = "beta",
		.resource = "vol0", .features = WIRE_FEAT_TRIM | WIRE_FEAT_ZERO,
	}, pb = pa;
	struct wire_auth a, b;
	uint8_t frame[WIRE_CONTROL_FRAME_MAX], script[4096];
	size_t len, slen = 0;

	pb.initiator = !alpha_initiator;
	pb.node = "beta";
	pb.peer = "alpha";
	if (wire_auth_init(&a, &pa, nonce_a) || wire_auth_init(&b, &pb, nonce_b))
		exit(1);
	script[slen++] = alpha_initiator;
	for (int round = 0; round < 8; round++) {
		while (wire_auth_next(&a, frame, sizeof(frame), &len) == 1)
			wire_auth_receive(&b, frame, len);
		while (wire_auth_next(&b, frame, sizeof(frame), &len) == 1) {
			script[slen++] = (uint8_t)(len >> 8);
			script[slen++] = (uint8_t)len;
			memcpy(script + slen, frame, len);
			slen += len;
			wire_auth_receive(&a, frame, len);
		}
	}
	if (!wire_auth_done(&a)) {
		fprintf(stderr, "recorded handshake did not complete\n");
		exit(1);
	}
	put("handshake", alpha_initiator ? "initiator" : "acceptor", script, slen);
}

/* ---- clmsg --------------------------------------------------------------- */

static void clmsg_one(const struct clmsg *m, const char *name)
{
	uint8_t buf[CLMSG_MAX_LEN];
	ssize_t n = clmsg_encode(m, buf, sizeof(buf));

	if (n < 0) {
		fprintf(stderr, "clmsg_encode %s: %zd\n", name, n);
		exit(1);
	}
	put("clmsg", name, buf, (size_t)n);
}

static struct voldef sample_voldef(void)
{
	struct voldef v = { .size = 64 << 20, .n_nodes = 2, .port = 7790, .version = 1,
			    .origin = 1, .uuid = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4 } };

	strcpy(v.name, "vol0");
	strcpy(v.nodes[0], "n1");
	strcpy(v.nodes[1], "n2");
	return v;
}

static void gen_clmsg(void)
{
	struct clmsg m;

	m = (struct clmsg){ .type = CLMSG_ANNOUNCE };
	m.u.announce.nodeid = 1;
	strcpy(m.u.announce.node, "n1");
	strcpy(m.u.announce.addr, "127.0.0.1");
	clmsg_one(&m, "announce");
	m = (struct clmsg){ .type = CLMSG_VOLDEF };
	m.u.voldef = sample_voldef();
	clmsg_one(&m, "voldef");
	m.u.voldef.n_nodes = 3;
	strcpy(m.u.voldef.nodes[2], "n3");
	m.u.voldef.deleted = true;
	m.u.voldef.version = 7;
	clmsg_one(&m, "voldef-deleted");
	m = (struct clmsg){ .type = CLMSG_OUTDATE };
	strcpy(m.u.outdate.volume, "vol0");
	strcpy(m.u.outdate.node, "n2");
	m.u.outdate.generation = 0x0123456789abcdefull;
	m.u.outdate.from = 1;
	clmsg_one(&m, "outdate");
	m = (struct clmsg){ .type = CLMSG_ROLE };
	strcpy(m.u.role.volume, "vol0");
	strcpy(m.u.role.node, "n1");
	m.u.role.role = CLMSG_ROLE_PRIMARY;
	m.u.role.disk = GEN_DISK_UPTODATE;
	clmsg_one(&m, "role");
	m = (struct clmsg){ .type = CLMSG_SYNC_DONE };
	m.u.sync_done.nodeid = 2;
	clmsg_one(&m, "sync-done");
}

/* ---- voldb ----------------------------------------------------------------- */

static void gen_voldb(void)
{
	struct voldef v = sample_voldef();
	char buf[VOLDB_FILE_MAX + 1];

	if (voldef_format(&v, buf, sizeof(buf)) < 0)
		exit(1);
	put_str("voldb", "vol0", buf);
	v.n_nodes = 3;
	strcpy(v.nodes[2], "n3");
	v.deleted = true;
	v.version = 3;
	v.origin = 2;
	if (voldef_format(&v, buf, sizeof(buf)) < 0)
		exit(1);
	put_str("voldb", "vol0-deleted", buf);
}

/* ---- meta: small volumes, so that the files stay small ------------------- */

static void gen_meta(const char *name, uint64_t size, uint32_t shift, bool peers)
{
	char path[4096];
	struct meta_super sb = { .size = size, .region_shift = shift, .role = META_PRIMARY,
				 .disk_state = META_UPTODATE, .flags = META_F_CLEAN,
				 .gen_current = 5, .gen_bitmap = 4, .gen_history = { 3, 2 } };
	struct meta *m;
	uint8_t *buf;
	int fd;
	off_t len;

	if (peers) {
		strcpy(sb.peers[0].node, "n2");
		sb.peers[0].disk_state = META_OUTDATED;
		sb.peers[0].bitmap_gen = 4;
	}
	snprintf(path, sizeof(path), "%s/.gen-%s.meta", outdir, name);
	unlink(path);
	if (meta_create(path, &sb, &m) < 0)
		exit(1);
	if (peers) {
		meta_bits_set_range(m, 0, 0, 3 * (1u << shift));
		meta_bitmap_flush(m);
		sb.gen_current = 6;
		meta_update(m, &sb);	/* both slots in use */
	}
	meta_close(m);
	fd = open(path, O_RDONLY);
	len = lseek(fd, 0, SEEK_END);
	buf = malloc((size_t)len);
	if (fd < 0 || !buf || pread(fd, buf, (size_t)len, 0) != len)
		exit(1);
	close(fd);
	unlink(path);
	put("meta", name, buf, (size_t)len);
	free(buf);
}

/* ---- nbd: what qemu-img / nbdinfo send after the greeting ----------------- */

static size_t opt(uint8_t *p, uint32_t option, const void *data, uint32_t len)
{
	struct nbd_option_hdr h = { htobe64(NBD_IHAVEOPT), htobe32(option), htobe32(len) };

	memcpy(p, &h, sizeof(h));
	if (len)
		memcpy(p + sizeof(h), data, len);
	return sizeof(h) + len;
}

static size_t info_go_data(uint8_t *p, const char *name, uint16_t ninfo)
{
	uint32_t nl = htobe32((uint32_t)strlen(name));
	uint16_t ni = htobe16(ninfo);
	size_t n = 0;

	memcpy(p, &nl, 4);
	memcpy(p + 4, name, strlen(name));
	n = 4 + strlen(name);
	memcpy(p + n, &ni, 2);
	n += 2;
	for (uint16_t i = 0; i < ninfo; i++) {
		uint16_t t = htobe16(i == 0 ? NBD_INFO_BLOCK_SIZE : NBD_INFO_EXPORT);
		memcpy(p + n, &t, 2);
		n += 2;
	}
	return n;
}

static void gen_nbd(void)
{
	uint8_t s[1024], d[256];
	uint32_t flags = htobe32(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES);
	size_t n, dl;
	struct nbd_request r = { htobe32(NBD_REQUEST_MAGIC), 0, htobe16(NBD_CMD_WRITE),
				 htobe64(1), htobe64(4096), htobe32(4096) };
	uint64_t size = htobe64(64 << 20);

	/* 0: the stream a client sends (qemu-img info, nbdinfo --list). */
	n = 0;
	s[n++] = 0;
	memcpy(s + n, &flags, 4);
	n += 4;
	n += opt(s + n, NBD_OPT_STRUCTURED_REPLY, NULL, 0);
	n += opt(s + n, NBD_OPT_SET_META_CONTEXT, "\0\0\0\0\0\0\0\0", 8);
	dl = info_go_data(d, "vol0", 1);
	n += opt(s + n, NBD_OPT_INFO, d, (uint32_t)dl);
	n += opt(s + n, NBD_OPT_LIST, NULL, 0);
	n += opt(s + n, NBD_OPT_GO, d, (uint32_t)dl);
	n += opt(s + n, NBD_OPT_ABORT, NULL, 0);
	put("nbd", "options", s, n);
	n = 1;
	memcpy(s + n, &flags, 4);
	n += 4;
	n += opt(s + n, NBD_OPT_EXPORT_NAME, "vol0", 4);
	put("nbd", "export-name", s, n);
	/* STARTTLS and then bytes that are no ClientHello (no TLS here: refused,
	 * the rest parsed as options; over TCP nbd-tls.sh sends them). */
	n = 1;
	memcpy(s + n, &flags, 4);
	n += 4;
	n += opt(s + n, NBD_OPT_STARTTLS, NULL, 0);
	memcpy(s + n, "\x16\x03\x01\x00\x05garbage", 12);
	n += 12;
	n += opt(s + n, NBD_OPT_STARTTLS, "x", 1);
	put("nbd", "starttls-garbage", s, n);
	/* 1: a request header against an export. */
	n = 0;
	s[n++] = 1;
	s[n++] = 2;	/* structured, writable */
	memcpy(s + n, &size, 8);
	n += 8;
	memcpy(s + n, &r, sizeof(r));
	put("nbd", "request-write", s, n + sizeof(r));
	r.type = htobe16(NBD_CMD_READ);
	r.flags = htobe16(NBD_CMD_FLAG_DF);
	memcpy(s + n, &r, sizeof(r));
	put("nbd", "request-read", s, n + sizeof(r));
	/* 2: INFO/GO data alone. */
	s[0] = 2;
	dl = info_go_data(s + 1, "vol0", 2);
	put("nbd", "info-go", s, dl + 1);
}

/* ---- text inputs ------------------------------------------------------------- */

static void gen_text(void)
{
	put_str("cfg", "static",
		"# written by repl-basic\n[global]\nnbd-socket = /tmp/r/nbd.sock\n"
		"nbd-listen = 127.0.0.1:10809\ncontrol-socket = /tmp/r/control.sock\n"
		"state-dir = /tmp/r/state\npidfile = /tmp/r/replagentd.pid\n\n"
		"[volume vol0]\nbacking = /tmp/r/vol0.img\nsize = 64M\n");
	put_str("cfg", "replicated",
		"[global]\nnode = n1\nnbd-socket = /tmp/n1/nbd.sock\n"
		"control-socket = /tmp/n1/control.sock\nstate-dir = /tmp/n1/state\n"
		"pidfile = /tmp/n1/replagentd.pid\nkey-file = /tmp/cluster.key\n"
		"outdate-timeout = 5\nlog-level = debug\nresync-rate-max = 100M\n"
		"after-sb-0pri = discard-zero-changes\nauto-promote = yes\n\n"
		"[volume vol0]\nbacking = /tmp/n1/vol0.img\nmeta = /tmp/n1/vol0.meta\n"
		"size = 1G\nio-threads = 4\nreplica = n1 127.0.0.1:7790\n"
		"replica = n2 127.0.0.2:7790\nreplica = n3 [::1]:7791\n");
	put_str("cfg", "cluster",
		"[global]\nnode = n1\ncluster = corosync\nreplication-address = 10.0.0.1\n"
		"data-dir = /var/lib/replagent/data\nnbd-socket = none\n");
	put_str("control", "status", "status\n");
	put_str("control", "status-vol", "status vol0\r\n");
	put_str("control", "promote", "promote vol0 --force\n");
	put_str("control", "resolve", "resolve vol0 --keep n2\n");
	put_str("control", "window", "window-open vol0 120\n");
	put_str("control", "disk-xml", "disk-xml vol0 vdb\n");
	put_str("control", "events", "events\n");
	put_str("control", "unknown", "volume-create vm1 1G n1 n2\n");
	put_str("json", "status",
		"{\"ok\":true,\"node\":\"n1\",\"volumes\":[{\"name\":\"vol0\",\"role\":\"Primary\","
		"\"disk\":\"UpToDate\",\"size\":67108864,\"peers\":[{\"node\":\"n2\",\"connection\":"
		"\"Connected\",\"disk\":\"UpToDate\",\"resync\":null,\"out_of_sync\":0}]}],"
		"\"cluster\":{\"mode\":\"static\"}}");
	put_str("json", "error", "{\"ok\":false,\"error\":\"no volume \\\"x\\\" on node n1\","
		"\"retry\":true}\n");
	put_str("json", "event", "{\"event\":\"role\",\"volume\":\"vol0\",\"time\":-12,"
		"\"text\":\"caf\\u00e9 \\ud83d\\ude00\\n\\t\\\\\\/\",\"list\":[1,2.5e3,true,false,null]}");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS-DIR\n", argv[0]);
		return 2;
	}
	outdir = argv[1];
	mkdir(outdir, 0755);
	gen_wire();
	gen_handshake(true);
	gen_handshake(false);
	gen_clmsg();
	gen_voldb();
	gen_meta("plain", 1 << 20, 16, false);
	gen_meta("peers", 4 << 20, 12, true);
	gen_nbd();
	gen_text();
	return 0;
}
