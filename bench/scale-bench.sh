#!/bin/bash
# bench/scale-bench.sh: many volumes on the netns 3-node cluster
# (tests/cluster.sh: corosync and replagentd in cluster mode on n1..n3).
# Creates NVOL volumes (default 200) of SIZE (64M) with "replagent volume
# create" on n1, every other one on all three nodes, the others on two
# (n1-n2, n2-n3, n3-n1 in turn), and prints, next to the goals of issue 16:
#   - time to create them all, and until all are UpToDate everywhere
#   - replagentd RSS and threads per node, RSS per volume (the growth
#     from the empty daemon, divided by the replicas the node holds),
#     and the bitmap share of it (one bit per 4 KiB region... as the
#     metadata reports: size / region / 8)
#   - idle CPU per node over IDLE_S (60) seconds (replagentd and corosync)
#   - "replagent status" and "status --json" latency on n1 (median and
#     worst of 10, all volumes)
#   - failover of n1's Primaries: every volume is Primary on its first
#     node; n1 is killed (corosync and replagentd, SIGKILL); time until
#     corosync on n2 drops n1, and until each of n1's Primaries is promoted
#     on its second node (one "promote" per volume, in turn, as Pacemaker
#     would issue them)
#   - reconnection after n1 restarts: time until every replica of every
#     volume is Connected and UpToDate again on every node.
# Run by hand, as root, with nice:  nice bench/scale-bench.sh  (about
# 10 minutes for 200 volumes on 2 cores).  NVOL, SIZE, IDLE_S tune it.
# shellcheck source=tests/cluster-replagent-lib.sh
. "$(dirname "$0")/../tests/cluster-replagent-lib.sh" || exit 99

rc_requires
NVOL=${NVOL:-200}
SIZE=${SIZE:-64M}
IDLE_S=${IDLE_S:-60}
CLK_TCK=$(getconf CLK_TCK)

nodes_of() {
	local k=$1 a b c
	a=$((k % 3 + 1)) b=$(((k + 1) % 3 + 1)) c=$(((k + 2) % 3 + 1))
	if [ $((k % 2)) = 0 ]; then echo "n$a,n$b,n$c"; else echo "n$a,n$b"; fi
}
ALL_SYNCED='len(vols) == int(sys.argv[3]) and all(x.get("disk") == "UpToDate" and all(q["link"] == "Connected" and q["out_of_sync_bytes"] == 0 and q["peer_disk"] == "UpToDate" for q in x.get("peers", [])) for x in s["volumes"])'
held() {
	local k n=0
	for ((k = 0; k < NVOL; k++)); do
		case ,$(nodes_of "$k"), in *,n$1,*) n=$((n + 1)) ;; esac
	done
	echo "$n"
}
# wait_synced T I...: each node I has all its replicas, all in sync (the
# count goes where rc_wait takes a volume name: sys.argv[3]).
wait_synced() {
	local t=$1 i
	shift
	for i in "$@"; do
		rc_wait "$i" "$t" "$ALL_SYNCED" "$(held "$i")" >/dev/null 2>&1 || return 1
	done
}
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
threads() { awk '/^Threads/ {print $2}' "/proc/$1/status"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# pid_of_daemon I NAME: the PID of a process cluster_start_daemon started.
pid_of_daemon() { awk -v n="$2" '$3 == n {print $1}' "${CL_DIR[$1]}/pids" | tail -n 1; }
# lat CMD...: wall-clock ms of 10 runs: "median worst".
lat() {
	local i t0
	for i in $(seq 10); do
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1
		echo $((($(date +%s%N) - t0) / 1000000))
	done | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)], a[NR]}'
}
row() { printf '%-44s %14s   %s\n' "$1" "$2" "$3"; }

log "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
rc_setup 3
declare -a rss0=()
for i in 1 2 3; do rss0[i]=$(rss_kib "${RC_PID[i]}"); done

t0=$(now_s)
for ((k = 0; k < NVOL; k++)); do
	rc_cli 1 volume create "v$k" --size "$SIZE" --nodes "$(nodes_of "$k")" >/dev/null ||
		fail "volume create v$k failed"
done
t_created=$(rc_elapsed "$t0")
wait_synced 600 1 2 3 || fail "not all UpToDate within 600 s"
t_synced=$(rc_elapsed "$t0")

declare -a nrep=() rss=() thr=() cpu=() cpu_cs=()
for i in 1 2 3; do
	nrep[i]=$(rc_value "$i" 'len(s["volumes"])')
	rss[i]=$(rss_kib "${RC_PID[i]}")
	thr[i]=$(threads "${RC_PID[i]}")
done
# Idle CPU: replagentd and corosync of each node.
declare -a c0=() k0=() cs=()
for i in 1 2 3; do
	cs[i]=$(pid_of_daemon "$i" corosync)
	c0[i]=$(cpu_ticks "${RC_PID[i]}")
	k0[i]=$(cpu_ticks "${cs[i]}")
done
sleep "$IDLE_S"
for i in 1 2 3; do
	cpu[i]=$(awk -v a="${c0[i]}" -v b="$(cpu_ticks "${RC_PID[i]}")" -v t="$IDLE_S" -v h="$CLK_TCK" \
		'BEGIN { printf "%.2f", (b - a) * 100 / h / t }')
	cpu_cs[i]=$(awk -v a="${k0[i]}" -v b="$(cpu_ticks "${cs[i]}")" -v t="$IDLE_S" -v h="$CLK_TCK" \
		'BEGIN { printf "%.2f", (b - a) * 100 / h / t }')
done
read -r ve_med ve_max < <(lat rc_cli 1 version)
read -r st_med st_max < <(lat rc_cli 1 status)
read -r js_med js_max < <(lat rc_cli 1 status --json)

declare -a on_n1=()
for ((k = 0; k < NVOL; k++)); do
	p=$(nodes_of "$k")
	p=${p%%,*}
	rc_promote_retry "${p#n}" 20 "v$k" >/dev/null || fail "promote v$k on $p refused"
	[ "$p" = n1 ] && on_n1+=("$k")
done
t_kill=$(now_s)
cluster_kill_node 1
cluster_wait_members 2 2 60 || fail "n2 still sees n1 60 s after the crash"
t_gone=$(rc_elapsed "$t_kill")
t_p0=$(now_s)
for k in "${on_n1[@]}"; do
	p=$(nodes_of "$k" | cut -d, -f2)
	rc_promote_retry "${p#n}" 60 "v$k" >/dev/null || fail "v$k not promoted on $p"
done
t_failover=$(rc_elapsed "$t_kill")
t_promotes=$(rc_elapsed "$t_p0")

t_back=$(now_s)
rc_start_node 1
wait_synced 900 1 2 3 || fail "not all in sync 900 s after n1 returned"
t_reconn=$(rc_elapsed "$t_back")

echo
echo "scale-bench: $NVOL volumes of $SIZE, 3 nodes (netns, corosync), $(nproc) CPUs," \
	"load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
row "figure" "measured" "goal"
row "create $NVOL volumes (one CLI call each, n1)" "${t_created} s" ""
row "until all UpToDate everywhere" "${t_synced} s" ""
for i in 1 2 3; do
	per=$(awk -v a="${rss0[i]}" -v b="${rss[i]}" -v n="${nrep[i]}" 'BEGIN { printf "%.2f", (b - a) / 1024 / n }')
	bm=$(awk -v s="$(numfmt --from=iec "$SIZE")" 'BEGIN { printf "%.3f", s / 4096 / 8 / 1048576 * 3 }')
	row "n$i replagentd RSS (${nrep[i]} replicas)" "$((rss[i] / 1024)) MiB" ""
	row "n$i RSS per volume (bitmaps <= $bm MiB)" "$per MiB" "< 2 MiB + bitmap"
	row "n$i threads" "${thr[i]}" ""
	row "n$i idle CPU replagentd / corosync (${IDLE_S} s)" "${cpu[i]}% / ${cpu_cs[i]}%" "< 1%"
done
row "version on n1 (floor: start the CLI, connect)" "$ve_med / $ve_max ms" ""
row "status on n1 (median / worst of 10)" "$st_med / $st_max ms" "< 100 ms"
row "status --json on n1 (median / worst of 10)" "$js_med / $js_max ms" "< 100 ms"
row "n1 crash -> n2's corosync drops n1" "${t_gone} s" ""
row "n1 crash -> its ${#on_n1[@]} Primaries promoted" "${t_failover} s" "< 10 s"
row "  of which the ${#on_n1[@]} promote calls" "${t_promotes} s" ""
row "n1 restart -> all in sync everywhere" "${t_reconn} s" ""
