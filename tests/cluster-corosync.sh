#!/bin/bash
# tests/cluster-corosync.sh: the multi-node harness (tests/cluster.sh) with
# real corosync: three nodes, each in its own network and mount namespace,
# form a quorate membership; a node cut off loses quorum while the other two
# keep it; it rejoins when its link comes back; after a node crashes
# (SIGKILL of everything it runs) the remaining two stay quorate.
# shellcheck source=SCRIPTDIR/cluster.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/cluster.sh" || exit 99

cluster_requires_corosync

t0=$(date +%s)
elapsed() { echo "$(($(date +%s) - t0)) s"; }

cluster_create 3
for i in 1 2 3; do
	cluster_start_corosync "$i"
done
for i in 1 2 3; do
	cluster_wait_quorate "$i" 20 && cluster_wait_members "$i" 3 20 ||
		fail "n$i: no quorate membership of 3 nodes within 20 s"
done
log "3 nodes quorate with 3 members after $(elapsed)"

# Each node runs in its own namespaces.
[ "$(cluster_exec 1 hostname)" = n1 ] || fail "cluster_exec 1 does not run on n1"
[ "$(cluster_exec 2 cat /proc/self/net/dev | grep -c eth0)" = 1 ] ||
	fail "no eth0 on n2"
cluster_exec 3 ip -o addr show dev eth0 | grep -q -F " ${CL_IP[3]}/24" ||
	fail "n3 does not have ${CL_IP[3]}"
cluster_exec 1 ip route | grep -q '^default' && fail "n1 has a default route"
cluster_exec 1 ls /run | grep -q '^corosync' ||
	[ "$(cluster_exec 1 stat -c %i /run)" = "$(stat -c %i "${CL_DIR[1]}/run")" ] ||
	fail "n1's /run is not its own directory"

t1=$(date +%s)
cluster_partition 1
cluster_wait_inquorate 1 20 || fail "n1 still quorate 20 s after being cut off"
for i in 2 3; do
	cluster_wait_members "$i" 2 20 && cluster_wait_quorate "$i" 5 ||
		fail "n$i: not quorate with 2 members after n1 was cut off"
done
log "partition: n1 inquorate, n2 and n3 quorate with 2 members after $(($(date +%s) - t1)) s"

t1=$(date +%s)
cluster_heal 1
for i in 1 2 3; do
	cluster_wait_members "$i" 3 30 && cluster_wait_quorate "$i" 5 ||
		fail "n$i: not back to 3 members after the link came back"
done
log "healed: 3 members again after $(($(date +%s) - t1)) s"

t1=$(date +%s)
cluster_kill_node 3
cluster_node_alive 3 && fail "n3 still has processes after cluster_kill_node"
[ "$(bash "$CL_FENCE_AGENT" --action=status --plug=n3 --testdir="$TESTDIR")" = "Status: OFF" ] ||
	fail "fence_ns status does not report n3 off"
for i in 1 2; do
	cluster_wait_members "$i" 2 20 && cluster_wait_quorate "$i" 5 ||
		fail "n$i: not quorate with 2 members after n3 crashed"
done
log "n3 crashed: n1 and n2 quorate with 2 members after $(($(date +%s) - t1)) s"
log "PASS ($(elapsed))"
