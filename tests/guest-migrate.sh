#!/bin/bash
# tests/guest-migrate.sh: "virsh migrate --live" of the test guest between
# nodes, without Pacemaker and without auto-promote: the roles are the
# person's (replagent promote), and the migration window is all that moves
# the Primary role.  Three nodes (tests/cluster.sh) run corosync,
# replagentd in cluster mode and libvirtd with the replagent hook; the
# guest's volume vm1 is replicated on all three.
#
#   - The guest runs on n1 (promoted by hand); it is migrated live to n2:
#     it keeps running (no second boot, the counter goes on by one), n2 is
#     Primary and n1 Secondary, and the window on n2 is closed again.
#   - It is migrated back to n1 the same way.
#   - A migration to n3, whose replica is down (a stopped resource), is
#     refused by n3's hook, with the reason in virsh's error; the guest
#     goes on running on n1, which stays Primary.
#   - At the end every replica holds the same bytes (verify).
# Skipped (77) without root, namespaces, corosync, libvirt, QEMU or nasm.
# shellcheck source=SCRIPTDIR/guest-cluster-lib.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/guest-cluster-lib.sh" || exit 99

gc_requires
t0=$(now_s)
rc_setup 3
for i in 1 2 3; do
	oc_install "$i"
	gc_nbd_link "$i"
done
rc_cli 1 volume create "$GC_NAME" --size 64M --nodes n1,n2,n3 || fail "volume create failed"
rc_wait_all 30 "$RC_SYNCED" "$GC_NAME" || fail "$GC_NAME: replicas not in sync within 30 s"
rc_promote_retry 1 20 "$GC_NAME" || fail "promote on n1 refused: $RC_PROMOTE_OUT"
build_guest "$(rc_uri 1 "$GC_NAME")"
disk=$(sed -n '/<disk /,/<\/disk>/p' "$top_srcdir/templates/domain-vm1.xml")
template_domain "$GC_XML" "$GC_NAME" "$disk" "$GC_SERIAL"
: >"$GC_SERIAL"
chmod 0644 "$GC_XML" "$GC_SERIAL"
for i in 1 2 3; do
	gc_libvirt "$i"
done
log "corosync, replagentd, libvirtd up; $GC_NAME Primary on n1 ($(rc_elapsed "$t0") s)"

gc_virsh 1 create "$GC_XML" >/dev/null || fail "virsh create on n1 failed"
wait_counter "$GC_SERIAL" 20 60 || { show_serial "$GC_SERIAL"; fail "no COUNTER=20 within 60 s"; }

# migrate FROM TO: virsh migrate --live, then the checks of a good one.
migrate() {
	local from=$1 to=$2 before t out s
	before=$(gc_last)
	t=$(now_s)
	out=$(gc_virsh "$from" migrate --live "$GC_NAME" "qemu+tcp://n$to/system" 2>&1) ||
		fail "virsh migrate n$from -> n$to failed: $out"
	gc_virsh "$to" domstate "$GC_NAME" 2>/dev/null | grep -q running ||
		fail "$GC_NAME is not running on n$to after the migration"
	wait_counter "$GC_SERIAL" $((before + 30)) 60 ||
		{ show_serial "$GC_SERIAL"; fail "the counter did not go on after the migration to n$to"; }
	[ "$(gc_boots)" = 1 ] || fail "the guest booted again: no live migration"
	check_sequence "$GC_SERIAL" 1 || fail "the counter skipped or repeated a value"
	rc_wait "$to" 10 'v["role"] == "Primary" and v["window"] == "none"' "$GC_NAME" ||
		fail "n$to is not Primary with its window closed"
	s=$(oc_show "$from")
	[[ $s == role=Secondary* ]] || fail "n$from, the source, says: $s"
	log "migrated live n$from -> n$to in $(rc_elapsed "$t") s: COUNTER $before -> $(gc_last)"
}
migrate 1 2
migrate 2 1

# n3 cannot take it: its replica is down.
rc_cli 3 down "$GC_NAME" || fail "replagent down on n3 refused"
if out=$(gc_virsh 1 migrate --live "$GC_NAME" qemu+tcp://n3/system 2>&1); then
	fail "the migration to n3 (its replica down) succeeded"
fi
grep -q "replagent-hook: $GC_NAME: volume $GC_NAME is down on this node: cannot receive the domain" \
	<<<"$out" || fail "the migration to n3 failed, but not with the hook's reason: $out"
log "migration to n3 refused: $(grep -o 'replagent-hook: .*' <<<"$out")"
before=$(gc_last)
wait_counter "$GC_SERIAL" $((before + 20)) 60 || fail "the guest stopped after the refused migration"
[ "$(gc_boots)" = 1 ] || fail "the guest booted again"
s=$(oc_show 1)
[[ $s == role=Primary* ]] || fail "n1 is no longer Primary after the refused migration: $s"
rc_cli 3 up "$GC_NAME" || fail "replagent up on n3 refused"
rc_wait_all 30 "$RC_SYNCED" "$GC_NAME" 1 || fail "n3 did not resync"

gc_virsh 1 destroy "$GC_NAME" >/dev/null || fail "virsh destroy failed"
serial_clean "$GC_SERIAL" || { show_serial "$GC_SERIAL"; fail "the guest reported an error"; }
rc_cli 1 verify "$GC_NAME" >"$TESTDIR/verify.out" 2>&1 ||
	fail "the replicas differ: $(cat "$TESTDIR/verify.out")"
log "PASS ($(rc_elapsed "$t0") s): $(tail -n 1 "$TESTDIR/verify.out")"
