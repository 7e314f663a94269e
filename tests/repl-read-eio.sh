#!/bin/bash
# tests/repl-read-eio.sh: the Primary's disk fails reads; its peer holds
# the data.  a (Primary, under the faultdisk shim) and b, in sync.
# 1. Every read of a's backing fails: a client's reads on a get the data
#    all the same, read from b (as DRBD reads from its peer after a local
#    read error), a read larger than one replication frame (4 MiB) too,
#    and a write made while a's reads fail reads back.  On 2d58d53 the
#    client got EIO for each.  a stays an UpToDate Primary, and its
#    /metrics and status count the reads its peer answered.
# 2. With b gone no replica can answer: the client gets the error.
# 3. a's disk reads again: the reads work on a alone.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires curl timeout qemu-io
requires_replagentd
requires_replagent

cluster_config -t 5 -s 64M a b
faultdisk_init
faultdisk_preload a
metrics_on a
start_in_sync a b
qio_batch "${NODE_NBD_URI[a]}" "write -P 0x5a 0 16M
write -P 0x33 2M 1M
flush" || fail "writing the data failed"

# 1. a's reads fail; b answers them.
faultdisk_set eio-read "${NODE_BACKING[a]}"
out=$(qio "${NODE_NBD_URI[a]}" "read -P 0x5a 0 2M" "read -P 0x33 2M 1M" \
	"read -P 0x5a 3M 6M" "write -P 0x44 12M 64k" "read -P 0x44 12M 64k") ||
	fail "reads on a failed while b held the data: $out"
faultdisk_log | grep -q "^eio-read ${NODE_BACKING[a]}" ||
	hard_error "no read failed on a: the test did not test anything"
grep -q "reading it from a peer instead" "$(daemon_log a)" ||
	fail "a's log does not say that it read from its peer"
metrics_get a >"$TESTDIR/metrics.txt" || fail "GET /metrics on a failed"
n=$(metric_value "$TESTDIR/metrics.txt" 'replagent_reads_from_peer_total{volume="vol0"}') ||
	fail "no replagent_reads_from_peer_total in a's /metrics"
log "a's reads answered by b: $n"
[ "$n" -ge 4 ] || fail "a counts $n reads answered by its peer, expected 4 or more"
wait_status a 10 'v["disk"] == "UpToDate" and v["role"] == "Primary" and p["b"]["link"] == "Connected"' ||
	fail "a is not an UpToDate Primary connected to b after reading from b"
wait_status a 1 "v.get(\"reads_from_peer\") == $n" ||
	fail "a's status --json does not count the $n reads b answered"
ra_cli a status >"$TESTDIR/status.txt" 2>&1
grep -q "disk failing: $n read(s) it failed were read from a peer" "$TESTDIR/status.txt" ||
	fail "a's status does not say its disk fails reads: $(cat "$TESTDIR/status.txt")"

# 2. b stops: nobody holds the data but a, which cannot read it.
stop_node b
wait_status a 10 'p["b"]["link"] != "Connected"' || fail "a still sees b connected"
if out=$(qio "${NODE_NBD_URI[a]}" "read -P 0x5a 0 64k"); then
	fail "a read on a succeeded with a's reads failing and b gone: $out"
fi
grep -q -i "input/output error" <<<"$out" || fail "the client did not get EIO: $out"

# 3. a's disk reads again.
faultdisk_clear eio-read
qio_batch "${NODE_NBD_URI[a]}" "read -P 0x5a 0 2M
read -P 0x44 12M 64k" || fail "a's reads fail after its disk recovered"
log "PASS"
