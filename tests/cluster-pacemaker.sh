#!/bin/bash
# tests/cluster-pacemaker.sh: a real three-node Pacemaker cluster on the
# harness (tests/cluster.sh), with real fencing: corosync and pacemakerd on
# every node, a DC is elected, STONITH is enabled with the harness's fence
# agent (tests/fence_ns, seen as fence_ns in the nodes' /usr/sbin), an
# ocf:pacemaker:Dummy resource is started; the node running it crashes
# (SIGKILL of all its processes); the survivors fence it (fence_ns "reboot":
# everything of that node killed) and start the resource on another node.
# shellcheck source=SCRIPTDIR/cluster.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/cluster.sh" || exit 99

cluster_requires_pacemaker
[ -d /usr/lib/ocf/resource.d/pacemaker ] || skip "requires the ocf:pacemaker agents"

t0=$(date +%s)
since() { echo "$(($(date +%s) - $1)) s"; }

cluster_create 3
for i in 1 2 3; do
	cluster_start_corosync "$i"
done
for i in 1 2 3; do
	cluster_wait_members "$i" 3 20 && cluster_wait_quorate "$i" 5 ||
		fail "n$i: no quorate membership of 3 nodes within 20 s"
done
log "corosync: 3 members, quorate after $(since "$t0")"

t1=$(date +%s)
for i in 1 2 3; do
	cluster_start_pacemaker "$i"
done
cluster_wait_pcmk 1 3 60 || fail "Pacemaker: no DC with 3 nodes online within 60 s"
dc=$(cluster_pcmk_dc 1)
log "Pacemaker: 3 nodes online, DC $dc, $(since "$t1") after pacemakerd started"
for i in 2 3; do
	cluster_wait_pcmk "$i" 3 20 || fail "n$i does not see 3 nodes online and a DC"
	[ "$(cluster_pcmk_dc "$i")" = "$dc" ] || fail "n$i sees another DC than $dc"
done
cluster_exec 1 pcs status >"$TESTDIR/pcs-status-1.txt" 2>&1 ||
	fail "pcs status failed: $(cat "$TESTDIR/pcs-status-1.txt")"
grep -q "Current DC: $dc" "$TESTDIR/pcs-status-1.txt" ||
	fail "pcs status does not show the DC: $(cat "$TESTDIR/pcs-status-1.txt")"

# The fencer sees the agent (in the nodes' /usr/sbin only).
cluster_exec 2 stonith_admin --list-installed | grep -qx '[[:space:]]*fence_ns' ||
	fail "fence_ns is not among the fencer's agents on n2"
cmp -s "$CL_FENCE_AGENT" <(cluster_exec 3 cat /usr/sbin/fence_ns) ||
	fail "n3's /usr/sbin/fence_ns is not tests/fence_ns"

cluster_exec 1 pcs property set stonith-enabled=true || fail "pcs property set failed"
cluster_exec 1 pcs stonith create fence-ns fence_ns testdir="$TESTDIR" \
	pcmk_host_list="n1 n2 n3" op monitor interval=30s ||
	fail "pcs stonith create failed"
_started() {
	CL_LAST=$(cluster_pcmk_state "$1")
	grep -q "^rsc $2 Started n" <<<"$CL_LAST"
}
_cl_wait "fence-ns started" 30 _started 1 fence-ns || fail "the fence device did not start"
cluster_exec 1 pcs resource create dummy ocf:pacemaker:Dummy op monitor interval=5s ||
	fail "pcs resource create failed"
_cl_wait "dummy started" 30 _started 1 dummy || fail "dummy did not start"
victim=$(cluster_rsc_node 1 dummy)
v=${victim#n}
[[ $v =~ ^[123]$ ]] || fail "dummy runs on '$victim'"
# An observer among the survivors (the DC if it survives).
o=1
[ "$v" = 1 ] && o=2
log "fence-ns and dummy started; dummy on $victim (DC $dc); $(since "$t0") so far"

t1=$(date +%s)
cluster_kill_node "$v"
_fenced() {
	CL_LAST=$(cluster_pcmk_state "$o")
	# victim offline and clean (fenced), dummy started elsewhere
	grep -q "^offline.* $victim\\b" <<<"$CL_LAST" &&
		! grep -q "^unclean.* $victim\\b" <<<"$CL_LAST" &&
		grep -q "^dc " <<<"$CL_LAST" &&
		grep -q "^rsc dummy Started n" <<<"$CL_LAST" &&
		! grep -q "^rsc dummy Started $victim\\b" <<<"$CL_LAST"
}
_cl_wait "$victim fenced and dummy moved" 60 _fenced ||
	fail "$victim was not fenced / dummy not recovered within 60 s"
now=$(cluster_rsc_node "$o" dummy)
log "$victim fenced, dummy started on $now, $(since "$t1") after the crash"

cluster_exec "$o" stonith_admin --history "$victim" >"$TESTDIR/history.txt" 2>&1
grep -q -E "(reboot|off) of $victim successful" "$TESTDIR/history.txt" ||
	fail "no successful fencing of $victim in the history: $(cat "$TESTDIR/history.txt")"
log "fencing history: $(head -n 1 "$TESTDIR/history.txt")"
grep -q -E "(reboot|off) $victim \\(run on n[0-9]+\\)" "$TESTDIR/fence_ns.log" ||
	fail "fence_ns.log does not show the fencing of $victim"
cluster_node_alive "$v" && fail "$victim still has processes after being fenced"

# The fenced node "reboots" (a new mount namespace) and rejoins.
t1=$(date +%s)
cluster_start_corosync "$v"
cluster_start_pacemaker "$v"
cluster_wait_pcmk "$o" 3 45 || fail "$victim did not rejoin within 45 s"
log "$victim rejoined $(since "$t1") after its restart"

# A node cut off from the others, still running: the quorate side fences
# it, and this time fence_ns has live processes to kill.
# The nodes share one file system, so Dummy's state file is seen by the
# rejoined node's probe too: Pacemaker may find dummy active twice for a
# moment and recover it to one node.  Wait for that.
_dummy_on_one() { [[ $(cluster_rsc_node "$o" dummy) =~ ^n[123]$ ]]; }
_cl_wait "dummy active on one node" 60 _dummy_on_one ||
	fail "dummy runs on '$(cluster_rsc_node "$o" dummy)'"
victim=$(cluster_rsc_node "$o" dummy)
v=${victim#n}
o=1
[ "$v" = 1 ] && o=2
t1=$(date +%s)
cluster_partition "$v"
_cl_wait "$victim fenced and dummy moved" 60 _fenced ||
	fail "$victim (cut off) was not fenced / dummy not recovered within 60 s"
now=$(cluster_rsc_node "$o" dummy)
log "$victim cut off, fenced, dummy started on $now, $(since "$t1") after the cut"
cluster_node_alive "$v" && fail "$victim still has processes after being fenced"
# A line "T fence_ns[PID] reboot nV (run on nO)", then "T fence_ns[PID]
# SIGKILL to ..." of the same agent run.
awk -v n="$victim" '$3 ~ /^(reboot|off)$/ && $4 == n && $7 ~ /^n[0-9]+\)$/ { run[$2] = 1 }
	$3 == "SIGKILL" && ($2 in run) { k = 1 } END { exit !k }' "$TESTDIR/fence_ns.log" ||
	fail "fence_ns did not kill live processes of $victim: $(cat "$TESTDIR/fence_ns.log")"
cluster_heal "$v"
log "PASS ($(since "$t0"))"
