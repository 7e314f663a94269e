#!/bin/bash
# tests/repl-secondary-powerloss.sh: a Secondary that loses power loses the
# plain writes it acknowledged and had not flushed; the Primary must send
# them again when it returns.  b runs with the faultdisk shim's volatile
# write cache on its backing (writes stay in memory until fdatasync; a
# kill -9 drops them, like a power loss).  a (Primary) and b in sync; a
# client writes 4 MiB through a without any flush (qemu-io aborts), b
# is killed with SIGKILL and restarted without the shim: once a says b is
# in sync again, the two backings must be identical.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp qemu-io
requires_replagentd
requires_replagent

IN_SYNC='p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0 and p["b"]["peer_disk"] == "UpToDate"'

cluster_config -t 5 a b
faultdisk_init
faultdisk_set cache "${NODE_BACKING[b]}"

start_node a
faultdisk_preload b
start_node b
ra_env b
wait_status a 30 "$IN_SYNC" || fail "a and b did not connect"
promote a

# Plain writes only (no FLUSH).
qio_unflushed "${NODE_NBD_URI[a]}" "write -P 0x61 1M 4M"
kill_node b
faultdisk_log | grep -q "^cache ${NODE_BACKING[b]}" ||
	hard_error "the shim held none of b's writes: nothing to test"
! faultdisk_log | grep -q "^cache-flush ${NODE_BACKING[b]}" ||
	hard_error "b flushed its writes: nothing to test"
qio_batch "${NODE_NBD_URI[a]}" "read -P 0x61 1M 4M" || fail "the write did not reach a"
log "b lost power with unflushed writes it had acknowledged"

start_node b
wait_status a 60 "$IN_SYNC" || fail "b did not come back in sync"
wait_status b 10 'v["disk"] == "UpToDate"' || fail "b is not UpToDate"
stop_node b
stop_node a
cmp_backings a b || fail "b lost acknowledged writes in a power loss and a still called it in sync"
log "PASS"
