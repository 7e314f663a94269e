#!/bin/bash
# tests/cluster-replagent-many.sh: 50 volumes on a 3-node cluster
# (tests/cluster.sh, corosync, replagentd in cluster mode), behaviour only
# (bench/scale-bench.sh has the timings).  50 volumes of 16 MiB made with
# "replagent volume create" on n1, every other one with 3 replicas, the
# others with 2 (the pairs n1-n2, n2-n3, n3-n1 in turn): every node lists
# all 50, and every replica is Connected and UpToDate everywhere.  Each
# volume is promoted on its first node (a third of them on n1).  n1
# crashes (corosync and replagentd SIGKILLed): each of its Primaries is
# promoted on a survivor that has a replica, and works there (status
# Primary, UpToDate, a write through NBD).  n1 comes back: nothing is left
# degraded (every replica of every volume Connected, UpToDate, nothing out
# of sync; "replagent status" exits 0 on every node) and n1 is Primary of
# none.  An idle daemon runs at most 2 threads per replica (+16).
# Skipped (77) without root, network namespaces or corosync.
# shellcheck source=SCRIPTDIR/cluster-replagent-lib.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/cluster-replagent-lib.sh" || exit 99

rc_requires
requires qemu-io
NVOL=${NVOL:-50}
t0=$(now_s)

rc_setup 3
many_create "$NVOL" 16M
log "$NVOL volumes created in $(rc_elapsed "$t0") s"
for i in 1 2 3; do
	n=$(rc_cli "$i" volume list --json | "$PYTHON" -c 'import json,sys; print(len(json.load(sys.stdin)["volumes"]))')
	[ "$n" = "$NVOL" ] || fail "n$i lists $n volumes, not $NVOL"
done
many_wait_synced "$NVOL" 120 1 2 3 || fail "not every replica Connected and UpToDate within 120 s"
log "all replicas UpToDate after $(rc_elapsed "$t0") s"
# Idle volumes cost no thread pool each (io-threads is a ceiling, reached
# under load only): at most 2 threads per replica, and a few for the daemon.
for i in 1 2 3; do
	log "n$i: replagentd $(awk '/^VmRSS|^Threads/ {printf "%s %s %s ", $1, $2, $3}' "/proc/${RC_PID[i]}/status")"
	thr=$(awk '/^Threads/ {print $2}' "/proc/${RC_PID[i]}/status")
	[ "$thr" -le $((2 * $(many_held "$NVOL" "$i") + 16)) ] ||
		fail "n$i: replagentd runs $thr threads for $(many_held "$NVOL" "$i") idle replicas"
done

declare -a on_n1=()
for ((k = 0; k < NVOL; k++)); do
	p=$(many_nodes_of "$k")
	p=${p%%,*}
	rc_promote_retry "${p#n}" 10 "v$k" >/dev/null || fail "promote v$k on $p refused"
	[ "$p" = n1 ] && on_n1+=("$k")
done
log "every volume Primary on its first node, ${#on_n1[@]} on n1"

# ---- n1 crashes ---------------------------------------------------------------
t_kill=$(now_s)
cluster_kill_node 1
for i in 2 3; do
	cluster_wait_members "$i" 2 30 || fail "n$i: n1 still a member 30 s after the crash"
done
# Each survivor promotes those of n1's Primaries it fails over (their second
# node) with one "replagent promote VOL..." for all of them.
declare -a to_n2=() to_n3=()
for k in "${on_n1[@]}"; do
	case $(many_nodes_of "$k" | cut -d, -f2) in
	n2) to_n2+=("v$k") ;;
	n3) to_n3+=("v$k") ;;
	esac
done
many_promote 2 30 "${to_n2[@]}" || fail "n1's Primaries could not be promoted on n2: $RC_PROMOTE_OUT"
many_promote 3 30 "${to_n3[@]}" || fail "n1's Primaries could not be promoted on n3: $RC_PROMOTE_OUT"
log "n1's ${#on_n1[@]} Primaries promoted on n2/n3 $(rc_elapsed "$t_kill") s after the crash"
for k in "${on_n1[@]}"; do
	p=$(many_nodes_of "$k" | cut -d, -f2)
	rc_wait "${p#n}" 5 'v["role"] == "Primary" and v["disk"] == "UpToDate" and not v["io_frozen"]' "v$k" ||
		fail "v$k is not a working Primary on $p"
	qemu-io -f raw -c "write -P 0x5c 0 64k" -c flush "$(rc_uri "${p#n}" "v$k")" >/dev/null ||
		fail "a write to v$k through $p failed"
done

# ---- n1 returns ----------------------------------------------------------------
t_back=$(now_s)
rc_start_node 1
many_wait_synced "$NVOL" 180 1 2 3 || fail "something left degraded 180 s after n1 returned"
log "nothing degraded $(rc_elapsed "$t_back") s after n1 returned"
[ "$(rc_value 1 'sum(1 for x in s["volumes"] if x["role"] == "Primary")')" = 0 ] ||
	fail "n1 is Primary of some volume after it returned"
for i in 1 2 3; do
	st=0
	rc_cli "$i" status >/dev/null || st=$?
	[ "$st" = 0 ] || fail "replagent status on n$i exits $st, not 0 (healthy)"
done
for k in "${on_n1[@]}"; do
	qemu-io -f raw -c "read -P 0x5c 0 64k" "$(rc_uri "$(many_nodes_of "$k" | cut -d, -f2 | tr -d n)" "v$k")" >/dev/null ||
		fail "v$k lost the write made after the failover"
done
rc_finish
log "PASS ($(rc_elapsed "$t0") s)"
