#!/bin/bash
# tests/headers.sh: every header of the project (common/, replication/,
# agent/, and the tests' own in tests/unit, tests/sim, tests/fuzz)
# compiles on its own: a translation unit holding config.h (as
# every source file starts) and that one header, compiled with the
# project's flags (warnings as errors when configured so).  A header that
# leans on what its includer happened to include first fails here, not in
# the next file that includes it in another order.  Make passes the
# compiler and the flags (HEADERS_CC, HEADERS_CFLAGS in Makefile.am); not
# an engine test, so it runs once, not again under the sanitizers.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

[ -n "${HEADERS_CC:-}" ] || skip "HEADERS_CC not set: run me through make check"
read -r -a cflags <<<"${HEADERS_CFLAGS:-}"
log "compiling with: $HEADERS_CC ${cflags[*]}"
n=0 bad=()
for h in "$top_srcdir"/common/*.h "$top_srcdir"/replication/*.h "$top_srcdir"/agent/*.h \
	"$top_srcdir"/tests/unit/*.h "$top_srcdir"/tests/sim/*.h "$top_srcdir"/tests/fuzz/*.h; do
	[ -f "$h" ] || continue
	n=$((n + 1))
	name=${h#"$top_srcdir"/}
	printf '#include "config.h"\n#include "%s"\n' "$(basename "$h")" >"$TESTDIR/tu.c"
	# The header's own directory first, as its sources see it.
	if ! $HEADERS_CC "${cflags[@]}" -I"$(dirname "$h")" -c -o "$TESTDIR/tu.o" \
		"$TESTDIR/tu.c" >"$TESTDIR/out" 2>&1; then
		echo "--- $name does not compile on its own:" >&2
		head -20 "$TESTDIR/out" >&2
		bad+=("$name")
	fi
done
[ "$n" -gt 0 ] || hard_error "no headers found under $top_srcdir"
log "$n headers compiled, ${#bad[@]} failed"
[ "${#bad[@]}" = 0 ] || fail "${#bad[@]} of $n headers do not compile alone: ${bad[*]}"
