#!/bin/bash
# tests/repl-promote-meta-eio.sh: a promotion whose superblock update
# fails at its fdatasync (tests/faultdisk.c eio-flush on a's metadata) is
# refused, and the daemon restarted after it must not read that update
# back from the page cache: it drew a generation that no write used and
# that no other replica was told of.  a and b in sync; a demoted, b
# stopped; a's promotion fails; a is killed; b is promoted alone (a new
# generation); a restarts.  a must rejoin b and resync from it (issue 13,
# sim seeds 1638 and 473: it read the update back, came back "crashed as
# Primary" with that generation, and was in a split brain with b that
# waited for "replagent resolve").
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout qemu-io
requires_replagentd
requires_replagent

cluster_config -t 5 a b
faultdisk_init
faultdisk_preload a
start_pair a b
qio_batch "${NODE_NBD_URI[a]}" "write -P 0x61 0 1M" || fail "writes through a failed"
ra_cli a demote "$CLUSTER_VOL" || fail "demote on a refused"
stop_node b
wait_status a 15 'p["b"]["link"] != "Connected"' || fail "a does not see b gone"

faultdisk_set eio-flush "${NODE_DIR[a]}/state/"
ra_cli a promote "$CLUSTER_VOL" && fail "a's promotion succeeded without its metadata"
faultdisk_log | grep -q '^eio-flush' || hard_error "the shim failed no flush: nothing to test"
kill_node a
faultdisk_clear eio-flush
log "a's promotion failed at the fdatasync of its superblock; a killed"

start_node b
promote b
qio_batch "${NODE_NBD_URI[b]}" "write -P 0x62 2M 1M" || fail "writes through b failed"

start_node a
wait_status b 30 'p["a"]["link"] == "Connected" and p["a"]["out_of_sync_bytes"] == 0 and p["a"]["peer_disk"] == "UpToDate"' ||
	fail "a did not rejoin and resync from b: $(grep -h -E 'peer b: ' "$(daemon_log a)" | tail -n 2)"
log "a rejoined: $(grep -h -E 'peer b: (source|target)' "$(daemon_log a)" | tail -n 1 | sed 's/^.*\] //')"
qio_batch "${NODE_NBD_URI[b]}" $'read -P 0x61 0 1M\nread -P 0x62 2M 1M' ||
	fail "b lost writes"
stop_node a
stop_node b
cmp_backings a b || fail "a and b differ after the resync"
log "PASS"
