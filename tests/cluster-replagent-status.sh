#!/bin/bash
# tests/cluster-replagent-status.sh: the cluster view of "replagent status"
# and the cluster events of "replagent events", with real corosync on three
# nodes (tests/cluster.sh) and replagentd in cluster mode.  Every node shows
# itself (name, nodeid), quorum, the state exchange done and the three
# nodes as members, in --json and as text, exit 0.  n1 cut off: n1 is not
# quorate (exit 2, critical) and its event streams (--json and text) report
# the quorum loss; n2 and n3 show n1 gone (exit 1, degraded).  Healed: all
# quorate again, exit 0, and n1's stream reports quorum back.  n3 killed
# (corosync and replagentd, kill -9): n1 and n2 show n3 gone (exit 1) and
# stay quorate; n1's stream reports n3 leaving.  Skipped (77) without root,
# network namespaces or corosync.
# shellcheck source=SCRIPTDIR/cluster-replagent-lib.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/cluster-replagent-lib.sh" || exit 99

rc_requires
t0=$(now_s)

# members I: EXPR for rc_wait: node I's view lists exactly the nodes given
# (by name) as members, and the others as gone.
members() {
	local m=() n
	for n in "$@"; do m+=("\"$n\""); done
	echo "sorted(x[\"name\"] for x in s[\"cluster\"][\"nodes\"] if x[\"member\"]) == [$(IFS=,; echo "${m[*]}")]"
}

# status_exit I: node I's "status" exit code (the text on TESTDIR/status.I).
status_exit() {
	rc_cli "$1" status >"$TESTDIR/status.$1" 2>&1
	echo $?
}

ev_wait() {
	events_match "$1" "$2" "$3" ||
		problem "$(basename "$1"): no event with $3 within $2 s; last: $(tail -n 3 "$1")"
}

rc_setup 3
for i in 1 2 3; do
	rc_wait "$i" 20 "s[\"cluster\"][\"quorate\"] and s[\"cluster\"][\"synced\"] and $(members n1 n2 n3)" ||
		fail "n$i does not show a quorate cluster of n1, n2, n3"
done
log "3 nodes quorate, state exchanged, seen by each after $(rc_elapsed "$t0") s"
"$PYTHON" - "${CL_IP[1]}" <<PY || fail "n1's cluster object: $(rc_status 1)"
import json, subprocess, sys
s = json.loads(subprocess.run(["$REPLAGENT", "-s", "${RC_CTL[1]}", "status", "--json"],
                              capture_output=True, timeout=15).stdout)
c = s["cluster"]
assert c["mode"] == "corosync" and c["node"] == "n1" and c["nodeid"] == 1, c
assert c["connected"] is True, c
n = {x["name"]: x for x in c["nodes"]}
assert [x["nodeid"] for x in c["nodes"]] == [1, 2, 3], c
assert n["n1"]["address"] == sys.argv[1], n
PY
for i in 1 2 3; do
	st=$(status_exit "$i")
	[ "$st" = 0 ] || fail "status on n$i: exit $st with a healthy cluster: $(cat "$TESTDIR/status.$i")"
done
grep -q -x "cluster: quorate; nodes n1 (member) n2 (member) n3 (member)" "$TESTDIR/status.2" ||
	fail "n2's status text: $(cat "$TESTDIR/status.2")"

# Not rc_cli: a stream has no time limit.
"$REPLAGENT" -s "${RC_CTL[1]}" events --json >"$TESTDIR/ev1.json" 2>"$TESTDIR/ev1.err" &
EV1=$!
track_pid "$EV1"
"$REPLAGENT" -s "${RC_CTL[1]}" events >"$TESTDIR/ev1.txt" 2>"$TESTDIR/ev1.txt.err" &
EV1T=$!
track_pid "$EV1T"
sleep 1
grep -q '"kind":"snapshot"' "$TESTDIR/ev1.json" || fail "no snapshot from n1: $(cat "$TESTDIR/ev1.err")"

# ---- n1 cut off ----------------------------------------------------------------------
t1=$(now_s)
cluster_partition 1
rc_wait 1 20 'not s["cluster"]["quorate"]' || fail "n1 still quorate 20 s after the cut"
log "n1 not quorate $(rc_elapsed "$t1") s after the cut"
st=$(status_exit 1)
[ "$st" = 2 ] || problem "status on n1 without quorum: exit $st, expected 2 (critical): $(cat "$TESTDIR/status.1")"
grep -q "NOT quorate" "$TESTDIR/status.1" || problem "n1's status text: $(cat "$TESTDIR/status.1")"
grep -q "CRITICAL: cluster: partition not quorate" "$TESTDIR/status.1" ||
	problem "n1's status does not name the quorum: $(cat "$TESTDIR/status.1")"
ev_wait "$TESTDIR/ev1.json" 10 'e["kind"] == "cluster" and ("quorate", None, True, False) in c and e["state"]["quorate"] is False'
for i in 2 3; do
	rc_wait "$i" 20 "s[\"cluster\"][\"quorate\"] and $(members n2 n3)" ||
		problem "n$i does not show n1 gone"
	st=$(status_exit "$i")
	[ "$st" = 1 ] || problem "status on n$i with n1 gone: exit $st, expected 1 (degraded)"
	grep -q "n1 (gone)" "$TESTDIR/status.$i" || problem "n$i's status text: $(cat "$TESTDIR/status.$i")"
done
sleep 0.5
grep -q "cluster quorum lost" "$TESTDIR/ev1.txt" || problem "n1's text stream: $(cat "$TESTDIR/ev1.txt")"

# ---- healed -----------------------------------------------------------------------------
t1=$(now_s)
cluster_heal 1
for i in 1 2 3; do
	rc_wait "$i" 40 "s[\"cluster\"][\"quorate\"] and s[\"cluster\"][\"synced\"] and $(members n1 n2 n3)" ||
		fail "n$i: not all three members and quorate 40 s after the heal"
done
log "healed: all quorate again $(rc_elapsed "$t1") s later"
for i in 1 2 3; do
	st=$(status_exit "$i")
	[ "$st" = 0 ] || problem "status on n$i after the heal: exit $st: $(cat "$TESTDIR/status.$i")"
done
ev_wait "$TESTDIR/ev1.json" 10 '("quorate", None, False, True) in c'

# ---- n3 killed ----------------------------------------------------------------------------
cluster_kill_node 3
for i in 1 2; do
	rc_wait "$i" 20 "s[\"cluster\"][\"quorate\"] and $(members n1 n2)" ||
		problem "n$i does not show n3 gone after its kill"
	st=$(status_exit "$i")
	[ "$st" = 1 ] || problem "status on n$i with n3 gone: exit $st, expected 1 (degraded)"
	grep -q "DEGRADED: cluster: node n3 gone" "$TESTDIR/status.$i" ||
		problem "n$i's status does not name n3: $(cat "$TESTDIR/status.$i")"
done
ev_wait "$TESTDIR/ev1.json" 10 '("member", "n3", True, False) in c'
sleep 0.5
grep -q "cluster node n3 left" "$TESTDIR/ev1.txt" || problem "n1's text stream: $(cat "$TESTDIR/ev1.txt")"

for p in "$EV1" "$EV1T"; do
	_alive "$p" || problem "an events command on n1 ended early"
	kill -TERM "$p"
	wait "$p"
	st=$?
	untrack_pid "$p"
	[ "$st" = 0 ] || problem "events on n1: exit $st after SIGTERM, expected 0"
done
log "n1's text stream: $(grep -c . "$TESTDIR/ev1.txt") lines"
grep -v '^.\{23\} vol' "$TESTDIR/ev1.txt" | head -n 20
for i in 1 2; do
	rc_stop "$i"
done
rc_finish
log "PASS ($(rc_elapsed "$t0") s)"
