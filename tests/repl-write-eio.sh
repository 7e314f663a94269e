#!/bin/bash
# tests/repl-write-eio.sh: a data write that fails with EIO on one replica
# leaves no difference that nothing records (issue 13, the disk-EIO
# profile of tests/sim).  a (Primary) and b, both with the faultdisk shim.
# 1. b's backing fails writes: a guest write through a is acknowledged (b
#    answered an error, a recorded the range for b), b says Inconsistent
#    (it must not be promoted: it lacks an acknowledged write), and once
#    the disk is healthy a resyncs the range to b over the same link (no
#    reconnect) and b is UpToDate again.
# 2. a's own backing fails writes: the guest's write fails, b applied it;
#    the range is resynced from a, so that both end identical; b, which
#    holds every acknowledged write throughout, stays UpToDate.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires cmp qemu-io
requires_replagentd
requires_replagent

IN_SYNC='p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0 and p["b"]["peer_disk"] == "UpToDate"'

cluster_config -t 5 -s 64M a b
faultdisk_init
faultdisk_preload a
faultdisk_preload b
start_in_sync a b

# 1. b fails the write.
faultdisk_set eio-write "${NODE_BACKING[b]}"
qio_batch "${NODE_NBD_URI[a]}" "write -P 0x5a 1M 64k" ||
	fail "a failed a write that its own disk took"
faultdisk_log | grep -q "^eio-write ${NODE_BACKING[b]}" ||
	hard_error "no write failed on b: the test did not test anything"
wait_status b 10 'v["disk"] == "Inconsistent"' ||
	fail "b failed a write of the Primary and still says it is in sync"
faultdisk_clear eio-write
wait_status a 30 "$IN_SYNC" || fail "a did not resync the failed range to b"
wait_status b 10 'v["disk"] == "UpToDate" and p["a"]["link"] == "Connected"' ||
	fail "b does not say it is UpToDate again"
grep -q 'peer b is gone' "$(daemon_log a)" &&
	fail "a lost b: the range should be resynced over the same link"

# 2. a fails its own write.
mark=$(wc -l <"$(daemon_log b)")
faultdisk_set eio-write "${NODE_BACKING[a]}"
qio_batch "${NODE_NBD_URI[a]}" "write -P 0xa5 2M 64k" 2>/dev/null &&
	fail "a acknowledged a write its disk failed"
faultdisk_log | grep -q "^eio-write ${NODE_BACKING[a]}" ||
	hard_error "no write failed on a: the test did not test anything"
faultdisk_clear eio-write
wait_status a 30 "$IN_SYNC" || fail "a and b are not in sync after a's write failed"
# b held every write a acknowledged throughout: the resync of a's failed
# range only makes the copies agree, and b stays UpToDate through it (if
# a lost power now, b is the replica to promote: sim seed 12664).
since=$(tail -n +"$((mark + 1))" "$(daemon_log b)")
grep -q 'resync from a started (regions to make agree' <<<"$since" ||
	fail "b took a's failed range as a resync that made it Inconsistent"
grep -q 'resync from a started$' <<<"$since" &&
	fail "b went Inconsistent for a's own failed write"
stop_node b
stop_node a
cmp_backings a b ||
	fail "a and b differ though both say they are in sync: a's failed write is on b only"
log "PASS"
