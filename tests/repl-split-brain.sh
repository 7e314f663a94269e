#!/bin/bash
# tests/repl-split-brain.sh: both replicas write while apart.  a (Primary)
# writes while b is down; then a is down and b is promoted and writes.
# When they meet: split brain, detected, the link StandAlone, status
# critical naming the command; nothing is overwritten.  b demotes, a is
# promoted (the guest moves to the data kept); "resolve --keep a" on both
# nodes, a first (a then waits for b to discard
# its data): b saves the regions it wrote to a file (checked byte for
# byte), takes a's data, and both end identical with a's writes.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp qemu-io
requires_replagentd
requires_replagent

uri() { echo "nbd+unix:///$CLUSTER_VOL?socket=${NODE_NBD_SOCK[$1]}"; }
cluster_config -t 2 -s 64M a b
start_node a
start_node b
wait_status a 30 'p["b"]["link"] == "Connected"' || fail "a and b did not connect"
promote a
qemu-io -f raw -c "write -P 0x11 0 4M" -c flush "$(uri a)" >/dev/null || fail "write 1"

stop_node b
qemu-io -f raw -c "write -P 0xaa 8M 1M" -c flush "$(uri a)" >/dev/null || fail "write on a"
ra_cli a demote "$CLUSTER_VOL" >/dev/null || fail "demote a"
stop_node a

start_node b
ra_cli b promote "$CLUSTER_VOL" >/dev/null || fail "b cannot be promoted alone"
qemu-io -f raw -c "write -P 0xbb 16M 1M" -c flush "$(uri b)" >/dev/null || fail "write on b"
start_node a

wait_status b 30 'p["a"]["link"] == "StandAlone"' || fail "split brain not detected"
ra_cli b status >"$TESTDIR/st.out"
rc=$?
log "status on b (exit $rc): $(tr '\n' ' ' <"$TESTDIR/st.out")"
[ "$rc" = 2 ] || fail "status should be critical (2), was $rc"
grep -q "replagent resolve $CLUSTER_VOL --keep" "$TESTDIR/st.out" ||
	fail "status does not name the command that resolves it"
# Nothing was overwritten on either side.
qemu-io -f raw -c "read -P 0xbb 16M 1M" "$(uri b)" >/dev/null || fail "b's data changed"

# a's data is kept.  a, the side that makes the connections, resolves
# first: it must keep trying until b has discarded its data (on 96765b5 it
# went StandAlone again at once, and b, blank then, had nobody to
# connect to).
ra_cli b demote "$CLUSTER_VOL" >/dev/null || fail "demote b"
ra_cli a promote "$CLUSTER_VOL" >/dev/null || fail "promote a"
ra_cli a resolve "$CLUSTER_VOL" --keep a || fail "resolve on a"
wait_status a 30 '"data is kept" in p["b"].get("reason", "")' ||
	fail "a does not wait for b to discard its data"
ra_cli b resolve "$CLUSTER_VOL" --keep a || fail "resolve on b"
wait_status a 60 'p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0 and p["b"]["peer_disk"] == "UpToDate"' ||
	fail "b did not resync from a"

saved=
for f in "${NODE_BACKING[b]}".discarded-*; do
	case $f in *.regions | *'*') ;; *) saved=$f ;; esac
done
[ -n "$saved" ] || fail "b's discarded regions were not saved"
log "b's writes kept in $saved: $(tr '\n' ' ' <"$saved.regions" | head -c 200)"
cmp -s <(dd if="$saved" bs=1M skip=16 count=1 status=none) \
	<(head -c 1048576 /dev/zero | tr '\0' '\273') || fail "the saved file lacks b's writes"

stop_node a
stop_node b
cmp_backings a b || fail "a and b differ after the resolution"
cmp -s <(dd if="${NODE_BACKING[b]}" bs=1M skip=8 count=1 status=none) \
	<(head -c 1048576 /dev/zero | tr '\0' '\252') || fail "a's writes are not on b"
log "PASS"
