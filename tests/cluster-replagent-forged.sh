#!/bin/bash
# tests/cluster-replagent-forged.sh: messages in the "replagent" CPG group
# that lie about their sender, or are of another protocol version, with
# real corosync on four nodes (tests/cluster.sh) and replagentd on n1..n3;
# n4 runs tests/cpg-forge, which joins the group as a buggy or hostile
# member would.  An ANNOUNCE from n4 that says it is n1 (nodeid 1, or its
# own nodeid with n1's name) is dropped with a log line: n1's replication
# address stays.  A ROLE from n4 that says n1 is Primary is dropped: nobody
# records n1 as Primary.  A volume defined by n4 on vol0's port (as if
# created at the same moment) is refused on n1 and n2, and their status
# says so (critical) while n4 is in the group, then n1 moves it to a free
# port; one defined as n1's is moved by n1 at once, and one whose name
# sorts first takes the port of a volume already served, which moves.  A
# message of protocol version 2 is logged once (not per message) and every
# node says in status that the cluster is mixed (--json "mixed",
# other_protocols; text "MIXED"; exit 1, degraded); a promotion is refused
# while it lasts; when n4's sender leaves, all is healthy again and the
# promotion goes.  Skipped (77) without root, network namespaces or
# corosync.
# shellcheck source=SCRIPTDIR/cluster-replagent-lib.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/cluster-replagent-lib.sh" || exit 99

rc_requires
FORGE=$top_builddir/tests/cpg-forge
[ -x "$FORGE" ] || hard_error "$FORGE not found: build it first (make check builds it)"

# forge_bg NAME ARGS...: cpg-forge on n4, staying in the group until
# "release NAME"; waits until its message was delivered.
forge_bg() {
	local name=$1 k
	shift
	cluster_exec 4 "$FORGE" -d 3000 -w "$TESTDIR/release.$name" "$@" >"$TESTDIR/forge.$name" 2>&1 &
	FORGE_PID[$name]=$!
	track_pid "${FORGE_PID[$name]}"
	for ((k = 0; k < 200; k++)); do
		grep -q "delivered to the group" "$TESTDIR/forge.$name" && return 0
		_alive "${FORGE_PID[$name]}" || break
		sleep 0.1
	done
	fail "cpg-forge $*: $(cat "$TESTDIR/forge.$name")"
}
declare -A FORGE_PID=()

# release NAME: that cpg-forge leaves the group.
release() {
	: >"$TESTDIR/release.$1"
	wait "${FORGE_PID[$1]}" 2>/dev/null
	untrack_pid "${FORGE_PID[$1]}"
}

# log_wait I T REGEX: node I's log has a line matching REGEX within T s.
log_wait() {
	local k
	for ((k = 0; k < $2 * 10; k++)); do
		grep -q -E "$3" "$(rc_log "$1")" && return 0
		sleep 0.1
	done
	return 1
}

# port_of I VOLUME: the replication port of VOLUME in node I's volume list.
port_of() {
	rc_cli "$1" volume list --json | "$PYTHON" -c '
import json, sys
print([v["port"] for v in json.load(sys.stdin)["volumes"] if v["name"] == sys.argv[1]][0])' "$2"
}

# primary_of I: the Primary node I's "volume list" records for vol0.
primary_of() {
	rc_cli "$1" volume list --json | "$PYTHON" -c '
import json, sys
print([v["primary"] for v in json.load(sys.stdin)["volumes"] if v["name"] == "vol0"][0])'
}

rc_setup 4 3
rc_cli 1 volume create vol0 --size 16M --nodes n1,n2 || fail "volume create vol0 failed"
rc_wait_all 60 "$RC_SYNCED" vol0 1 2 || fail "vol0 not in sync on n1 and n2"
rc_wait_all 30 's["cluster"]["synced"]' vol0 1 2 3 || fail "no state exchange"
log "3 daemons, vol0 on n1 and n2 in sync"

# ---- an ANNOUNCE that is not its sender's -------------------------------------------
forge_bg ann1 announce 1 n1 10.99.99.1
forge_bg ann2 announce 4 n1 10.99.99.2
for i in 1 2 3; do
	log_wait "$i" 10 "node 4 .*sent a ANNOUNCE that is not its own" ||
		problem "n$i did not log the forged ANNOUNCE as dropped"
	grep -q "replicates at 10.99.99" "$(rc_log "$i")" &&
		problem "n$i took a forged address: $(grep "replicates at 10.99.99" "$(rc_log "$i")")"
	addr=$(rc_value "$i" '[x["address"] for x in s["cluster"]["nodes"] if x["name"] == "n1"]')
	[ "$addr" = "['${CL_IP[1]}']" ] || problem "n$i has n1 at $addr, not ${CL_IP[1]}"
done
release ann1
release ann2
log "forged ANNOUNCEs dropped"

# ---- a ROLE that is not its sender's ------------------------------------------------
forge_bg role role vol0 n1 primary
for i in 1 2 3; do
	log_wait "$i" 10 "node 4 .*sent a ROLE that is not its own" ||
		problem "n$i did not log the forged ROLE as dropped"
	p=$(primary_of "$i")
	[ -z "$p" ] || problem "n$i records $p as Primary of vol0 after a forged ROLE"
done
release role
log "forged ROLE dropped"

# ---- a volume on a port another volume has ------------------------------------------
# As if n4 created zz0 at the moment n1 created vol0 (both nodes pick the
# lowest free port): every node refuses the one whose name sorts later,
# and its nodes' status says so (critical, with the reason) while n4, the
# node to move it, is in the group; when n4's sender leaves, n1 (the
# member with the lowest nodeid) moves it to a free port.
port=$(port_of 1 vol0)
forge_bg port voldef zz0 "$port" n1,n2
for i in 1 2; do
	rc_wait "$i" 10 'v.get("failed") is True and "port" in v.get("reason", "")' zz0 ||
		problem "n$i's status does not say zz0 failed for its port: $(rc_cli "$i" status --json)"
	st=0
	rc_cli "$i" status >"$TESTDIR/status.$i" 2>&1 || st=$?
	[ "$st" = 2 ] && grep -q "^CRITICAL: zz0: failed" "$TESTDIR/status.$i" ||
		problem "status on n$i with zz0 refused: exit $st: $(cat "$TESTDIR/status.$i")"
done
cat "$TESTDIR/status.1"
release port
rc_wait_all 30 "$RC_SYNCED" zz0 1 2 ||
	problem "zz0 not moved and served once its maker left: $(rc_status 1)"
q=$(port_of 1 zz0)
[ "$q" != "$port" ] || problem "zz0 still on vol0's port $port"
grep -q "volume zz0: port $port is volume vol0's .*sent version 2 on port $q" "$(rc_log 1)" ||
	problem "n1 did not log moving zz0"
rc_cli 1 volume delete zz0 || problem "volume delete zz0 failed"
for i in 1 2; do
	rc_wait "$i" 10 '"zz0" not in vols' zz0 || problem "n$i still lists zz0 after its deletion"
done
rc_wait_all 30 "$RC_SYNCED" vol0 1 2 || problem "vol0 not in sync after zz0"
log "a volume on vol0's port ($port): refused and shown failed on n1 and n2, moved to $q" \
	"by n1 when its maker left, deleted"

# ---- ... which the node that made it moves ------------------------------------------
# As if n1 (origin 1) had made zy0 at the moment vol0 was made: n1 sends it
# again on a free port, where n1 and n2 serve it.  Then zy1, made on n1 and
# in sync, meets aa0 on its port, as if made at the same moment on n4 but
# delivered after it: aa0 sorts first, so it gets the port everywhere, and
# zy1 is taken off it on n1 and n2 and moved by n1, which made it.  All
# end in sync, nothing failed.  A volume refused on a port is served once
# the port's owner is deleted.
forge_bg mv1 voldef zy0 "$port" n1,n2 1
release mv1
rc_wait_all 30 "$RC_SYNCED" zy0 1 2 ||
	problem "zy0, made by n1 on vol0's port, is not moved and in sync on n1 and n2: $(rc_status 1)"
p0=$(port_of 1 zy0)
[ "$p0" != "$port" ] && [ "$(port_of 2 zy0)" = "$p0" ] ||
	problem "zy0 is on port $p0 on n1 and $(port_of 2 zy0) on n2 (vol0's is $port)"
grep -q "volume zy0: port $port is volume vol0's .*sent version 2 on port $p0" "$(rc_log 1)" ||
	problem "n1 did not log moving zy0 off vol0's port"
rc_cli 1 volume create zy1 --size 16M --nodes n1,n2 || problem "volume create zy1 failed"
rc_wait_all 30 "$RC_SYNCED" zy1 1 2 || problem "zy1 not in sync on n1 and n2"
p1=$(port_of 1 zy1)
forge_bg mv2 voldef aa0 "$p1" n1,n2
release mv2
rc_wait_all 30 "$RC_SYNCED" aa0 1 2 || problem "aa0 not attached and in sync on n1 and n2: $(rc_status 1)"
rc_wait_all 30 "$RC_SYNCED" zy1 1 2 || problem "zy1 not moved and in sync: $(rc_status 1)"
p2=$(port_of 1 zy1)
[ "$(port_of 1 aa0)" = "$p1" ] && [ "$p2" != "$p1" ] && [ "$(port_of 2 zy1)" = "$p2" ] ||
	problem "ports: aa0 $(port_of 1 aa0), zy1 $p2 on n1 and $(port_of 2 zy1) on n2 (was $p1)"
rc_wait_all 30 "$RC_SYNCED" vol0 1 2 || problem "vol0 not in sync after the moves"
for i in 1 2; do
	st=0
	rc_cli "$i" status >"$TESTDIR/status.$i" 2>&1 || st=$?
	[ "$st" = 0 ] || problem "status on n$i after the moves: exit $st: $(cat "$TESTDIR/status.$i")"
done
# zz9 on aa0's port, made by n4 (which, in the group, is the one to move
# it, and does not): refused until aa0 is deleted, then served on that port.
forge_bg mv3 voldef zz9 "$p1" n1,n2
rc_wait 1 10 'v.get("failed") is True' zz9 || problem "zz9 on aa0's port not refused on n1"
for v in zy0 zy1 aa0; do
	rc_cli 1 volume delete "$v" || problem "volume delete $v failed"
	for i in 1 2; do
		rc_wait "$i" 10 "\"$v\" not in vols" "$v" || problem "n$i still lists $v after its deletion"
	done
done
rc_wait_all 30 "$RC_SYNCED" zz9 1 2 ||
	problem "zz9 not served on n1 and n2 once aa0 freed its port: $(rc_status 1)"
[ "$(port_of 1 zz9)" = "$p1" ] || problem "zz9 on port $(port_of 1 zz9), not aa0's $p1"
release mv3
rc_cli 1 volume delete zz9 || problem "volume delete zz9 failed"
log "zy0 on vol0's port moved by n1 to $p0; aa0 on zy1's port $p1 moved zy1 to $p2;" \
	"zz9 refused on $p1 until aa0 was deleted; all in sync"

# ---- another protocol version -------------------------------------------------------
rc_wait_all 30 's["cluster"]["synced"]' vol0 1 2 3 || fail "no state exchange after the forgeries"
forge_bg v2a version 2
forge_bg v2b version 2
for i in 1 2 3; do
	rc_wait "$i" 20 's["cluster"].get("mixed") is True and s["cluster"]["other_protocols"] == [{"nodeid": 4, "protocol": 2}] and s["cluster"]["synced"]' ||
		problem "n$i does not say the cluster is mixed"
	rc_cli "$i" status >"$TESTDIR/status.$i" 2>&1
	st=$?
	[ "$st" = 1 ] || problem "status on n$i in a mixed cluster: exit $st, expected 1: $(cat "$TESTDIR/status.$i")"
	grep -q "MIXED protocol versions" "$TESTDIR/status.$i" &&
		grep -q "^DEGRADED: cluster: mixed protocol versions" "$TESTDIR/status.$i" ||
		problem "n$i's status text: $(cat "$TESTDIR/status.$i")"
	n=$(grep -c "speaks cluster protocol version 2" "$(rc_log "$i")")
	[ "$n" = 1 ] || problem "n$i logged the other version $n times, expected once"
done
cat "$TESTDIR/status.1"
out=$(rc_cli 2 promote vol0 2>&1) && problem "promote on n2 accepted in a mixed cluster"
grep -q "protocol version 2" <<<"$out" || problem "promote on n2 refused without the reason: $out"
log "mixed: $out"
release v2a
release v2b
for i in 1 2 3; do
	rc_wait "$i" 20 's["cluster"].get("mixed") is False and s["cluster"]["synced"]' ||
		problem "n$i still mixed after the other version left"
done
rc_wait_all 30 "$RC_SYNCED" vol0 1 2 || problem "vol0 not in sync after the forgeries"
st=0
rc_cli 3 status >"$TESTDIR/status.3" 2>&1 || st=$?
[ "$st" = 0 ] || problem "status on n3 after the other version left: exit $st: $(cat "$TESTDIR/status.3")"
rc_promote_retry 2 20 vol0 || problem "promote on n2 refused once the other version left"
rc_cli 2 demote vol0 >/dev/null 2>&1 || problem "demote on n2 failed"
rc_finish
log "OK"
