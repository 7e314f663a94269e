#!/bin/bash
# tests/repl-auth.sh: who may replicate, and what a replication port does
# with strangers.  On 127.0.0.1, three independent pairs of nodes:
#   1. a, b with different keys: never connect, a logs "authentication
#      failed"; a becomes Primary and takes writes, b's volume stays as it was
#      (sha256 before and after);
#   2. m, n where n's volume has another name: refused, with a log line
#      that says why; s, t where t's volume has another size (a grow half
#      way, see repl-resize.sh): never StandAlone, blank they connect and s
#      exports the smaller size; neither volume changes;
#   3. x (Primary), y connected: tests/replwire.py sends 64 KiB of random
#      bytes, frame headers with huge lengths, bad CRCs and versions, a fake
#      HELLO, idle and half-sent connections to both replication ports,
#      first with no I/O (both volumes unchanged), then while ackcheck.py
#      writes through x: every connection is dropped in time, the writes go
#      on without pause, x keeps its link to y, the replicas end identical
#      with every acknowledged write.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp sha256sum
requires_replagentd
requires_replagent

sha() { sha256sum "$1" | cut -d' ' -f1; }

# later_fail MSG: a failure that does not stop the test (the other parts
# still run); the test fails at its end.
LATER_FAILURES=()
later_fail() {
	echo "$TEST_NAME: FAIL (continuing): $*" >&2
	LATER_FAILURES+=("$*")
}

# never_connected A B: neither side has ever authenticated the other.
never_connected() {
	! grep -q -E "peer $2 authenticated" "$(daemon_log "$1")" &&
		! grep -q -E "peer $1 authenticated" "$(daemon_log "$2")"
}

# write_some NODE SECONDS LOG: ackcheck writes through NODE, must succeed.
write_some() {
	ackcheck write --unix "${NODE_NBD_SOCK[$1]}" --export "$CLUSTER_VOL" --log "$3" \
		--duration "$2" --span $((8 << 20)) --max-gap 3 ||
		fail "writes through $1 failed"
}

# ---- 1. wrong key -------------------------------------------------------------
log "==== 1. b has another key"
cluster_config -t 5 a b
make_key "$TESTDIR/other.key"
write_node_config b "${NODE_CONF[b]}" "$TESTDIR/other.key" "$CLUSTER_VOL" \
	"$CLUSTER_SIZE" "${NODE_BACKING[b]}"
start_node a
start_node b
h_before=$(sha "${NODE_BACKING[b]}")
AUTH_FAILED='authentication failed|failed authentication'
wait_log a 20 "$AUTH_FAILED" || fail "a does not log that authentication failed"
log "a: $(grep -h -E "$AUTH_FAILED" "$(daemon_log a)" | head -n 1 | sed 's/^.*\] //')"
promote a
write_some a 3 "$TESTDIR/ack1.log"
wait_status a 5 'p["b"]["link"] in ("Connecting", "Disconnected", "StandAlone")' ||
	fail "a shows b linked despite the wrong key"
wait_status b 5 'v["role"] == "Secondary" and p["a"]["link"] != "Connected"' ||
	fail "b shows a linked despite the wrong key"
never_connected a b || fail "a and b authenticated each other with different keys"
stop_node b
stop_node a
[ "$(sha "${NODE_BACKING[b]}")" = "$h_before" ] || fail "b's volume changed although b never connected"
ackcheck check --log "$TESTDIR/ack1.log" --file "${NODE_BACKING[a]}" || fail "a lost writes"

# ---- 2. another volume on the same addresses -------------------------------
# check_refused A B WHAT ERE EXPR: B's config differs in WHAT; A must log a
# line matching ERE (saying why), its status must satisfy EXPR, and neither
# volume may change.
check_refused() {
	local a=$1 b=$2 what=$3 ere=$4 expr=$5 ha hb
	start_node "$a"
	start_node "$b"
	ha=$(sha "${NODE_BACKING[$a]}")
	hb=$(sha "${NODE_BACKING[$b]}")
	if ! wait_log "$a" 20 "$ere"; then
		# Go on with the rest of the test; fail at the end.
		echo "---- $a's log:" >&2
		grep -v '^====' "$(daemon_log "$a")" | tail -n 5 >&2
		echo "---- $b's log:" >&2
		grep -v '^====' "$(daemon_log "$b")" | tail -n 5 >&2
		later_fail "$a does not log why it refuses a peer with $what (expected /$ere/)"
	else
		log "$a refuses $b ($what): $(grep -h -E "$ere" "$(daemon_log "$a")" | head -n 1)"
	fi
	sleep 2
	wait_status "$a" 5 "$expr" || fail "$a: not $expr"
	never_connected "$a" "$b" ||
		log "note: $a and $b authenticated (the key is shared) before the refusal"
	stop_node "$b"
	stop_node "$a"
	[ "$(sha "${NODE_BACKING[$a]}")" = "$ha" ] || fail "$a's volume changed"
	[ "$(sha "${NODE_BACKING[$b]}")" = "$hb" ] || fail "$b's volume changed"
}

log "==== 2a. n's volume has another name"
cluster_config -t 5 m n
write_node_config n "${NODE_CONF[n]}" "$CLUSTER_KEY" other "$CLUSTER_SIZE" "${NODE_BACKING[n]}"
check_refused m n "another volume name" \
	'[Vv]olume.*(name|differ|not this)|different volume|resource|offers volume' \
	'p["n"]["link"] != "Connected"'

# Another size alone is a volume half way through a grow (the configs are
# changed one node at a time): never StandAlone.  Blank, the two have no
# data to move, so they connect and the smaller size is what s exports.
log "==== 2b. t's volume has another size"
cluster_config -t 5 s t
write_node_config t "${NODE_CONF[t]}" "$CLUSTER_KEY" "$CLUSTER_VOL" 32M "${NODE_BACKING[t]}"
start_node s
start_node t
hs=$(sha "${NODE_BACKING[s]}")
ht=$(sha "${NODE_BACKING[t]}")
wait_log s 20 'sizes differ' || later_fail "s does not log that t's size differs"
wait_status s 10 'p["t"]["link"] == "Connected" and p["t"]["size"] == 32 << 20 and v["export_size"] == 32 << 20' ||
	later_fail "s and t (64 and 32 MiB, blank) did not connect with s exporting 32 MiB"
log "s and t (another size): $(grep -h 'sizes differ' "$(daemon_log s)" | head -n 1 | sed 's/^.*\] //')"
stop_node t
stop_node s
[ "$(sha "${NODE_BACKING[s]}")" = "$hs" ] || fail "s's volume changed"
[ "$(sha "${NODE_BACKING[t]}")" = "$ht" ] || fail "t's volume changed"

# ---- 3. garbage on the replication ports -----------------------------------
log "==== 3. garbage on the replication ports"
cluster_config -t 5 x y
start_pair x y
SCENARIOS=(random hugelen maxwrite badcrc badversion fakehello idle halfheader)

# garbage ADDR: every scenario at once on ADDR (in the background); the
# PIDs go to GARBAGE_PIDS, the outputs to $TESTDIR/garbage-*.out.
GARBAGE_PIDS=()
garbage() {
	local sc pid
	for sc in "${SCENARIOS[@]}"; do
		"$PYTHON" "$TESTS_SRCDIR/replwire.py" --wait 15 "$1" "$sc" \
			>"$TESTDIR/garbage-$1-$sc.out" 2>&1 &
		pid=$!
		track_pid "$pid"
		GARBAGE_PIDS+=("$pid")
	done
}
garbage_wait() {
	local pid bad=0
	for pid in "${GARBAGE_PIDS[@]}"; do
		wait "$pid" || bad=1
		untrack_pid "$pid"
	done
	GARBAGE_PIDS=()
	cat "$TESTDIR"/garbage-*.out
	rm -f "$TESTDIR"/garbage-*.out
	[ "$bad" = 0 ] || fail "a replication port mishandled garbage (see above)"
}

# 3a. no I/O: nothing may change.
hx=$(sha "${NODE_BACKING[x]}")
hy=$(sha "${NODE_BACKING[y]}")
garbage "${NODE_ADDR[x]}"
garbage "${NODE_ADDR[y]}"
garbage_wait
replagentd_alive x || fail "x died from garbage"
replagentd_alive y || fail "y died from garbage"
[ "$(sha "${NODE_BACKING[x]}")" = "$hx" ] || fail "garbage changed x's volume"
[ "$(sha "${NODE_BACKING[y]}")" = "$hy" ] || fail "garbage changed y's volume"
wait_status x 5 'v["role"] == "Primary" and p["y"]["link"] == "Connected"' ||
	fail "x lost its link to y"

# 3b. garbage while x serves writes.
garbage "${NODE_ADDR[x]}"
garbage "${NODE_ADDR[y]}"
write_some x 12 "$TESTDIR/ack3.log"
garbage_wait
wait_status x 10 'p["y"]["link"] == "Connected" and p["y"]["out_of_sync_bytes"] == 0' ||
	fail "x lost its link to y"
grep -q 'dropping an incoming replication connection' "$(daemon_log x)" ||
	fail "x did not log the dropped connections"
n_auth=$(grep -c 'peer y authenticated' "$(daemon_log x)")
[ "$n_auth" = 1 ] || fail "the link x-y was re-established $((n_auth - 1)) time(s)"
stop_node y
stop_node x
cmp_backings x y || fail "x and y differ"
ackcheck check --log "$TESTDIR/ack3.log" --file "${NODE_BACKING[y]}" || fail "y lost writes"
[ ${#LATER_FAILURES[@]} = 0 ] || fail "$(printf '%s; ' "${LATER_FAILURES[@]}")"
log "PASS"
