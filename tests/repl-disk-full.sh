#!/bin/bash
# tests/repl-disk-full.sh: a replica's backing on a filesystem that fills
# up (a thin pool, an overcommitted sparse file).  Two replicas, a Primary.
# 1. b's filesystem is full: a acknowledges the guest's writes (they are
#    on a; b records that it lacks them), and the resync of what b lacks
#    waits for b's disk instead of sending the same regions again as fast
#    as b fails them (on 015dc52 it sent 4 GiB in 5 s for 16 MiB out of
#    sync, and both daemons logged 14,000 lines a second into a journal
#    that may sit on that very disk).  `status` on a says why the resync
#    does not move.  Once space is freed, b is resynced without anybody's
#    help, UpToDate, and holds every write a acknowledged.
# 2. a's own filesystem is full: the guest's write fails with ENOSPC (not
#    EIO: QEMU's default werror=enospc pauses the guest on it, and a
#    resumed guest writes again), a FUA write too, without being taken for
#    a flush that lost writes; a stays UpToDate, and once space is freed
#    the same writes succeed and both replicas end identical.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires_root
requires qemu-io mount umount dd cmp
requires_replagentd
requires_replagent

M=$((1024 * 1024))
IN_SYNC='p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0 and p["b"]["peer_disk"] == "UpToDate"'

# small_fs NODE: NODE's backing goes on a 40 MiB tmpfs of its own, with a
# 24 MiB file taking the space the volume would need beyond 16 MiB.
small_fs() {
	local d=$TESTDIR/fs-$1
	mkdir -p "$d" && mount -t tmpfs -o size=40M tmpfs "$d" || hard_error "cannot mount a tmpfs on $d"
	on_cleanup umount -l "$d"
	dd if=/dev/zero of="$d/filler" bs=1M count=24 status=none || hard_error "cannot fill $d"
	NODE_BACKING[$1]=$d/$CLUSTER_VOL.img
	write_node_config "$1" "${NODE_CONF[$1]}" "$CLUSTER_KEY" "$CLUSTER_VOL" \
		"$CLUSTER_SIZE" "${NODE_BACKING[$1]}"
}

# lines NODE PATTERN: how many lines of NODE's log match PATTERN.
lines() { grep -c -e "$2" "$(daemon_log "$1")"; }

cluster_config -s 64M a b
small_fs b
start_in_sync a b
uri=${NODE_NBD_URI[a]}

# 1. b's disk fills.
script=
for i in 0 1 2 3 4 5 6 7; do
	script+="write -P $((0x30 + i)) $((i * 4 * M)) 4M"$'\n'
done
qio_batch "$uri" "$script" || fail "a failed a guest write that its own disk took"
wait_status b 10 'v["disk"] == "Inconsistent"' ||
	fail "b's disk is full and b still says it is in sync"
grep -q "No space left on device" "$(daemon_log b)" ||
	hard_error "b's disk did not fill: the test did not test anything"
sent0=$(status_value a 'p["b"]["resync_sent_bytes"]')
logs0=$(($(lines a 'resync') + $(lines b 'applying a write')))
sleep 5
sent=$(($(status_value a 'p["b"]["resync_sent_bytes"]') - sent0))
logs=$(($(lines a 'resync') + $(lines b 'applying a write') - logs0))
log "in 5 s with b's disk full: $sent bytes of resync sent, $logs log lines"
[ "$sent" -le $((16 * M)) ] ||
	fail "a sent b $sent bytes of resync in 5 s, for 16 MiB out of sync, into a full disk"
[ "$logs" -le 50 ] || fail "the two daemons logged $logs lines in 5 s about b's full disk"
ra_cli a status >"$TESTDIR/status-a" 2>&1
grep -q "DEGRADED: .*resync waiting: b's disk failed a write: No space left on device" \
	"$TESTDIR/status-a" ||
	fail "a's status does not say why b's resync does not move: $(cat "$TESTDIR/status-a")"
replagentd_alive a && replagentd_alive b || fail "a daemon died of the full disk"

rm -f "$TESTDIR/fs-b/filler"
wait_status a 60 "$IN_SYNC" || fail "b was not resynced once its disk had space again"
wait_status b 10 'v["disk"] == "UpToDate"' || fail "b does not say UpToDate after the resync"
grep -q "No space left on device" <(ra_cli a status 2>&1) &&
	fail "a's status still shows b's full disk after the resync"

# 2. a's own disk fills (a 40 MiB tmpfs: 32 MiB of data and 6 MiB more).
small_a=$TESTDIR/fs-a
mkdir -p "$small_a" && mount -t tmpfs -o size=40M tmpfs "$small_a" ||
	hard_error "cannot mount a tmpfs on $small_a"
on_cleanup umount -l "$small_a"
stop_node b
stop_node a
cp --sparse=always "${NODE_BACKING[a]}" "$small_a/$CLUSTER_VOL.img" || hard_error "cannot copy a's backing"
NODE_BACKING[a]=$small_a/$CLUSTER_VOL.img
write_node_config a "${NODE_CONF[a]}" "$CLUSTER_KEY" "$CLUSTER_VOL" "$CLUSTER_SIZE" "${NODE_BACKING[a]}"
dd if=/dev/zero of="$small_a/filler" bs=1M count=6 status=none || hard_error "cannot fill $small_a"
start_node a
start_node b
promote a
wait_status a 30 "$IN_SYNC" || fail "a and b did not connect again"
err=$(qio_batch "$uri" "write -P 0x77 $((40 * M)) 4M" 2>&1) &&
	fail "a acknowledged a write that its full disk could not take"
grep -q "No space left on device" <<<"$err" ||
	fail "the client got another error than ENOSPC for a full disk: $err"
# A FUA write (a guest's journal commit) is refused the same way: nothing
# was written, so no flush ran and none lost anything (on 015dc52 a took
# it for a flush that lost writes: a loss recorded, a full resync of b).
# Before it, a write into space a's file has already (taken, not flushed).
qio_unflushed "$uri" "write -P 0x3f $((4 * M)) 64k"
err=$(qio_batch "$uri" "write -f -P 0x78 $((48 * M)) 4M" 2>&1) &&
	fail "a acknowledged a FUA write that its full disk could not take"
grep -q "No space left on device" <<<"$err" ||
	fail "the client got another error than ENOSPC for a FUA write on a full disk: $err"
wait_status a 10 'v["disk"] == "UpToDate" and v["role"] == "Primary"' ||
	fail "a is no longer an UpToDate Primary after writes its disk had no space for"
grep -q "may have dropped writes" "$(daemon_log a)" &&
	fail "a took a FUA write its full disk refused for a flush that lost writes"
rm -f "$small_a/filler"
qio_batch "$uri" "write -P 0x77 $((40 * M)) 4M
write -f -P 0x78 $((48 * M)) 4M" || fail "the writes failed again with space free"
wait_status a 30 "$IN_SYNC" || fail "a and b are not in sync after a's full disk"

stop_node b
stop_node a
cmp_backings a b || fail "a and b differ after the full disks"
for i in 0 1 2 3 4 5 6 7; do
	qemu-io -f raw -c "read -P $((0x30 + i)) $((i * 4 * M + 64 * 1024)) $((4 * M - 64 * 1024))" \
		-c "read -P $((i == 1 ? 0x3f : 0x30 + i)) $((i * 4 * M)) 64k" "${NODE_BACKING[b]}" \
		>/dev/null || fail "b lacks the acknowledged write at $((i * 4)) MiB"
done
qemu-io -f raw -c "read -P 0x77 $((40 * M)) 4M" -c "read -P 0x78 $((48 * M)) 4M" \
	"${NODE_BACKING[b]}" >/dev/null || fail "b lacks the writes a took once its disk had space"
log "PASS"
