#!/bin/bash
# tests/nbd-restart.sh: data survives daemon restarts.
#  1. write patterns, SIGTERM: exit status 0, NBD socket removed; restart
#     and read the patterns back.
#  2. write with FUA, and plain writes followed by a flush; SIGKILL (the
#     socket file stays behind); restart (it must cope with the stale socket
#     and pidfile) and read everything back.
#  3. the same once more after a clean stop, reading through TCP.
# shellcheck source=SCRIPTDIR/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires qemu-io timeout

M=$((1024 * 1024))
write_config -s 32M
start_replagentd "$CONFIG"

round1="write -P 0x31 0 64k
write -P 0x32 $((M + 512)) 4k
write -P 0x33 $((5 * M)) $((2 * M))
write -P 0x34 $((32 * M - 4096)) 4k"
check1="read -P 0x31 0 64k
read -P 0 64k 4k
read -P 0x32 $((M + 512)) 4k
read -P 0x33 $((5 * M)) $((2 * M))
read -P 0 $((7 * M)) 4k
read -P 0x34 $((32 * M - 4096)) 4k"

qio_batch "$NBD_URI" "$round1" || fail "round 1 writes failed"
qio_batch "$NBD_URI" "$check1" || fail "round 1 read back before restart"

# 1. clean stop and restart
stop_replagentd || fail "exit status $REPLAGENTD_STATUS after SIGTERM, expected 0"
[ -e "$NBD_SOCK" ] && fail "NBD socket $NBD_SOCK still exists after a clean stop"
start_replagentd "$CONFIG"
qio_batch "$NBD_URI" "$check1" || fail "round 1 data lost over a clean restart"
log "clean restart: data intact"

# 2. durable writes, then SIGKILL
round2="write -f -P 0x41 $((10 * M)) 128k
write -f -P 0x42 $((12 * M + 1024)) 512
write -P 0x43 $((14 * M)) $M
write -P 0x44 $((16 * M - 512)) 8k
flush
write -f -z $((5 * M + 4096)) 4k"
check2="$check1
read -P 0x41 $((10 * M)) 128k
read -P 0x42 $((12 * M + 1024)) 512
read -P 0x43 $((14 * M)) $M
read -P 0x44 $((16 * M - 512)) 8k
read -P 0x33 $((5 * M)) 4k
read -P 0 $((5 * M + 4096)) 4k
read -P 0x33 $((5 * M + 8192)) 4k"
check2=${check2/read -P 0x33 $((5 * M)) $((2 * M))/}
qio_batch "$NBD_URI" "$round2" || fail "round 2 writes failed"
kill_replagentd
log "daemon killed with SIGKILL (status $REPLAGENTD_STATUS)"
start_replagentd "$CONFIG"
qio_batch "$NBD_URI" "$check2" || fail "flushed/FUA data lost over SIGKILL"
log "SIGKILL restart: flushed and FUA data intact"

# 3. clean restart with TCP; everything still there
stop_replagentd || fail "exit status $REPLAGENTD_STATUS after SIGTERM, expected 0"
[ -e "$NBD_SOCK" ] && fail "NBD socket still exists after a clean stop"
write_config -s 32M
start_replagentd_tcp "$CONFIG"
qio_batch "$NBD_TCP_URI" "$check2" || fail "data lost over the third restart"
stop_replagentd || fail "exit status $REPLAGENTD_STATUS after SIGTERM, expected 0"
log "PASS"
