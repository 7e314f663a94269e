#!/bin/bash
# tests/repl-resize-device.sh: growing a volume on a block device (a loop
# device over a file).  A 64 MiB volume on a 64 MiB device is asked for 96M
# at start: the device is too small, so the replica stays at 64 MiB, serves
# its data, and status names the device; the device grows (to 100 MiB,
# more than needed, its new area full of 0xff): the next retry grows the
# volume to 96 MiB, and the new area reads as zeroes (it is zeroed, as
# every replica's must read the same).  Old data stays; a restart opens the
# 96 MiB volume on the 100 MiB device.  Skipped (77) without root or loop
# devices.
# shellcheck source=SCRIPTDIR/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires qemu-io timeout losetup nbdinfo
requires_root
requires_replagent
M=$((1024 * 1024))
IMG=$TESTDIR/disk.img

truncate -s 64M "$IMG" || hard_error "truncate $IMG"
DEV=$(losetup -f --show "$IMG" 2>/dev/null) || skip "no loop device to be had"
on_cleanup losetup -d "$DEV"
log "loop device $DEV over $IMG"

# status_of EXPR: EXPR over the volume's status (v: the volume).
status_of() {
	timeout 10 "$REPLAGENT" -s "$CONTROL_SOCK" status "$VOL" --json |
		"$PYTHON" -c 'import json, sys
v = json.load(sys.stdin)["volumes"][0]
print(eval(sys.argv[1]))' "$1"
}

# wait_for T EXPR: EXPR over the status is True within T seconds.
wait_for() {
	local end=$(($(date +%s) + $1))
	until [ "$(status_of "$2" 2>/dev/null)" = True ]; do
		[ "$(date +%s)" -ge "$end" ] && { echo "status: $(status_of v)" >&2; return 1; }
		sleep 0.3
	done
}

write_config -s 64M
sed -i "s|^backing = .*|backing = $DEV|" "$CONFIG"
start_replagentd "$CONFIG"
qio_batch "$NBD_URI" "write -P 0x61 0 1M
write -P 0x62 $((63 * M)) 1M" || fail "writes to the device volume failed"
stop_replagentd || fail "exit status $REPLAGENTD_STATUS after SIGTERM"

# 96M asked, the device has 64 MiB: served at 64 MiB, the device named.
sed -i 's/^size = 64M$/size = 96M/' "$CONFIG"
start_replagentd "$CONFIG"
wait_for 10 "v['size'] == 64 << 20 and v.get('grow', {}).get('error', '') != ''" ||
	fail "no grow error in status with a 64 MiB device"
err=$(status_of "v['grow']['error']")
case $err in *"$DEV"*"grow the device"*) ;; *) fail "the grow error does not name $DEV: $err" ;; esac
log "device too small: $err"
[ "$(nbdinfo --size "$NBD_URI")" = $((64 * M)) ] || fail "the export is not 64 MiB"
qio_batch "$NBD_URI" "read -P 0x61 0 1M
read -P 0x62 $((63 * M)) 1M" || fail "the data is not served while the grow waits"
out=$("$REPLAGENT" -s "$CONTROL_SOCK" status) && rc=0 || rc=$?
case $out in *"cannot grow to 96.0 MiB"*) ;; *) fail "status does not say that the grow failed: $out" ;; esac
[ "$rc" = 1 ] || fail "status exits $rc while a replica cannot grow, expected 1 (degraded)"

# The device grows, its new area not zero: the retry grows the volume.
truncate -s 100M "$IMG" || hard_error "truncate $IMG"
"$PYTHON" -c 'import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(64 << 20)
    f.write(b"\xff" * (36 << 20))' "$IMG" || hard_error "cannot fill $IMG"
losetup -c "$DEV" || hard_error "losetup -c $DEV"
wait_for 20 "v['size'] == 96 << 20 and 'grow' not in v" || fail "no grow once the device had grown"
grep -q "grown from 64.0 MiB to 96.0 MiB" "$(daemon_log)" || fail "the grow is not in the log"
[ "$(nbdinfo --size "$NBD_URI")" = $((96 * M)) ] || fail "the export is not 96 MiB"
qio_batch "$NBD_URI" "read -P 0x61 0 1M
read -P 0x62 $((63 * M)) 1M
read -P 0 $((64 * M)) $((32 * M))" || fail "old data lost, or the new area is not zeroes"
qio_batch "$NBD_URI" "write -P 0x63 $((95 * M)) 1M" || fail "cannot write in the new area"
log "grown to 96 MiB on the 100 MiB device; the new area reads as zeroes"

stop_replagentd || fail "exit status $REPLAGENTD_STATUS after SIGTERM"
start_replagentd "$CONFIG"
[ "$(status_of "v['size']")" = $((96 * M)) ] || fail "not 96 MiB after a restart"
qio_batch "$NBD_URI" "read -P 0x61 0 1M
read -P 0x63 $((95 * M)) 1M" || fail "data lost over the restart"
stop_replagentd || fail "exit status $REPLAGENTD_STATUS after SIGTERM"
log "PASS"
