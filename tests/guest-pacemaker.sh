#!/bin/bash
# tests/guest-pacemaker.sh: the user story.  Three nodes (tests/cluster.sh)
# run corosync, replagentd (cluster mode, auto-promote), libvirtd with the
# replagent hook and Pacemaker with STONITH (fence_ns); the test guest
# (tests/guest/: it writes an increasing counter to its disk and prints
# each value its disk acknowledged on the serial port) is on the replicated
# volume vm1, put under Pacemaker by templates/pcs-guest.sh exactly as the
# template says (tests/guest-cluster-lib.sh).
#
#   - Pacemaker starts the guest on a node, whose replica becomes Primary;
#     the counter goes up by one at a time.
#   - "virsh create" of the guest on another node is refused by the hook
#     (its replica is Secondary), with the reason in virsh's error.
#   - "pcs resource move" of the running guest live-migrates it: it runs on
#     the target node, it did not boot again, its counter went on without a
#     gap or a repeat, and the Primary role moved with it.
#   - Its node crashes (SIGKILL of every process of the node): Pacemaker
#     fences it and starts the guest on a survivor; the counter the guest
#     reads at boot is at least the last value it printed (every
#     acknowledged write survived) and at most one more; the time from the
#     crash to the guest running again is printed.
# Skipped (77) without root, namespaces, corosync, Pacemaker, libvirt, QEMU,
# nasm or resource-agents.
# shellcheck source=SCRIPTDIR/guest-cluster-lib.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/guest-cluster-lib.sh" || exit 99

gc_requires
t0=$(now_s)
gc_setup
on=$(gc_wait_running 1 120) || fail "Pacemaker did not start $GC_NAME within 120 s"
oi=${on#n}
wait_counter "$GC_SERIAL" 20 90 || { show_serial "$GC_SERIAL"; fail "no COUNTER=20 within 90 s"; }
[ "$(gc_boots)" = 1 ] || fail "the guest booted $(gc_boots) times"
s=$(oc_show "$oi")
[[ $s == role=Primary\ disk=UpToDate* ]] || fail "$GC_NAME runs on $on, but replagent there says: $s"
log "$GC_NAME runs on $on (Primary there), COUNTER=$(gc_last), $(rc_elapsed "$t0") s after the start"

# Another node must not start it: its replica is Secondary.
other=$((oi % 3 + 1))
if out=$(gc_virsh "$other" create "$GC_XML" 2>&1); then
	gc_virsh "$other" destroy "$GC_NAME" >/dev/null 2>&1
	fail "virsh create on n$other (Secondary) succeeded"
fi
grep -q "replagent-hook: $GC_NAME: volume $GC_NAME is Primary on $on" <<<"$out" ||
	fail "virsh create on n$other failed, but not with the hook's reason: $out"
log "virsh create on n$other refused: $(grep -o 'replagent-hook: .*' <<<"$out")"

# Live migration by Pacemaker.
to=$((6 - oi - other))
before=$(gc_last)
nlines=$(counters "$GC_SERIAL" | wc -l)
tm=$(now_s)
cluster_exec 1 pcs resource move "$GC_NAME" "n$to" >"$TESTDIR/move.out" 2>&1 ||
	fail "pcs resource move failed: $(cat "$TESTDIR/move.out")"
gc_wait_running 1 120 "n$to" >/dev/null || fail "$GC_NAME not running on n$to within 120 s of the move"
log "pcs resource move $GC_NAME n$to: Started there $(rc_elapsed "$tm") s later"
wait_counter "$GC_SERIAL" $((before + 40)) 60 ||
	{ show_serial "$GC_SERIAL"; fail "the counter did not go on after the migration"; }
[ "$(gc_boots)" = 1 ] || fail "the guest booted again: the move was no live migration"
check_sequence "$GC_SERIAL" 1 || fail "the counter skipped or repeated a value across the migration"
s=$(oc_show "$to")
[[ $s == role=Primary\ disk=UpToDate* ]] || fail "$GC_NAME migrated to n$to, but replagent there says: $s"
s=$(oc_show "$oi")
[[ $s == role=Secondary* ]] || fail "n$oi, the migration's source, says: $s"
grep -q -E "took the Primary role (over from $on|for the migration.s clients \\($on had demoted)" "$(rc_log "$to")" ||
	fail "n$to's replagentd did not take the role over from $on"
grep -q -E "migrate_(to|from)" "${CL_DIR[$to]}/log/pacemaker/pacemaker.log" "${CL_DIR[$oi]}/log/pacemaker/pacemaker.log" ||
	fail "Pacemaker's logs show no migrate_to/migrate_from"
log "migrated live: COUNTER $before -> $(gc_last) without a reboot ($(( $(counters "$GC_SERIAL" | wc -l) - nlines )) acknowledged writes since the move)"
cluster_exec 1 pcs resource clear "$GC_NAME" >/dev/null 2>&1 || fail "pcs resource clear failed"

# The guest's node crashes.
sleep 2
cluster_kill_node "$to"
t_kill=$(oc_kill_time "n$to") || fail "no SIGKILL of n$to in fence_ns.log"
gc_wait_boots 2 120 || { show_serial "$GC_SERIAL"; fail "the guest did not boot again within 120 s of the crash"; }
dt=$(rc_elapsed "$t_kill")
observer=$((to % 3 + 1))
now_on=$(gc_wait_running "$observer" 30) || fail "Pacemaker does not show $GC_NAME running after the crash"
[ "$now_on" != "n$to" ] || fail "Pacemaker shows $GC_NAME on the crashed node"
boot2=$(boot_counters "$GC_SERIAL" | sed -n 2p)
last=$(gc_last_of_boot 1)
log "n$to crashed after COUNTER=$last was printed; $GC_NAME runs again on $now_on $dt s after the crash, BOOT COUNTER=$boot2"
[ "$boot2" -ge "$last" ] || fail "BOOT COUNTER=$boot2 < $last: an acknowledged write was lost"
[ "$boot2" -le $((last + 1)) ] || fail "BOOT COUNTER=$boot2 > $last + 1: writes that never happened"
wait_counter "$GC_SERIAL" $((boot2 + 20)) 60 ||
	{ show_serial "$GC_SERIAL"; fail "the counter did not go on after the failover"; }
serial_clean "$GC_SERIAL" || { show_serial "$GC_SERIAL"; fail "the guest reported an error"; }
s=$(oc_show "${now_on#n}")
[[ $s == role=Primary\ disk=UpToDate* ]] || fail "$GC_NAME runs on $now_on, but replagent there says: $s"
cluster_exec "$observer" stonith_admin --history "n$to" >"$TESTDIR/history.txt" 2>&1
grep -q -E "(reboot|off) of n$to successful" "$TESTDIR/history.txt" ||
	fail "no successful fencing of n$to: $(cat "$TESTDIR/history.txt")"
log "PASS ($(rc_elapsed "$t0") s; crash -> guest running again: $dt s)"
