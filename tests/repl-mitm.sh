#!/bin/bash
# tests/repl-mitm.sh: a man in the middle on the link from the Primary a
# to the Secondary b (tests/mitm: a TCP relay that follows the framing)
# flips a bit in a WRITE, injects a well-formed WRITE of its own, replays
# a WRITE, and reorders two frames, one attack per run (MITM_MODES to
# choose).  Each time b must log that a frame failed authentication, the
# link must drop and come back (a second connection through the relay),
# writes through a must keep being answered, and once in sync the two
# backing files must be identical: nothing the attacker sent was applied
# (the injected 0xEE block is not on b; the replayed old data did not
# overwrite the newer).
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp qemu-io
requires_replagentd
requires_replagent
MITM=${MITM:-$top_builddir/tests/mitm}
[ -x "$MITM" ] || hard_error "$MITM not built"

INJECT_OFF=$((8 << 20))
OFF=$((1 << 20))

run_mode() {
	local mode=$1 mlog pid
	log "==== $mode"
	cluster_config -t 3 a b
	# a reaches b through the relay; b listens where it always does.
	relay_route a b
	mlog=$TESTDIR/mitm-$mode.log
	"$MITM" "$RELAY_PORT" 127.0.0.1 "$RELAY_TARGET_PORT" "$mode" "$INJECT_OFF" >"$mlog" 2>&1 &
	pid=$!
	track_pid "$pid"
	start_in_sync a b
	# Two writes to the same place (the replay sends the first again after
	# the second), then more; every one must be answered.
	qio "${NODE_NBD_URI[a]}" "write -P 0xaa $OFF 64k" >/dev/null || fail "$mode: write 1 failed"
	qio "${NODE_NBD_URI[a]}" "write -P 0xbb $OFF 64k" >/dev/null || fail "$mode: write 2 failed"
	ackcheck write --unix "${NODE_NBD_SOCK[a]}" --export "$CLUSTER_VOL" \
		--log "$TESTDIR/ack-$mode.log" --duration 4 --span $((4 << 20)) --max-gap 8 ||
		fail "$mode: writes through a were not answered"
	grep -q '^mitm: .*\(flipped\|injected\|replayed\|reordered\)' "$mlog" ||
		fail "$mode: the relay did not attack: $(cat "$mlog")"
	wait_status a 30 'p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0' ||
		fail "$mode: b is not back in sync"
	stop_node b
	stop_node a
	cmp_backings a b || fail "$mode: the replicas differ: b applied what the attacker sent"
	wait_log b 1 'failed authentication' ||
		fail "$mode: b did not log that a frame failed authentication"
	log "$mode: b: $(grep -h 'failed authentication' "$(daemon_log b)" | head -n 1 | sed 's/^.*\] //')"
	[ "$(grep -c '^mitm: connection' "$mlog")" -ge 2 ] ||
		fail "$mode: the link did not drop and come back"
	ackcheck check --log "$TESTDIR/ack-$mode.log" --file "${NODE_BACKING[b]}" ||
		fail "$mode: b lost acknowledged writes"
	stop_pid "$pid"
	untrack_pid "$pid"
	rm -rf "${NODE_DIR[a]}" "${NODE_DIR[b]}"
}

for m in ${MITM_MODES:-flip inject replay reorder}; do
	run_mode "$m"
done
log "PASS"
