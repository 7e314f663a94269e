#!/bin/bash
# tests/repl-both-lost.sh: a Primary that loses both its peers at once, with
# writes in flight, answers every write and can be demoted afterwards.
# a (Primary), b, c; tests/ackcheck.py writes through a (32 in flight);
# b and c are killed together.  Each loss marks the writes the peer had not
# acknowledged in its bitmap, and the second comes while the first one's
# bitmap flush runs (made slow by tests/faultdisk.c): each write then
# waits for two flushes (it used to be queued twice on one list and lose a
# release: the write was never answered and `demote` refused for good).  The writer must see every
# request answered (it stops, then drains); a must accept `demote` once
# its client is gone; a's backing holds every acknowledged write.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout
requires_replagentd
requires_replagent

cluster_config -t 2 -s 64M a b c
faultdisk_init
faultdisk_preload a
start_in_sync a b c

start_writer "$TESTDIR/w.log" --unix "${NODE_NBD_SOCK[a]}" --export "$CLUSTER_VOL" \
	--duration 60 --inflight 32 --span $((256 << 10)) --stall-timeout 10 --structured
sleep 2
_alive "$WRITER_PID" || fail "the writer ended early: $(cat "$TESTDIR/w.log.out")"
# Slow flushes of a's metadata hold the window open: the second loss comes
# while the first one's bitmap flush runs, every time.  (The writer's 4
# regions stay in the activity log, so its writes do not wait for these
# flushes: they are in flight to b and c when those die.)
faultdisk_set slow-flush "${NODE_DIR[a]}/state/ 300"
# Both at once: their links end within the same loop pass on a.
kill -KILL "$(replagentd_pid b)" "$(replagentd_pid c)"
kill_node b
kill_node c
log "b and c killed together"
wait_status a 10 'all(p[n]["link"] != "Connected" for n in "bc")' ||
	fail "a does not notice b and c are gone"
sleep 3
faultdisk_log | grep -q '^slow-flush' || fail "the shim slowed no flush"
# Stop writing: every request in flight must now be answered.
kill -TERM "$WRITER_PID"
wait_writer || fail "not every write through a was answered"
grep -q '^E ' "$TESTDIR/w.log" && fail "a failed writes"
out=$(ra_cli a demote "$CLUSTER_VOL" 2>&1) || fail "a refuses demote after its client left: $out"
log "a demoted"
ackcheck check --log "$TESTDIR/w.log" --file "${NODE_BACKING[a]}" >/dev/null ||
	fail "a lost acknowledged writes"
stop_node a
grep 'write accounting' "$(daemon_log a)" && fail "a found its write accounting wrong"
log "PASS"
