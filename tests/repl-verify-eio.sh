#!/bin/bash
# tests/repl-verify-eio.sh: an online verify on a disk that fails reads.
# a (Primary) and b, a with the faultdisk shim.
# 1. Every read of a's backing fails: "replagent verify" on a ends (on
#    015dc52 it read the same region again and again, at a third of a CPU,
#    and never ended), exits 1 and says that regions could not be read
#    here; the log says so in a few lines, not one per region.
# 2. The disk reads again: the next verify finds nothing and exits 0.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout qemu-io
requires_replagentd
requires_replagent

cluster_config -t 5 -s 64M a b
faultdisk_init
faultdisk_preload a
start_in_sync a b
qio_batch "${NODE_NBD_URI[a]}" "write -P 0x5a 0 16M
flush" || fail "writing the data failed"

# 1. a's reads fail.
faultdisk_set eio-read "${NODE_BACKING[a]}"
mark=$(wc -l <"$(daemon_log a)")
out=$(timeout 60 "$REPLAGENT" -s "${NODE_CTL[a]}" verify "$CLUSTER_VOL" 2>&1)
rc=$?
faultdisk_clear eio-read
log "verify with a's reads failing: $out (exit $rc)"
[ "$rc" = 124 ] && fail "the verify did not end while a's disk failed reads"
faultdisk_log | grep -q "^eio-read ${NODE_BACKING[a]}" ||
	hard_error "no read failed on a: the test did not test anything"
[ "$rc" = 1 ] || fail "verify exited $rc for regions it could not read (expected 1)"
grep -q "could not be read here" <<<"$out" || fail "verify does not say that it could not read: $out"
lines=$(tail -n +"$((mark + 1))" "$(daemon_log a)" | grep -c verify)
[ "$lines" -le 20 ] || fail "the verify logged $lines lines for a disk that fails reads"
wait_status a 10 'v["disk"] == "UpToDate" and v["role"] == "Primary"' ||
	fail "a is no longer an UpToDate Primary after the verify"

# 2. The disk reads again.
out=$(timeout 60 "$REPLAGENT" -s "${NODE_CTL[a]}" verify "$CLUSTER_VOL" 2>&1) ||
	fail "a verify with a healthy disk failed: $out"
log "verify again: $out"
grep -q "could not be read" <<<"$out" && fail "the second verify still reports unreadable regions"
log "PASS"
