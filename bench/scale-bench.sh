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
#   - idle CPU per node over IDLE_S (60) seconds (replagentd and corosync),
#     all Secondary, and again once every volume is Primary on its first node
#   - "replagent status" and "status --json" latency on n1 (median and
#     worst of 10, all volumes), and the CPU the status CLI uses
#   - failover of n1's Primaries: every volume is Primary on its first
#     node; n1 is killed (corosync and replagentd, SIGKILL); time until
#     corosync on n2 drops n1, and until each of n1's Primaries is promoted
#     on its second node (n2 and n3 at once, one "replagent promote
#     VOL..." each for its share)
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

# The volume set of tests/cluster-replagent-many.sh (tests/functions.sh:
# many_create, many_nodes_of, many_held, many_wait_synced).
wait_synced() { many_wait_synced "$NVOL" "$@" 2>/dev/null; }
threads() { awk '/^Threads/ {print $2}' "/proc/$1/status"; }
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
for i in 1 2 3; do rss0[i]=$(mem_kib "${RC_PID[i]}" VmRSS); done

t0=$(now_s)
many_create "$NVOL" "$SIZE"
t_created=$(rc_elapsed "$t0")
wait_synced 600 1 2 3 || fail "not all UpToDate within 600 s"
t_synced=$(rc_elapsed "$t0")
log "$NVOL volumes created in $t_created s, all UpToDate after $t_synced s"

declare -a nrep=() rss=() thr=() cpu=() cpu_cs=() cpu_p=()
for i in 1 2 3; do
	nrep[i]=$(rc_value "$i" 'len(s["volumes"])')
	rss[i]=$(mem_kib "${RC_PID[i]}" VmRSS)
	thr[i]=$(threads "${RC_PID[i]}")
done
# idle_cpu: replagentd's and corosync's CPU on each node over IDLE_S s, in
# cpu[] and cpu_cs[] (percent of one CPU).
idle_cpu() {
	local i
	local -a c0=() k0=() cs=()
	log "measuring idle CPU for $IDLE_S s"
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
	log "idle CPU of replagentd on n1..n3: ${cpu[1]}% ${cpu[2]}% ${cpu[3]}%"
}
idle_cpu
read -r ve_med ve_max < <(lat rc_cli 1 version)
read -r st_med st_max < <(lat rc_cli 1 status)
read -r js_med js_max < <(lat rc_cli 1 status --json)
log "version $ve_med ms, status $st_med ms, status --json $js_med ms (medians)"
# The CPU the status CLI itself uses (user + system, ms, median of 10): at
# a load average of 10 on 2 cores the wall-clock figures are mostly waiting
# for a CPU.
st_cpu=$(for i in $(seq 10); do
	/usr/bin/time -f '%U %S' "$REPLAGENT" -s "${RC_CTL[1]}" status 2>&1 >/dev/null | tail -n 1
done | awk '{print ($1 + $2) * 1000}' | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')

# Every volume Primary on its first node: one "replagent promote VOL..."
# per node; then idle again, Primaries and all.
declare -a on_n1=() to_n2=() to_n3=()
for i in 1 2 3; do
	mine=()
	for ((k = 0; k < NVOL; k++)); do
		p=$(many_nodes_of "$k")
		[ "${p%%,*}" = "n$i" ] && mine+=("v$k")
	done
	many_promote "$i" 60 "${mine[@]}" || fail "promote on n$i refused"
done
for ((k = 0; k < NVOL; k++)); do
	p=$(many_nodes_of "$k")
	if [ "${p%%,*}" = n1 ]; then
		on_n1+=("$k")
		case $(echo "$p" | cut -d, -f2) in n2) to_n2+=("v$k") ;; n3) to_n3+=("v$k") ;; esac
	fi
done
declare -a cpu_s=() cpu_cs_s=()
for i in 1 2 3; do cpu_s[i]=${cpu[i]} cpu_cs_s[i]=${cpu_cs[i]}; done
idle_cpu
for i in 1 2 3; do cpu_p[i]=${cpu[i]} cpu[i]=${cpu_s[i]} cpu_cs[i]=${cpu_cs_s[i]}; done

t_kill=$(now_s)
cluster_kill_node 1
cluster_wait_members 2 2 60 || fail "n2 still sees n1 60 s after the crash"
t_gone=$(rc_elapsed "$t_kill")
t_p0=$(now_s)
# Each survivor takes over its share with one CLI call, both at once (as
# an operator's script would; Pacemaker runs its promote actions in
# parallel too, up to its batch-limit).
many_promote 2 60 "${to_n2[@]}" >/dev/null &
pid2=$!
many_promote 3 60 "${to_n3[@]}" >/dev/null || fail "n1's Primaries not promoted on n3"
wait "$pid2" || fail "n1's Primaries not promoted on n2"
t_failover=$(rc_elapsed "$t_kill")
t_promotes=$(rc_elapsed "$t_p0")
log "n1's ${#on_n1[@]} Primaries promoted $t_failover s after the crash"

t_back=$(now_s)
rc_start_node 1
# Printed as not reached rather than failing: the figures above stand.
if wait_synced "${RECONN_S:-300}" 1 2 3; then
	t_reconn="$(rc_elapsed "$t_back") s"
else
	t_reconn="not in ${RECONN_S:-300} s"
	many_wait_synced "$NVOL" 1 1 2 3 || true
fi

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
	row "  the same with the Primaries promoted" "${cpu_p[i]}%" "< 1%"
done
row "version on n1 (floor: start the CLI, connect)" "$ve_med / $ve_max ms" ""
row "status on n1 (median / worst of 10)" "$st_med / $st_max ms" "< 100 ms"
row "status --json on n1 (median / worst of 10)" "$js_med / $js_max ms" "< 100 ms"
row "status on n1: the CLI's own CPU (median)" "$st_cpu ms" ""
row "n1 crash -> n2's corosync drops n1" "${t_gone} s" ""
row "n1 crash -> its ${#on_n1[@]} Primaries promoted" "${t_failover} s" "< 10 s"
row "  of which promoting (n2, n3: one CLI call each)" "${t_promotes} s" ""
row "n1 restart -> all in sync everywhere" "${t_reconn}" ""
