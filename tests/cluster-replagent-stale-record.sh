#!/bin/bash
# tests/cluster-replagent-stale-record.sh: a record that a replica is
# Outdated, kept by a member that was away when it stopped being true, is
# cleared when that member meets the replica as a Primary that never lost
# quorum.  Three nodes (tests/cluster.sh) run corosync and replagentd
# (cluster = corosync); vol0 is on n1, n2 and n3, Primary on n2.  n1's
# daemon stops and n2 writes: n2 and n3 record n1 Outdated.  n3's daemon
# stops (its state directory keeps the record); n1 comes back, resyncs, and
# the record goes on n1 and n2; n1 is promoted in n2's place.  When n3's
# daemon starts again it tells the group what it kept: n1, Primary with
# quorum all along, must say it is current, and the record must leave n3's
# state directory (a stale record there would refuse n1's promotion later,
# and make a Primary that loses quorum for a moment step down when it comes
# back: cluster-replagent-deposed.sh).  n1 stays Primary and writes; at the
# end the three replicas are identical.  Skipped (77) without root, network
# namespaces or corosync.
# shellcheck source=SCRIPTDIR/cluster-replagent-lib.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/cluster-replagent-lib.sh" || exit 99

rc_requires
t0=$(now_s)
ACK1=$TESTDIR/ack-n2.log
ACK2=$TESTDIR/ack-n1.log

# has_record I NODE: node I's state directory records NODE's replica of
# vol0 Outdated (a "VOLUME NODE" line in its outdates file).
has_record() {
	awk -v n="$2" '$1 == "vol0" && $2 == n && NF == 2 { f = 1 } END { exit !f }' \
		"${CL_DIR[$1]}/state/outdates" 2>/dev/null
}

rc_setup 3
rc_cli 1 volume create vol0 --size 64M --nodes n1,n2,n3 || fail "volume create failed"
rc_wait_all 30 "$RC_SYNCED" || fail "vol0: replicas not all Connected within 30 s"
rc_promote_retry 2 10 || fail "promote vol0 on n2 refused"

# n1 away while n2 writes: n2 and n3 record it Outdated.
rc_stop 1
start_writer "$ACK1" --unix "${RC_NBD[2]}" --export vol0 --duration 2 \
	--inflight 8 --flush-every 32 --span $((8 << 20)) --stall-timeout 20
wait_writer || fail "writes through n2 failed"
for i in 2 3; do
	has_record "$i" n1 || rc_log_has "$i" "the group records n1 as Outdated" 10 ||
		fail "n$i does not record n1 Outdated"
done
end=$(($(date +%s) + 10))
until has_record 3 n1; do
	[ "$(date +%s)" -lt "$end" ] || fail "n3's state directory does not keep the record about n1"
	sleep 0.2
done

# n3 away; n1 back and in sync: the record goes everywhere but on n3.
rc_stop 3
rc_start 1
rc_wait 1 60 'v.get("disk") == "UpToDate" and p["n2"]["link"] == "Connected" and p["n2"]["out_of_sync_bytes"] == 0' ||
	fail "n1 not resynced from n2 within 60 s"
end=$(($(date +%s) + 10))
while has_record 1 n1 || has_record 2 n1; do
	[ "$(date +%s)" -lt "$end" ] || fail "n1 and n2 still record n1 Outdated after its resync"
	sleep 0.2
done
has_record 3 n1 || fail "n3's state directory lost the record while n3 was away"

# n1 takes over from n2.
out=$(rc_cli 2 demote vol0 2>&1) || fail "demote on n2 refused: $out"
rc_promote_retry 1 10 || fail "promote vol0 on n1 refused"

# n3 comes back with the stale record.
t_back=$(now_s)
rc_start 3
end=$(($(date +%s) + 20))
while has_record 3 n1; do
	if [ "$(date +%s)" -ge "$end" ]; then
		problem "n3 still records n1 Outdated 20 s after it came back, n1 Primary all along"
		break
	fi
	sleep 0.2
done
has_record 3 n1 || log "n3's stale record went $(rc_elapsed "$t_back") s after its daemon started"
rc_wait 1 5 'v["role"] == "Primary" and not v["io_frozen"]' ||
	problem "n1 is no longer a working Primary after n3 came back"
rc_wait_all 60 "$RC_SYNCED" || problem "not all three in sync 60 s after n3 came back"
start_writer "$ACK2" --unix "${RC_NBD[1]}" --export vol0 --duration 2 \
	--inflight 8 --flush-every 32 --base $((8 << 20)) --span $((8 << 20)) --stall-timeout 20
wait_writer || problem "writes through n1 failed"
rc_wait_all 30 "$RC_SYNCED" || problem "not all three in sync after n1's writes"
rc_check_backings vol0 1 "$ACK1" "$ACK2"
rc_finish
log "PASS ($(rc_elapsed "$t0") s)"
