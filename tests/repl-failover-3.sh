#!/bin/bash
# tests/repl-failover-3.sh: ordinary failures of three replicas, one after
# the other, must never end in split brain (issue 12, item 10: reproduced
# as a user would, static mode).  a, b, c; a FUA writer (ackcheck.py) runs
# through the Primary of the moment, each phase in an 8 MiB area of its
# own:
#   a Primary; kill -9 a, promote b; restart a (it resyncs);
#   kill -9 b, promote c; restart b (it resyncs);
#   SIGTERM the Secondary b and restart it;
#   kill -9 c, promote a; restart c.
# Nothing ever diverged (one Primary at a time, every Secondary connected
# to it or away), so no link may go StandAlone: in the end the three are
# Connected, UpToDate, nothing out of sync, identical, and every write
# acknowledged in any phase is on every replica.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp
requires_replagentd
requires_replagent

MiB=$((1 << 20))
PHASE=0

# writer NODE: a FUA writer through NODE (the new Primary), in the next
# 8 MiB area; it runs until NODE dies or stop_writer.
writer() {
	PHASE=$((PHASE + 1))
	start_writer "$TESTDIR/w$PHASE.log" --unix "${NODE_NBD_SOCK[$1]}" \
		--export "$CLUSTER_VOL" --duration 600 --fua --inflight 8 \
		--base $(((PHASE - 1) * 8 * MiB)) --span $((8 * MiB))
	sleep 2
	_alive "$WRITER_PID" || fail "the writer through $1 ended early: $(cat "$TESTDIR/w$PHASE.log.out")"
}

# crash_primary NODE: kill -9 NODE while its writer runs (which then fails:
# its server is gone).
crash_primary() {
	kill_node "$1"
	log "$1 killed (SIGKILL)"
	wait_writer >/dev/null
	grep -q '^A ' "$TESTDIR/w$PHASE.log" || fail "no write acknowledged through $1"
}

# no_split_brain NODE...: no link of theirs is StandAlone.
no_split_brain() {
	local n
	for n in "$@"; do
		if [ "$(status_value "$n" 'any(x["link"] == "StandAlone" for x in p.values())')" != False ]; then
			view "$n" >&2
			fail "$n has a StandAlone link: $(grep -h 'StandAlone' "$(daemon_log "$n")" | tail -n 2)"
		fi
	done
}

# view NODE: one line of NODE's state.
view() {
	status_value "$1" '(v["role"], v["disk"], [(n, x["link"], x["peer_disk"], x["out_of_sync_bytes"], x["reason"]) for n, x in sorted(p.items())])'
}

# in_sync PRIMARY TIMEOUT: the Primary sees both others Connected, UpToDate
# and nothing out of sync, and they are UpToDate and Connected to it.
in_sync() {
	local pr=$1 t=$2 n
	wait_status "$pr" "$t" 'all(x["link"] == "Connected" and x["out_of_sync_bytes"] == 0 and x["peer_disk"] == "UpToDate" for x in p.values())' ||
		return 1
	for n in a b c; do
		[ "$n" = "$pr" ] && continue
		wait_status "$n" 20 "v[\"disk\"] == \"UpToDate\" and p[\"$pr\"][\"link\"] == \"Connected\" and p[\"$pr\"][\"peer_role\"] == \"Primary\"" ||
			return 1
	done
}

cluster_config -t 5 -s 64M a b c
start_in_sync a b c
writer a

log "==== kill -9 the Primary a, promote b, restart a"
crash_primary a
wait_status b 15 'p["a"]["link"] != "Connected" and v["disk"] == "UpToDate"' ||
	fail "b does not see a gone, or is not UpToDate"
promote b
writer b
start_node a
in_sync b 60 || fail "a did not rejoin under b"
no_split_brain a b c

log "==== kill -9 the Primary b, promote c, restart b"
crash_primary b
wait_status c 15 'p["b"]["link"] != "Connected" and v["disk"] == "UpToDate"' ||
	fail "c does not see b gone, or is not UpToDate"
promote c
writer c
start_node b
in_sync c 60 || fail "b did not rejoin under c"
no_split_brain a b c

log "==== SIGTERM the Secondary b, restart it"
stop_node b
wait_status c 15 'p["b"]["link"] != "Connected"' || fail "c does not see b gone"
sleep 1
start_node b
in_sync c 60 || fail "b did not rejoin under c after a clean stop"
no_split_brain a b c

log "==== kill -9 the Primary c, promote a, restart c"
crash_primary c
wait_status a 15 'p["c"]["link"] != "Connected" and v["disk"] == "UpToDate"' ||
	fail "a does not see c gone, or is not UpToDate"
promote a
writer a
start_node c
ok=1
in_sync a 60 || ok=0
for n in a b c; do
	log "$n: $(view "$n")"
done
no_split_brain a b c
[ "$ok" = 1 ] || fail "the three did not end Connected and UpToDate under a"
kill -TERM "$WRITER_PID"
wait_writer || fail "the last writer (through a) failed"

stop_cluster
cmp_backings a b c || fail "the replicas differ"
for i in $(seq 1 "$PHASE"); do
	for n in a b c; do
		ackcheck check --log "$TESTDIR/w$i.log" --file "${NODE_BACKING[$n]}" ||
			fail "$n lost writes acknowledged in phase $i"
	done
done
log "PASS"
