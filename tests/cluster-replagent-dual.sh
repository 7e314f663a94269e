#!/bin/bash
# tests/cluster-replagent-dual.sh: two promotions at once.  Three nodes
# (tests/cluster.sh) run corosync and replagentd in cluster mode; vol0 is
# replicated on all three.  In each round "replagent promote vol0" runs on
# n1 and n2 at the same moment, and a writer (tests/ackcheck.py) then
# writes through each node's NBD socket.  Whatever the timing, within 15 s
# exactly one of them is Primary, and it holds every write that either
# writer had acknowledged: when both promotions got through (they crossed
# before either heard of the other), the replicas drop their link, each
# must outdate the other through the group before acknowledging anything,
# and the group's order makes one step down.  The rounds where that
# happened are counted and printed (the timing decides how many).  n3, the
# third replica, may have taken writes or a generation from the one that
# steps down: it then starts over and resyncs fully.  After each round every
# replica is back in sync (none StandAlone); at the end the three replicas
# are identical.  Skipped (77) without root,
# network namespaces or corosync.
# shellcheck source=SCRIPTDIR/cluster-replagent-lib.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/cluster-replagent-lib.sh" || exit 99

rc_requires
ROUNDS=${ROUNDS:-8}
t0=$(now_s)
rc_setup 3
rc_cli 1 volume create vol0 --size 64M --nodes n1,n2,n3 || fail "volume create failed"
rc_wait_all 30 "$RC_SYNCED" || fail "vol0: replicas not in sync within 30 s"
log "vol0 in sync on n1 n2 n3 after $(rc_elapsed "$t0") s"

# primaries: the nodes among n1 n2 that say they are Primary.
primaries() {
	local i out=
	for i in 1 2; do
		[ "$(rc_value "$i" 'v.get("role")')" = Primary ] && out="$out n$i"
	done
	echo "${out# }"
}
_one_primary() {
	CL_LAST=$(primaries)
	[[ $CL_LAST =~ ^n[12]$ ]]
}

crossed=0
for ((r = 1; r <= ROUNDS; r++)); do
	rc_cli 1 promote vol0 >"$TESTDIR/p1.$r" 2>&1 &
	a=$!
	rc_cli 2 promote vol0 >"$TESTDIR/p2.$r" 2>&1 &
	b=$!
	wait "$a"
	sa=$?
	wait "$b"
	sb=$?
	[ "$sa" = 0 ] && [ "$sb" = 0 ] && crossed=$((crossed + 1))
	# A writer on each node (the one that is not Primary refuses it).
	pids=()
	for i in 1 2; do
		"$PYTHON" "$TESTS_SRCDIR/ackcheck.py" write --log "$TESTDIR/ack.$r.$i" \
			--unix "${RC_NBD[i]}" --export vol0 --duration 2 --inflight 16 \
			--flush-every 32 --base $(((r * 2 + i) << 21)) --span $((2 << 20)) \
			--stall-timeout 20 >"$TESTDIR/ack.$r.$i.out" 2>&1 &
		pids+=($!)
		track_pid "$!"
	done
	for p in "${pids[@]}"; do
		wait "$p"
		untrack_pid "$p"
	done
	_cl_wait "exactly one Primary among n1 n2 (round $r)" 15 _one_primary ||
		fail "round $r: not exactly one Primary (promotes: n1 $sa, n2 $sb)"
	pi=$(primaries)
	pi=${pi#n}
	n=0
	for i in 1 2; do
		f=$TESTDIR/ack.$r.$i
		grep -q '^A ' "$f" 2>/dev/null || continue
		n=$((n + $(grep -c '^A ' "$f")))
		ackcheck check --log "$f" --unix "${RC_NBD[pi]}" --export vol0 >/dev/null ||
			fail "round $r: n$pi lacks writes that n$i acknowledged"
	done
	log "round $r: promote n1 $sa, n2 $sb; Primary n$pi, holding all $n acknowledged writes"
	end=$(($(date +%s) + 20))
	until out=$(rc_cli "$pi" demote vol0 2>&1); do
		[ "$(date +%s)" -ge "$end" ] && fail "round $r: demote on n$pi refused for 20 s: $out"
		sleep 0.2
	done
	rc_wait_all 60 "$RC_SYNCED" || fail "round $r: the replicas did not get in sync again"
done
log "$crossed of $ROUNDS rounds had both promotions accepted at first"
for i in 1 2 3; do
	rc_stop "$i"
done
rc_cmp_backings vol0 1 2 3 || fail "the replicas differ"
log "PASS ($(rc_elapsed "$t0") s)"
