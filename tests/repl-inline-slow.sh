#!/bin/bash
# tests/repl-inline-slow.sh: a small write runs on the daemon's loop thread
# when its volume's workers are idle (replication/iopool.c), which is
# cheaper than two thread hops; a disk that turns slow must not hold that
# thread, which serves every volume.  One daemon, two volumes; vol0's
# backing turns slow (the faultdisk shim's slow-write: each write sleeps
# 1 s, then lands).  The first slow write on the loop turns inline writes
# off for vol0 (the log says so); vol1's 200 writes then go through while
# vol0's 8 writes are still crawling, both volumes hold what was written,
# and the log names vol0's slow disk (a request over 1 s, once per 10 s)
# but not vol1's (300 ms writes, later).  With the disk fast again, vol0's
# writes come back to the loop thread after 64 fast ones on the workers.
# Then io-inline = no in vol1's section: after a restart its slow writes
# never reach the loop (no such log line for it).
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires qemu-io timeout
requires_replagentd
# Plain writes: qemu-io's default (writethrough) makes each one FUA, which
# never runs inline.
export QIO_CACHE=writeback

write_config -s 16M
add_volume "$CONFIG" vol1 16M
VOL1_URI="nbd+unix:///vol1?socket=$NBD_SOCK"
faultdisk_init
faultdisk_preload replagentd
start_replagentd "$CONFIG"
LOGF=$(daemon_log)

# Fast first: a write on an idle pool lands (on the loop) and reads back.
qio "$NBD_URI" "write -P 0x31 0 4k" "read -P 0x31 0 4k" >/dev/null ||
	fail "a write to vol0 on a healthy disk"

faultdisk_set slow-write "$TESTDIR/vol0.img 1000"
cmds=()
for ((i = 0; i < 8; i++)); do cmds+=("write -P 0x41 $((i * 4096)) 4k"); done
QIO_TIMEOUT=60 qio "$NBD_URI" "${cmds[@]}" >"$TESTDIR/vol0.out" 2>&1 &
slow=$!
track_pid "$slow"
wait_log replagentd 10 '\[vol0\] a write took [0-9]+ ms on the loop thread( .*)?: writes go to the workers' ||
	fail "vol0's slow write on the loop thread did not turn inline writes off"
log "vol0's first slow write turned its inline writes off"

cmds=()
for ((i = 0; i < 200; i++)); do cmds+=("write -P 0x42 $((i * 4096)) 4k"); done
qio "$VOL1_URI" "${cmds[@]}" >"$TESTDIR/vol1.out" || fail "vol1's writes failed: $(tail -n 3 "$TESTDIR/vol1.out")"
_alive "$slow" ||
	fail "vol1's 200 writes ended after vol0's 8 slow ones: the loop waited for vol0's disk"
log "vol1's 200 writes went through while vol0's slow writes were still running"
wait "$slow" || fail "vol0's slow writes failed: $(tail -n 3 "$TESTDIR/vol0.out")"
untrack_pid "$slow"
faultdisk_clear slow-write
qio "$NBD_URI" "read -P 0x41 0 32k" >/dev/null || fail "vol0 does not hold its slow writes"
qio "$VOL1_URI" "read -P 0x42 0 800k" >/dev/null || fail "vol1 does not hold its writes"
grep -q '\[vol1\] a write took' "$LOGF" && fail "vol1's writes were slow on the loop thread"
n=$(grep -c -E '\[vol0\] the disk took [0-9]{4,} ms for a write of 4096 bytes at [0-9]+$' "$LOGF")
[ "$n" = 1 ] || fail "vol0's slow disk logged $n time(s) in 8 s, not once: $(grep 'the disk took' "$LOGF")"

# vol0's disk is fast again: once its workers have done 64 fast writes in
# a row, its small writes run on the loop thread again (and not before:
# its 7 slow writes after the first went to the workers).
back='\[vol0\] small writes run on the loop thread again'
grep -q -E "$back" "$LOGF" && fail "vol0's writes went back to the loop thread while its disk was slow"
cmds=()
for ((i = 0; i < 100; i++)); do cmds+=("write -P 0x44 $((i * 4096)) 4k"); done
qio "$NBD_URI" "${cmds[@]}" >/dev/null || fail "vol0's writes on a disk fast again"
wait_log replagentd 10 "$back" || fail "vol0's small writes did not come back to the loop thread"
qio "$NBD_URI" "read -P 0x44 0 400k" >/dev/null || fail "vol0 does not hold its last writes"
log "vol0's small writes came back to the loop thread once its workers were fast"

# io-inline = no: vol1's writes never run on the loop thread.
stop_replagentd
sed -i '/^\[volume vol1\]/a io-inline = no' "$CONFIG"
start_replagentd "$CONFIG"
faultdisk_set slow-write "$TESTDIR/vol1.img 300"
qio "$VOL1_URI" "write -P 0x43 0 4k" "write -P 0x43 4k 4k" "read -P 0x43 0 8k" >/dev/null ||
	fail "vol1 with io-inline = no"
faultdisk_log | grep -q "^slow-write $TESTDIR/vol1.img" || fail "vol1's writes were not slowed"
grep -q '\[vol1\] a write took' "$LOGF" &&
	fail "vol1 ran a write on the loop thread with io-inline = no"
grep -q '\[vol1\] the disk took' "$LOGF" && fail "vol1's 300 ms writes were logged as a slow disk"
log "with io-inline = no, vol1's slow writes stayed on its workers"
stop_replagentd
log "PASS"
