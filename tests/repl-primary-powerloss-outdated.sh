#!/bin/bash
# tests/repl-primary-powerloss-outdated.sh: the plain writes a Primary
# acknowledged while its Secondary was in sync are on both; the Secondary
# then goes away (recorded Outdated) and the Primary loses power.  Its
# Secondary still holds those writes, so they must survive: either the
# Primary comes back with them, or it refuses to be promoted without
# --force (then the Secondary is promoted and it resyncs from it).  a
# (Primary) runs with the faultdisk shim's volatile write cache on its
# backing (a kill -9 drops what was not flushed).  a used to be promoted
# without them: a peer recorded Outdated "cannot hold writes a lost", yet
# it held every write acknowledged before it left (simulator seed 544).
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp qemu-io
requires_replagentd
requires_replagent

cached_pair a
ra_env a

# Plain writes only (no FLUSH).
unflushed_writes a 0x61
stop_node b
wait_log a 30 "peer b is gone: recorded as Outdated" || fail "a did not record b Outdated"
kill_node a
log "b went away (Outdated) holding the writes, then a lost power"

start_node a
wait_status a 30 'v["role"] == "Secondary"' || fail "a did not come back"
if ! out=$(ra_cli a promote "$CLUSTER_VOL" 2>&1); then
	# The other correct answer: b, to be promoted by the operator or
	# the cluster, holds the writes.
	log "a refused: $out"
	stop_node a
	log "PASS"
	exit 0
fi
log "a was promoted again"
qio_batch "${NODE_NBD_URI[a]}" "read -P 0x61 1M 4M" ||
	fail "a was promoted without the writes it acknowledged before its power loss (b holds them)"
start_node b
wait_status a 60 'p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0 and p["b"]["peer_disk"] == "UpToDate"' ||
	fail "b did not get in sync with a"
stop_node b
stop_node a
cmp_backings a b || fail "a and b differ after the recovery"
log "PASS"
