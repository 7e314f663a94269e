#!/bin/bash
# tests/nbd-tls.sh: NBD over TCP with TLS (NBD_OPT_STARTTLS, X.509) and real
# clients.  Certificates are made with certtool.  qemu-img, qemu-io and
# nbdinfo read and write over TLS; a plain client gets NBD_REP_ERR_TLS_REQD;
# a client whose certificate DN is not in nbd-tls-allow, or signed by
# another CA, is refused with the reason in the log; garbage after
# STARTTLS (in the same packet, or instead of a ClientHello) and
# NBD_OPT_EXPORT_NAME before TLS close the connection; the daemon serves on.
# The Unix socket stays plain.  nbd-listen without certificates refuses to
# start (nbd-tls = require is the default).
# shellcheck source=SCRIPTDIR/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires qemu-io qemu-img nbdinfo certtool timeout cmp
[ -x "$PYTHON" ] || skip "requires $PYTHON"

PKI=$TESTDIR/pki
make_tls_certs "$PKI"
write_config -s 16M

# Without certificates, nbd-listen does not start.
cp "$CONFIG" "$TESTDIR/nocert.conf"
sed -i "/^\[global\]/a nbd-listen = 127.0.0.1:$(free_port)\nnbd-tls-cert-dir = $TESTDIR/no-such-dir" \
	"$TESTDIR/nocert.conf"
if try_start_replagentd_as nocert "$TESTDIR/nocert.conf" 2>/dev/null; then
	fail "replagentd started with nbd-listen and no TLS certificates"
fi
grep -q "NBD over TCP needs TLS certificates" "$(daemon_log nocert)" ||
	fail "no clear error for missing certificates in $(daemon_log nocert)"

sed -i "/^\[global\]/a nbd-tls = require\nnbd-tls-cert-dir = $PKI\nnbd-tls-allow = O=replagent test,CN=client\nnbd-tls-allow = O=someone else,CN=*" \
	"$CONFIG"
start_replagentd_tcp "$CONFIG"
LOGF=$(daemon_log)

# tls_obj DIR / tls_img: qemu's TLS object with DIR's certificates, and
# the image options of $VOL over TLS; qio_tls DIR CMD...: qemu-io with them.
tls_obj() { echo "tls-creds-x509,id=tls0,dir=$1,endpoint=client"; }
tls_img() { echo "driver=nbd,server.type=inet,server.host=127.0.0.1,server.port=$NBD_PORT,export=$VOL,tls-creds=tls0"; }
qio_tls() {
	local dir=$1 a
	shift
	local args=()
	for a in "$@"; do args+=(-c "$a"); done
	timeout 30 qemu-io --object "$(tls_obj "$dir")" --image-opts "$(tls_img)" "${args[@]}" 2>&1
}

log "qemu-io over TLS: write and read back"
out=$(qio_tls "$PKI" 'write -P 0x5a 0 1M' 'write -P 0xa5 4M 64k' 'read -P 0x5a 0 1M' \
	'read -P 0xa5 4M 64k') || fail "qemu-io over TLS failed: $out"
case $out in *ailed* | *rror*) fail "qemu-io over TLS: $out" ;; esac
grep -q "NBD TLS client O=replagent test,CN=client (allowed by" "$LOGF" ||
	fail "the log does not name the TLS client"

log "qemu-img convert over TLS (4 MiB of random data), read back over the Unix socket"
head -c 4M /dev/urandom >"$TESTDIR/rand.img"
timeout 60 qemu-img convert -n -f raw --object "$(tls_obj "$PKI")" --target-image-opts \
	"$TESTDIR/rand.img" "$(tls_img)" || fail "qemu-img convert to NBD over TLS failed"
timeout 60 qemu-img convert -f raw -O raw "$NBD_URI" "$TESTDIR/back-unix.img" ||
	fail "qemu-img convert over the Unix socket failed"
cmp -n 4194304 "$TESTDIR/rand.img" "$TESTDIR/back-unix.img" ||
	fail "data written over TLS differs when read over the Unix socket"
timeout 60 qemu-img convert --object "$(tls_obj "$PKI")" --image-opts -O raw "$(tls_img)" \
	"$TESTDIR/back-tls.img" || fail "qemu-img convert from NBD over TLS failed"
cmp "$TESTDIR/back-unix.img" "$TESTDIR/back-tls.img" ||
	fail "TLS and Unix socket reads differ"

log "nbdinfo over TLS (nbds://)"
size=$(timeout 30 nbdinfo --size "nbds://127.0.0.1:$NBD_PORT/$VOL?tls-certificates=$PKI") ||
	fail "nbdinfo over TLS failed"
[ "$size" = $((16 * 1024 * 1024)) ] || fail "nbdinfo over TLS: size $size"
timeout 30 nbdinfo "nbds://127.0.0.1:$NBD_PORT/$VOL?tls-certificates=$PKI" |
	grep -q "with TLS" || fail "nbdinfo does not report TLS"

log "a plain client is refused with TLS_REQD"
out=$(timeout 30 qemu-io -f raw -c 'read 0 4k' "$NBD_TCP_URI" 2>&1) &&
	fail "a plain qemu-io read over TCP succeeded"
grep -q "TLS is required" <<<"$out" || fail "plain qemu-io: $out"
if timeout 30 nbdinfo "$NBD_TCP_URI" >/dev/null 2>&1; then
	fail "a plain nbdinfo over TCP succeeded"
fi

log "a certificate DN not in nbd-tls-allow is refused"
out=$(qio_tls "$PKI/other" 'read 0 4k') && fail "client CN=other was let in: $out"
wait_log replagentd 10 'certificate DN "O=replagent test,CN=other" matches no nbd-tls-allow' ||
	fail "no log line for the refused DN"

log "a certificate of another CA is refused"
# (qemu checks its own certificate against its CA first: nbdinfo sends it)
timeout 30 nbdinfo "nbds://127.0.0.1:$NBD_PORT/$VOL?tls-certificates=$PKI/rogue" \
	>"$TESTDIR/rogue.out" 2>&1 && fail "client of the rogue CA was let in"
wait_log replagentd 10 'NBD TLS handshake failed: (client certificate|the client sent no certificate)' ||
	fail "no log line for the untrusted client certificate"

log "raw: garbage around STARTTLS, EXPORT_NAME and LIST before TLS"
"$PYTHON" - "$NBD_PORT" <<-'PYEOF' || fail "raw STARTTLS scenarios"
	import socket, struct, sys
	port = int(sys.argv[1])
	IHAVEOPT, REP_MAGIC = 0x49484156454F5054, 0x3E889045565A9
	TLS_REQD = (1 << 31) | 5
	def conn():
	    s = socket.create_connection(("127.0.0.1", port), timeout=10)
	    hello = b""
	    while len(hello) < 18:
	        hello += s.recv(18 - len(hello))
	    s.sendall(struct.pack(">I", 3))		# fixed newstyle, no zeroes
	    return s
	def opt(o, data=b""):
	    return struct.pack(">QII", IHAVEOPT, o, len(data)) + data
	def reply(s):
	    h = b""
	    while len(h) < 20:
	        b = s.recv(20 - len(h))
	        if not b:
	            return None
	        h += b
	    magic, o, r, n = struct.unpack(">QIII", h)
	    body = b""
	    while len(body) < n:
	        body += s.recv(n - len(body))
	    return o, r, body
	def closed(s):
	    try:
	        while True:
	            b = s.recv(4096)
	            if not b:
	                return True
	    except ConnectionResetError:
	        return True
	    except socket.timeout:
	        return False
	    except OSError:		# reset while sending the rest
	        return True
	bad = []
	s = conn(); s.sendall(opt(3))
	r = reply(s)
	if not r or r[1] != TLS_REQD:
	    bad.append("LIST before TLS: %r" % (r,))
	s.close()
	s = conn(); s.sendall(opt(1, b"vol0"))
	if not closed(s):
	    bad.append("EXPORT_NAME before TLS: not closed")
	s = conn(); s.sendall(opt(5) + opt(7, b"\0" * 6) + b"garbage" * 10)
	if not closed(s):
	    bad.append("data after STARTTLS in one packet: not closed")
	# Instead of a ClientHello: text, and a handshake record of zeros.  (A
	# record that looks like the start of a long handshake message waits
	# for the rest: the 10 s handshake timeout ends it.)
	for junk in (b"garbage, not a ClientHello\r\n" * 20,
	             b"\x16\x03\x01\x40\x00" + b"\0" * 20000):
	    s = conn(); s.sendall(opt(5))
	    r = reply(s)
	    if not r or r[1] != 1:
	        bad.append("STARTTLS: %r" % (r,))
	        continue
	    try:
	        s.sendall(junk)
	    except OSError:
	        pass		# closed while sending
	    if not closed(s):
	        bad.append("garbage instead of a ClientHello (%r...): not closed" % junk[:8])
	for b in bad:
	    print("FAIL " + b)
	sys.exit(1 if bad else 0)
PYEOF
grep -q "NBD client sent data after NBD_OPT_STARTTLS" "$LOGF" ||
	fail "no log line for data injected after STARTTLS"
# One for the other CA's client, one for each garbage handshake.
[ "$(grep -c "NBD TLS handshake failed" "$LOGF")" -ge 3 ] ||
	fail "no log line for each bad handshake"
replagentd_alive || fail "replagentd died"

log "still serving over TLS, and plain on the Unix socket"
out=$(qio_tls "$PKI" 'read -P 0xa5 4M 64k') || fail "qemu-io over TLS after the refusals: $out"
case $out in *ailed* | *rror*) fail "qemu-io over TLS after the refusals: $out" ;; esac
qio "$NBD_URI" 'read -P 0xa5 4M 64k' >/dev/null || fail "qemu-io over the Unix socket failed"

stop_replagentd || fail "replagentd exited with status $REPLAGENTD_STATUS"
log "PASS"
