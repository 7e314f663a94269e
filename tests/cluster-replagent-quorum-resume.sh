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

rc_setup 3
rc_vol0_on_n1

rc_cut_writing_n1 "$ACK" 300 200
n_frozen=$RC_N_FROZEN
sleep 5
[ "$(rc_acks "$ACK")" = "$n_frozen" ] ||
	fail "n1 acknowledged $(($(rc_acks "$ACK") - n_frozen)) write(s) with its I/O frozen"
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
while [ "$(rc_acks "$ACK")" -lt $((n_frozen + 200)) ] && [ "$(date +%s)" -lt "$end" ]; do
	sleep 0.5
done
[ "$(rc_acks "$ACK")" -ge $((n_frozen + 200)) ] ||
	fail "n1 acknowledged only $(($(rc_acks "$ACK") - n_frozen)) write(s) in 30 s after its I/O resumed"
kill -TERM "$WRITER_PID"
wait_writer || fail "n1's writer saw a failed write or a broken connection"
log "n1: $(rc_acks "$ACK") writes acknowledged, $(rc_acks "$ACK" "$t_heal") after the heal, $(grep -c '^E ' "$ACK") failed"

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
