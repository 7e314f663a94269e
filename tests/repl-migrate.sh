#!/bin/bash
# tests/repl-migrate.sh: the live-migration window and auto-promote, on
# replicas in static mode on 127.0.0.1, with NBD clients that play the two
# QEMUs of a migration (tests/nbdclient.py, driven line by line).
#
# 1. Two replicas a (Primary) and b.  b refuses NBD clients; a window on
#    the Primary is refused; a window with a 2 s timeout and no client
#    closes by itself.  Then the migration: the "source" client on a
#    writes, a writer (ackcheck.py, 16 in flight) runs on a, a window opens
#    on b, the "destination" client attaches to b and reads the source's
#    data there; when the writer on a has stopped, the destination's first
#    write moves the Primary role to b (a is Secondary, its client still
#    attached); a second writer runs on b and the source client writes
#    meanwhile (a failed migration's source resuming: the role goes back
#    and forth, one Primary at a time, no write refused); the source
#    leaves, then the destination.  Every acknowledged write of both
#    writers is on the replica that is Primary at the end, never two
#    Primaries were seen, and after the stop the replicas are identical.
# 2. Three replicas p q r: a destination that never writes gets the role
#    when the source's client leaves (soft takeover), r follows; closing a
#    window drops its clients; killing the Primary drops a window's
#    clients (they must not read a replica that no longer gets every write).
# 3. auto-promote = yes on two replicas x y: the first client promotes its
#    replica, a client of the other one is refused while it is Primary, the
#    last client leaving demotes it.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp mkfifo
requires_replagentd
requires_replagent

show_field() {	# NODE FIELD: one field of "replagent show"
	ra_cli "$1" show "$CLUSTER_VOL" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# primaries NODE...: how many of the nodes say they are Primary.
primaries() {
	local n k=0
	for n in "$@"; do
		[ "$(show_field "$n" role)" = Primary ] && k=$((k + 1))
	done
	echo "$k"
}

all_connected() {
	local n m expr
	for n in "$@"; do
		expr='v.get("disk") == "UpToDate"'
		for m in "$@"; do
			[ "$m" = "$n" ] && continue
			expr+=" and p[\"$m\"][\"link\"] == \"Connected\" and p[\"$m\"][\"out_of_sync_bytes\"] == 0"
		done
		wait_status "$n" 30 "$expr" || fail "node $n: peers not all Connected"
	done
}

# ---- 1. two replicas: a migration, and its source resuming ------------------

log "==== two replicas"
cluster_config -t 5 a b
start_node a
start_node b
all_connected a b
promote a

out=$(ra_cli a window open "$CLUSTER_VOL" 2>&1) && fail "a window on the Primary was opened"
log "window on the Primary refused: $out"
client_start probe b
client probe connect && fail "Secondary b took an NBD client without a window"
log "b without a window: $CLIENT_LAST"
client_end probe

ra_cli b window open "$CLUSTER_VOL" --timeout 2 || fail "window open on b refused"
[ "$(show_field b window)" = open ] || fail "b's window is not open: $(ra_cli b show "$CLUSTER_VOL")"
wait_status b 10 'v["window"] == "none"' || fail "a window without a client did not time out"
grep -q "no NBD client came in time" "$(daemon_log b)" || fail "b did not say why its window closed"

client_start src a
client src connect || fail "source client: $CLIENT_LAST"
client src write 0 65536 17 || fail "source write: $CLIENT_LAST"
ACK1=$TESTDIR/ack-1.log
ACK2=$TESTDIR/ack-2.log
start_writer "$ACK1" --unix "${NODE_NBD_SOCK[a]}" --export "$CLUSTER_VOL" --duration 30 \
	--inflight 16 --flush-every 64 --base $((1 << 20)) --span $((8 << 20)) --stall-timeout 30
sleep 1
ra_cli b window open "$CLUSTER_VOL" || fail "window open on b refused"
client_start dst b
client dst connect || fail "destination client on b: $CLIENT_LAST"
client dst read 0 65536 17 || fail "destination read on b: $CLIENT_LAST"
[ "$(show_field b role)" = Secondary ] || fail "b changed role before any write"
[ "$(show_field b clients)" = 1 ] || fail "b does not count its client"
sleep 1
kill -TERM "$WRITER_PID"
wait_writer >/dev/null || fail "the writer on a failed"
log "source stopped after $(grep -c '^A ' "$ACK1") acknowledged writes"

# The switch-over: the destination's first write.
client dst write 65536 65536 34 || fail "destination write: $CLIENT_LAST"
[ "$(show_field b role)" = Primary ] || fail "b is not Primary after its client wrote"
[ "$(show_field a role)" = Secondary ] || fail "a is still Primary"
[ "$(show_field a window)" = open ] || fail "a's client is no window client: $(ra_cli a show "$CLUSTER_VOL")"
[ "$(show_field b window)" = none ] || fail "b's window is still open"
grep -q "took the Primary role over from a" "$(daemon_log b)" || fail "b's log says no takeover"
client src read 65536 65536 34 || fail "the source does not see the destination's write: $CLIENT_LAST"

# The source resumes while the destination writes: the role moves back and
# forth, one Primary at a time.
start_writer "$ACK2" --unix "${NODE_NBD_SOCK[b]}" --export "$CLUSTER_VOL" --duration 4 \
	--inflight 16 --flush-every 64 --base $((16 << 20)) --span $((8 << 20)) --stall-timeout 30

for i in 1 2 3 4 5 6; do
	client src write $((i * 4096 + (32 << 20))) 4096 $((50 + i)) || fail "source write $i: $CLIENT_LAST"

	sleep 0.2
done
wait_writer >/dev/null || fail "the writer on b failed while the source wrote"
for i in 1 2 3 4 5 6; do
	client dst read $((i * 4096 + (32 << 20))) 4096 $((50 + i)) ||
		fail "the destination does not read the source's write $i: $CLIENT_LAST"
done
ho=$(cat "$(daemon_log a)" "$(daemon_log b)" | grep -c "handed the Primary role over")
log "the role was handed over $ho times"
[ "$ho" -ge 3 ] || fail "expected the role to move back and forth (handed over $ho times)"
# Each node became Primary only by a handover of the other (or the first
# promote): never two Primaries at once, which the peers would refuse
# ("both replicas are Primary") and log.
pa=$(grep -c "promoted to Primary" "$(daemon_log a)")
pb=$(grep -c "promoted to Primary" "$(daemon_log b)")
[ $((pa + pb)) -le $((ho + 1)) ] ||
	fail "$((pa + pb)) promotions for $ho handovers: a promotion without a handover"
cat "$(daemon_log a)" "$(daemon_log b)" | grep -q -E "both replicas are Primary|split brain" &&
	fail "the replicas saw two Primaries"

client_end src
client dst write 0 65536 51 || fail "destination write after the source left: $CLIENT_LAST"
wait_status a 10 'v["window"] == "none"' || fail "a's window did not close when its client left"
client dst read 0 65536 51 || fail "destination read: $CLIENT_LAST"
[ "$(show_field b role)" = Primary ] || fail "b is not Primary at the end"
[ "$(primaries a b)" = 1 ] || fail "not exactly one Primary at the end"
for f in "$ACK1" "$ACK2"; do
	ackcheck check --log "$f" --unix "${NODE_NBD_SOCK[b]}" --export "$CLUSTER_VOL" ||
		fail "b lacks acknowledged writes ($(basename "$f"))"
done
client_end dst
all_connected a b
stop_cluster
cmp_backings a b || fail "the replicas differ after the migration"

# ---- 2. three replicas: soft takeover, closing, a lost Primary -------------

log "==== three replicas"
cluster_config -t 5 p q r
start_node p
start_node q
start_node r
all_connected p q r
promote p
client_start src p
client src connect || fail "source client on p: $CLIENT_LAST"
client src write 0 65536 99 || fail "source write: $CLIENT_LAST"
ra_cli q window open "$CLUSTER_VOL" || fail "window open on q refused"
client_start dst q
client dst connect || fail "destination client on q: $CLIENT_LAST"
client_end src
wait_status q 10 'v["role"] == "Primary"' ||
	fail "q did not get the role after the source left (soft takeover)"
[ "$(show_field p role)" = Secondary ] || fail "p is still Primary"
client dst write 65536 65536 100 || fail "destination write on q: $CLIENT_LAST"
all_connected p q r

# The guest stays on q (dst attached) while windows open elsewhere: with a
# client on the Primary, a window's soft takeover is refused, so the
# windows below never get the role.
# Closing a window drops its clients.
ra_cli r window open "$CLUSTER_VOL" || fail "window open on r refused"
client_start w r
client w connect || fail "client on r: $CLIENT_LAST"
sleep 1.5	# longer than a window's soft takeover interval (1 s)
[ "$(show_field r role)" = Secondary ] || fail "r took the role from a Primary with a client"
ra_cli r window close "$CLUSTER_VOL" || fail "window close on r refused"
client w read 0 4096 99 && fail "a client of a closed window still reads"
client_end w
[ "$(show_field r role)" = Secondary ] || fail "r changed role"

# A window whose Primary dies drops its clients.
ra_cli p window open "$CLUSTER_VOL" || fail "window open on p refused"
client_start w2 p
client w2 connect || fail "client on p: $CLIENT_LAST"
client w2 read 65536 65536 100 || fail "p's window client reads: $CLIENT_LAST"
kill_node q
wait_status p 10 'v["window"] == "none"' || fail "p's window stayed open without its Primary"
client w2 read 65536 65536 100 && fail "a window client read on after the Primary died"
log "window client after the Primary's death: $CLIENT_LAST"
client_end w2
client_end dst
stop_cluster

# ---- 3. auto-promote ----------------------------------------------------------

log "==== auto-promote"
cluster_config -t 5 x y
for n in x y; do
	sed -i '/^\[global\]/a auto-promote = yes' "${NODE_CONF[$n]}"
done
start_node x
start_node y
all_connected x y
[ "$(show_field y auto_promote)" = yes ] || fail "auto_promote not shown"
client_start c1 y
client c1 connect || fail "first client on y: $CLIENT_LAST"
[ "$(show_field y role)" = Primary ] || fail "y was not auto-promoted"
client c1 write 0 65536 7 || fail "write on y: $CLIENT_LAST"
client_start c2 x
client c2 connect && fail "x took a client while y is Primary"
log "x while y is Primary: $CLIENT_LAST"
client_end c2
client_end c1
wait_status y 10 'v["role"] == "Secondary"' || fail "y was not auto-demoted"
client_start c3 x
client c3 connect || fail "client on x after y demoted: $CLIENT_LAST"
client c3 read 0 65536 7 || fail "x does not read y's write: $CLIENT_LAST"
[ "$(show_field x role)" = Primary ] || fail "x was not auto-promoted"
client_end c3
wait_status x 10 'v["role"] == "Secondary"' || fail "x was not auto-demoted"
stop_cluster
log "PASS"
