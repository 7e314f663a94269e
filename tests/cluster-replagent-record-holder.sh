#!/bin/bash
# tests/cluster-replagent-record-holder.sh: the group's record that a
# replica is Outdated outlives the Primary that made it.  Three nodes
# (tests/cluster.sh) run corosync and replagentd (cluster = corosync); vol0
# has its replicas on n1 and n2, and n3 only votes.  n1 is Primary; n2
# crashes; n1 and n3, a quorate partition, record n2 Outdated, and n1 goes
# on acknowledging writes that n2 lacks.  Then n1 crashes too, and n3's
# daemon restarts while it is alone.  When n2 boots, n2 and n3 are a
# quorate partition in which nobody holds n1's data: n3 must still know
# (from its state directory) that n2 is Outdated, tell n2, and n2's
# promotion must be refused; a promotion there would lose every write n1
# acknowledged after n2 went.  When n1 is back, it is promoted, resyncs
# n2, and n2 ends with every acknowledged write.  This is what DRBD gets
# from Pacemaker's CIB (its fence-peer handler's constraint is kept by
# every node).  Skipped (77) without root, network namespaces or corosync.
# shellcheck source=SCRIPTDIR/cluster-replagent-lib.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/cluster-replagent-lib.sh" || exit 99

rc_requires
t0=$(now_s)
ACK=$TESTDIR/ack-n1.log

rc_setup 3 0
for i in 1 2 3; do
	rc_start "$i"
done
rc_pair_primary vol0 1 2

# n2 crashes: n1 and n3 record it Outdated, and n1 goes on writing.
cluster_kill_node 2
cluster_wait_members 1 2 30 || fail "n1 does not see n2 leave"
rc_log_has 1 "the cluster recorded the outdate" 20 || fail "the group does not record n2 Outdated"
start_writer "$ACK" --unix "${RC_NBD[1]}" --export vol0 --duration 3 \
	--inflight 16 --flush-every 32 --span $((16 << 20)) --stall-timeout 20
wait_writer || fail "writes through n1 failed"
log "$(grep -c '^A ' "$ACK") write(s) acknowledged by n1 without n2"

# n1 crashes; n3, alone, restarts its daemon: only its disk remembers.
cluster_kill_node 1
cluster_wait_inquorate 3 30 || fail "n3 still quorate, alone"
rc_stop 3
rc_start 3

# n2 boots: n2 and n3 are quorate, without n1.
rc_start_node 2
cluster_wait_members 2 2 30 || fail "n2 and n3 do not form a partition"
cluster_wait_quorate 2 30 || fail "n2 and n3 are not quorate"
rc_log_has 2 "this replica is Outdated" 30 ||
	fail "n2 was not told by n3 that it is Outdated"
rc_wait 2 10 'v["disk"] == "Outdated"' || fail "n2 does not say it is Outdated"
out=$(rc_cli 2 promote vol0 2>&1) && fail "n2, Outdated, was promoted without n1's writes"
log "promote on n2 refused: $out"

# n1 is back: promoted, it resyncs n2.
rc_start_node 1
rc_promote_retry 1 30 || fail "promote vol0 on n1 (the only UpToDate replica) refused"
rc_wait_all 60 "$RC_SYNCED" vol0 1 2 || fail "n2 not back in sync with n1 within 60 s"
# n1's word that n2 is in sync clears the record on every member: n2 may
# be promoted again, also after n3's daemon restarts.
rc_stop 3
rc_start 3
rc_cli 1 demote vol0 || fail "demote vol0 on n1 failed"
rc_promote_retry 2 30 || fail "n2, in sync again, cannot be promoted"
rc_cli 2 demote vol0 || fail "demote vol0 on n2 failed"

rc_end_checked vol0 "$ACK" 1 2
log "PASS ($(rc_elapsed "$t0") s)"
