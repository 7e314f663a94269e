#!/bin/bash
# tests/repl-kill-primary.sh: the Primary crashes under load (protocol C:
# what it acknowledged must be on the Secondary).  a (Primary) and b;
# tests/ackcheck.py writes through a, 16 writes in flight, and logs every
# acknowledgement; a's daemon is killed with SIGKILL mid-run.  b must notice,
# accept a promotion, and serve every acknowledged write (checked over NBD
# through b); b takes more writes; a restarts as Secondary, must rejoin
# and resync from b (its unacknowledged, possibly applied writes are
# overwritten), ending Connected and UpToDate; then the backing files must
# be identical and hold every acknowledged write of both phases.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp
requires_replagentd
requires_replagent

cluster_config -t 5 -s 64M a b
start_pair a b

start_writer "$TESTDIR/w1.log" --unix "${NODE_NBD_SOCK[a]}" --export "$CLUSTER_VOL" \
	--duration 60 --inflight 16 --flush-every 64 --span $((8 << 20)) --structured
sleep 3
_alive "$WRITER_PID" || fail "the writer ended early: $(cat "$TESTDIR/w1.log.out")"
kill_node a
log "a killed (SIGKILL)"
# The writer ends with an error: its server is gone.
wait_writer
grep -q '^A ' "$TESTDIR/w1.log" || fail "no write was acknowledged before the crash"

wait_status b 15 'p["a"]["link"] in ("Disconnected", "Connecting") and v["disk"] == "UpToDate"' ||
	fail "b does not see a gone, or is not UpToDate"
promote b
ackcheck check --log "$TESTDIR/w1.log" --unix "${NODE_NBD_SOCK[b]}" --export "$CLUSTER_VOL" ||
	fail "b misses writes that a acknowledged"
ackcheck write --unix "${NODE_NBD_SOCK[b]}" --export "$CLUSTER_VOL" --log "$TESTDIR/w2.log" \
	--duration 3 --base $((4 << 20)) --span $((8 << 20)) --max-gap 2 ||
	fail "writes through b failed"

start_node a
wait_status a 10 'v["role"] == "Secondary"' || fail "a did not restart as Secondary"
wait_status b 60 'p["a"]["link"] == "Connected" and p["a"]["out_of_sync_bytes"] == 0 and p["a"]["peer_disk"] == "UpToDate"' ||
	fail "a did not rejoin and resync from b"
wait_status a 10 'v["disk"] == "UpToDate" and p["b"]["peer_role"] == "Primary"' ||
	fail "a is not UpToDate under b"
log "a rejoined: $(grep -h -E 'peer b: (source|target)' "$(daemon_log a)" | tail -n 1 | sed 's/^.*\] //')"

stop_node a
stop_node b
cmp_backings a b || fail "a and b differ after the resync"
# w1 is partly overwritten by w2: check w2, and w1 outside w2's area only
# (ackcheck accepts a later record of its own run only).
for n in a b; do
	ackcheck check --log "$TESTDIR/w2.log" --file "${NODE_BACKING[$n]}" ||
		fail "$n lost writes b acknowledged"
done
awk '$1 != "A" || $3 < 4194304' "$TESTDIR/w1.log" >"$TESTDIR/w1-below4M.log"
ackcheck check --log "$TESTDIR/w1-below4M.log" --file "${NODE_BACKING[b]}" ||
	fail "writes a acknowledged before its crash are lost"
log "PASS"
