#!/bin/bash
# tests/repl-kill-secondary.sh: the Secondary crashes under load and comes
# back.  Two replicas a (Primary) and b; tests/ackcheck.py writes 4 KiB
# records (16 in flight, FLUSH every 64) into the first 8 MiB of a's volume
# and logs every acknowledged write.  b's daemon is killed with SIGKILL
# mid-run: writes must keep being acknowledged (a pause of at most the
# outdate timeout plus a little), a must report b away; b restarts, must
# resync from a only what it missed (resync_sent_bytes at least the 64 KiB
# regions written while it was away, at most those written from the kill to
# the end of the resync with some sent twice, as writes go on during the
# resync, and far below the volume size), end Connected with
# nothing out of sync; then both daemons stop, the backing files must be
# identical and hold every acknowledged write.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp
requires_replagentd
requires_replagent

OUTDATE=5
SPAN=$((8 << 20))
VOLSIZE=$((64 << 20))
ACKLOG=$TESTDIR/ack.log

cluster_config -t "$OUTDATE" -s 64M a b
start_pair a b
# 32 MiB of data elsewhere on the volume, on both replicas: a full resync
# would send it again, a bitmap resync must not.
ackcheck write --unix "${NODE_NBD_SOCK[a]}" --export "$CLUSTER_VOL" --log "$TESTDIR/fill.log" \
	--sequential --base $((16 << 20)) --span $((32 << 20)) --duration 60 ||
	fail "filling [16M, 48M) failed"
wait_status a 10 'p["b"]["out_of_sync_bytes"] == 0' || fail "b is behind after the fill"
rs0=$(status_value a 'p["b"]["resync_sent_bytes"]') || fail "no status from a"

# The writer: 20 s; acknowledgements may stop for at most OUTDATE + 3 s.
start_writer "$ACKLOG" --unix "${NODE_NBD_SOCK[a]}" --export "$CLUSTER_VOL" \
	--duration 20 --inflight 16 --flush-every 64 --span "$SPAN" \
	--max-gap $((OUTDATE + 3)) --stall-timeout 30

sleep 3
t_kill=$(now_s)
kill_node b
log "b killed (SIGKILL) at $t_kill"
wait_status a 10 'p["b"]["link"] in ("Disconnected", "Connecting")' ||
	fail "a does not report b as away"
node_status a >/dev/null
st=$?
[ "$st" = 1 ] || fail "status on a with b away: exit $st, expected 1 (degraded)"

# b stays away past the outdate timeout; writes must go on meanwhile, and
# a counts what b misses (at most the span the writer covers).
sleep $((OUTDATE + 4))
oos=$(status_value a 'p["b"]["out_of_sync_bytes"]')
log "a: b misses $oos bytes"
{ [ "$oos" -gt 0 ] && [ "$oos" -le "$SPAN" ]; } ||
	fail "a reports $oos bytes out of sync for b (expected 1..$SPAN)"
t_restart=$(now_s)
_alive "$WRITER_PID" || fail "the writer ended early: $(cat "$ACKLOG.out")"
start_node b
log "b restarted at $t_restart"

wait_writer
wst=$?
[ "$wst" = 0 ] || fail "writer failed (status $wst): writes were refused or stalled"

wait_status a 60 'p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0 and p["b"]["peer_disk"] == "UpToDate"' ||
	fail "b did not resync"
t_synced=$(now_s)
wait_status b 10 'v["disk"] == "UpToDate" and p["a"]["link"] == "Connected"' ||
	fail "b does not see itself UpToDate and Connected"
node_status a >/dev/null || fail "status on a: exit $? after the resync (expected 0)"

# Writes were acknowledged while b was away (after the outdate).
read -r n_away _ < <(ackcheck stats --log "$ACKLOG" \
	--from "$(time_add "$t_kill" $((OUTDATE + 1)))" --to "$t_restart")
log "$n_away writes acknowledged while b was away, after the outdate"
[ "$n_away" -gt 0 ] || fail "no write was acknowledged while b was away"

# What the resync sent.
rs1=$(status_value a 'p["b"]["resync_sent_bytes"]')
sent=$((rs1 - rs0))
lower=$(ackcheck regions --log "$ACKLOG" --from "$(time_add "$t_kill" 1)" --to "$t_restart")
upper=$(ackcheck regions --log "$ACKLOG" --from "$(time_add "$t_kill" -1)" --to "$t_synced")
log "resync sent $sent bytes; regions written while b was away: $lower bytes," \
	"from the kill to the end of the resync: $upper bytes"
[ "$sent" -gt 0 ] || fail "nothing was resynced"
[ "$sent" -lt $((VOLSIZE / 2)) ] || fail "resync sent $sent bytes: a full resync?"
[ "$sent" -ge "$lower" ] || fail "resync sent $sent bytes, less than the $lower written while b was away"
# Writes go on during the resync: a region they touch while its resync is
# in flight is sent again, so allow some regions twice.
[ "$sent" -le $((upper * 3 / 2 + (1 << 20))) ] ||
	fail "resync sent $sent bytes, far more than the $upper written since the kill"

stop_node b
stop_node a
cmp_backings a b || fail "a and b differ after the resync"
ackcheck check --log "$ACKLOG" --file "${NODE_BACKING[b]}" || fail "b lost acknowledged writes"
ackcheck check --log "$ACKLOG" --file "${NODE_BACKING[a]}" || fail "a lost acknowledged writes"
ackcheck check --log "$TESTDIR/fill.log" --file "${NODE_BACKING[b]}" || fail "b lost the fill"
log "PASS"
