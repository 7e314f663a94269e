#!/bin/bash
# tests/guest-counter.sh: the test guest (tests/guest/) runs from a
# replicated volume under libvirt, and its acknowledged writes survive the
# destruction of the domain.
#
# One replagentd with a local volume vm1 (Primary); tests/guest/build.sh
# writes the guest onto it through NBD.  The domain is
# templates/domain-vm1.xml with its <disk> as "replagent disk-xml" prints it
# (the template's own <disk> must be the same but for the socket path) and
# the serial port logged to a file; a private libvirtd runs it, with the
# replagent hook installed (the volume is Primary: the hook lets it start).
# The guest prints "COUNTER=N" after each write its disk acknowledged: the
# values must go up by one.  "virsh destroy" kills QEMU mid-loop; on the next
# start the guest's "BOOT COUNTER=B" must be at least the last N printed
# (and at most one more: the write in flight), and it must go on from B.
# shellcheck source=SCRIPTDIR/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99
# shellcheck source=SCRIPTDIR/guest-lib.sh
. "$top_srcdir/tests/guest-lib.sh" || exit 99

requires_root
requires libvirtd virtlogd virsh qemu-system-x86_64 qemu-io nasm unshare nsenter timeout
id libvirt-qemu >/dev/null 2>&1 || skip "requires the libvirt-qemu user"
requires_replagentd
requires_replagent

DOM=vm1
write_config -v vm1 -s 64M
start_replagentd "$CONFIG"
show=$("$REPLAGENT" -s "$CONTROL_SOCK" show vm1) || fail "replagent show vm1 failed"
case $show in
"role=Primary disk=UpToDate up=yes frozen=no "*) ;;
*) fail "a local volume should be Primary and UpToDate: $show" ;;
esac
build_guest "$NBD_URI"

# The domain: the template, with the daemon's own <disk>.
disk=$("$REPLAGENT" -s "$CONTROL_SOCK" disk-xml vm1) || fail "replagent disk-xml vm1 failed"
ours=$(sed -n '/<disk /,/<\/disk>/p' "$top_srcdir/templates/domain-vm1.xml" |
	sed "s:/run/replagent/nbd.sock:$NBD_SOCK:" | sed 's/^ *//')
[ "$ours" = "$(sed 's/^ *//' <<<"$disk")" ] ||
	fail "the template's <disk> is not what disk-xml prints:"$'\n'"$ours"$'\n'"----"$'\n'"$disk"
serial=$TESTDIR/serial.log
template_domain "$TESTDIR/domain.xml" "$DOM" "$disk" "$serial"

LIBVIRT_SETUP() { hook_setup "$1"; }
hook_for "$CONTROL_SOCK" "$NBD_SOCK"
start_private_libvirtd
define_domain "$TESTDIR/domain.xml"

virsh_ns start "$DOM" >/dev/null || fail "virsh start $DOM failed"
log "domain started; waiting for the guest's counter"
wait_counter "$serial" 30 60 || { show_serial "$serial" "$DOM"; fail "no COUNTER=30 within 60 s"; }
boot1=$(boot_counters "$serial" | head -n 1)
[ "$boot1" = 0 ] || fail "first boot: BOOT COUNTER=$boot1, expected 0"
check_sequence "$serial" 1 || fail "the counter did not go up by one"

virsh_ns destroy "$DOM" >/dev/null || fail "virsh destroy failed"
n1=$(counters "$serial" | wc -l)
last=$(last_counter "$serial")
log "destroyed after COUNTER=$last"

virsh_ns start "$DOM" >/dev/null || fail "second virsh start failed"
end=$(($(date +%s) + 60))
until [ "$(boot_counters "$serial" | wc -l)" -ge 2 ]; do
	[ "$(date +%s)" -ge "$end" ] && { show_serial "$serial" "$DOM"; fail "no second BOOT line"; }
	sleep 0.2
done
boot2=$(boot_counters "$serial" | sed -n 2p)
log "second boot: BOOT COUNTER=$boot2 (last acknowledged before: $last)"
[ "$boot2" -ge "$last" ] || fail "BOOT COUNTER=$boot2 < $last: an acknowledged write was lost"
[ "$boot2" -le $((last + 1)) ] || fail "BOOT COUNTER=$boot2 > $last + 1: writes that never happened"
wait_counter "$serial" $((boot2 + 20)) 60 ||
	{ show_serial "$serial" "$DOM"; fail "the counter did not go on after the restart"; }
first2=$(counters "$serial" | sed -n "$((n1 + 1))p")
[ "$first2" = $((boot2 + 1)) ] || fail "after BOOT COUNTER=$boot2 came COUNTER=$first2"
check_sequence "$serial" $((n1 + 1)) || fail "the counter did not go up by one after the restart"
serial_clean "$serial" || { show_serial "$serial" "$DOM"; fail "the guest reported an error"; }

virsh_ns destroy "$DOM" >/dev/null || fail "virsh destroy failed"
replagentd_alive || fail "replagentd died"
stop_replagentd || fail "exit status $REPLAGENTD_STATUS after SIGTERM, expected 0"
log "PASS"
