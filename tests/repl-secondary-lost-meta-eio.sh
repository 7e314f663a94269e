#!/bin/bash
# tests/repl-secondary-lost-meta-eio.sh: a Secondary whose disk drops
# writes it acknowledged (a FLUSH fails: the faultdisk shim's volatile
# cache on b's backing drops them, as the page cache may drop pages whose
# writeback failed) must stay Inconsistent across a restart of its daemon
# on the same boot, also when its metadata fails too and cannot record it:
# the metadata still says UpToDate, and the host's page cache no longer
# has the writes.  b's engine keeps the loss in a file beside its pidfile
# (a tmpfs in production: /run/replagent), read at the restart.  Then the
# Primary a dies: b must refuse to be promoted (it lacks writes a
# acknowledged), and once a is back and Primary, b is resynced and every
# acknowledged write reads back from b.  b used to come back UpToDate.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp qemu-io
requires_replagentd
requires_replagent

cached_pair b same-boot

# Plain writes, acknowledged by both; b's copy is only in the shim's cache.
unflushed_writes b 0x61

# b's metadata fails from now on, and so does its next flush.
faultdisk_set eio-write "${NODE_DIR[b]}/state/"
faultdisk_set eio-flush "${NODE_BACKING[b]}" "${NODE_DIR[b]}/state/"
qio_batch "${NODE_NBD_URI[a]}" "flush" 2>/dev/null || true
faultdisk_log | grep -q "^cache-drop ${NODE_BACKING[b]}" ||
	hard_error "the failed flush dropped none of b's writes: nothing to test"
wait_status b 10 'v["disk"] == "Inconsistent"' ||
	fail "b, whose disk dropped writes it acknowledged, is not Inconsistent"
faultdisk_log | grep -q "^eio-write ${NODE_DIR[b]}/state/" ||
	hard_error "b's metadata took the record: nothing to test"

# a dies; b's disk works again and its daemon restarts on the same boot.
kill_node a
faultdisk_clear eio-flush
faultdisk_clear eio-write
faultdisk_clear cache
stop_node b
start_node b
wait_status b 15 'v["disk"] == "Inconsistent"' ||
	fail "b, whose disk lost acknowledged writes, came back as if it held them"
log "b is Inconsistent after its restart"
if out=$(ra_cli b promote "$CLUSTER_VOL" 2>&1); then
	fail "b, lacking writes a acknowledged, was promoted: $out"
fi
log "b refuses to be promoted: $out"

start_node a
wait_status a 30 'v["role"] == "Secondary" and p["b"]["link"] != "StandAlone"' ||
	fail "a did not come back"
promote a
wait_status a 60 'p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0 and p["b"]["peer_disk"] == "UpToDate"' ||
	fail "b was not resynced from a"
ra_cli a demote "$CLUSTER_VOL" >/dev/null || fail "a does not demote"
promote b
qio_batch "${NODE_NBD_URI[b]}" "read -P 0x61 1M 4M" ||
	fail "the writes a acknowledged are not on b after the resync"
stop_node b
stop_node a
cmp_backings a b || fail "a and b differ after the resync"
log "PASS"
