#!/bin/bash
# tests/nbd-accept-emfile.sh: a daemon out of descriptors pauses its NBD
# listener instead of spinning, and takes the waiting client once it has
# descriptors again.  a (Primary) and b in sync; a's descriptor limit is
# lowered to what it uses (prlimit); a qemu-io client connects and writes:
# accept(2) fails with EMFILE, a says it pauses, and over the next 2 s it
# uses far less than a core (a listener left in the loop wakes it on
# every turn: a whole core).  The client must not have been answered or
# dropped meanwhile.  With the limit back, the same client's write
# succeeds, reads back, and is on b.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires prlimit find qemu-io
requires_replagentd
requires_replagent

cluster_config -t 2 -s 64M a b
start_in_sync a b
uri=${NODE_NBD_URI[a]}

# cpu_ticks PID: utime + stime of PID, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

pid=$(replagentd_pid a)
soft=$(prlimit --pid "$pid" --nofile --output SOFT --noheadings | tr -d ' ')
limit=$(lowest_free_fd "$pid")
prlimit --pid "$pid" --nofile="$limit": || hard_error "prlimit on $pid"
log "a (pid $pid) may open no descriptor now (limit $limit, was $soft)"

QIO_TIMEOUT=60 qio "$uri" "write -P 0x5a 1048576 65536" >"$TESTDIR/qio.out" 2>&1 &
qpid=$!
track_pid "$qpid"
wait_log a 10 'cannot accept an NBD client, pausing' ||
	fail "a does not say it pauses its listener when out of descriptors"
t0=$(cpu_ticks "$pid")
sleep 2
used=$(($(cpu_ticks "$pid") - t0))
hz=$(getconf CLK_TCK)
log "a used $used tick(s) of CPU (of $((2 * hz)) in 2 s) while out of descriptors"
[ "$used" -lt "$hz" ] || fail "a used $used ticks in 2 s ($hz a second): its listener spins"
_alive "$qpid" || fail "the client ended while a had no descriptor for it: $(cat "$TESTDIR/qio.out")"

prlimit --pid "$pid" --nofile="$soft": || hard_error "prlimit on $pid"
wait "$qpid" || fail "the client's write after the limit came back: $(cat "$TESTDIR/qio.out")"
untrack_pid "$qpid"
qio "$uri" "read -P 0x5a 1048576 65536" >/dev/null || fail "read back on a"
wait_status a 10 'all(x["out_of_sync_bytes"] == 0 for x in p.values())' ||
	fail "a's peer is not in sync after the write"
stop_cluster
cmp_backings a b || fail "a's and b's backings differ"
log "PASS"
