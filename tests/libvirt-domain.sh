#!/bin/bash
# tests/libvirt-domain.sh: a libvirt/QEMU guest boots from a replagentd export.
#
# The volume gets a tiny x86 boot sector (see build_boot_sector) that prints
# a marker to COM1, reads the disk's second sector through the BIOS and
# prints the random token stored there.  A transient TCG domain (no KVM
# needed, 64 MiB, no network) whose virtio disk is the NBD export on the
# Unix socket boots it under a private libvirtd (own mount namespace, see
# start_private_libvirtd), with its serial port logged to a file.  Pass when
# the marker and the token appear there.
# shellcheck source=SCRIPTDIR/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires_root
requires libvirtd virtlogd virsh qemu-system-x86_64 qemu-io nasm unshare nsenter runuser timeout
id libvirt-qemu >/dev/null 2>&1 || skip "requires the libvirt-qemu user"

write_config -s 64M
start_replagentd "$CONFIG"

# QEMU runs as libvirt-qemu: it must be able to connect to the socket
# (replagentd makes it group kvm 0660, or 0666 without a kvm group).
user_can_connect libvirt-qemu "$NBD_SOCK" ||
	fail "libvirt-qemu cannot connect to $NBD_SOCK ($(stat -c '%A %U:%G' "$NBD_SOCK"))"

token="TOKEN-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
build_boot_sector "$TESTDIR/boot.img" "$token"
qio_batch "$NBD_URI" "write -s $TESTDIR/boot.img 0 1024" ||
	fail "cannot write the boot sector"

start_private_libvirtd

serial=$TESTDIR/serial.log
domain_xml "replagent-$TEST_NAME-$$" "$(nbd_disk_source "$NBD_SOCK" "$VOL")" "$serial" \
	>"$TESTDIR/domain.xml"
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

virsh_ns destroy "replagent-$TEST_NAME-$$" >/dev/null || fail "virsh destroy failed"
replagentd_alive || fail "replagentd died"
stop_replagentd || fail "exit status $REPLAGENTD_STATUS after SIGTERM, expected 0"
log "PASS"
