#!/bin/bash
# tests/repl-resync-failed-write.sh: a guest write that fails on the resync
# target must not be forgotten.  The source clears a region's bit when a
# FLUSH sent after the region's resync copy was acknowledged is itself
# acknowledged; a guest write to that region sent to the target in
# between, and failed there (the target answers it with an error, the
# Primary sets the bit again), must keep the bit: else the target keeps the
# older resync copy and both sides say they are in sync.  a (Primary) and
# b; b stops; a writes 64 MiB over a 128 MiB volume; b returns with the
# faultdisk shim, and for the first ~8 s of the resync (resync-rate-max
# makes it last longer) a writer on a writes into the regions being
# resynced and EIO on writes to b's backing is switched on for ~0.3 s every
# ~1 s (some guest writes and resync copies fail on b, b answers them with
# an error).  When the resync is over (no faults any more), both stop: the
# backings must be identical and hold every acknowledged write.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp qemu-io
requires_replagentd
requires_replagent

MiB=$((1 << 20))
SPAN=$((64 * MiB))
ACKLOG=$TESTDIR/ack.log
IN_SYNC='p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0 and p["b"]["peer_disk"] == "UpToDate"'

cluster_config -t 5 -s 128M a b
sed -i '/^\[global\]/a resync-rate-max = 8M' "${NODE_CONF[a]}"
faultdisk_init

start_node a
faultdisk_preload b
start_node b
wait_status a 30 "$IN_SYNC" || fail "a and b did not connect"
promote a
stop_node b

# 64 MiB that b misses: a resync of several seconds.
batch=
for ((off = 0; off < SPAN; off += 8 * MiB)); do
	batch+="write -P 0x5a $off 8M"$'\n'
done
qio_batch "${NODE_NBD_URI[a]}" "${batch%$'\n'}" || fail "writing through a failed"

start_node b
wait_status a 30 'p["b"]["link"] == "SyncSource"' || fail "no resync to b"
start_writer "$ACKLOG" --unix "${NODE_NBD_SOCK[a]}" --export "$CLUSTER_VOL" \
	--duration 120 --inflight 8 --rate 200 --flush-every 64 --span "$SPAN" --stall-timeout 30
log "resync to b under way, writer started: b fails writes now and then"
# ~8 rounds of faults (a few failed writes per region at most, so that the
# resync can still end); the writer stops with them.
for ((round = 0; round < 8; round++)); do
	status_value a 'p["b"]["link"]' | grep -qx SyncSource || break
	log "round $round: $(status_value a 'p["b"]["out_of_sync_bytes"]') bytes out of sync"
	faultdisk_set eio-write "${NODE_BACKING[b]}" >/dev/null
	sleep 0.2
	faultdisk_clear eio-write >/dev/null
	sleep 0.6
done
kill -TERM "$WRITER_PID"
wait_writer || fail "the writer failed: a refused or stalled writes"

faultdisk_log | grep -q "^eio-write ${NODE_BACKING[b]}" ||
	hard_error "no write failed on b: the test did not test anything"
n_failed=$(grep -c "peer b failed a write" "$(daemon_log a)")
log "a saw $n_failed guest writes fail on b"
[ "$n_failed" -gt 0 ] || hard_error "no guest write failed on b"

wait_status a 60 "$IN_SYNC" || fail "b did not end in sync"
wait_status b 10 'v["disk"] == "UpToDate" and p["a"]["link"] == "Connected"' ||
	fail "b does not say it is in sync"
stop_node b
stop_node a
cmp_backings a b ||
	fail "a and b differ though both said they were in sync: a write that failed on b was counted resynced"
ackcheck check --log "$ACKLOG" --file "${NODE_BACKING[a]}" || fail "a lost acknowledged writes"
ackcheck check --log "$ACKLOG" --file "${NODE_BACKING[b]}" || fail "b lost acknowledged writes"
log "PASS"
