#!/bin/bash
# run-all.sh: the whole test suite on a fresh Debian 12 machine, as root.
# Installs what the build and the tests need (apt-get), builds with
# warnings as errors, runs every test, then rebuilds the engine with
# AddressSanitizer + UBSan and runs the engine tests again, and runs the
# fuzz targets (tests/fuzz.sh) in a clang build.  Ends with one
# line "N passed, N failed, N skipped".  CI runs it through .ci/run.
set -u
cd "$(dirname "$0")/.." || exit 1
top=$(pwd)

# shellcheck source=tests/setup.sh
. "$top/tests/setup.sh"

pass=0 fail=0 skip=0
# check DIR TARGET JOBS: runs the tests, adds up the harness's counts.
check() {
	local dir=$1 target=$2 jobs=$3 p f s
	log "running $target in $dir"
	(cd "$dir" && make -j"$jobs" "$target" 2>&1 | grep -E '^(PASS|FAIL|SKIP|XFAIL|XPASS|ERROR):') || true
	local logf="$dir/test-suite.log"
	if [ ! -f "$logf" ]; then
		echo "no test-suite.log in $dir"
		fail=$((fail + 1))
		return
	fi
	p=$(awk '/^# PASS:/ {print $3}' "$logf"); f=$(awk '/^# FAIL:/ {print $3}' "$logf")
	s=$(awk '/^# SKIP:/ {print $3}' "$logf")
	e=$(awk '/^# ERROR:/ {print $3}' "$logf")
	pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0} + ${e:-0})); skip=$((skip + ${s:-0}))
	if [ "${f:-0}" != 0 ] || [ "${e:-0}" != 0 ]; then
		log "failures in $dir:"
		sed -n '/^FAIL\|^ERROR/,/^$/p' "$logf" | head -200
		for t in $(awk '/^(FAIL|ERROR):/ {print $2}' "$logf" 2>/dev/null); do
			[ -f "$dir/$t.log" ] || continue
			# What the test said (its FAIL line and the lines before it),
			# then the end of the log (the daemons' last words).
			echo "--- $t.log: the test's own lines"
			grep -v -E '^(> )?[A-Z][a-z]{2} [0-9]{2} [0-9:.]+ [a-z-]+\[[0-9]+\]' "$dir/$t.log" |
				grep -B 15 -m 1 -E ': FAIL: |^FAIL' | head -40
			echo "--- $t.log: its last lines"
			tail -60 "$dir/$t.log"
		done
	fi
}

log() { setup_log "$@"; }

# What an earlier, interrupted run left on this machine is not this run's
# leak: tests/leaks.sh reports it, but fails only on what is new.
before=$(mktemp /tmp/replagent-leaks-before.XXXXXX) || exit 1
trap 'rm -f "$before"' EXIT
{ ip netns list 2>/dev/null | awk '{print "netns " $1}'
  for d in /tmp/replagent-*.??????; do [ -d "$d" ] && echo "dir $d"; done; } >"$before"
export REPLAGENT_LEAKS_BEFORE=$before

status=0
setup_packages || { echo "package installation failed"; status=1; }
if [ $status = 0 ]; then
	log "autogen"
	./autogen.sh >/dev/null 2>&1 || { echo "autogen failed"; status=1; }
fi
if [ $status = 0 ] && setup_build "$top" build-ci; then
	# The engine tests have no cluster timing: two at a time (as under
	# the sanitizers below).  The cluster tests time corosync and
	# Pacemaker on two cores: one at a time, tests/leaks.sh last.
	check build-ci check-engine 2
	check build-ci check-cluster 1
else
	fail=$((fail + 1))
fi
if [ $status = 0 ] && setup_build "$top" build-asan --enable-sanitizers; then
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
	export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
	# The engine tests have no cluster timing: two at a time.
	check build-asan check-engine 2
else
	fail=$((fail + 1))
fi
# The fuzz targets (tests/fuzz.sh), once, in their own clang build: one
# more test in the count.
if [ $status = 0 ]; then
	log "fuzzing (tests/fuzz.sh build-fuzz)"
	unset ASAN_OPTIONS UBSAN_OPTIONS
	tests/fuzz.sh "$top/build-fuzz"
	case $? in
	0) pass=$((pass + 1)) ;;
	77) skip=$((skip + 1)) ;;
	*) fail=$((fail + 1)) ;;
	esac
else
	fail=$((fail + 1))
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
