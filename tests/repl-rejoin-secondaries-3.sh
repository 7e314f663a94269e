#!/bin/bash
# tests/repl-rejoin-secondaries-3.sh: with three replicas, after a node
# returns nothing may stay degraded, also on the link between the two
# Secondaries (issue 16: the scale bench left volumes "source-full between
# Secondaries: waits for a Primary" after n1 restarted).  Static mode,
# a, b, c:
#   1. a Primary; kill -9 a, promote b, write through b; restart a.  a
#      resyncs from b; then a and c, both in sync with b, must see each
#      other Connected, UpToDate, no reason given.
#   2. kill -9 c; write through b; demote b: no Primary; restart c.  c
#      missed writes that a and b both hold: it must get them from an
#      UpToDate replica, no Primary needed.
#   3. promote c; kill -9 the Secondary a, restart it (the bench's case:
#      the Primary elsewhere, no writes meanwhile).
# Each phase ends with every node seeing every peer Connected, UpToDate,
# nothing out of sync and no reason (what `replagent status` calls
# healthy), and at the end the files are identical with every write.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp
requires_replagentd
requires_replagent

MiB=$((1 << 20))
PHASE=0

# write_through NODE: one second of acknowledged writes through NODE, in
# the next 4 MiB area.
write_through() {
	PHASE=$((PHASE + 1))
	ackcheck write --unix "${NODE_NBD_SOCK[$1]}" --export "$CLUSTER_VOL" \
		--log "$TESTDIR/w$PHASE.log" --base $(((PHASE - 1) * 4 * MiB)) \
		--span $((4 * MiB)) --duration 1 || fail "writes through $1 failed"
}

# view NODE: one line of NODE's state.
view() {
	status_value "$1" '(v["role"], v["disk"], [(n, x["link"], x["peer_disk"], x["out_of_sync_bytes"], x["reason"]) for n, x in sorted(p.items())])'
}

CLEAN='v["disk"] == "UpToDate" and len(p) == 2 and all(x["link"] == "Connected" and x["peer_disk"] == "UpToDate" and x["out_of_sync_bytes"] == 0 and not x["reason"] for x in p.values())'

# all_clean TIMEOUT WHAT: every node sees every peer in sync, or fail.
all_clean() {
	local n ok=1
	for n in a b c; do
		wait_status "$n" "$1" "$CLEAN" 2>/dev/null || ok=0
	done
	for n in a b c; do
		log "$n: $(view "$n")"
	done
	[ "$ok" = 1 ] || fail "$2: not every replica is in sync with every other"
}

cluster_config -t 5 -s 32M a b c
start_in_sync a b c
write_through a
all_clean 30 "three replicas started"

log "==== 1: kill -9 the Primary a, promote b, write, restart a"
kill_node a
wait_status b 15 'p["a"]["link"] != "Connected" and v["disk"] == "UpToDate"' ||
	fail "b does not see a gone, or is not UpToDate"
promote b
write_through b
start_node a
all_clean 60 "after a (the old Primary) returned under b"

log "==== 2: kill -9 c, write through b, demote b, restart c"
kill_node c
wait_status b 15 'p["c"]["link"] != "Connected"' || fail "b does not see c gone"
write_through b
ra_cli b demote "$CLUSTER_VOL" || fail "demote on b refused"
start_node c
all_clean 60 "after c returned with no Primary"

log "==== 3: promote c; kill -9 the Secondary a; restart a"
promote c
kill_node a
wait_status c 15 'p["a"]["link"] != "Connected"' || fail "c does not see a gone"
sleep 1
start_node a
all_clean 60 "after the Secondary a returned under c"

stop_cluster
cmp_backings a b c || fail "the replicas differ"
for i in $(seq 1 "$PHASE"); do
	for n in a b c; do
		ackcheck check --log "$TESTDIR/w$i.log" --file "${NODE_BACKING[$n]}" >/dev/null ||
			fail "$n lost writes of phase $i"
	done
done
log "PASS"
