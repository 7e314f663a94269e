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

# nodes_of K: the replica nodes of volume K (its first is its Primary).
nodes_of() {
	local k=$1 a b c
	a=$((k % 3 + 1)) b=$(((k + 1) % 3 + 1)) c=$(((k + 2) % 3 + 1))
	if [ $((k % 2)) = 0 ]; then
		echo "n$a,n$b,n$c"
	else
		echo "n$a,n$b"
	fi
}

# Over node I's whole status: it has all its replicas, and which of them
# are not fully in sync (every peer Connected, UpToDate, nothing out of
# sync, its own disk UpToDate).
ALL_SYNCED='len(vols) == int(sys.argv[3]) and all(x.get("disk") == "UpToDate" and all(q["link"] == "Connected" and q["out_of_sync_bytes"] == 0 and q["peer_disk"] == "UpToDate" for q in x.get("peers", [])) for x in s["volumes"])'
NOT_SYNCED='[x["name"] for x in s["volumes"] if not (x.get("disk") == "UpToDate" and all(q["link"] == "Connected" and q["out_of_sync_bytes"] == 0 and q["peer_disk"] == "UpToDate" for q in x.get("peers", [])))][:10]'

# held N: how many of the volumes have a replica on node nN.
held() {
	local k n=0
	for ((k = 0; k < NVOL; k++)); do
		case ,$(nodes_of "$k"), in *,n$1,*) n=$((n + 1)) ;; esac
	done
	echo "$n"
}

# wait_all_synced T: every node has all its replicas, all in sync.  (The
# number of replicas goes where rc_wait takes a volume name: sys.argv[3].)
wait_all_synced() {
	local i
	for i in 1 2 3; do
		rc_wait "$i" "$1" "$ALL_SYNCED" "$(held "$i")" >/dev/null 2>&1 || {
			echo "n$i: not in sync: $(rc_value "$i" "$NOT_SYNCED") ($(rc_value "$i" 'len(vols)') volumes)" >&2
			return 1
		}
	done
}

rc_setup 3
for ((k = 0; k < NVOL; k++)); do
	rc_cli 1 volume create "v$k" --size 16M --nodes "$(nodes_of "$k")" >/dev/null ||
		fail "volume create v$k failed"
done
log "$NVOL volumes created in $(rc_elapsed "$t0") s"
for i in 1 2 3; do
	n=$(rc_cli "$i" volume list --json | "$PYTHON" -c 'import json,sys; print(len(json.load(sys.stdin)["volumes"]))')
	[ "$n" = "$NVOL" ] || fail "n$i lists $n volumes, not $NVOL"
done
wait_all_synced 120 || fail "not every replica Connected and UpToDate within 120 s"
log "all replicas UpToDate after $(rc_elapsed "$t0") s"
# Idle volumes cost no thread pool each (io-threads is a ceiling, reached
# under load only): at most 2 threads per replica, and a few for the daemon.
for i in 1 2 3; do
	log "n$i: replagentd $(awk '/^VmRSS|^Threads/ {printf "%s %s %s ", $1, $2, $3}' "/proc/${RC_PID[i]}/status")"
	thr=$(awk '/^Threads/ {print $2}' "/proc/${RC_PID[i]}/status")
	[ "$thr" -le $((2 * $(held "$i") + 16)) ] ||
		fail "n$i: replagentd runs $thr threads for $(held "$i") idle replicas"
done

declare -a on_n1=()
for ((k = 0; k < NVOL; k++)); do
	p=$(nodes_of "$k")
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
for k in "${on_n1[@]}"; do
	# The survivor with a replica: its second node.
	p=$(nodes_of "$k" | cut -d, -f2)
	rc_promote_retry "${p#n}" 30 "v$k" >/dev/null ||
		fail "v$k (Primary on n1) could not be promoted on $p: $RC_PROMOTE_OUT"
done
log "n1's ${#on_n1[@]} Primaries promoted on n2/n3 $(rc_elapsed "$t_kill") s after the crash"
for k in "${on_n1[@]}"; do
	p=$(nodes_of "$k" | cut -d, -f2)
	rc_wait "${p#n}" 5 'v["role"] == "Primary" and v["disk"] == "UpToDate" and not v["io_frozen"]' "v$k" ||
		fail "v$k is not a working Primary on $p"
	qemu-io -f raw -c "write -P 0x5c 0 64k" -c flush "$(rc_uri "${p#n}" "v$k")" >/dev/null ||
		fail "a write to v$k through $p failed"
done

# ---- n1 returns ----------------------------------------------------------------
t_back=$(now_s)
rc_start_node 1
wait_all_synced 180 || fail "something left degraded 180 s after n1 returned"
log "nothing degraded $(rc_elapsed "$t_back") s after n1 returned"
[ "$(rc_value 1 'sum(1 for x in s["volumes"] if x["role"] == "Primary")')" = 0 ] ||
	fail "n1 is Primary of some volume after it returned"
for i in 1 2 3; do
	st=0
	rc_cli "$i" status >/dev/null || st=$?
	[ "$st" = 0 ] || fail "replagent status on n$i exits $st, not 0 (healthy)"
done
for k in "${on_n1[@]}"; do
	qemu-io -f raw -c "read -P 0x5c 0 64k" "$(rc_uri "$(nodes_of "$k" | cut -d, -f2 | tr -d n)" "v$k")" >/dev/null ||
		fail "v$k lost the write made after the failover"
done
rc_finish
log "PASS ($(rc_elapsed "$t0") s)"
