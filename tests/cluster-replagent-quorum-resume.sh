#!/bin/bash
# tests/cluster-replagent-quorum-resume.sh: a Primary that loses quorum and
# gets it back, with nobody promoted meanwhile, resumes its I/O.  Three
# nodes (tests/cluster.sh) run corosync and replagentd (cluster = corosync);
# vol0 is Primary on n1 while tests/ackcheck.py writes through n1's NBD
# socket; n1's link goes down: its I/O freezes (io_frozen, no write
# acknowledged).  Nobody is promoted on the other side.  When the link
# comes back n1 stays Primary, its I/O thaws by itself, the held writes
# are acknowledged (none fails, the connection stays) and new ones follow;
# n2 and n3 are back in sync, and every acknowledged write is on all
# three.  (cluster-replagent-partition.sh is the other ending: someone
# was promoted, n1 steps down.)  Skipped (77) without root, network
# namespaces or corosync.
# shellcheck source=SCRIPTDIR/cluster-replagent-lib.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/cluster-replagent-lib.sh" || exit 99

rc_requires
t0=$(now_s)
ACK=$TESTDIR/ack-n1.log

# acks [FROM]: acknowledged writes in the writer's log (at or after FROM).
acks() {
	awk -v from="${1:-0}" '$1 == "A" && $4 >= from { n++ } END { print n + 0 }' "$ACK" 2>/dev/null ||
		echo 0
}

rc_setup 3
rc_cli 1 volume create vol0 --size 64M --nodes n1,n2,n3 || fail "volume create failed"
rc_wait_all 30 "$RC_SYNCED" || fail "vol0: replicas not all Connected within 30 s"
rc_promote_retry 1 10 || fail "promote vol0 on n1 refused"

start_writer "$ACK" --unix "${RC_NBD[1]}" --export vol0 --duration 300 \
	--inflight 16 --flush-every 64 --span $((16 << 20)) --stall-timeout 200
sleep 3
[ "$(acks)" -ge 100 ] || fail "n1 acknowledged only $(acks) writes in 3 s"

t_cut=$(now_s)
cluster_partition 1
cluster_wait_inquorate 1 20 || fail "n1 still quorate 20 s after the cut"
rc_wait 1 15 'v["io_frozen"] and v["role"] == "Primary"' ||
	fail "n1 (Primary, no quorum) does not report its I/O frozen"
n_frozen=$(acks)
log "n1 frozen $(rc_elapsed "$t_cut") s after the cut, $n_frozen writes acknowledged"
sleep 5
[ "$(acks)" = "$n_frozen" ] ||
	fail "n1 acknowledged $(($(acks) - n_frozen)) write(s) with its I/O frozen"
_alive "$WRITER_PID" || fail "n1's writer ended while its writes were held"

t_heal=$(now_s)
cluster_heal 1
for i in 1 2 3; do
	cluster_wait_members "$i" 3 30 || fail "n$i: not 3 members after the heal"
done
rc_wait 1 30 'not v["io_frozen"]' || fail "n1's I/O still frozen 30 s after quorum returned"
log "n1's I/O resumed $(rc_elapsed "$t_heal") s after the heal"
rc_wait 1 1 'v["role"] == "Primary"' || fail "n1 is no longer Primary after the heal"
end=$(($(date +%s) + 30))
while [ "$(acks)" -lt $((n_frozen + 200)) ] && [ "$(date +%s)" -lt "$end" ]; do
	sleep 0.5
done
[ "$(acks)" -ge $((n_frozen + 200)) ] ||
	fail "n1 acknowledged only $(($(acks) - n_frozen)) write(s) in 30 s after its I/O resumed"
kill -TERM "$WRITER_PID"
wait_writer || fail "n1's writer saw a failed write or a broken connection"
log "n1: $(acks) writes acknowledged, $(acks "$t_heal") after the heal, $(grep -c '^E ' "$ACK") failed"

rc_wait_all 60 "$RC_SYNCED" || fail "vol0 not back in sync on every node 60 s after the heal"
for i in 2 3; do
	[ "$(rc_value "$i" 'p["n1"]["peer_role"]')" = Primary ] || fail "n$i does not see n1 as Primary"
done
ackcheck check --log "$ACK" --unix "${RC_NBD[1]}" --export vol0 ||
	fail "n1's export lacks acknowledged writes"
for i in 1 2 3; do
	rc_stop "$i"
done
rc_cmp_backings vol0 1 2 3 || fail "the replicas differ at the end"
for i in 2 3; do
	ackcheck check --log "$ACK" --file "$(rc_backing "$i" vol0)" >/dev/null ||
		fail "n$i's backing file lacks acknowledged writes"
done
rc_finish
log "PASS ($(rc_elapsed "$t0") s)"
