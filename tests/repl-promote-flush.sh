#!/bin/bash
# tests/repl-promote-flush.sh: a Secondary acknowledges the Primary's
# plain writes before they are durable; once it is promoted in its
# place, a power loss of the new Primary must not take them.  Both
# backings run with the faultdisk shim's volatile write cache (a kill -9
# drops what was not flushed, like a power loss).  A client writes 4 MiB
# through a without any flush; a loses power, b is promoted, then b loses
# power too and restarts without the shim.  b must still hold the 4 MiB:
# a promotion flushes the backing first (it used to leave them in the
# cache, lost with b's power).
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout qemu-io
requires_replagentd
requires_replagent

cluster_config -t 5 a b
faultdisk_init
faultdisk_set cache "${NODE_BACKING[a]}" "${NODE_BACKING[b]}"

faultdisk_preload a
faultdisk_preload b
start_pair a b

# Plain writes only (no FLUSH).
qio_unflushed "${NODE_NBD_URI[a]}" "write -P 0x61 1M 4M"
kill_node a
! faultdisk_log | grep -q "^cache-flush ${NODE_BACKING[b]}" ||
	hard_error "b flushed its writes before the promotion: nothing to test"
log "a lost power; b holds the writes in its cache"
wait_status b 15 'p["a"]["link"] != "Connected"' || fail "b does not see a gone"
promote b
kill_node b
log "b lost power after its promotion"

ra_env b
start_node b
if ! out=$(ra_cli b promote "$CLUSTER_VOL" 2>&1); then
	log "b refused: $out"
	promote b --force	# a, which might hold them, is gone for good here
fi
qio_batch "${NODE_NBD_URI[b]}" "read -P 0x61 1M 4M" ||
	fail "the writes b acknowledged as a Secondary were lost with its power after its promotion"
stop_node b
log "PASS"
