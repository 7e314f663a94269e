#!/bin/bash
# tests/lint-scripts.sh: every shell script of the project passes
# "shellcheck -S warning" (following the files it sources): the demo, the
# tests and their libraries, the fence agent, the templates a person runs,
# the benchmarks, the libvirt hook, the OCF agent and the build scripts.
# bash -n and sh -n first, so a syntax error says where it is.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires shellcheck
cd "$top_srcdir" || hard_error "cd $top_srcdir"
n=0 bad=0
files=()
for f in demo.sh autogen.sh tests/*.sh tests/fence_ns tests/guest/build.sh templates/*.sh \
	bench/*.sh libvirt-hooks/qemu ocf-resources/volume; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	case $(head -n 1 "$f") in
	*bash*) shell='bash' ;;
	*) shell='sh' ;;
	esac
	if ! "$shell" -n "$f" 2>"$TESTDIR/syntax"; then
		echo "$f: syntax:" >&2
		cat "$TESTDIR/syntax" >&2
		bad=$((bad + 1))
		continue
	fi
	files+=("$f")
done
# Each script costs about 2 s of shellcheck CPU (it follows functions.sh
# each time) and the suite runs one test at a time: use every core.
printf '%s\0' "${files[@]}" |
	xargs -0 -n 8 -P "$(nproc)" shellcheck -S warning -x >"$TESTDIR/sc" 2>&1
flagged=$(sed -n 's/^In \(.*\) line [0-9]*:$/\1/p' "$TESTDIR/sc" | sort -u | wc -l)
if [ "$flagged" -ne 0 ] || grep -q . "$TESTDIR/sc"; then
	cat "$TESTDIR/sc" >&2
	[ "$flagged" -ne 0 ] || flagged=1
	bad=$((bad + flagged))
fi
[ "$bad" = 0 ] || fail "$bad of $n scripts do not pass"
log "PASS: $n scripts pass shellcheck"
