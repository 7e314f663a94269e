#!/bin/bash
# tests/libvirt-nbd-tls.sh: a libvirt/QEMU guest boots from a replagentd
# export over NBD on TCP with TLS: the disk source has tls='yes', and
# libvirt's qemu.conf names the certificates (nbd_tls_x509_cert_dir, QEMU's
# layout: ca-cert.pem, client-cert.pem, client-key.pem), the same directory
# replagentd serves from (nbd-tls-cert-dir).  The guest is the boot sector of
# libvirt-domain.sh: it prints a marker and a random token it read from its
# disk.  Pass when they appear on its serial port and the daemon logged the
# TLS client.
# shellcheck source=SCRIPTDIR/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires_root
requires libvirtd virtlogd virsh qemu-system-x86_64 qemu-io nasm unshare nsenter runuser timeout
id libvirt-qemu >/dev/null 2>&1 || skip "requires the libvirt-qemu user"

PKI=$TESTDIR/pki
make_tls_certs "$PKI"
# QEMU runs as libvirt-qemu and reads the client key itself.
chown libvirt-qemu "$PKI/client-key.pem" || hard_error "chown"
chmod 0755 "$PKI"

write_config -s 64M
sed -i "/^\[global\]/a nbd-tls = require\nnbd-tls-cert-dir = $PKI\nnbd-tls-allow = O=replagent test,CN=client" \
	"$CONFIG"
start_replagentd_tcp "$CONFIG"

token="TOKEN-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
build_boot_sector "$TESTDIR/boot.img" "$token"
qio_batch "$NBD_URI" "write -s $TESTDIR/boot.img 0 1024" ||
	fail "cannot write the boot sector"

# shellcheck disable=SC2329 # called by start_private_libvirtd
LIBVIRT_SETUP() {
	printf '\n# added by %s\nnbd_tls_x509_cert_dir = "%s"\n' "$TEST_NAME" "$PKI" >>"$1/qemu.conf"
}
start_private_libvirtd

serial=$TESTDIR/serial.log
src="<source protocol='nbd' name='$VOL' tls='yes'><host name='127.0.0.1' port='$NBD_PORT'/></source>"
domain_xml "replagent-$TEST_NAME-$$" "$src" "$serial" >"$TESTDIR/domain.xml"
start_domain "$TESTDIR/domain.xml"
log "domain started; waiting for the guest's serial output"
if ! wait_for_file_text "$serial" "$BOOT_MARKER $token" 60; then
	echo "---- serial.log ----" >&2
	cat -v "$serial" >&2
	echo "---- qemu log ----" >&2
	tail -n 20 "$LIBVIRT_DIR/log/qemu/replagent-$TEST_NAME-$$.log" >&2
	fail "no '$BOOT_MARKER $token' on the guest's serial port within 60 s"
fi
log "guest printed: $(tr -d '\r' <"$serial" | grep -a -F "$BOOT_MARKER")"
grep -q -a READ-ERROR "$serial" && fail "the guest could not read its disk"
grep -q "NBD TLS client O=replagent test,CN=client" "$(daemon_log)" ||
	fail "replagentd did not log a TLS client"

virsh_ns destroy "replagent-$TEST_NAME-$$" >/dev/null || fail "virsh destroy failed"
replagentd_alive || fail "replagentd died"
stop_replagentd || fail "exit status $REPLAGENTD_STATUS after SIGTERM, expected 0"
log "PASS"
