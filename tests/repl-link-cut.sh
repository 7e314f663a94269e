#!/bin/bash
# tests/repl-link-cut.sh: the replication link between the Primary and the
# Secondary is cut and healed, with no daemon dying.  Each node runs in a
# network namespace of its own, on a private bridge (make_netns_cluster);
# the bridge port of b is set down while tests/ackcheck.py writes through
# a.  a must report b away and keep acknowledging writes (after the ping
# timeout and the outdate timeout at most); once the link is back, b must
# resync only what it missed and end Connected with nothing out of sync;
# then the backing files must be identical and hold every acknowledged
# write.  Skipped (77) when network namespaces cannot be used.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp
requires_replagentd
requires_replagent
make_netns_cluster a b

OUTDATE=5
# The engine drops a silent peer after 4 s (PING_TIMEOUT_MS), then waits
# the outdate timeout: acknowledgements may stop that long, plus slack.
MAX_GAP=$((4 + 1 + OUTDATE + 3))
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

start_writer "$ACKLOG" --unix "${NODE_NBD_SOCK[a]}" --export "$CLUSTER_VOL" \
	--duration 60 --inflight 16 --flush-every 64 --span "$SPAN" \
	--max-gap "$MAX_GAP" --stall-timeout 40 --structured

sleep 3
t_cut=$(now_s)
link_down b
wait_status a 15 'p["b"]["link"] in ("Disconnected", "Connecting")' ||
	fail "a does not notice that b is cut off"
t_noticed=$(now_s)
log "a reports b away after $(time_add "$t_noticed" "-$t_cut") s"
node_status a >/dev/null
st=$?
[ "$st" = 1 ] || fail "status on a with b cut off: exit $st, expected 1 (degraded)"

# Writes must be acknowledged again within the outdate timeout (+ slack).
n=0
while :; do
	read -r n_acked _ < <(ackcheck stats --log "$ACKLOG" --from "$t_noticed")
	[ "${n_acked:-0}" -gt 20 ] && break
	[ "$n" -ge $(((OUTDATE + 5) * 10)) ] &&
		fail "no write acknowledged within $((OUTDATE + 5)) s of losing b"
	sleep 0.1
	n=$((n + 1))
done
log "writes acknowledged again with b cut off"
sleep 3
# The writer stops (SIGTERM: it drains what is in flight) before the link
# comes back, so the resync runs alone and must send exactly the regions
# written since the cut.
kill -TERM "$WRITER_PID"
wait_writer
wst=$?
[ "$wst" = 0 ] || fail "writer failed (status $wst): writes were refused or stalled"
oos=$(status_value a 'p["b"]["out_of_sync_bytes"]')
log "a: b misses $oos bytes"
{ [ "$oos" -gt 0 ] && [ "$oos" -le "$SPAN" ]; } ||
	fail "a reports $oos bytes out of sync for b (expected 1..$SPAN)"
t_heal=$(now_s)
link_up b

# Reconnection backs off up to 10 s; the resync follows.
wait_status a 60 'p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0 and p["b"]["peer_disk"] == "UpToDate"' ||
	fail "b did not reconnect and resync after the link came back"
t_synced=$(now_s)
wait_status b 10 'v["disk"] == "UpToDate" and p["a"]["link"] == "Connected"' ||
	fail "b does not see itself UpToDate and Connected"

rs1=$(status_value a 'p["b"]["resync_sent_bytes"]')
sent=$((rs1 - rs0))
lower=$(ackcheck regions --log "$ACKLOG" --from "$(time_add "$t_noticed" 1)" --to "$t_heal")
upper=$(ackcheck regions --log "$ACKLOG" --from "$(time_add "$t_cut" -1)" --to "$t_synced")
log "resync sent $sent bytes; regions written while b was cut off: $lower bytes," \
	"from the cut to the end of the resync: $upper bytes"
[ "$sent" -gt 0 ] || fail "nothing was resynced"
[ "$sent" -lt $((VOLSIZE / 2)) ] || fail "resync sent $sent bytes: a full resync?"
[ "$sent" -ge "$lower" ] || fail "resync sent $sent bytes, less than the $lower written while b was away"
[ "$sent" -le "$upper" ] ||
	fail "resync sent $sent bytes, more than the $upper written since the cut"

stop_node b
stop_node a
cmp_backings a b || fail "a and b differ after the resync"
ackcheck check --log "$ACKLOG" --file "${NODE_BACKING[b]}" || fail "b lost acknowledged writes"
ackcheck check --log "$ACKLOG" --file "${NODE_BACKING[a]}" || fail "a lost acknowledged writes"
ackcheck check --log "$TESTDIR/fill.log" --file "${NODE_BACKING[b]}" || fail "b lost the fill"
log "PASS"
