#!/bin/bash
# tests/fuzz-corpus.sh: the committed seed corpora (tests/fuzz/corpus) are
# what tests/fuzz/gen-corpus writes from the project's own encoders today.
# A change to a wire, cluster or metadata format that forgets "make
# fuzz-corpus" leaves the fuzzers (and their replays in make check)
# starting from messages the code now refuses at the first check: here it
# fails, naming the stale files.  Hand-added inputs (regress-* and the
# other files gen-corpus does not write) are left alone.  Not an engine
# test: it runs once, not again under the sanitizers.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

gen=$top_builddir/tests/fuzz/gen-corpus
[ -x "$gen" ] || hard_error "$gen not found: build it first (make check builds it)"
mkdir "$TESTDIR/corpus" && "$gen" "$TESTDIR/corpus" >"$TESTDIR/out" 2>&1 || {
	cat "$TESTDIR/out" >&2
	fail "gen-corpus failed"
}
n=0 stale=()
while IFS= read -r f; do
	n=$((n + 1))
	cmp -s "$TESTDIR/corpus/$f" "$top_srcdir/tests/fuzz/corpus/$f" || stale+=("$f")
done < <(cd "$TESTDIR/corpus" && find . -type f | sed 's|^\./||' | sort)
[ "$n" -gt 0 ] || fail "gen-corpus wrote no file"
[ ${#stale[@]} = 0 ] ||
	fail "${#stale[@]} of $n seed inputs in tests/fuzz/corpus are not what gen-corpus" \
		"writes now (run make fuzz-corpus and commit): ${stale[*]}"
log "PASS: the $n seed inputs gen-corpus writes are the committed ones"
