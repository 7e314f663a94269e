#!/bin/bash
# bench/failover-bench.sh: ROUNDS (10) failovers in a row of a replicated
# volume under Pacemaker on the netns 3-node cluster (tests/cluster.sh,
# tests/ocf-cluster-lib.sh: corosync, replagentd, Pacemaker with fence_ns
# STONITH, the volume as templates/pcs-volume.sh makes it), with
# tests/ackcheck.py writing to the Primary.  Not a guest: a TCG guest's
# boot adds tens of seconds of emulation that are not the cluster's
# (demo.sh and tests/guest-pacemaker.sh fail a guest over; VirtualDomain's
# start would come on top of "I/O served" here).
#
# Each round: the node of the Primary is killed (SIGKILL to all its
# processes, as a power cut); we time, from that moment,
#   left      a survivor's replagentd hears from corosync (CPG) that a
#             member left (token timeout + consensus: corosync's detection;
#             the replication links broke at once, the kernel closed them)
#   fenced    Pacemaker's fencing of it is done (fence_ns says "off")
#   promoted  the survivor's replagentd logs "promoted to Primary"
#   served    a read through the survivor's NBD socket is served
# and check that every write the writer had acknowledged is on the new
# Primary.  Then the node boots again, rejoins, resyncs, and the next
# round kills the new Primary's node.  Prints every round, then median,
# p90 and worst of each column, and the share of each phase.
#
# COROSYNC=FILE takes the totem settings of FILE (e.g.
# templates/corosync-failover.conf: its "token:", "token_coefficient:",
# "consensus:" ... lines); default: the test cluster's (token 1000, the
# rest corosync's defaults).  NOTIFY=false creates the clone without
# notifications (templates/pcs-volume.sh says why that is faster and what
# it costs).  Run by hand, as root, with nice:
#     nice bench/failover-bench.sh
#     COROSYNC=templates/corosync-failover.conf NOTIFY=false nice bench/failover-bench.sh
# shellcheck source=tests/ocf-cluster-lib.sh
. "$(dirname "$0")/../tests/ocf-cluster-lib.sh" || exit 99

oc_requires
ROUNDS=${ROUNDS:-10}
# NOTIFY=false: templates/pcs-volume.sh without clone notifications.
[ -n "${NOTIFY:-}" ] && OC_TEMPLATE_ENV=(NOTIFY="$NOTIFY")
if [ -n "${COROSYNC:-}" ]; then
	CLUSTER_TOTEM_EXTRA=$(sed -n 's/^[[:space:]]*\(token[a-z_]*\|consensus\|join\|merge\|fail_recv_const\|seqno_unchanged_const\|send_join\|max_messages\|knet_[a-z_]*\):[[:space:]]*\([^#]*\).*/\1: \2/p' "$COROSYNC")
	log "totem settings from $COROSYNC: $(echo "$CLUSTER_TOTEM_EXTRA" | xargs)"
fi

# epoch T: a log time ("Dec 03 22:32:58.368" or "22:32:58.368") in
# seconds since the epoch.
epoch() { date -d "$1" +%s.%N; }
# first_after LOG T ERE: the time of the first line of LOG at or after T
# (epoch) that matches ERE (replagentd's log format), empty if none.
first_after() {
	local line t
	while IFS= read -r line; do
		t=$(epoch "$(cut -c1-19 <<<"$line")") || continue
		awk -v a="$t" -v b="$2" 'BEGIN { exit !(a >= b) }' && { echo "$t"; return; }
	done < <(grep -a -E "$3" "$1")
}
# fenced_time NODE T: when a fence_ns run on a node (Pacemaker's, not ours
# from the host) said NODE is off, at or after T.
fenced_time() {
	local day t
	day=$(date +%F)
	awk -v n="$1" '$3 == "node" && $4 == n && $6 == "off" {
		gsub(/^fence_ns\[|\]$/, "", $2); print $1, $2 }' "$TESTDIR/fence_ns.log" |
		while read -r t pid; do
			grep -q -E "^[^ ]+ fence_ns\\[$pid\\] (off|reboot) $1 \\(run on n[0-9]\\)" "$TESTDIR/fence_ns.log" || continue
			t=$(epoch "$day $t")
			awk -v a="$t" -v b="$2" 'BEGIN { exit !(a >= b) }' && { echo "$t"; break; }
		done
}
d() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "") print "-"; else printf "%.2f", b - a }'; }
acks() { awk '$1 == "A" { n++ } END { print n + 0 }' "$1" 2>/dev/null; }

log "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
oc_setup
oc_wait_roles 1 120 'Promoted' || fail "vol0 not Promoted anywhere"
declare -a R_LEFT=() R_FENCED=() R_PROM=() R_SERVED=()
for ((r = 1; r <= ROUNDS; r++)); do
	p=$(oc_promoted 1)
	[ -n "$p" ] || p=$(oc_promoted 2)
	pi=${p#n}
	survivors=()
	for i in 1 2 3; do [ "$i" = "$pi" ] || survivors+=("$i"); done
	o=${survivors[0]}
	ack=$TESTDIR/ack-$r.log
	start_writer "$ack" --unix "${RC_NBD[pi]}" --export "$OC_VOL" --duration 600 \
		--inflight 16 --flush-every 64 --span $((16 << 20)) --stall-timeout 60
	k=0
	until [ "$(acks "$ack")" -ge 200 ]; do
		[ "$k" -ge 300 ] && fail "round $r: the writer on $p got fewer than 200 acks in 30 s"
		sleep 0.1
		k=$((k + 1))
	done
	cluster_kill_node "$pi"
	t_kill=$(oc_kill_time "$p")
	served=
	until [ -n "$served" ]; do
		for i in "${survivors[@]}"; do
			oc_nbd_read "$i" && { served=$i; break; }
		done
		[ -n "$served" ] && break
		awk -v a="$t_kill" -v b="$(now_s)" 'BEGIN { exit !(b - a > 120) }' &&
			fail "round $r: no survivor served I/O within 120 s"
		sleep 0.05
	done
	t_served=$(now_s)
	t_left=$(first_after "$(rc_log "$o")" "$t_kill" "group replagent: [0-9]+ members, [0-9]+ joined, [1-9][0-9]* left")
	t_fenced=$(fenced_time "$p" "$t_kill")
	t_prom=$(first_after "$(rc_log "$served")" "$t_kill" "\\[$OC_VOL\\] promoted to Primary")
	R_LEFT+=("$(d "$t_kill" "$t_left")")
	R_FENCED+=("$(d "$t_kill" "$t_fenced")")
	R_PROM+=("$(d "$t_kill" "$t_prom")")
	R_SERVED+=("$(d "$t_kill" "$t_served")")
	# The writer's connection died with the node: it ends by itself.
	k=0
	while _alive "$WRITER_PID" && [ "$k" -lt 600 ]; do sleep 0.1; k=$((k + 1)); done
	kill -TERM "$WRITER_PID" 2>/dev/null
	wait_writer >/dev/null 2>&1
	if ackcheck check --log "$ack" --unix "${RC_NBD[served]}" --export "$OC_VOL" >"$ack.check" 2>&1; then
		kept="all $(acks "$ack") acked writes present"
	else
		kept="LOST ACKNOWLEDGED WRITES: $(tail -n 1 "$ack.check")"
		LOST=1
	fi
	printf 'round %2d: %s -> n%s  left %5s  fenced %5s  promoted %5s  served %5s  (%s)\n' \
		"$r" "$p" "$served" "${R_LEFT[-1]}" "${R_FENCED[-1]}" "${R_PROM[-1]}" "${R_SERVED[-1]}" "$kept"
	oc_start_node "$pi"
	cluster_wait_pcmk "$o" 3 90 || fail "round $r: $p did not rejoin Pacemaker"
	oc_wait_roles "$o" 90 "$p=Unpromoted" || fail "round $r: $p not Unpromoted again"
	rc_wait_all 90 "$RC_SYNCED" "$OC_VOL" || fail "round $r: not in sync after $p returned"
done

# stats NAME VALUES...: median, p90 (nearest rank), worst.
stats() {
	local name=$1
	shift
	printf '%s\n' "$@" | grep -v '^-$' | sort -n | awk -v n="$name" '{ a[NR] = $1 }
		END { if (!NR) { printf "%-22s %8s\n", n, "-"; exit }
		      p = int(0.9 * NR + 0.999); if (p > NR) p = NR
		      printf "%-22s %8.2f %8.2f %8.2f\n", n, a[int((NR + 1) / 2)], a[p], a[NR] }'
}
echo
echo "failover-bench: $ROUNDS failovers of $OC_VOL (Pacemaker promotable clone, fence_ns), writer 16 in flight;" \
	"totem: ${CLUSTER_TOTEM_EXTRA:-token 1000, corosync defaults}; notify=${NOTIFY:-true}" | tr '\n' ' '
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
printf '%-22s %8s %8s %8s\n' "seconds after the kill" median p90 worst
stats "corosync: node left" "${R_LEFT[@]}"
stats "fencing done" "${R_FENCED[@]}"
stats "promoted" "${R_PROM[@]}"
stats "I/O served" "${R_SERVED[@]}"
echo "goal: I/O served (median) < 5 s"
[ -z "${LOST:-}" ] || fail "acknowledged writes were lost (above)"
