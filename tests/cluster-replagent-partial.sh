#!/bin/bash
# tests/cluster-replagent-partial.sh: a Secondary whose disk failed writes
# of its Primary's, at the moment the Primary's own disk lost writes, is
# the replica to promote (sim seed 95820 of the EIO profile).  Three nodes
# (tests/cluster.sh) run corosync and replagentd (cluster = corosync);
# vol0 has its replicas on n1 and n2 (n3 only votes) and is Primary on n1,
# which acknowledges writes that are not flushed (no FLUSH from the
# client).  Then n1's backing fails its flushes (tests/faultdisk.c) and
# n2's fails writes: n2 answers an error for the next write of n1's; n1,
# flushing before it records n2 Outdated, finds that its disk may have
# dropped writes it acknowledged, which n2 holds, and steps down.  n2 is
# Inconsistent only where its writes failed, never acknowledged: status
# says "partial" and the cluster has no record of it Outdated.  Checked:
# with both disks healthy again, n2 is promoted without --force (it was
# refused before the partial state existed: nobody could be), n1 takes a
# full resync from it, and both end identical with every write n1
# acknowledged.  Skipped (77) without root, network namespaces or
# corosync.
# shellcheck source=SCRIPTDIR/cluster-replagent-lib.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/cluster-replagent-lib.sh" || exit 99

rc_requires
t0=$(now_s)
ACK=$TESTDIR/ack-n1.log

rc_pair_faultdisk 1 2

start_writer "$ACK" --unix "${RC_NBD[1]}" --export vol0 --duration 6 \
	--inflight 8 --flush-every 0 --span $((16 << 20)) --stall-timeout 20
sleep 2
[ "$(rc_acks "$ACK")" -ge 50 ] || fail "n1 acknowledged only $(rc_acks "$ACK") writes in 2 s"

# n1's flushes fail first (nothing flushes its backing yet: the client
# sends no FLUSH), then n2's writes: n2's first failed write is what
# makes n1 flush.  The shim reads its rules every 50 ms.
faultdisk_set eio-flush "$(rc_backing 1)"
sleep 0.3
faultdisk_set eio-write "$(rc_backing 2)"
rc_log_has 1 "stepping down" 20 || fail "n1 did not step down after its flush failed"
faultdisk_log | grep -q "^eio-write $(rc_backing 2)" ||
	hard_error "no write failed on n2: the test did not test anything"
faultdisk_log | grep -q "^eio-flush $(rc_backing 1)" ||
	hard_error "no flush failed on n1: the test did not test anything"
wait_writer >/dev/null
log "$(rc_acks "$ACK") write(s) acknowledged by n1"
faultdisk_clear eio-write
faultdisk_clear eio-flush

rc_wait 2 10 'v["disk"] == "Inconsistent" and v.get("partial") is True' ||
	fail "n2 does not say it is Inconsistent and partial"
rc_cli 2 show vol0 | grep -q 'partial=yes' || fail "show on n2 does not say partial=yes"
rc_wait 1 10 'v["role"] == "Secondary" and v["disk"] == "Inconsistent"' ||
	fail "n1 is not a Secondary to be resynced after stepping down"
rc_promote_retry 2 20 ||
	fail "n2, which holds every write n1 acknowledged, cannot be promoted"
grep -q "promoting a replica Inconsistent only where its own writes failed" "$(rc_log 2)" ||
	fail "n2's log does not say it was promoted as a partial replica"
rc_wait_all 60 "$RC_SYNCED" vol0 1 2 || fail "n1 not back in sync with n2 within 60 s"
rc_wait 2 5 'v.get("partial") is None' || fail "n2, Primary, still says partial"

rc_end_checked vol0 "$ACK" 2 1
log "PASS ($(rc_elapsed "$t0") s)"
