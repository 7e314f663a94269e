#!/bin/bash
# sparse-bench.sh: copying a sparse volume out over NBD, replagentd against
# nbdkit (file plugin) and qemu-nbd serving the same kind of file: an 8 GiB
# raw file holding 64 MiB of random data (16 extents of 4 MiB spread over
# it), the rest holes.  The three servers serve the file at once, each on
# its own Unix socket; `qemu-img convert -O raw` and `nbdcopy` copy each
# export to a new file, the servers taking turns (REPS rounds, the median
# is reported: load from elsewhere falls on all three alike), and `qemu-img map` of the
# export is compared with the one through nbdkit.  Prints seconds per copy,
# the ratio against nbdkit and qemu-nbd, and whether the copies are sparse
# and identical.  The goal (issue 17): within 1.2x of nbdkit.
#
# Run by hand (CI does not):  bench/sparse-bench.sh   (about a minute)
# Knobs: REPS [3], SIZE [8G], DATA_MB [64], NBDKIT, QEMU_NBD, REPLAGENTD.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires qemu-img nbdcopy nbdinfo du truncate
NBDKIT=${NBDKIT:-nbdkit}
QEMU_NBD=${QEMU_NBD:-qemu-nbd}
REPS=${REPS:-3}
SIZE=${SIZE:-8G}
DATA_MB=${DATA_MB:-64}

write_config -s "$SIZE"
truncate -s "$SIZE" "$BACKING" || hard_error "truncate $BACKING"
bytes=$(stat -c %s "$BACKING")
chunk=$((DATA_MB / 16))
for i in $(seq 0 15); do
	head -c $((chunk * 1024 * 1024)) /dev/urandom |
		dd of="$BACKING" bs=1M seek=$((bytes / 16 / 1024 / 1024 * i + 7)) conv=notrunc \
			status=none || hard_error "dd"
done
sync "$BACKING"

declare -A T_CONVERT T_COPY MAPOK
SOCK=$TESTDIR/bench.sock

wait_socket() {	# URI PID
	local i
	for ((i = 0; i < 100; i++)); do
		nbdinfo --size "$1" >/dev/null 2>&1 && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# same FILE: FILE has the content of the backing (qemu-img compare skips
# what both files have as holes; cmp would read 8 GiB of zeroes twice).
same() { qemu-img compare -q -f raw -F raw "$BACKING" "$1"; }

median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# seconds CMD...: wall time of CMD, to the millisecond.
seconds() {
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null 2>"$TESTDIR/cmd.err" || { cat "$TESTDIR/cmd.err" >&2; return 1; }
	t1=$(date +%s.%N)
	echo "$t0 $t1" | awk '{ printf "%.3f\n", $2 - $1 }'
}

declare -A URI A B

# once NAME: one convert and one nbdcopy through server NAME, each copy
# checked (identical, sparse); the times go to A[NAME] and B[NAME].
once() {
	local name=$1 uri=${URI[$1]} t out=$TESTDIR/out.raw
	rm -f "$out"
	t=$(seconds qemu-img convert -f raw -O raw "$uri" "$out") || fail "$name: qemu-img convert"
	A[$name]+="$t "
	same "$out" || fail "$name: qemu-img convert copy differs"
	[ "$(du -k "$out" | cut -f1)" -le $((DATA_MB * 1024 + 4096)) ] ||
		log "$name: qemu-img convert copy is not sparse: $(du -h "$out" | cut -f1)"
	rm -f "$out"
	t=$(seconds nbdcopy "$uri" "$out") || fail "$name: nbdcopy"
	B[$name]+="$t "
	same "$out" || fail "$name: nbdcopy copy differs"
	[ "$(du -k "$out" | cut -f1)" -le $((DATA_MB * 1024 + 4096)) ] ||
		log "$name: nbdcopy copy is not sparse: $(du -h "$out" | cut -f1)"
	rm -f "$out"
}

# All three servers serve the file at once and the runs take turns
# (replagentd, nbdkit, qemu-nbd, then again), so that load from elsewhere
# on a shared machine falls on all of them alike.
# replagentd (one node, no replicas: the copy only reads)
start_replagentd "$CONFIG"
URI[replagentd]=$NBD_URI
SERVERS=(replagentd)
if command -v "$NBDKIT" >/dev/null; then
	"$NBDKIT" --foreground --unix "$TESTDIR/nbdkit.sock" file "$BACKING" 2>"$TESTDIR/nbdkit.log" &
	pid=$!
	track_pid "$pid"
	URI[nbdkit]="nbd+unix:///?socket=$TESTDIR/nbdkit.sock"
	wait_socket "${URI[nbdkit]}" "$pid" || fail "nbdkit did not start"
	SERVERS+=(nbdkit)
fi
if command -v "$QEMU_NBD" >/dev/null; then
	"$QEMU_NBD" -f raw -t -k "$SOCK" -x vol0 "$BACKING" 2>"$TESTDIR/qemu-nbd.log" &
	pid=$!
	track_pid "$pid"
	URI[qemu-nbd]="nbd+unix:///vol0?socket=$SOCK"
	wait_socket "${URI[qemu-nbd]}" "$pid" || fail "qemu-nbd did not start"
	SERVERS+=(qemu-nbd)
fi
for ((r = 0; r < REPS; r++)); do
	for s in "${SERVERS[@]}"; do
		once "$s"
	done
done
for s in "${SERVERS[@]}"; do
	# shellcheck disable=SC2086 # the lists are space-separated numbers
	T_CONVERT[$s]=$(median ${A[$s]})
	# shellcheck disable=SC2086
	T_COPY[$s]=$(median ${B[$s]})
	qemu-img map -f raw --output=json "${URI[$s]}" >"$TESTDIR/map.$s" || fail "$s: qemu-img map"
	log "$s: convert ${A[$s]}s, nbdcopy ${B[$s]}s"
done
stop_replagentd >/dev/null || fail "replagentd exit status $REPLAGENTD_STATUS"

for s in replagentd nbdkit qemu-nbd; do
	[ -f "$TESTDIR/map.$s" ] || continue
	if [ -f "$TESTDIR/map.nbdkit" ] && cmp -s "$TESTDIR/map.$s" "$TESTDIR/map.nbdkit"; then
		MAPOK[$s]=equal
	elif [ -f "$TESTDIR/map.nbdkit" ]; then
		MAPOK[$s]=DIFFERS
	else
		MAPOK[$s]=-
	fi
done

ratio() { [ -n "${2:-}" ] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }' || echo -; }

echo
echo "sparse-bench: $SIZE raw file, $DATA_MB MiB of data, median of $REPS, $(nproc) CPUs"
printf '%-11s %12s %12s %12s %12s %10s\n' server convert/s vs-nbdkit nbdcopy/s vs-nbdkit "map=nbdkit"
for s in replagentd nbdkit qemu-nbd; do
	[ -n "${T_CONVERT[$s]:-}" ] || continue
	printf '%-11s %12s %12s %12s %12s %10s\n' "$s" "${T_CONVERT[$s]}" \
		"$(ratio "${T_CONVERT[$s]}" "${T_CONVERT[nbdkit]:-}")" "${T_COPY[$s]}" \
		"$(ratio "${T_COPY[$s]}" "${T_COPY[nbdkit]:-}")" "${MAPOK[$s]}"
done
if [ -n "${T_CONVERT[qemu-nbd]:-}" ]; then
	echo "replagentd vs qemu-nbd: convert $(ratio "${T_CONVERT[replagentd]}" "${T_CONVERT[qemu-nbd]}")," \
		"nbdcopy $(ratio "${T_COPY[replagentd]}" "${T_COPY[qemu-nbd]}")"
fi
if [ "${MAPOK[replagentd]:-}" = DIFFERS ]; then
	diff "$TESTDIR/map.nbdkit" "$TESTDIR/map.replagentd" | head -n 20
fi
