#!/bin/bash
# tests/repl-resync-durable.sh: a resync is not over until its data is on
# the target's disk.  b runs with the faultdisk shim's volatile write cache
# on its backing (writes stay in memory until fdatasync, a kill -9 loses
# them, like a power loss).  a (Primary) and b; b stops; a writes 24 MiB;
# b returns and resyncs; as soon as both say they are in sync, b is killed
# with SIGKILL and restarted (without the shim): the two must end
# identical.  Then a resync cut short: b stops, a writes 24 MiB more, b
# returns and is killed halfway through its resync (a's resync-rate-max
# keeps it slow enough), and restarted: what it had received but not made
# durable must be sent again, and the two must end identical.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp qemu-io
requires_replagentd
requires_replagent

MiB=$((1 << 20))
IN_SYNC='p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0 and p["b"]["peer_disk"] == "UpToDate"'

cluster_config -t 5 a b
sed -i '/^\[global\]/a resync-rate-max = 8M' "${NODE_CONF[a]}"
faultdisk_init
faultdisk_set cache "${NODE_BACKING[b]}"

# write_24m PATTERN BASE: 24 MiB of PATTERN from BASE, through a.
write_24m() {
	qio_batch "${NODE_NBD_URI[a]}" "write -P $1 $2 8M
write -P $1 $(($2 + 8 * MiB)) 8M
write -P $1 $(($2 + 16 * MiB)) 8M" || fail "writing through a failed"
}

# b_returns: b starts with the shim (its writes cached until flushed).
b_returns() {
	faultdisk_preload b
	start_node b
	ra_env b
}

# b_crashes_and_returns: SIGKILL (the cache is lost), restart without the
# shim, wait until a and b are in sync, stop both and compare.
b_crashes_and_returns() {
	kill_node b
	faultdisk_log | grep -q "^cache ${NODE_BACKING[b]}" ||
		hard_error "the shim held none of b's writes"
	start_node b
	wait_status a 90 "$IN_SYNC" || fail "b did not come back in sync"
	wait_status b 10 'v["disk"] == "UpToDate"' || fail "b is not UpToDate"
	stop_node b
	stop_node a
	cmp_backings a b || fail "$1"
	start_node a
	promote a
}

start_node a
b_returns
wait_status a 30 "$IN_SYNC" || fail "a and b did not connect"
promote a
stop_node b

# 1. Killed as soon as the resync is over.
write_24m 0x62 0
b_returns
wait_status a 60 "$IN_SYNC" || fail "b did not resync"
wait_status b 10 'v["disk"] == "UpToDate" and p["a"]["link"] == "Connected"' ||
	fail "b does not say it is in sync"
log "a and b say they are in sync: killing b"
b_crashes_and_returns "b said it was in sync, but lost resynced data in a crash"

# 2. Killed halfway through the resync (b is stopped, a Primary again).
write_24m 0x63 $((32 * MiB))
b_returns
wait_status a 30 'p["b"]["link"] == "SyncSource" and 0 < p["b"]["out_of_sync_bytes"] < (16 << 20)' ||
	fail "no resync progress to cut short"
log "resync to b under way: $(status_value a 'p["b"]["out_of_sync_bytes"]') bytes left; killing b"
b_crashes_and_returns "a resync cut short lost data: regions were counted done before b held them durably"
stop_node a
log "PASS"
