#!/bin/bash
# tests/ocf-outdated.sh: Pacemaker never promotes an Outdated replica, even
# when it is the only candidate left.  Three nodes run corosync,
# replagentd in cluster mode and Pacemaker with STONITH; vol0 is under
# Pacemaker as templates/pcs-volume.sh makes it, Promoted on node P, with
# tests/ackcheck.py writing through P.  Then, with the names Pacemaker
# chose, A and B being the Unpromoted ones:
#   1. A's replagentd is stopped while P keeps writing: A is recorded
#      Outdated (Pacemaker sees A's instance fail and cannot start it);
#   2. B's instance is banned (pcs resource ban: stopped, replagent down)
#      and P writes on: B is Outdated too;
#   3. P crashes and is fenced;
#   4. A's replagentd is started again and its failure cleaned up (pcs
#      resource cleanup): A is the only candidate in the partition, and it
#      must stay Unpromoted, without a promotion score, for 20 s; its own
#      replagentd must say Outdated and refuse a promotion;
#   5. B's ban is cleared: B comes back Outdated and is not promoted either;
#   6. P boots again: Pacemaker must promote P (the only UpToDate replica),
#      A and B must resync from it, and P must hold every acknowledged write.
# Skipped (77) without root, network namespaces, corosync, Pacemaker, pcs
# or resource-agents.
# shellcheck source=SCRIPTDIR/ocf-cluster-lib.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/ocf-cluster-lib.sh" || exit 99

oc_requires
t0=$(now_s)
ACK=$TESTDIR/ack.log
acks() {
	local n
	n=$(grep -c '^A ' "$1" 2>/dev/null)
	echo "${n:-0}"
}
# wait_acks N T: until the writer has N acknowledgements (T seconds).
wait_acks() {
	local k=0
	until [ "$(acks "$ACK")" -ge "$1" ]; do
		[ "$k" -ge $(($2 * 10)) ] && fail "fewer than $1 writes acknowledged by $p within $2 s"
		_alive "$WRITER_PID" || { wait_writer; fail "the writer ended early"; }
		sleep 0.1
		k=$((k + 1))
	done
}
# no_promotion T: for T seconds, no instance of vol0 is Promoted (seen from
# node B's side, n$b) and no node has a promotion score.
no_promotion() {
	local end=$(($(date +%s) + $1)) r
	while [ "$(date +%s)" -lt "$end" ]; do
		r=$(oc_roles "$b")
		[[ $r =~ =Promoted ]] &&
			fail "Pacemaker promoted an Outdated replica: $r; n$a: $(oc_show "$a"); n$b: $(oc_show "$b")"
		sleep 1
	done
}

oc_setup
oc_wait_roles 1 60 '^n[123]=(Promoted|Unpromoted) n[123]=(Promoted|Unpromoted) n[123]=(Promoted|Unpromoted)$' ||
	fail "Pacemaker did not start vol0 on all three nodes within 60 s"
oc_wait_roles 1 30 '=Promoted' || fail "Pacemaker promoted no instance within 30 s"
p=$(oc_promoted 1)
pi=${p#n}
others=()
for i in 1 2 3; do
	[ "$i" = "$pi" ] || others+=("$i")
done
a=${others[0]} b=${others[1]}
log "vol0 Promoted on $p; A = n$a, B = n$b ($(rc_elapsed "$t0") s since the start)"

start_writer "$ACK" --unix "${RC_NBD[pi]}" --export "$OC_VOL" --duration 120 \
	--inflight 16 --flush-every 64 --span $((16 << 20)) --stall-timeout 60
wait_acks 300 20

# 1. A's replagentd stops; P writes on.
rc_stop "$a"
n=$(acks "$ACK")
wait_acks $((n + 500)) 30
rc_wait "$pi" 20 "p[\"n$a\"][\"peer_disk\"] == \"Outdated\"" ||
	fail "$p does not record n$a as Outdated"
want=$(printf '%s\n' "n$pi=Promoted" "n$b=Unpromoted" | sort | xargs)
oc_wait_roles "$b" 60 "^$want\$" ||
	fail "Pacemaker still shows an instance on n$a (its replagentd is stopped)"
log "1. n$a's replagentd stopped, n$a recorded Outdated; Pacemaker: $(oc_roles "$b")"

# 2. B's instance banned (down), P writes on.
cluster_exec "$b" pcs resource ban "$OC_VOL-clone" "n$b" >/dev/null 2>&1 ||
	fail "pcs resource ban failed"
rc_wait "$b" 30 'v.get("up") is False' || fail "n$b's replica is not down after the ban"
n=$(acks "$ACK")
wait_acks $((n + 500)) 30
kill -TERM "$WRITER_PID"
wait_writer >/dev/null || log "(the writer reported a problem; the check below decides)"
rc_wait "$pi" 20 "p[\"n$b\"][\"peer_disk\"] == \"Outdated\"" ||
	fail "$p does not record n$b as Outdated"
log "2. n$b banned and down, recorded Outdated; $(acks "$ACK") writes acknowledged by $p"

# 3. P crashes and is fenced.
cluster_kill_node "$pi"
_fenced() {
	CL_LAST=$(cluster_pcmk_state "$b")
	grep -q "^offline.* $p\\b" <<<"$CL_LAST" && ! grep -q "^unclean.* $p\\b" <<<"$CL_LAST" &&
		grep -q '^dc ' <<<"$CL_LAST"
}
_cl_wait "$p fenced" 60 _fenced || fail "$p was not fenced within 60 s"
log "3. $p crashed and was fenced; Pacemaker: $(oc_roles "$b")"

# 4. A's replagentd back, its failure cleaned up: the only candidate.
rc_start "$a"
cluster_exec "$b" pcs resource cleanup "$OC_VOL-clone" node="n$a" >/dev/null 2>&1 ||
	fail "pcs resource cleanup failed"
oc_wait_roles "$b" 60 "n$a=(Unpromoted|Promoted)" ||
	fail "Pacemaker did not find n$a's instance running after the cleanup"
s=$(oc_show "$a")
log "4. n$a back: Pacemaker: $(oc_roles "$b"); replagent: $s"
# (If replagentd does not know that A missed writes, the agent cannot.)
if [[ $s != *disk=Outdated* ]]; then
	ackcheck check --log "$ACK" --file "$(rc_backing "$a")" >/dev/null 2>&1 ||
		s="$s (and ackcheck finds acknowledged writes missing in its backing file)"
	fail "n$a missed acknowledged writes, but its replagentd says after its restart: $s"
fi
no_promotion 20
[ -z "$(oc_score "$b" "n$a")" ] || fail "n$a (Outdated) has a promotion score: $(oc_score "$b" "n$a")"
out=$(rc_cli "$a" promote "$OC_VOL" 2>&1) &&
	fail "replagentd promoted n$a, an Outdated replica"
log "   n$a stays Unpromoted for 20 s, no score; replagentd refuses too: $out"

# 5. B's ban cleared: B comes back, Outdated, not promoted either.
cluster_exec "$b" pcs resource clear "$OC_VOL-clone" "n$b" >/dev/null 2>&1 ||
	fail "pcs resource clear failed"
oc_wait_roles "$b" 60 "n$b=(Unpromoted|Promoted)" || fail "n$b's instance did not start again"
rc_wait "$b" 10 'v.get("up") is True' || fail "n$b's replica is not up"
no_promotion 15
s=$(oc_show "$b")
[[ $s == *disk=Outdated* ]] || fail "n$b is back with its disk not Outdated: $s"
log "5. n$b back, Outdated, not promoted: $(oc_roles "$b")"

# 6. P boots again: it is promoted, the others resync from it.
t1=$(now_s)
oc_start_node "$pi"
oc_wait_roles "$b" 90 "$p=Promoted" || fail "Pacemaker did not promote $p after it came back"
log "6. $p back and Promoted $(rc_elapsed "$t1") s after its restart: $(oc_roles "$b")"
rc_wait_all 60 "$RC_SYNCED" "$OC_VOL" || fail "the replicas did not resync from $p within 60 s"
ackcheck check --log "$ACK" --unix "${RC_NBD[pi]}" --export "$OC_VOL" ||
	fail "$p lacks acknowledged writes"
for i in "$a" "$b"; do
	s=$(oc_show "$i")
	[[ $s == role=Secondary\ disk=UpToDate* ]] || fail "n$i after the resync: $s"
done
log "PASS ($(rc_elapsed "$t0") s)"
