#!/bin/bash
# tests/repl-rejoin-3.sh: three replicas, the two Secondaries crash one
# after the other under load and come back.  First the three blank
# replicas, started together, must agree on one volume UUID.  a (Primary), b, c;
# tests/ackcheck.py writes through a for 20 s; b is killed (SIGKILL) and
# restarted, and while it rejoins c is killed and restarted too.  In the
# end every replica must be UpToDate and see the others Connected with
# nothing out of sync (a stale "b is Outdated" that c recorded before b's
# resync must not outdate b again), the files must be identical and hold
# every acknowledged write.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp
requires_replagentd
requires_replagent

ACKLOG=$TESTDIR/ack.log

cluster_config -t 5 a b c
for n in a b c; do
	start_node "$n"
done
wait_status a 30 'all(p[n]["link"] == "Connected" and p[n]["out_of_sync_bytes"] == 0 for n in "bc")' ||
	fail "a, b and c did not connect"
for n in b c; do
	wait_status "$n" 30 'all(x["link"] == "Connected" for x in p.values())' ||
		fail "$n is not connected to both others"
done
# Three blank replicas that met at once agreed on one volume UUID (each
# link deciding alone could leave two, which later refuse each other).
uuids=$(for n in a b c; do status_value "$n" 'v["uuid"]'; done | sort -u | wc -l)
[ "$uuids" = 1 ] || fail "the three blank replicas ended with $uuids volume UUIDs"
promote a

start_writer "$ACKLOG" --unix "${NODE_NBD_SOCK[a]}" --export "$CLUSTER_VOL" \
	--duration 20 --span $((8 << 20)) --max-gap 8
sleep 2
kill_node b
wait_status a 10 'p["b"]["link"] != "Connected"' || fail "a does not notice that b is gone"
sleep 4
start_node b
sleep 1
kill_node c
sleep 3
start_node c
wait_writer || fail "the writer failed: writes were refused or stalled"

# shows NODE's view in one line
view() {
	status_value "$1" '(v["role"], v["disk"], [(n, x["link"], x["peer_disk"], x["out_of_sync_bytes"], x["reason"]) for n, x in sorted(p.items())])'
}
ok=1
wait_status a 60 'all(p[n]["link"] == "Connected" and p[n]["out_of_sync_bytes"] == 0 and p[n]["peer_disk"] == "UpToDate" for n in "bc")' ||
	ok=0
for n in b c; do
	wait_status "$n" 20 'v["disk"] == "UpToDate" and all(x["link"] == "Connected" for x in p.values())' ||
		ok=0
done
for n in a b c; do
	log "$n: $(view "$n")"
done
[ "$ok" = 1 ] || fail "the replicas did not all end UpToDate and Connected"

stop_cluster
cmp_backings a b c || fail "the replicas differ"
for n in a b c; do
	ackcheck check --log "$ACKLOG" --file "${NODE_BACKING[$n]}" || fail "$n lost acknowledged writes"
done
log "PASS"
