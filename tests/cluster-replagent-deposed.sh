#!/bin/bash
# tests/cluster-replagent-deposed.sh: a Primary cut off from the cluster
# comes back after the one promoted in its place has died.  Three nodes
# (tests/cluster.sh) run corosync and replagentd (cluster = corosync); vol0
# is Primary on n1 while tests/ackcheck.py writes through n1's NBD socket;
# n1's link goes down: its I/O freezes.  n2, with n3 the majority, is
# promoted and acknowledges writes that reach n3; then n2 crashes.  When
# n1's link comes back, n1 and n3 are a majority again, with nobody Primary
# but n1, whose data lacks everything n2 acknowledged: n1 must step down
# (its held writes fail, none is acknowledged after its I/O froze), not
# resume.  n3, which holds n2's writes, is then promoted, n1 resyncs from
# it, n2 boots and resyncs too; every write n1 or n2 acknowledged is on
# all three at the end, and the three replicas are identical.
# (cluster-replagent-partition.sh is the ending where the new Primary is
# still there at the heal.)  Skipped (77) without root, network namespaces
# or corosync.
# shellcheck source=SCRIPTDIR/cluster-replagent-lib.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/cluster-replagent-lib.sh" || exit 99

rc_requires
t0=$(now_s)
ACK1=$TESTDIR/ack-n1.log
ACK2=$TESTDIR/ack-n2.log

rc_setup 3
rc_vol0_on_n1

# ---- n1 cut off, n2 promoted -----------------------------------------------------
rc_cut_writing_n1 "$ACK1" 200 150
W1=$WRITER_PID
t_frozen=$RC_T_FROZEN
n_frozen=$RC_N_FROZEN

for i in 2 3; do
	cluster_wait_quorate "$i" 20 && cluster_wait_members "$i" 2 20 ||
		fail "n$i not quorate with 2 members after the cut"
done
rc_promote_retry 2 20 || fail "promote on n2 (majority) refused for 20 s"
rc_wait 2 10 'v["role"] == "Primary" and not v["io_frozen"]' || fail "n2 is not a working Primary"
start_writer "$ACK2" --unix "${RC_NBD[2]}" --export vol0 --duration 5 \
	--inflight 16 --flush-every 64 --base $((16 << 20)) --span $((16 << 20)) \
	--stall-timeout 30
wait_writer || fail "writes through n2 (the majority's Primary) failed"
[ "$(rc_acks "$ACK2")" -ge 100 ] || fail "n2 acknowledged only $(rc_acks "$ACK2") writes in 5 s"
rc_wait 2 10 'p["n3"]["link"] == "Connected" and p["n3"]["out_of_sync_bytes"] == 0' ||
	fail "n2's writes did not reach n3"
log "n2 acknowledged $(rc_acks "$ACK2") write(s) n1 does not have"

# ---- n2 dies, n1 comes back ------------------------------------------------------
cluster_kill_node 2
cluster_wait_inquorate 3 30 || fail "n3 still quorate alone 30 s after n2's crash"
_alive "$W1" || fail "n1's writer ended while n1 was cut off (its writes must be held)"
[ "$(rc_acks "$ACK1")" = "$n_frozen" ] ||
	fail "n1 acknowledged $(($(rc_acks "$ACK1") - n_frozen)) write(s) with its I/O frozen"

# From here on a failed expectation is a "problem": the test goes on, so
# that the data checks at the end still run.
t_heal=$(now_s)
cluster_heal 1
for i in 1 3; do
	cluster_wait_quorate "$i" 30 && cluster_wait_members "$i" 2 30 ||
		fail "n$i: not quorate with 2 members after the heal"
done
log "n1 and n3 quorate $(rc_elapsed "$t_heal") s after the heal"
if rc_wait 1 20 'v["role"] == "Secondary"'; then
	log "n1 stepped down $(rc_elapsed "$t_heal") s after the heal"
else
	problem "n1 did not step down within 20 s of the heal: it is Primary again with" \
		"none of the writes n2 acknowledged"
fi

end=$(($(date +%s) + 20))
while _alive "$W1" && [ "$(date +%s)" -lt "$end" ]; do
	sleep 0.2
done
_alive "$W1" && problem "n1's writer still runs 20 s after the heal: n1's held requests" \
	"were neither failed nor its connection closed"
kill -KILL "$W1" 2>/dev/null
wait "$W1"
untrack_pid "$W1"
cat "$ACK1.out"
late=$(rc_acks "$ACK1" "$t_frozen")
[ "$late" = 0 ] ||
	problem "n1 acknowledged $late write(s) after its I/O froze, on data without n2's writes"

# ---- n3 holds n2's writes: promoted; n1 and n2 resync from it ---------------------
rc_promote_retry 3 20 || problem "promote on n3 (it holds n2's writes) refused for 20 s"
rc_wait 3 10 'v["role"] == "Primary" and not v["io_frozen"]' ||
	problem "n3 is not a working Primary"
for f in "$ACK1" "$ACK2"; do
	ackcheck check --log "$f" --unix "${RC_NBD[3]}" --export vol0 ||
		problem "n3's export lacks acknowledged writes ($(basename "$f"))"
done
rc_wait 1 60 'v.get("disk") == "UpToDate" and p["n3"]["link"] == "Connected" and p["n3"]["out_of_sync_bytes"] == 0' ||
	problem "n1 not resynced from n3 within 60 s"
rc_start_node 2
rc_wait_all 60 "$RC_SYNCED" || problem "not all three in sync 60 s after n2 booted"

rc_check_backings vol0 3 "$ACK1" "$ACK2"
rc_finish
log "PASS ($(rc_elapsed "$t0") s)"
