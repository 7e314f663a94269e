#!/bin/bash
# tests/repl-al-evict-powerloss.sh: after a crash as Primary only the
# activity log's extents are resynced, so an extent that left the log may
# hold writes the Primary lost if it lost power: a power loss must bring a
# full resync, whatever left the log.  a (Primary) runs with the faultdisk
# shim's volatile write cache on its backing (a kill -9 drops what was not
# flushed, like a power loss) and al-extents = 16; b is in sync.  A client
# writes 4 KiB into extent 0 and then into 20 other extents, one each,
# with no FLUSH (the Primary flushes nothing of its own: its FLUSHes for
# what b acknowledged go to b only): extent 0 leaves the set, and the
# bitmap flush records that.  a loses power, comes back without the shim,
# and the cluster asks it to be Primary again (a refusal is fine: then b
# is promoted).  Once in sync, the Primary must read every write and the
# backings must be identical.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp qemu-io curl
requires_replagentd
requires_replagent

MIB=$((1 << 20))
EXT=$((4 * MIB))
AL_SERIES='replagent_activity_log_transactions_total{volume="vol0"}'
cluster_config -t 5 -s 96M a b
volume_option a "al-extents = 16"
volume_option b "al-extents = 16"
metrics_on a
faultdisk_init
faultdisk_set cache "${NODE_BACKING[a]}"
faultdisk_preload a
start_pair a b
ra_env a

al_count() {
	local f=$TESTDIR/metrics.txt
	metrics_get a >"$f" || fail "GET /metrics on a failed"
	metric_value "$f" "$AL_SERIES" || fail "no $AL_SERIES in /metrics"
}

# Plain writes only (no FLUSH): extent 0 first, then 20 others.
cmds=("write -P 0x70 0 4k")
for ((e = 1; e <= 20; e++)); do cmds+=("write -P $((0x70 + e)) $((e * EXT)) 4k"); done
al0=$(al_count)
qio_unflushed "${NODE_NBD_URI[a]}" "${cmds[@]}"
al1=$(al_count)
[ $((al1 - al0)) -ge 20 ] || fail "21 new extents wrote $((al1 - al0)) activity-log transactions"
# The last writes' transactions are on disk (they were acknowledged after
# them); extent 0's eviction is in the transaction of the 17th extent.
kill_node a
faultdisk_log | grep -q "^cache ${NODE_BACKING[a]}" ||
	hard_error "the shim held none of a's writes: nothing to test"
log "a lost power after 21 unflushed writes, extent 0 evicted from its activity log"

recover_pair a b
primary=$RECOVERED_PRIMARY
cmds=("read -P 0x70 0 4k")
for ((e = 1; e <= 20; e++)); do cmds+=("read -P $((0x70 + e)) $((e * EXT)) 4k"); done
qio_batch "${NODE_NBD_URI[$primary]}" "$(printf "%s\n" "${cmds[@]}")" ||
	fail "writes a acknowledged before its power loss are gone from $primary"
stop_node b
stop_node a
cmp_backings a b || fail "a and b differ after the recovery (extent 0 left a's activity log unflushed)"
log "PASS"
