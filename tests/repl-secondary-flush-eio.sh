#!/bin/bash
# tests/repl-secondary-flush-eio.sh: a Secondary whose disk fails a FLUSH.
#  1. Everything it wrote was already flushed: the failure loses nothing,
#     and it stays UpToDate and in sync.  It used to record itself
#     Inconsistent with nothing out of sync anywhere, so nothing ever
#     resynced it: Inconsistent for good (simulator seed 1931).
#  2. It holds plain writes not yet flushed: those may be lost, so it goes
#     Inconsistent, and once its disk works again the Primary resyncs what
#     it had not flushed and it is UpToDate again, identical to the Primary.
#  3. Meanwhile, its flushes failing for 10 s, the resyncs that fail at
#     their flush and the links dropped for it come at a pace that slows
#     down (b says why it drops them), not every 250 ms.
# b runs under the faultdisk shim (eio-flush on its backing).
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp qemu-io
requires_replagentd
requires_replagent

IN_SYNC='p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0 and p["b"]["peer_disk"] == "UpToDate"'

cluster_config -t 5 a b
faultdisk_init
faultdisk_preload b
start_pair a b

qio_batch "${NODE_NBD_URI[a]}" "write -P 0x61 0 2M
flush" || fail "the first writes failed"
wait_status a 30 "$IN_SYNC" || fail "b is not in sync after the first writes"

# 1. Nothing to flush on b, and its flush fails.
faultdisk_set eio-flush "${NODE_BACKING[b]}"
qio_batch "${NODE_NBD_URI[a]}" "flush" || fail "a FLUSH through a failed"
faultdisk_log | grep -q "^eio-flush ${NODE_BACKING[b]}" ||
	hard_error "b's flush did not fail: nothing to test"
sleep 1
wait_status b 10 'v["disk"] == "UpToDate"' ||
	fail "b, whose failed flush had nothing to lose, is not UpToDate"
wait_status a 10 "$IN_SYNC" || fail "b is not in sync after a flush that lost nothing"

# 2. Plain writes, then a flush that fails (b's flushes still fail, so
# none can make them durable first): b may have lost them.
qio_unflushed "${NODE_NBD_URI[a]}" "write -P 0x62 1M 1M"
qio_batch "${NODE_NBD_URI[a]}" "flush" || fail "a FLUSH through a failed"
wait_status b 10 'v["disk"] == "Inconsistent"' ||
	fail "b did not go Inconsistent when a flush of unflushed writes failed"
# 3. b's flushes keep failing for 10 s: each resync to it fails at its
# flush and b drops the link, saying why.  The link is made again after a
# delay that grows while that goes on, not every 250 ms (39 links, 190 log
# lines a side and 40 MB of resync in 10 s on 015dc52 and e26c0d2).
links0=$(grep -c "peer a authenticated" "$(daemon_log b)")
logs0=$(wc -l <"$(daemon_log b)")
sleep 10
links=$(($(grep -c "peer a authenticated" "$(daemon_log b)") - links0))
logs=$(($(wc -l <"$(daemon_log b)") - logs0))
log "10 s of b's flushes failing: $links links made again, $logs log lines on b"
[ "$links" -le 8 ] || fail "b's link was made again $links times in 10 s while its flushes failed"
[ "$links" -ge 1 ] || fail "b's link was not tried again while its flushes failed"
faultdisk_clear eio-flush
wait_status a 60 "$IN_SYNC" || fail "b was not resynced after its disk recovered"
wait_status b 10 'v["disk"] == "UpToDate"' || fail "b is not UpToDate after the resync"
stop_node b
stop_node a
cmp_backings a b || fail "a and b differ"
log "PASS"
