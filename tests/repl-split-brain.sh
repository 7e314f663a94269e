#!/bin/bash
# tests/repl-split-brain.sh: both replicas write while apart.  a (Primary)
# writes while b is down; then a is down and b is promoted and writes.
# When they meet: split brain, detected, the link StandAlone, status
# critical naming the command; nothing is overwritten.  "resolve --keep b"
# on both nodes: a saves the regions it wrote to a file (checked byte for
# byte), takes b's data, and both end identical with b's writes.
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

ra_cli a resolve "$CLUSTER_VOL" --keep b || fail "resolve on a"
ra_cli b resolve "$CLUSTER_VOL" --keep b || fail "resolve on b"
wait_status b 60 'p["a"]["link"] == "Connected" and p["a"]["out_of_sync_bytes"] == 0 and p["a"]["peer_disk"] == "UpToDate"' ||
	fail "a did not resync from b"

saved=
for f in "${NODE_BACKING[a]}".discarded-*; do
	case $f in *.regions | *'*') ;; *) saved=$f ;; esac
done
[ -n "$saved" ] || fail "a's discarded regions were not saved"
log "a's writes kept in $saved: $(tr '\n' ' ' <"$saved.regions" | head -c 200)"
cmp -s <(dd if="$saved" bs=1M skip=8 count=1 status=none) \
	<(head -c 1048576 /dev/zero | tr '\0' '\252') || fail "the saved file lacks a's writes"

stop_node a
stop_node b
cmp_backings a b || fail "a and b differ after the resolution"
cmp -s <(dd if="${NODE_BACKING[a]}" bs=1M skip=16 count=1 status=none) \
	<(head -c 1048576 /dev/zero | tr '\0' '\273') || fail "b's writes are not on a"
log "PASS"
