#!/bin/bash
# bench/write-path-bench.sh: the table of issue 14 (the replicated write
# path) from one run, with its goals computed as ratios.  Columns: nbdkit's
# file plugin, qemu-nbd, replagentd alone (1r), with 2 and 3 replicas on
# this machine over 127.0.0.1 (2r, 3r), and 2r with the Secondary on its own
# CPU (2r-pin: Secondary on CPU 1, Primary and client on CPU 0).  Rows, each
# a time-based fio run (nbd engine, libnbd, Unix socket) on a 1 GiB volume
# written full of random data first, then each 4 KiB page once more (fill()):
#   4k randwrite QD1: IOPS, mean latency
#   4k randwrite QD32: IOPS
#   1M write QD8: MB/s
#   4k randwrite + an NBD FLUSH after each (fio --fsync=1: its nbd engine
#     has no fdatasync), QD1: IOPS, latency (write + flush, 1e6 / IOPS)
# and for each: the server's CPU time per write (utime + stime of every
# server process from /proc/PID/stat before and after the run, over the
# writes fio completed), its minor page faults per write (/proc/PID/stat
# too) and the machine's idle % over the run (from
# /proc/stat, what mpstat reports as %idle).  Also measured in the same run:
# the TCP loopback round trip (bench/pingpong: 4 KiB out, 16 B back, two
# processes, median and p99) and a 4k pwrite into the page cache (fio psync,
# QD1, mean): the floor of goal 1; with the sync row, a 4k pwrite +
# fdatasync (fio psync) by one writer and by two at once on this disk: with
# nbdkit's write+FLUSH and two round trips, the floor of goal 5 on a machine
# whose replicas share one disk (printed as 5').  It asserts nothing; CI
# does not run it.
#
#   bench/write-path-bench.sh                  # about 4 min on 2 CPUs
#   RUNTIME=10 SERVERS="1r 2r" bench/write-path-bench.sh
#
# PROFILE=1 adds, per server and job, the syscalls per write (strace -c);
# PERF=1 the functions that take the servers' CPU (perf record -g, the top
# symbols by self time, and who calls the futex and lock-wait ones).
# HALTPOLL_NS=N (root, a KVM guest) sets the idle vCPUs' halt polling for
# the run and puts it back after; the header prints it either way.
# Knobs: RUNTIME [5] seconds per fio run; SERVERS ["nbdkit qemu-nbd 1r 2r
# 3r 2r-pin"]; JOBS ["qd1 qd32 seq sync"]; VOLSIZE [1G]; WARM [1] (see
# fill()); PINGPONG [build/bench/pingpong].  The machine
# is shared with the client and every replica: the load average before and
# after is printed, and the numbers move with it.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires fio timeout qemu-img taskset
fio --enghelp=nbd >/dev/null 2>&1 || skip "fio has no nbd engine"
requires_replagentd
requires_replagent

RUNTIME=${RUNTIME:-5}
VOLSIZE=${VOLSIZE:-1G}
PINGPONG=${PINGPONG:-$top_builddir/bench/pingpong}
read -r -a SERVER_LIST <<<"${SERVERS:-nbdkit qemu-nbd 1r 2r 3r 2r-pin}"
TICK=$(getconf CLK_TCK)

# job id -> fio arguments; JOBS is the row order.
read -r -a JOBS <<<"${JOBS:-qd1 qd32 seq sync}"
declare -A JOB_ARGS=(
	[qd1]="--rw=randwrite --bs=4k --iodepth=1"
	[qd32]="--rw=randwrite --bs=4k --iodepth=32"
	[seq]="--rw=write --bs=1M --iodepth=8"
	[sync]="--rw=randwrite --bs=4k --iodepth=1 --fsync=1"
)
declare -A JOB_NAME=(
	[qd1]="4k randwrite QD1"
	[qd32]="4k randwrite QD32"
	[seq]="1M write QD8"
	[sync]="4k write+FLUSH QD1"
)
# "SERVER|JOB|what" -> value; what: rate (IOPS, or MB/s for seq), lat (us),
# cpu (us of server CPU per write), flt (minor page faults of the server
# per write), idle (%).
declare -A R=()

SRV_PIDS=()     # every process of the running server (all replicas)
SRV_URI=        # where the client connects
SRV_FILES=()    # backing files, synced between runs
SRV_DIRS=()     # removed when the server stops (a next cluster starts fresh)
CLIENT_CPU=()   # taskset prefix of the client (2r-pin)

# cpu_idle: "idle total" jiffies of all CPUs so far.
cpu_idle() { awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print $5, t; exit }' /proc/stat; }

# fill URI: write VOLSIZE of random data through the server (the image is
# pre-filled, as in the issue: a write never allocates), then write it back
# and drop the page cache.  Every server is filled the same way: how the
# image got into the page cache matters (a file written in large requests
# sits in large folios, and ext4's write_begin walks every block of the
# folio on each 4k write into it: several times the cost of the write).
# Then every 4 KiB page is written once more, in random order, through the
# server (fio's random map: each block once), and written back: every job
# starts with the whole volume in the page cache, in 4 KiB pages, the same
# for every server.  Without it, a job's first write to each page allocates
# it, and on a VM that hands freed pages back to the host (virtio-balloon
# free page reporting) that costs a host fault in the copy (perf: the copy
# into the page cache took 30-37% of 2r's CPU at QD32, 8% of 1r's): a
# server that did fewer writes in its run paid it on more of them.
# WARM=0 leaves that pass out.
fill() {
	qemu-img convert -n -f raw -O raw -t none "$TESTDIR/random.img" "$1" ||
		fail "cannot fill $1"
	sync "${SRV_FILES[@]}"
	drop_cache
	if [ "${WARM:-1}" = 1 ]; then
		"${CLIENT_CPU[@]}" fio --name=warm --ioengine=nbd --uri="$1" --rw=randwrite \
			--bs=4k --iodepth=32 --size="$VOLSIZE" --output-format=terse \
			>/dev/null 2>"$TESTDIR/fio.err" ||
			fail "cannot write $1 over: $(tail -n 3 "$TESTDIR/fio.err")"
		sync "${SRV_FILES[@]}"
	fi
}

# drop_cache: written-back pages out of the page cache (as root).
drop_cache() {
	[ -w /proc/sys/vm/drop_caches ] && echo 1 >/proc/sys/vm/drop_caches
	return 0
}

start_nbdkit() {
	local d=$TESTDIR/nbdkit
	mkdir -p "$d"
	truncate -s "$VOLSIZE" "$d/img"
	nbdkit -f -U "$d/sock" file file="$d/img" 2>"$d/log" &
	SRV_PIDS=($!)
	track_pid "$!"
	SRV_URI="nbd+unix:///?socket=$d/sock"
	SRV_FILES=("$d/img")
	SRV_DIRS=("$d")
}

start_qemu_nbd() {
	local d=$TESTDIR/qemu-nbd
	mkdir -p "$d"
	truncate -s "$VOLSIZE" "$d/img"
	qemu-nbd -f raw --cache=writeback --aio=threads -e 8 -t -k "$d/sock" "$d/img" 2>"$d/log" &
	SRV_PIDS=($!)
	track_pid "$!"
	SRV_URI="nbd+unix:///?socket=$d/sock"
	SRV_FILES=("$d/img")
	SRV_DIRS=("$d")
}

start_1r() {
	write_config -d "$TESTDIR/1r" -s "$VOLSIZE"
	start_replagentd_as 1r "$CONFIG"
	SRV_PIDS=("$(replagentd_pid 1r)")
	SRV_URI=$NBD_URI
	SRV_FILES=("$BACKING")
	SRV_DIRS=("$TESTDIR/1r")
}

# start_nr N [pin]: nodes n1..nN, n1 Primary; with pin, n1 and the client
# on CPU 0, the others on CPU 1.
start_nr() {
	local nodes=() i n
	for ((i = 1; i <= $1; i++)); do nodes+=("n$i"); done
	cluster_config -s "$VOLSIZE" "${nodes[@]}"
	start_in_sync "${nodes[@]}"
	SRV_PIDS=()
	SRV_FILES=()
	SRV_DIRS=()
	for n in "${nodes[@]}"; do
		SRV_PIDS+=("$(replagentd_pid "$n")")
		SRV_FILES+=("${NODE_BACKING[$n]}")
		SRV_DIRS+=("${NODE_DIR[$n]}")
	done
	if [ "${2:-}" = pin ]; then
		taskset -a -cp 0 "${SRV_PIDS[0]}" >/dev/null
		for ((i = 1; i < ${#SRV_PIDS[@]}; i++)); do
			taskset -a -cp 1 "${SRV_PIDS[$i]}" >/dev/null
		done
		CLIENT_CPU=(taskset -c 0)
	fi
	SRV_URI=${NODE_NBD_URI[n1]}
}

start_server() {
	CLIENT_CPU=()
	case $1 in
	nbdkit) start_nbdkit ;;
	qemu-nbd) start_qemu_nbd ;;
	1r) start_1r ;;
	2r) start_nr 2 ;;
	3r) start_nr 3 ;;
	2r-pin) start_nr 2 pin ;;
	*) hard_error "unknown server $1" ;;
	esac
	# Wait until it answers (nbdkit and qemu-nbd start in the background).
	local i
	for ((i = 0; i < 100; i++)); do
		qemu-img info -f raw "$SRV_URI" >/dev/null 2>&1 && break
		sleep 0.1
	done
	fill "$SRV_URI"
}

stop_server() {
	local p st
	for p in "${SRV_PIDS[@]}"; do
		stop_pid "$p"
		st=$?
		untrack_pid "$p"
		# 143: nbdkit and qemu-nbd exit by the signal.
		[ "$st" = 0 ] || [ "$st" = 143 ] || log "$1: pid $p exited with $st"
	done
	rm -rf -- "${SRV_DIRS[@]}"
	SRV_PIDS=()
}

# run_job SERVER JOB: one fio run, CPU and idle around it, into R.
run_job() {
	local s=$1 j=$2 c0 c1 i0 i1 f0 f1 out vals
	f0=$(minflt "${SRV_PIDS[@]}")
	c0=$(cpu_ticks "${SRV_PIDS[@]}")
	i0=$(cpu_idle)
	# shellcheck disable=SC2086 # JOB_ARGS are words
	out=$("${CLIENT_CPU[@]}" fio --name="$j" --ioengine=nbd --uri="$SRV_URI" \
		${JOB_ARGS[$j]} --numjobs=1 --time_based --runtime="$RUNTIME" \
		--randrepeat=1 --output-format=json 2>"$TESTDIR/fio.err") || {
		log "$s $j: fio failed: $(tail -n 3 "$TESTDIR/fio.err")"
		return 0
	}
	c1=$(cpu_ticks "${SRV_PIDS[@]}")
	f1=$(minflt "${SRV_PIDS[@]}")
	i1=$(cpu_idle)
	vals=$("$PYTHON" -c '
import json, sys
s = sys.stdin.read()
w = json.loads(s[s.index("{"):])["jobs"][0]["write"]  # after "fio: connected..."
c0, c1, tick, i0, t0, i1, t1, f0, f1 = map(float, sys.argv[1:8] + sys.argv[9:11])
n = max(w["total_ios"], 1)
rate = w["bw_bytes"] / 1e6 if sys.argv[8] == "seq" else w["iops"]
# with a FLUSH after each write: the whole cycle, 1e6 / IOPS
lat = 1e6 / w["iops"] if sys.argv[8] == "sync" and w["iops"] else w["lat_ns"]["mean"] / 1e3
print("%.0f %.1f %.1f %.0f %.1f" % (rate, lat,
      (c1 - c0) / tick * 1e6 / n, 100 * (i1 - i0) / max(t1 - t0, 1), (f1 - f0) / n))
' "$c0" "$c1" "$TICK" "${i0% *}" "${i0#* }" "${i1% *}" "${i1#* }" "$j" "$f0" "$f1" <<<"$out") || { log "$s $j: no fio result"; return 0; }
	read -r "R[$s|$j|rate]" "R[$s|$j|lat]" "R[$s|$j|cpu]" "R[$s|$j|idle]" "R[$s|$j|flt]" <<<"$vals"
	log "$(printf '%-8s %-22s %s' "$s" "${JOB_NAME[$j]}" "$vals")"
	sync "${SRV_FILES[@]}"
}

# profile_job SERVER JOB: with PROFILE=1, one more run of JOB under
# strace -c -f on every server process: syscalls per write, summed over
# the nodes (strace slows everything down: these runs give no figures).
profile_job() {
	local s=$1 j=$2 p args=() spid out n
	[ "${PROFILE:-0}" = 1 ] || return 0
	command -v strace >/dev/null || { log "no strace: no profile"; return 0; }
	for p in "${SRV_PIDS[@]}"; do args+=(-p "$p"); done
	strace -c -f -q -o "$TESTDIR/strace.out" "${args[@]}" &
	spid=$!
	sleep 1
	# shellcheck disable=SC2086 # JOB_ARGS are words
	out=$(fio --name="$j" --ioengine=nbd --uri="$SRV_URI" ${JOB_ARGS[$j]} --numjobs=1 \
		--time_based --runtime="$RUNTIME" --output-format=json 2>/dev/null)
	kill -INT "$spid"
	wait "$spid"
	n=$("$PYTHON" -c 'import json, sys
s = sys.stdin.read()
print(json.loads(s[s.index("{"):])["jobs"][0]["write"]["total_ios"])' <<<"$out") || return 0
	echo "== syscalls per write, $s, ${JOB_NAME[$j]} (strace -c -f, all nodes, $n writes)"
	awk -v n="$n" '$1 ~ /^[0-9.]+$/ && NF >= 5 { c = $4; name = $NF
		if (c / n >= 0.05) printf "  %-20s %8.2f\n", name, c / n }' "$TESTDIR/strace.out" |
		sort -k2 -rn
}

# perf_job SERVER JOB: with PERF=1, one more run of JOB under perf record
# -g on every server process: the symbols with the most self time, and
# the callers of the top lock waits (no figures from these runs either).
perf_job() {
	local s=$1 j=$2 pids pid
	[ "${PERF:-0}" = 1 ] || return 0
	command -v perf >/dev/null || { log "no perf: no profile"; return 0; }
	pids=$(IFS=,; echo "${SRV_PIDS[*]}")
	perf record -q -g -p "$pids" -o "$TESTDIR/perf.data" 2>/dev/null &
	pid=$!
	sleep 1
	# shellcheck disable=SC2086 # JOB_ARGS are words
	fio --name="$j" --ioengine=nbd --uri="$SRV_URI" ${JOB_ARGS[$j]} --numjobs=1 \
		--time_based --runtime="$RUNTIME" --output-format=json >/dev/null 2>&1
	kill -INT "$pid"
	wait "$pid"
	echo "== CPU of $s, ${JOB_NAME[$j]} (perf record -g, all nodes, self time >= 1.5%)"
	perf report -i "$TESTDIR/perf.data" --stdio --no-children --sort comm,dso,sym \
		--percent-limit 1.5 -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -30
	echo "== callers of the lock and futex waits, $s, ${JOB_NAME[$j]}"
	perf report -i "$TESTDIR/perf.data" --stdio --no-children --sort sym \
		--symbols=__lll_lock_wait,futex_wait,__futex_abstimed_wait_common \
		-g caller,0.5,callee,function,percent --percent-limit 1 2>/dev/null |
		grep -v '^#' | grep -v '^$' | head -60
	rm -f "$TESTDIR/perf.data"
}

# v SERVER JOB WHAT: a cell, or n/a.
v() { echo "${R[$1|$2|$3]:-n/a}"; }

# ratio A B [fmt]: A / B, or n/a.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else printf "n/a" }'
}

# goal NAME VALUE OP LIMIT: one line "NAME: VALUE (goal OP LIMIT) met|MISSED".
goal() {
	awk -v n="$1" -v v="$2" -v op="$3" -v l="$4" 'BEGIN {
		if (v == "n/a" || l == "n/a" || v == "" || l == "") { printf "%-58s n/a\n", n; exit }
		ok = (op == "<=") ? (v + 0 <= l + 0) : (v + 0 >= l + 0)
		printf "%-58s %8s  (goal %s %s)  %s\n", n, v, op, l, ok ? "met" : "MISSED" }'
}

print_table() {
	local s j row what unit
	printf '\n%-34s' "job"
	for s in "${SERVER_LIST[@]}"; do printf ' %9s' "$s"; done
	printf '\n'
	for j in "${JOBS[@]}"; do
		for what in rate lat cpu flt idle; do
			case $what in
			rate) unit=IOPS; [ "$j" = seq ] && unit=MB/s ;;
			lat) unit="mean latency, us"; [ "$j" = qd32 ] || [ "$j" = seq ] && continue ;;
			cpu) unit="server CPU/write, us" ;;
			flt) unit="server page faults/write" ;;
			idle) unit="idle %" ;;
			esac
			row=$(printf '%-34s' "${JOB_NAME[$j]}, $unit")
			for s in "${SERVER_LIST[@]}"; do row+=$(printf ' %9s' "$(v "$s" "$j" "$what")"); done
			echo "$row"
		done
	done
}

print_goals() {
	local rtt=$1 pw=$2 l1 l2 l3 budget s j what floor
	l1=$(v 1r qd1 lat) l2=$(v 2r qd1 lat) l3=$(v 3r qd1 lat)
	budget=$(awk -v a="$l1" -v b="$rtt" -v c="$pw" 'BEGIN {
		if (a == "n/a" || b == "n/a" || c == "n/a") print "n/a"; else printf "%.1f", a + b + c + 20 }')
	echo
	echo "== goals of issue 14"
	goal "1. 2r QD1 latency us <= 1r + RTT + pwrite + 20 us" "$l2" "<=" "$budget"
	goal "1. 3r QD1 latency / 2r" "$(ratio "$l3" "$l2")" "<=" 1.10
	goal "2. 2r CPU per 4k QD1 write / 1r" "$(ratio "$(v 2r qd1 cpu)" "$(v 1r qd1 cpu)")" "<=" 2.2
	goal "3. 2r / 1r, 4k QD32 IOPS" "$(ratio "$(v 2r qd32 rate)" "$(v 1r qd32 rate)")" ">=" 0.7
	goal "3. 2r / 1r, 1M QD8 MB/s" "$(ratio "$(v 2r seq rate)" "$(v 1r seq rate)")" ">=" 0.7
	goal "3. 2r-pin / 1r, 1M QD8 MB/s (Secondary on its own CPU)" \
		"$(ratio "$(v 2r-pin seq rate)" "$(v 1r seq rate)")" ">=" 0.9
	for j in "${JOBS[@]}"; do
		goal "4. 1r / nbdkit, ${JOB_NAME[$j]}" "$(ratio "$(v 1r "$j" rate)" "$(v nbdkit "$j" rate)")" ">=" 0.9
	done
	for j in "${JOBS[@]}"; do
		goal "4. 1r / qemu-nbd, ${JOB_NAME[$j]}" "$(ratio "$(v 1r "$j" rate)" "$(v qemu-nbd "$j" rate)")" ">=" 1.0
	done
	goal "5. 2r / nbdkit, 4k write+FLUSH QD1 IOPS" \
		"$(ratio "$(v 2r sync rate)" "$(v nbdkit sync rate)")" ">=" 0.8
	# No goal, the floor under goal 5 on this machine: nbdkit's write +
	# FLUSH, plus the round trip of the write and of the FLUSH to the
	# peer, plus what a second replica's fdatasync on the same disk at
	# the same time adds to each.
	floor=$(awk -v n="$(v nbdkit sync lat)" -v r="$rtt" -v a="${FS1:-n/a}" -v b="${FS2:-n/a}" 'BEGIN {
		if (n == "n/a" || r == "n/a" || a == "n/a" || b == "n/a") print "n/a"
		else printf "%.1f", n + 2 * r + (b > a ? b - a : 0) }')
	printf "%-58s %8s  (nbdkit + 2 RTT + a second fdatasync's cost: %s us)\n" \
		"5'. 2r write+FLUSH QD1 latency / its floor here" "$(ratio "$(v 2r sync lat)" "$floor")" "$floor"
}

# pwrite_us: mean latency of a 4k random pwrite into a pre-filled file
# through the page cache (what the peer's write costs it), fio psync QD1,
# after the same write-back and drop as fill.
pwrite_us() {
	sync "$TESTDIR/random.img"
	drop_cache
	fio --name=pwrite --ioengine=psync --filename="$TESTDIR/random.img" --rw=randwrite \
		--bs=4k --time_based --runtime=2 --output-format=json 2>/dev/null |
		"$PYTHON" -c 'import json, sys
print("%.1f" % (json.load(sys.stdin)["jobs"][0]["write"]["lat_ns"]["mean"] / 1e3))' ||
		echo n/a
}

# fdatasync_us N: mean latency of a 4k random pwrite + fdatasync (fio psync
# QD1, --fdatasync=1: write + sync) with N such writers at once, each on a
# file of its own next to the volumes: what a durable write costs one
# replica, and two replicas flushing on this one disk together.
fdatasync_us() {
	fio --name=durable --ioengine=psync --directory="$TESTDIR" --filename_format='fsync.$jobnum' \
		--size=64M --rw=randwrite --bs=4k --fdatasync=1 --numjobs="$1" --group_reporting \
		--time_based --runtime=3 --output-format=json 2>/dev/null |
		"$PYTHON" -c 'import json, sys
j = json.load(sys.stdin)["jobs"][0]
print("%.1f" % ((j["write"]["lat_ns"]["mean"] + j["sync"]["lat_ns"]["mean"]) / 1e3))' ||
		echo n/a
	rm -f "$TESTDIR"/fsync.*
}

# Guest halt polling (cpuidle-haltpoll, a KVM guest's idle driver): how
# long an idle vCPU polls before it halts.  At 0, each wake-up of a halted
# vCPU goes through the host: tens of microseconds on this VM class, which
# every hop of a QD1 request pays (bench/README.md).
HALTPOLL=/sys/module/haltpoll/parameters/guest_halt_poll_ns
haltpoll_desc() {
	local drv
	drv=$(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null || echo none)
	if [ -r "$HALTPOLL" ]; then
		echo "cpuidle driver $drv, guest_halt_poll_ns $(cat "$HALTPOLL")"
	else
		echo "cpuidle driver $drv"
	fi
}
# HALTPOLL_NS=N (root): set guest_halt_poll_ns for the run, put back after.
set_haltpoll() {
	[ -n "${HALTPOLL_NS:-}" ] || return 0
	[ -w "$HALTPOLL" ] || { log "HALTPOLL_NS: no writable $HALTPOLL"; return 1; }
	on_cleanup eval "echo $(cat "$HALTPOLL") >$HALTPOLL"
	echo "$HALTPOLL_NS" >"$HALTPOLL"
}

main() {
	local s j rtt=n/a rtt99=n/a pw pp
	set_haltpoll || exit 1
	log "load before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; $(uname -r); $(haltpoll_desc)"
	log "writing $VOLSIZE of random data"
	head -c "$(numfmt --from=iec "$VOLSIZE")" /dev/urandom >"$TESTDIR/random.img"
	if [ -x "$PINGPONG" ]; then
		read -r rtt rtt99 <<<"$("$PINGPONG")" || rtt=n/a
	else
		log "no $PINGPONG (make bench/pingpong): no round trip"
	fi
	pw=$(pwrite_us)
	if [[ " ${JOBS[*]} " == *" sync "* ]]; then
		FS1=$(fdatasync_us 1)
		FS2=$(fdatasync_us 2)
	fi
	for s in "${SERVER_LIST[@]}"; do
		case $s in
		nbdkit | qemu-nbd) command -v "$s" >/dev/null || { log "no $s"; continue; } ;;
		esac
		log "$s: starting"
		start_server "$s"
		for j in "${JOBS[@]}"; do run_job "$s" "$j"; done
		for j in "${JOBS[@]}"; do profile_job "$s" "$j"; done
		for j in "${JOBS[@]}"; do perf_job "$s" "$j"; done
		stop_server "$s"
	done
	pp=$(git -C "$top_srcdir" describe --always --dirty 2>/dev/null || echo '?')
	echo
	echo "== write path, fio nbd engine (libnbd, Unix socket), ${RUNTIME}s per run, $VOLSIZE pre-filled volume"
	echo "replagentd $REPLAGENTD (source tree $pp); $(nproc) CPUs shared by client and servers; load now $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "idle: $(haltpoll_desc)"
	echo "TCP loopback round trip (pingpong, 4 KiB out, 16 B back): median $rtt us, p99 $rtt99 us"
	echo "4k pwrite into the page cache (fio psync QD1, mean): $pw us"
	[ -n "${FS1:-}" ] &&
		echo "4k pwrite + fdatasync (fio psync QD1, mean): one writer $FS1 us, two at once $FS2 us"
	print_table
	print_goals "$rtt" "$pw"
}

main
