#!/bin/bash
# tests/repl-lost-meta.sh: a replica whose metadata is gone but whose
# backing holds data must not call that data UpToDate.  a (Primary) and b;
# b stops; a writes 1 MiB that b misses; a stops; b's state directory is
# removed (its metadata with it) and b starts alone: it must say
# Inconsistent, refuse a promotion without --force and say in its log why;
# when a comes back as Primary, b takes a full resync and the two end identical.  Then
# b's metadata goes again and b, alone, is promoted with --force: the
# person's word makes it UpToDate, loudly logged.  With root and a loop
# device, the same for a block-device backing: an existing device always
# holds data.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp qemu-io
requires_replagentd
requires_replagent

MiB=$((1 << 20))

cluster_config -t 5 a b
start_in_sync a b
qio_batch "${NODE_NBD_URI[a]}" "write -P 0x61 0 4M" || fail "writing through a failed"
wait_status a 10 'p["b"]["out_of_sync_bytes"] == 0' || fail "b is behind"
stop_node b
qio_batch "${NODE_NBD_URI[a]}" "write -P 0x62 $MiB $MiB" || fail "writing with b away failed"
stop_node a

# lost_meta_start: b's state directory goes, b starts alone; it must be
# Inconsistent and refuse a plain promotion.
lost_meta_start() {
	rm -rf "${NODE_DIR[b]}/state"
	start_node b
	wait_status b 10 'v["disk"] != ""' || fail "no status from b"
	disk=$(status_value b 'v["disk"]')
	log "b after losing its metadata: $disk"
	if ra_cli b promote "$CLUSTER_VOL" >"$TESTDIR/promote.out" 2>&1; then
		fail "b lost its metadata, says its stale data is $disk and was promoted without --force"
	fi
	[ "$disk" = Inconsistent ] ||
		fail "b lost its metadata but says its stale data is $disk"
	log "plain promote refused: $(cat "$TESTDIR/promote.out")"
	grep -q "metadata .* is missing but backing .* holds data" "$(daemon_log b)" ||
		fail "b's log does not say that its metadata was missing over existing data"
}

lost_meta_start
# a comes back and is promoted: b takes everything from a (Secondaries
# wait for a Primary before they resync).
start_node a
promote a
wait_status a 60 'p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0 and p["b"]["peer_disk"] == "UpToDate"' ||
	fail "b did not resync from a"
wait_status b 10 'v["disk"] == "UpToDate"' || fail "b is not UpToDate after its resync"
grep -q "resync to b: .* (full)" "$(daemon_log a)" || fail "a did not run a full resync to b"
stop_node b
stop_node a
cmp_backings a b || fail "a and b differ after b's resync"

# The person's word: promote --force on b, alone, logged as such.
lost_meta_start
promote b --force
wait_status b 10 'v["disk"] == "UpToDate" and v["role"] == "Primary"' ||
	fail "b is not an UpToDate Primary after promote --force"
grep -q "FORCED promotion of a Inconsistent replica" "$(daemon_log b)" ||
	fail "the forced promotion is not in b's log"
qio_batch "${NODE_NBD_URI[b]}" "read -P 0x61 0 $MiB" || fail "b does not serve its data"
ra_cli b demote "$CLUSTER_VOL" >/dev/null || fail "demote on b refused"
stop_node b

# A block device: existing data, whatever the daemon finds in it.
if [ "$(id -u)" != 0 ] || ! command -v losetup >/dev/null; then
	log "block-device part skipped (needs root and losetup)"
	log "PASS"
	exit 0
fi
truncate -s 64M "$TESTDIR/dev-b.img" || hard_error "truncate"
if ! DEV=$(losetup -f --show "$TESTDIR/dev-b.img" 2>/dev/null); then
	log "block-device part skipped (no loop device)"
	log "PASS"
	exit 0
fi
on_cleanup losetup -d "$DEV"
sed -i "s|^backing = .*|backing = $DEV|" "${NODE_CONF[b]}"
lost_meta_start
stop_node b
log "PASS"
