#!/bin/bash
# tests/sim.sh: the deterministic simulator (tests/sim/replsim) over
# SIM_RUNS seeds (default 3500, from SIM_FROM, default 1), SIM_JOBS at a
# time (default 2), with the fault profile of CI (--no-eio).  With
# SIM_PROFILE=eio (tests/sim-eio.sh) it sweeps the default profile, disk
# EIO included, over SIM_EIO_RUNS seeds (default 4000, about a minute on two
# cores) against tests/sim/known-failures-eio instead; with
# SIM_PROFILE=split-brain (tests/sim-split-brain.sh) the split-brain
# profile (--split-brain: static mode, an operator who makes a split brain
# and resolves it) over SIM_SB_RUNS seeds (default 600) against
# tests/sim/known-failures-split-brain; with SIM_PROFILE=inline
# (tests/sim-inline.sh) the EIO profile with --inline (the writes a batch
# hands an idle pool run at the batch's end, on the loop thread, as the
# daemon runs them: iopool.c) over SIM_INLINE_RUNS seeds (default 2000)
# against tests/sim/known-failures-inline; with SIM_PROFILE=small-al
# (tests/sim-small-al.sh) the EIO profile with --small-al (4 KiB regions,
# 16 activity-log extents of 16 KiB: writes evict) over SIM_AL_RUNS seeds
# (default 1000); with SIM_PROFILE=full-disk (tests/sim-full-disk.sh) the
# EIO profile with --full-disk --bad-sectors (half the disk faults fill
# the backing's file system: its writes fail with ENOSPC; a quarter make
# a range of it unreadable, with a verify started there half the time; an
# invariant bounds how often either is tried) over SIM_FULL_RUNS seeds
# (default 2000).  13,100 seeds in all (the
# sanitizer build: 700).  Fails on
# any seed that violates an invariant or does not settle unless
# the known-failures list lists that seed (open findings, each with the
# invariant it breaks); prints the listed seeds that now pass, so that
# the list shrinks as they are fixed.  The seeds of the profile's
# regressions file (tests/sim/regressions, -eio, -split-brain: bugs found
# beyond the sweep, one seed each) run too, every time.  Replay any seed with
#   tests/sim/replsim --seed N --trace        (add --no-eio for sim.sh's)
# It runs in both of CI's builds: in the one with AddressSanitizer and
# UBSan (a sanitizer build of replsim), SIM_RUNS defaults to 200 seeds
# (about 40 s in CI; 100 for the EIO and split-brain profiles), and any
# sanitizer report fails the test, even where replsim's own exit status
# would pass
# (e9fd100's null memcpy went unnoticed for a while because only the
# plain build ran it).
set -u
top=$(cd "$(dirname "$0")/.." && pwd) || exit 99
bin=${top_builddir:-$top/build}/tests/sim/replsim
[ -x "$bin" ] || bin=tests/sim/replsim
# use SUFFIX LABEL RUNS SAN_RUNS [FLAG]: the profile's files (known-failures
# and regressions, SUFFIX after their names), label, seeds in the plain and
# in the sanitizer build, and replsim's flag.
use() {
	known=$top/tests/sim/known-failures$1
	regress=$top/tests/sim/regressions$1
	label=$2
	runs_plain=$3
	runs_san=$4
	profile=("${@:5}")
}
case ${SIM_PROFILE:-} in
eio) use -eio "sim (EIO)" "${SIM_EIO_RUNS:-4000}" "${SIM_EIO_RUNS:-100}" ;;
inline)
	use -inline "sim (EIO, inline writes)" "${SIM_INLINE_RUNS:-2000}" \
		"${SIM_INLINE_RUNS:-100}" --inline ;;
small-al)
	use -small-al "sim (EIO, small activity log)" "${SIM_AL_RUNS:-1000}" \
		"${SIM_AL_RUNS:-100}" --small-al ;;
full-disk)
	use -full-disk "sim (EIO, full disks, unreadable sectors)" "${SIM_FULL_RUNS:-2000}" \
		"${SIM_FULL_RUNS:-100}" --full-disk --bad-sectors ;;
split-brain)
	use -split-brain "sim (split brain)" "${SIM_SB_RUNS:-600}" "${SIM_SB_RUNS:-100}" \
		--split-brain ;;
*) use "" sim "${SIM_RUNS:-3500}" "${SIM_RUNS:-200}" --no-eio ;;
esac
sanitized=false
grep -q -a -E '__asan_init|__ubsan_handle' "$bin" && sanitized=true
if $sanitized; then
	runs=$runs_san
	# Sanitizer reports go to stderr (kept below), and end the run.
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}:abort_on_error=0
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}:halt_on_error=1
else
	runs=$runs_plain
fi
from=${SIM_FROM:-1}
jobs=${SIM_JOBS:-2}
out=$(mktemp /tmp/replsim.XXXXXX) || exit 99
err=$(mktemp /tmp/replsim-err.XXXXXX) || exit 99
trap 'rm -f "$out" "$err"' EXIT

start=$(date +%s)
nice "$bin" --runs "$runs" --from "$from" -j "$jobs" "${profile[@]}" >"$out" 2>"$err"
rc=$?
summary=$(tail -n 1 "$out")
last=$((from + runs - 1))
nreg=0
while read -r seed _; do
	case $seed in ''|'#'*) continue ;; esac
	[ "$seed" -ge "$from" ] && [ "$seed" -le "$last" ] && continue
	nice "$bin" --seed "$seed" "${profile[@]}" >>"$out" 2>>"$err"
	r=$?
	[ "$r" -eq 0 ] || [ "$r" -eq 1 ] || [ "$r" -eq 3 ] || rc=$r
	nreg=$((nreg + 1))
done < <(cat "$regress" 2>/dev/null)
secs=$(( $(date +%s) - start ))
echo "$summary"
echo "$label: $runs seeds and $nreg regression seed(s) in $secs s$($sanitized && echo " (sanitizer build)")"
if grep -q -E 'ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: [A-Za-z]*Sanitizer' "$err"; then
	echo "sim: a sanitizer report:"
	head -60 "$err"
	exit 1
fi
[ -s "$err" ] && { echo "sim: replsim's stderr:"; head -20 "$err"; }
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || [ "$rc" -eq 3 ] || { cat "$out"; exit 1; }

new=0
while read -r line; do
	seed=$(sed -n 's/^seed \([0-9]*\): VIOLATION.*/\1/p' <<<"$line")
	[ -n "$seed" ] || continue
	if grep -q "^$seed " "$known" 2>/dev/null; then
		continue
	fi
	echo "NEW: $line"
	new=$((new + 1))
done <"$out"
fixed=0
while read -r seed _; do
	case $seed in ''|'#'*) continue ;; esac
	if [ "$seed" -lt "$from" ] || [ "$seed" -gt "$last" ]; then continue; fi
	grep -q "^seed $seed: VIOLATION" "$out" || fixed=$((fixed + 1))
done <"$known"
[ "$fixed" -eq 0 ] || echo "sim: $fixed seed(s) of ${known#"$top"/} pass now: take them off the list"
if [ "$new" -ne 0 ]; then
	echo "sim: $new seed(s) fail that ${known#"$top"/} does not list"
	exit 1
fi
exit 0
