#!/bin/bash
# tests/repl-al.sh: the activity log bounds the resync after a Primary
# crash.  a (Primary) and b, 256 MiB; a writer hammers an 8 MiB area through
# a, a's daemon is killed with SIGKILL, a restarts and is promoted again
# (b never was), and the resync from a to b must cover only the regions that
# were in the activity log (at most the written area), not the volume.  Twenty
# rounds; then the replicas are identical and every acknowledged write of
# the last round is on both.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp
requires_replagentd
requires_replagent

ROUNDS=${ROUNDS:-20}
SPAN=$((8 << 20))
cluster_config -t 5 -s 256M a b
start_node a
start_node b
wait_status a 30 'p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0' ||
	fail "a and b did not connect"

for round in $(seq "$ROUNDS"); do
	promote a
	wait_status a 30 'p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0' ||
		fail "round $round: b is not in sync before the writes"
	start_writer "$TESTDIR/w$round.log" --unix "${NODE_NBD_SOCK[a]}" \
		--export "$CLUSTER_VOL" --duration 30 --inflight 16 --flush-every 64 \
		--span "$SPAN" --structured
	sleep 1.5
	_alive "$WRITER_PID" || fail "round $round: the writer ended early"
	kill_node a
	wait_writer
	grep -q '^A ' "$TESTDIR/w$round.log" || fail "round $round: nothing acknowledged"
	start_node a
	wait_status a 15 'v["role"] == "Secondary" and p["b"]["link"] == "Connected"' ||
		fail "round $round: a did not come back connected"
	before=$(grep -c . "$(daemon_log a)")
	# a crashed as Primary and b, connected and UpToDate, did not: a
	# refuses to be promoted in b's place unless told so with --force (then
	# it resyncs its activity log to b, which is what is tested here).
	promote a --force
	wait_status a 60 'p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0 and p["b"]["peer_disk"] == "UpToDate"' ||
		fail "round $round: the resync to b did not finish"
	line=$(tail -n +"$before" "$(daemon_log a)" | grep -E 'resync to b: [0-9]+ bytes' | tail -n 1)
	bytes=$(printf '%s\n' "$line" | sed -E 's/.*resync to b: ([0-9]+) bytes.*/\1/')
	[ -n "$bytes" ] || fail "round $round: no resync logged"
	log "round $round: $line"
	[ "$bytes" -le "$SPAN" ] ||
		fail "round $round: resynced $bytes bytes, more than the $SPAN-byte area written"
	demote_ok=$("$REPLAGENT" -s "${NODE_CTL[a]}" demote "$CLUSTER_VOL" 2>&1) ||
		fail "round $round: demote: $demote_ok"
done

stop_node a
stop_node b
cmp_backings a b || fail "a and b differ"
for round in $(seq "$ROUNDS"); do
	# Later rounds overwrite earlier ones: the last round is checked whole,
	# the others must at least hold a write at least as new (ackcheck's rule).
	[ "$round" = "$ROUNDS" ] || continue
	for n in a b; do
		ackcheck check --log "$TESTDIR/w$round.log" --file "${NODE_BACKING[$n]}" ||
			fail "$n lost writes acknowledged in round $round"
	done
done
log "PASS"
