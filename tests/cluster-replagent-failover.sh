#!/bin/bash
# tests/cluster-replagent-failover.sh: failover in cluster mode.  Three
# nodes (tests/cluster.sh) run corosync and replagentd (cluster = corosync);
# vol0 is Primary on n1 while tests/ackcheck.py writes through n1's NBD
# socket with many writes in flight; n1 crashes (SIGKILL of its corosync
# and replagentd).  Promotion on n2 must then succeed within 15 s (the time
# from the crash is printed), and n2's export must hold every write n1
# acknowledged.  After more writes through n2, n1 boots again (corosync,
# replagentd): it must come back Secondary, resync, and end with a backing
# file identical to n2's and n3's.  Skipped (77) without root, network
# namespaces or corosync.
# shellcheck source=SCRIPTDIR/cluster-replagent-lib.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/cluster-replagent-lib.sh" || exit 99

rc_requires
t0=$(now_s)
ACK1=$TESTDIR/ack-n1.log
ACK2=$TESTDIR/ack-n2.log
ACK3=$TESTDIR/ack-n2-crash.log
PROMOTE_LIMIT=15

# wait_writer_gone T: the writer (WRITER_PID) has exited within T s.
wait_writer_gone() {
	local end=$(($(date +%s) + $1))
	while _alive "$WRITER_PID"; do
		[ "$(date +%s)" -ge "$end" ] && return 1
		sleep 0.2
	done
}

rc_setup 3
rc_vol0_on_n1
log "vol0 Primary on n1, replicas connected after $(rc_elapsed "$t0") s"

# The writer: 32 writes in flight, a flush every 64, over the first 16 MiB,
# for longer than the test waits: only the crash ends it.
start_writer "$ACK1" --unix "${RC_NBD[1]}" --export vol0 --duration 60 \
	--inflight 32 --flush-every 64 --span $((16 << 20)) --stall-timeout 20
end=$(($(date +%s) + 20))
sleep 4
until [ "$(rc_acks "$ACK1")" -ge 500 ]; do
	[ "$(date +%s)" -ge "$end" ] && fail "fewer than 500 writes acknowledged by n1 in 20 s"
	sleep 0.2
done
_alive "$WRITER_PID" || { wait_writer; fail "the writer ended before the crash"; }

t_kill=$(now_s)
cluster_kill_node 1
rc_promote_retry 2 "$PROMOTE_LIMIT" ||
	fail "promote on n2 not possible within ${PROMOTE_LIMIT} s of n1's crash"
dt=$(rc_elapsed "$t_kill")
log "n1 crashed: vol0 promoted on n2 $dt s later"
rc_wait 2 5 'v["role"] == "Primary" and not v["io_frozen"]' || fail "n2 is not a working Primary"

wait_writer_gone 30 || fail "the writer on n1's socket did not end within 30 s of the crash"
wait_writer && fail "the writer on n1 ended cleanly: n1's crash did not break its connection"
log "$(rc_acks "$ACK1") writes acknowledged by n1 before it crashed"

ackcheck check --log "$ACK1" --unix "${RC_NBD[2]}" --export vol0 ||
	problem "n2's export lacks writes that n1 acknowledged before its crash"

# More writes through n2 (n1 down): n1 will have to catch up on them.
start_writer "$ACK2" --unix "${RC_NBD[2]}" --export vol0 --duration 4 \
	--inflight 16 --flush-every 64 --base $((16 << 20)) --span $((16 << 20)) \
	--stall-timeout 20
wait_writer || fail "writes through n2 (n1 down) failed"
[ "$(rc_acks "$ACK2")" -gt 100 ] || fail "n2 acknowledged only $(rc_acks "$ACK2") writes in 4 s"

# n1 boots again.  From here on a failed expectation is a "problem": the
# test goes on, so that the data checks at the end still run.
t1=$(now_s)
rc_start_node 1
rc_wait 1 20 'v.get("role") == "Secondary"' || problem "n1 did not come back as Secondary of vol0"
if rc_wait 1 40 "$RC_SYNCED" && rc_wait_all 15 "$RC_SYNCED" vol0 2 3; then
	log "n1 back as Secondary, resynced $(rc_elapsed "$t1") s after its restart;" \
		"n2 sent it $(rc_value 2 'p["n1"]["resync_sent_bytes"]') bytes"
else
	problem "n1 not resynced (Connected, UpToDate, nothing out of sync, on every node) 55 s after its restart"
fi
rc_wait 2 5 'v["role"] == "Primary" and p["n1"]["peer_role"] == "Secondary"' ||
	problem "n2 is not the only Primary after n1 came back"
for f in "$ACK1" "$ACK2"; do
	ackcheck check --log "$f" --unix "${RC_NBD[2]}" --export vol0 ||
		problem "n2's export lacks acknowledged writes ($(basename "$f")) after n1 came back"
done

# The new Primary crashes in turn, under writes: n1 (back, resynced) and
# n3 have the quorum and every acknowledged write.
start_writer "$ACK3" --unix "${RC_NBD[2]}" --export vol0 --duration 60 \
	--inflight 32 --flush-every 64 --base $((32 << 20)) --span $((16 << 20)) \
	--stall-timeout 20
sleep 3
[ "$(rc_acks "$ACK3")" -ge 100 ] || fail "n2 acknowledged only $(rc_acks "$ACK3") writes in 3 s"
_alive "$WRITER_PID" || { wait_writer; fail "the writer on n2 ended before the crash"; }
t_kill=$(now_s)
cluster_kill_node 2
dt2=none
if rc_promote_retry 1 "$PROMOTE_LIMIT"; then
	dt2=$(rc_elapsed "$t_kill")
	log "n2 crashed: vol0 promoted on n1 $dt2 s later"
else
	problem "promote on n1 not possible within ${PROMOTE_LIMIT} s of n2's crash"
fi
wait_writer_gone 20 || problem "the writer on n2's socket did not end within 20 s of the crash"
kill -KILL "$WRITER_PID" 2>/dev/null
wait_writer && problem "the writer on n2 ended cleanly: n2's crash did not break its connection"
if [ "$dt2" != none ]; then
	for f in "$ACK1" "$ACK2" "$ACK3"; do
		ackcheck check --log "$f" --unix "${RC_NBD[1]}" --export vol0 ||
			problem "n1's export lacks acknowledged writes ($(basename "$f"))"
	done
fi

t1=$(now_s)
rc_start_node 2
rc_wait 2 20 'v.get("role") == "Secondary"' || problem "n2 did not come back as Secondary"
if [ "$dt2" != none ]; then
	if rc_wait 2 40 "$RC_SYNCED" && rc_wait_all 15 "$RC_SYNCED" vol0 1 3; then
		log "n2 back as Secondary, resynced $(rc_elapsed "$t1") s after its restart"
	else
		problem "n2 not resynced (Connected, UpToDate, nothing out of sync, on every node) 55 s after its restart"
	fi
fi

rc_check_backings vol0 1 "$ACK1" "$ACK2" "$ACK3"
rc_finish
log "every replica holds every acknowledged write"
log "PASS ($(rc_elapsed "$t0") s; kill n1 -> promote n2: $dt s; kill n2 -> promote n1: $dt2 s)"
