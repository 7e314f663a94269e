#!/bin/bash
# tests/demo-short.sh: demo.sh itself, as a user runs it, shortened
# (DEMO_SHORT=1: the same steps, shorter waits between them) and on this
# build (DEMO_BUILD, SKIP_APT=1).  It must end with status 0 (demo.sh exits
# 1 when a step fails or an acknowledged write was lost), say that every
# acknowledged write survived the crash and where the guest runs again,
# and leave no namespace behind.  Skipped (77) where the cluster tests are.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires_root
requires_netns
requires corosync pacemakerd pcs virsh libvirtd qemu-system-x86_64 nasm
requires_replagentd
requires_replagent

out=$TESTDIR/demo.out
before=$(ip netns list | wc -l)
log "running demo.sh (DEMO_SHORT=1), output in $out"
DEMO_SHORT=1 DEMO_BUILD=$top_builddir SKIP_APT=1 timeout -k 10 600 \
	"$top_srcdir/demo.sh" </dev/null >"$out" 2>&1
rc=$?
# Without the escape sequences, for the log.
sed 's/\x1b\[[0-9;]*m//g' "$out" | grep -E '^(>>>|    )' | head -n 80
if [ "$rc" != 0 ]; then
	grep -a -E ': (FAIL|ERROR|SKIP)|did not|not ' "$out" | head -n 20
	tail -n 40 "$out"
	fail "demo.sh exited with status $rc"
fi
grep -q 'every acknowledged write survived the crash' "$out" ||
	fail "demo.sh did not say that every acknowledged write survived"
grep -q 'AN ACKNOWLEDGED WRITE WAS LOST' "$out" && fail "demo.sh lost an acknowledged write"
grep -q -E 'The guest runs again on n[123], [0-9.]+ s after the crash' "$out" ||
	fail "demo.sh did not show the guest running again"
[ "$(ip netns list | wc -l)" -le "$before" ] || fail "demo.sh left network namespaces behind"
log "PASS ($(grep -o -E 'runs again on n[123], [0-9.]+ s after the crash' "$out"))"
