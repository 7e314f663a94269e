#!/bin/bash
# tests/cluster-replagent-partition.sh: the Primary is cut off from the
# cluster.  Three nodes (tests/cluster.sh) run corosync and replagentd
# (cluster = corosync); vol0 is Primary on n1 while tests/ackcheck.py writes
# through n1's NBD socket; n1's link goes down.  n1 loses quorum: its I/O
# freezes (status io_frozen, no write acknowledged from then on) and it may
# not promote; n2, with n3 the majority, is promoted and takes writes.  When
# the link comes back n1 steps down (within 20 s its held writes fail or
# its NBD connection closes; none is acknowledged) and resyncs from n2.  No
# write acknowledged by n1, before or after the cut, may be missing from
# n2; at the end the three replicas are identical.  Skipped (77) without
# root, network namespaces or corosync.
# shellcheck source=SCRIPTDIR/cluster-replagent-lib.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/cluster-replagent-lib.sh" || exit 99

rc_requires
t0=$(now_s)
ACK1=$TESTDIR/ack-n1.log
ACK2=$TESTDIR/ack-n2.log

rc_setup 3
rc_vol0_on_n1
log "vol0 Primary on n1 after $(rc_elapsed "$t0") s"

# ---- the cut -------------------------------------------------------------------
# n1's writer runs until the end of the test (SIGTERM) or until n1 fails
# its held writes; it must not give up while they are held.
rc_cut_writing_n1 "$ACK1" 200 150
W1=$WRITER_PID
t_cut=$RC_T_CUT
t_frozen=$RC_T_FROZEN
n_frozen=$RC_N_FROZEN
node_st=0
rc_cli 1 status vol0 >/dev/null || node_st=$?
[ "$node_st" = 1 ] || [ "$node_st" = 2 ] ||
	fail "status on n1 with its I/O frozen: exit $node_st, expected 1 or 2"

out=$(rc_cli 1 promote vol0 2>&1) && fail "promote on n1 without quorum accepted"
log "promote on n1 refused: $out"
grep -q -i quorum <<<"$out" || fail "n1's refusal does not mention quorum: $out"
out=$(rc_cli 1 volume create volx --size 16M --nodes n1,n2 2>&1) &&
	fail "volume create on n1 without quorum accepted"

# The majority side.
for i in 2 3; do
	cluster_wait_quorate "$i" 20 && cluster_wait_members "$i" 2 20 ||
		fail "n$i not quorate with 2 members after the cut"
done
rc_promote_retry 2 20 || fail "promote on n2 (majority) refused for 20 s"
log "vol0 promoted on n2 $(rc_elapsed "$t_cut") s after the cut"
rc_wait 2 10 'v["role"] == "Primary" and not v["io_frozen"]' || fail "n2 is not a working Primary"
# Everything n1 acknowledged (so far: its I/O is frozen) is on n2.
ackcheck check --log "$ACK1" --unix "${RC_NBD[2]}" --export vol0 ||
	problem "n2 lacks writes n1 acknowledged before or just after the cut"

start_writer "$ACK2" --unix "${RC_NBD[2]}" --export vol0 --duration 5 \
	--inflight 16 --flush-every 64 --base $((16 << 20)) --span $((16 << 20)) \
	--stall-timeout 30
wait_writer || fail "writes through n2 (the majority's Primary) failed"
[ "$(rc_acks "$ACK2")" -ge 100 ] || fail "n2 acknowledged only $(rc_acks "$ACK2") writes in 5 s"
rc_wait 2 10 'p["n3"]["link"] == "Connected" and p["n3"]["out_of_sync_bytes"] == 0' ||
	fail "n2's writes did not reach n3"

# Still frozen on n1: not one acknowledgement more.
_alive "$W1" || fail "n1's writer ended while n1 was cut off (its writes must be held)"
rc_wait 1 5 'v["io_frozen"]' || fail "n1's I/O is no longer frozen while it is cut off"
[ "$(rc_acks "$ACK1")" = "$n_frozen" ] ||
	problem "n1 acknowledged $(($(rc_acks "$ACK1") - n_frozen)) write(s) with its I/O frozen"

# ---- the heal --------------------------------------------------------------------
# From here on a failed expectation is a "problem": the test goes on, so
# that the data checks at the end still run.
t_heal=$(now_s)
cluster_heal 1
for i in 1 2 3; do
	cluster_wait_members "$i" 3 30 || fail "n$i: not 3 members after the heal"
done
stepped_down=
if rc_wait 1 20 'v["role"] == "Secondary"'; then
	stepped_down=1
	log "n1 stepped down $(rc_elapsed "$t_heal") s after the heal"
else
	problem "n1 did not step down within 20 s of the heal (n2 is Primary too)"
fi
rc_wait 2 5 'v["role"] == "Primary"' || problem "n2 is no longer Primary after the heal"

# n1's writer: its held writes must fail (or the connection close) at the
# step-down, so it ends.
end=$(($(date +%s) + 20))
while _alive "$W1" && [ "$(date +%s)" -lt "$end" ]; do
	sleep 0.2
done
if _alive "$W1"; then
	[ -n "$stepped_down" ] &&
		problem "n1's writer still runs 20 s after the heal: n1 stepped down but neither" \
			"answered nor failed all its held requests, nor closed the connection"
	kill -KILL "$W1" 2>/dev/null
fi
wait "$W1"
untrack_pid "$W1"
cat "$ACK1.out"
log "n1's writer: $(rc_acks "$ACK1") acknowledged in all, $(rc_acks "$ACK1" "$t_cut") after the cut," \
	"$(grep -c '^E ' "$ACK1") failed"
late=$(rc_acks "$ACK1" "$t_frozen")
[ "$late" = 0 ] ||
	problem "n1 acknowledged $late write(s) after its I/O froze (first: $(awk -v t="$t_frozen" '$1 == "A" && $4 >= t' "$ACK1" | head -n 1))"

if rc_wait 1 40 "$RC_SYNCED" && rc_wait_all 15 "$RC_SYNCED" vol0 2 3; then
	log "n1 resynced $(rc_elapsed "$t_heal") s after the heal;" \
		"n2 sent it $(rc_value 2 'p["n1"]["resync_sent_bytes"]') bytes"
else
	problem "n1 not resynced (Connected, UpToDate, nothing out of sync, on every node) 55 s after the heal"
fi

for f in "$ACK1" "$ACK2"; do
	ackcheck check --log "$f" --unix "${RC_NBD[2]}" --export vol0 ||
		problem "n2's export lacks acknowledged writes ($(basename "$f"))"
done

rc_check_backings vol0 2 "$ACK1" "$ACK2"
rc_finish
log "PASS ($(rc_elapsed "$t0") s)"
