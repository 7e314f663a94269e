#!/bin/bash
# tests/cluster-replagent-outdate-restart.sh: a Primary's request that the
# group record a lost peer Outdated survives a restart of its daemon.
# Three nodes (tests/cluster.sh) run corosync and replagentd (cluster =
# corosync); vol0 has its replicas on n1 and n2 (n3 only votes) and is
# Primary on n1, which acknowledges writes.  n3 stops; then, with n1's
# metadata failing (tests/faultdisk.c: every write and flush of vol0.meta
# gets EIO), n2 crashes.  n1 is alone, without quorum: it can record n2
# Outdated neither in its own metadata nor through the group, and its I/O
# waits.  n1's daemon is restarted (what a monitor does when the metadata
# fails) on a healthy disk, and n3 comes back: n1's partition is quorate
# again, and the request must go out now (the simulator found the loss:
# tests/sim, seed 1175).  n1's status must show n2 Outdated; n2, when it
# boots, must hear that it is Outdated and be refused a promotion; n1,
# promoted again, resyncs it, and n2 ends with every write n1 acknowledged
# and a backing identical to n1's.  Without that
# record nothing would stop a promotion of n2 that loses the writes n1
# acknowledged after n2's power went.  Skipped (77) without root, network
# namespaces or corosync.
# shellcheck source=SCRIPTDIR/cluster-replagent-lib.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/cluster-replagent-lib.sh" || exit 99

rc_requires
t0=$(now_s)
ACK=$TESTDIR/ack-n1.log

rc_pair_faultdisk 1

start_writer "$ACK" --unix "${RC_NBD[1]}" --export vol0 --duration 3 \
	--inflight 16 --flush-every 32 --span $((16 << 20)) --stall-timeout 20
wait_writer || fail "writes through n1 failed"
log "$(grep -c '^A ' "$ACK") write(s) acknowledged by n1"

# n3 stops: n1 and n2 are still 2 of 3 votes.
cluster_kill_node 3
cluster_wait_members 1 2 30 || fail "n1 does not see n3 leave"
cluster_wait_quorate 1 10 || fail "n1 lost quorum with n2 still there"

# n1's metadata fails, then n2 crashes: n1 is alone.
faultdisk_set eio-write "vol0.meta"
faultdisk_set eio-flush "vol0.meta"
cluster_kill_node 2
cluster_wait_inquorate 1 30 || fail "n1 still quorate, alone"
rc_log_has 1 "cannot record n2 as Outdated" 20 ||
	fail "n1 did not try (and fail) to record n2 Outdated in its metadata"
faultdisk_log | grep -q 'vol0.meta' || fail "the shim failed no metadata I/O of n1"
rc_wait 1 10 'v["io_frozen"]' || fail "n1's I/O does not wait for the outdate"

# The daemon restarts on a healthy disk, still alone.
rc_stop 1
faultdisk_clear eio-write
faultdisk_clear eio-flush
rc_start 1
rc_wait 1 20 'len(v) > 0 and v.get("disk") not in ("Failed", "Diskless")' ||
	fail "n1 did not open vol0 again"

# n3 is back: n1's partition is quorate, the request must go out.
t_q=$(now_s)
rc_start_node 3
cluster_wait_quorate 1 30 || fail "n1 not quorate with n3 back"
rc_wait 1 20 'p["n2"]["peer_disk"] == "Outdated"' ||
	fail "n1 does not record n2 Outdated 20 s after its partition is quorate again"
log "n1 records n2 Outdated $(rc_elapsed "$t_q") s after n3 came back"
grep -q "sent again once the group is quorate" "$(rc_log 1)" ||
	fail "n1's log does not say that it sends the request again"

# n2 boots: it hears that it is Outdated.  n1 is promoted again (a resync
# between Secondaries waits for a Primary) and n2 resyncs from it.
rc_start_node 2
rc_log_has 2 "this replica is Outdated" 30 || fail "n2 was not told that it is Outdated"
out=$(rc_cli 2 promote vol0 2>&1) && fail "n2, Outdated, was promoted"
log "promote on n2 refused: $out"
rc_promote_retry 1 20 || fail "promote vol0 on n1 (the only UpToDate replica) refused"
rc_wait_all 60 "$RC_SYNCED" vol0 1 2 || fail "n2 not back in sync with n1 within 60 s"
rc_wait 2 5 'v["role"] == "Secondary"' || fail "n2 is not Secondary"

rc_end_checked vol0 "$ACK" 1 2
log "PASS ($(rc_elapsed "$t0") s)"
