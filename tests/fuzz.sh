#!/bin/bash
# tests/fuzz.sh: runs every libFuzzer target (tests/fuzz/fuzz-NAME.c) for a
# bounded number of executions with AddressSanitizer + UBSan, starting from
# its seed corpus (tests/fuzz/corpus/NAME/), two targets at a time.  Prints
# the executions of each target and their total; fails on any crash, leak,
# timeout or broken promise, printing the reproducer's path and the
# command that replays it.  Exit 77 (skipped) without clang and libFuzzer.
#
#   tests/fuzz.sh [BUILD-DIR]     default: build-fuzz beside the sources;
#                                 configured (CC=clang --enable-fuzz
#                                 --enable-sanitizers) and built (make fuzz)
#                                 if it has no Makefile yet.
#   FUZZ_SCALE=N  N times the executions (default 1: about 1.1 million in
#                 all, 1-2 minutes on two cores); FUZZ_JOBS (default 2).
# What the fuzzers find new is kept in BUILD-DIR/fuzz-out/corpus-NAME/,
# crashes as BUILD-DIR/fuzz-out/NAME-crash-*.
set -u
top=$(cd "$(dirname "$0")/.." && pwd) || exit 99
bdir=${1:-$top/build-fuzz}
scale=${FUZZ_SCALE:-1}
jobs=${FUZZ_JOBS:-2}

# NAME:RUNS, the runs chosen so that each target takes 10-30 s.
targets="wire:200000 handshake:120000 clmsg:250000 cfg:150000 control:150000
	json:150000 nbd:40000 meta:25000 voldb:60000 outdates:100000"

say() { printf 'fuzz: %s\n' "$*"; }

command -v clang >/dev/null 2>&1 || { say "no clang: skipped"; exit 77; }
probe=$(mktemp -d /tmp/replfuzz-probe.XXXXXX) || exit 99
printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
	'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return d && n > 99; }' \
	>"$probe/p.c"
if ! clang -fsanitize=fuzzer,address,undefined -o "$probe/p" "$probe/p.c" 2>/dev/null; then
	rm -rf "$probe"
	say "clang cannot link libFuzzer (Debian: libclang-rt-14-dev): skipped"
	exit 77
fi
rm -rf "$probe"

if [ ! -f "$bdir/Makefile" ]; then
	[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh >/dev/null 2>&1) ||
		{ say "autogen failed"; exit 99; }
	mkdir -p "$bdir" || exit 99
	say "configuring $bdir"
	(cd "$bdir" && CC=clang "$top/configure" --enable-fuzz --enable-sanitizers \
		>configure.out 2>&1) || { tail -30 "$bdir/configure.out"; exit 99; }
fi
say "building the targets in $bdir"
(cd "$bdir" && make -j"$jobs" fuzz >make-fuzz.out 2>&1) ||
	{ grep -E 'error' "$bdir/make-fuzz.out" | head -30; say "make fuzz failed"; exit 1; }

out=$bdir/fuzz-out
rm -rf "$out"
mkdir -p "$out" || exit 99
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# run_one NAME RUNS: one target; its log is $out/NAME.log, its status
# $out/NAME.rc.
run_one() {
	local name=$1 runs=$2 rc
	mkdir -p "$out/corpus-$name"
	"$bdir/tests/fuzz/fuzz-$name" -runs="$runs" -max_total_time=150 -timeout=10 \
		-print_final_stats=1 -artifact_prefix="$out/$name-" \
		"$out/corpus-$name" "$top/tests/fuzz/corpus/$name" >"$out/$name.log" 2>&1
	rc=$?
	echo "$rc" >"$out/$name.rc"
}

start=$(date +%s)
running=0
for t in $targets; do
	if [ "$running" -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
	run_one "${t%%:*}" $((${t#*:} * scale)) &
	running=$((running + 1))
done
wait
secs=$(($(date +%s) - start))

total=0 bad=0
for t in $targets; do
	name=${t%%:*}
	execs=$(awk '/stat::number_of_executed_units:/ {print $2}' "$out/$name.log" | tail -1)
	rc=$(cat "$out/$name.rc" 2>/dev/null || echo 99)
	total=$((total + ${execs:-0}))
	if [ "$rc" = 0 ]; then
		printf 'fuzz: %-10s %9s executions  ok\n' "$name" "${execs:-?}"
		continue
	fi
	bad=$((bad + 1))
	printf 'fuzz: %-10s %9s executions  FAILED (exit %s)\n' "$name" "${execs:-?}" "$rc"
	grep -E 'ERROR: |SUMMARY: |fuzz assertion failed|runtime error' "$out/$name.log" | head -5
	for f in "$out/$name"-*; do
		[ -f "$f" ] || continue
		say "reproducer: $f"
		say "replay it:  $bdir/tests/fuzz/fuzz-$name $f"
	done
	say "log: $out/$name.log"
done
say "$total executions in ${secs}s, $bad target(s) failed"
[ "$bad" = 0 ]
