#!/bin/bash
# tests/ocf-pacemaker.sh: automatic failover of a replicated volume by real
# Pacemaker, with the OCF agent ocf-resources/volume.  Three nodes
# (tests/cluster.sh) run corosync, replagentd in cluster mode and
# Pacemaker with STONITH (fence_ns); vol0 is created on all three and put
# under Pacemaker by templates/pcs-volume.sh, as the template says.  Then:
# Pacemaker promotes one instance and leaves the two others Unpromoted, and
# "pcs status", the promotion scores and "replagent show" agree on where
# vol0 is Primary; tests/ackcheck.py writes through that node's NBD socket;
# the node crashes (SIGKILL of all its processes): Pacemaker must fence it
# and promote a survivor, which must serve I/O (the time from the crash to
# the first NBD read served by a survivor is printed) and hold every write
# the crashed Primary acknowledged.  After more writes, the crashed node
# boots again (corosync, replagentd, pacemakerd): it must come back
# Unpromoted, resync, and the promotion must stay where it is.  The
# template's guest part is checked too (the constraints it makes; the
# guest stays disabled: no libvirt on these nodes).  Skipped
# (77) without root, network namespaces, corosync, Pacemaker, pcs or
# resource-agents.
# shellcheck source=SCRIPTDIR/ocf-cluster-lib.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/ocf-cluster-lib.sh" || exit 99

oc_requires
t0=$(now_s)
ACK1=$TESTDIR/ack-1.log
ACK2=$TESTDIR/ack-2.log
acks() {
	local n
	n=$(grep -c '^A ' "$1" 2>/dev/null)
	echo "${n:-0}"
}

# The template's guest part too: a VirtualDomain resource, created
# disabled (no libvirt here), ordered after the promotion and colocated
# with the Promoted instance.
OC_TEMPLATE_ENV=(GUEST=vm1 GUEST_XML="$TESTDIR/vm1.xml" GUEST_DISABLED=1)
oc_setup
grep -q . "$TESTDIR/pcs-volume.out" && sed 's/^/  pcs: /' "$TESTDIR/pcs-volume.out"
cluster_exec 1 cibadmin -Q -o constraints >"$TESTDIR/constraints.xml" 2>&1 ||
	fail "cibadmin -Q failed"
cx() { xmllint --xpath "$1" "$TESTDIR/constraints.xml" 2>/dev/null; }
[ "$(cx "count(//rsc_order[@first='$OC_VOL-clone'][@first-action='promote'][@then='vm1'][@then-action='start'])")" = 1 ] &&
	[ "$(cx "count(//rsc_colocation[@rsc='vm1'][@with-rsc='$OC_VOL-clone'][@with-rsc-role='Promoted'][@score='INFINITY'])")" = 1 ] ||
	fail "the template's constraints are not in the CIB: $(cat "$TESTDIR/constraints.xml")"
cluster_exec 1 cibadmin -Q -o resources >"$TESTDIR/resources.xml" 2>&1 || fail "cibadmin -Q failed"
for m in promotable=true promoted-max=1 promoted-node-max=1 clone-max=3 notify=true; do
	[ "$(xmllint --xpath "count(//clone[@id='$OC_VOL-clone']/meta_attributes/nvpair[@name='${m%=*}'][@value='${m#*=}'])" \
		"$TESTDIR/resources.xml" 2>/dev/null)" = 1 ] || fail "$OC_VOL-clone lacks $m: $(cat "$TESTDIR/resources.xml")"
done
[ "$(xmllint --xpath "count(//primitive[@id='$OC_VOL']/meta_attributes/nvpair[@name='resource-stickiness'])" \
	"$TESTDIR/resources.xml" 2>/dev/null)" = 1 ] || fail "$OC_VOL has no resource-stickiness"
oc_wait_roles 1 60 '^(n[123]=(Promoted|Unpromoted) ?){3}$' ||
	fail "Pacemaker did not start vol0 on all three nodes within 60 s"
oc_wait_roles 1 30 'Promoted' || fail "Pacemaker promoted no instance of vol0 within 30 s"
roles=$(oc_roles 1)
[ "$(grep -o '=Promoted' <<<"$roles" | wc -l)" = 1 ] &&
	[ "$(grep -o '=Unpromoted' <<<"$roles" | wc -l)" = 2 ] ||
	fail "expected one Promoted and two Unpromoted instances, Pacemaker shows: $roles"
p=$(oc_promoted 1)
pi=${p#n}
log "Pacemaker: $roles ($(rc_elapsed "$t0") s since the start)"

# pcs status, replagent and the scores agree.
cluster_exec 1 pcs status >"$TESTDIR/pcs-status.txt" 2>&1 || fail "pcs status failed"
grep -E "Promoted: \[ $p \]" "$TESTDIR/pcs-status.txt" >/dev/null ||
	fail "pcs status does not show vol0 Promoted on $p: $(cat "$TESTDIR/pcs-status.txt")"
for i in 1 2 3; do
	s=$(oc_show "$i")
	sc=$(oc_score 1 "n$i")
	log "n$i: $s; promotion score ${sc:-none}"
	if [ "$i" = "$pi" ]; then
		[[ $s == role=Primary\ disk=UpToDate* ]] || fail "n$i is Promoted, but replagent says: $s"
		[ "${sc:-0}" -ge 1000 ] || fail "the Primary's promotion score is '${sc}'"
	else
		[[ $s == role=Secondary\ disk=UpToDate\ up=yes* ]] ||
			fail "n$i is Unpromoted, but replagent says: $s"
		[ "${sc:-0}" -ge 100 ] && [ "${sc:-0}" -lt 1000 ] ||
			fail "n$i (Secondary, connected) has promotion score '$sc'"
	fi
done
grep -q 'Unpromoted: \[' "$TESTDIR/pcs-status.txt" ||
	fail "pcs status shows no Unpromoted instances: $(cat "$TESTDIR/pcs-status.txt")"

# The writer, 32 writes in flight, on the Primary.
start_writer "$ACK1" --unix "${RC_NBD[pi]}" --export "$OC_VOL" --duration 60 \
	--inflight 32 --flush-every 64 --span $((16 << 20)) --stall-timeout 30
k=0
until [ "$(acks "$ACK1")" -ge 500 ] && [ "$k" -ge 30 ]; do
	[ "$k" -ge 200 ] && fail "fewer than 500 writes acknowledged by $p in 20 s"
	_alive "$WRITER_PID" || { wait_writer; fail "the writer ended early"; }
	sleep 0.1
	k=$((k + 1))
done

# The crash.  Survivors: o (observer) and the other one.
survivors=()
for i in 1 2 3; do
	[ "$i" = "$pi" ] || survivors+=("$i")
done
o=${survivors[0]}
cluster_kill_node "$pi"
# The crash's time: fence_ns's (so cluster_kill_node's) first SIGKILL.
t_kill=$(oc_kill_time "$p") || fail "no SIGKILL of $p in fence_ns.log"
served=
while [ -z "$served" ]; do
	for i in "${survivors[@]}"; do
		oc_nbd_read "$i" && { served=$i; break; }
	done
	[ -n "$served" ] && break
	awk -v a="$t_kill" -v b="$(now_s)" 'BEGIN { exit !(b - a > 90) }' &&
		fail "no survivor served a read within 90 s of $p's crash; Pacemaker: $(oc_roles "$o")"
	sleep 0.2
done
dt=$(rc_elapsed "$t_kill")
log "$p crashed: n$served serves I/O $dt s later"
np=n$served

_oc_failed_over() {
	CL_LAST=$(cluster_pcmk_state "$o")
	grep -q "^offline.* $p\\b" <<<"$CL_LAST" && ! grep -q "^unclean.* $p\\b" <<<"$CL_LAST" &&
		grep -q "^rsc $OC_VOL Promoted $np\$" <<<"$CL_LAST"
}
_cl_wait "$p fenced, vol0 Promoted on $np" 30 _oc_failed_over ||
	fail "Pacemaker does not show $p fenced and vol0 Promoted on $np"
cluster_exec "$o" stonith_admin --history "$p" >"$TESTDIR/history.txt" 2>&1
grep -q -E "(reboot|off) of $p successful" "$TESTDIR/history.txt" ||
	fail "no successful fencing of $p: $(cat "$TESTDIR/history.txt")"
s=$(oc_show "$served")
[[ $s == role=Primary\ disk=UpToDate* ]] || fail "$np is Promoted, replagent says: $s"
for i in "${survivors[@]}"; do
	[ "$i" = "$served" ] && continue
	s=$(oc_show "$i")
	[[ $s == role=Secondary* ]] || fail "n$i (Unpromoted) says: $s"
done
log "Pacemaker: $(oc_roles "$o"); fencing: $(head -n 1 "$TESTDIR/history.txt")"

k=0
while _alive "$WRITER_PID"; do
	[ "$k" -ge 300 ] && fail "the writer on $p's socket did not end within 30 s of the crash"
	sleep 0.1
	k=$((k + 1))
done
wait_writer >/dev/null
log "$(acks "$ACK1") writes acknowledged by $p before it crashed"
ackcheck check --log "$ACK1" --unix "${RC_NBD[served]}" --export "$OC_VOL" ||
	fail "$np's export lacks writes that $p acknowledged"

# More writes, for the returning node to catch up on.
start_writer "$ACK2" --unix "${RC_NBD[served]}" --export "$OC_VOL" --duration 3 \
	--inflight 16 --flush-every 64 --base $((16 << 20)) --span $((16 << 20)) --stall-timeout 20
wait_writer >/dev/null || fail "writes through $np failed"

# The crashed node boots again.
t1=$(now_s)
oc_start_node "$pi"
cluster_wait_pcmk "$o" 3 60 || fail "$p did not rejoin Pacemaker within 60 s"
oc_wait_roles "$o" 60 "$p=Unpromoted" || fail "$p's instance is not Unpromoted"
log "$p back, Unpromoted, $(rc_elapsed "$t1") s after its restart"
synced=yes
rc_wait_all 60 "$RC_SYNCED" "$OC_VOL" || synced=
[ -n "$synced" ] && log "$p resynced $(rc_elapsed "$t1") s after its restart"

# Stickiness: nothing moves by itself (checked before failing on the
# resync: the more this run tells, the better).
sleep 10
roles=$(oc_roles "$o")
[[ $roles =~ $np=Promoted ]] && [[ $roles =~ $p=Unpromoted ]] ||
	fail "the promotion moved after $p came back: $roles"
s=$(oc_show "$served")
[[ $s == role=Primary* ]] || fail "$np is no longer Primary: $s"
log "later still: $roles; scores: $p=$(oc_score "$o" "$p") $np=$(oc_score "$o" "$np");" \
	"$p: $(oc_show "$pi")"
[ -n "$synced" ] || fail "$p did not resync within 60 s of its restart"

for f in "$ACK1" "$ACK2"; do
	ackcheck check --log "$f" --unix "${RC_NBD[served]}" --export "$OC_VOL" ||
		fail "$np lost acknowledged writes ($(basename "$f"))"
done
cluster_exec "$o" crm_mon -1 --output-as=xml 2>/dev/null | grep -q '<failure ' &&
	log "failed actions: $(cluster_exec "$o" crm_mon -1 2>/dev/null | sed -n '/Failed Resource Actions/,$p')"
log "PASS ($(rc_elapsed "$t0") s; crash of the Primary -> I/O on the new Primary: $dt s)"
