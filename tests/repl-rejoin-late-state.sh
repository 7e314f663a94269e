#!/bin/bash
# tests/repl-rejoin-late-state.sh: a replica's state changes while one of
# its links is still being made, and the peer on that link must learn it.
# Three replicas, a Primary, b and c Secondaries; b reaches c through
# tests/mitm in "hold" mode.  c crashes, a writes, c restarts: a resyncs
# c, while everything b sends c after its handshake (b's VOLUME first) is
# held.  So b decided on the VOLUME c sent at once (not yet resynced:
# "between Secondaries, the resync comes from the Primary"), and c's
# resync ends before c has b's VOLUME, i.e. before that link is up on c's
# side, where "our state changed" is told.  Then the relay lets b's frames
# go.  b must come to see c UpToDate, in sync, with no reason given (on
# 6ec809c it kept c Outdated "between Secondaries" for good; the 50-volume
# cluster test met it as "n3: not in sync" after a node returned).
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp qemu-io
requires_replagentd
requires_replagent
MITM=${MITM:-$top_builddir/tests/mitm}
[ -x "$MITM" ] || hard_error "$MITM not built"

# healthy NODE PEER: NODE sees PEER Connected, UpToDate, in sync, no reason.
healthy() {
	echo "p[\"$2\"][\"link\"] == \"Connected\" and p[\"$2\"][\"peer_disk\"] == \"UpToDate\" and p[\"$2\"][\"out_of_sync_bytes\"] == 0 and p[\"$2\"][\"reason\"] == \"\""
}

cluster_config -t 3 a b c
# b (it initiates the b-c link: the smaller name) reaches c through the relay.
relay_route b c
mlog=$TESTDIR/mitm.log

# start_relay MODE: the relay from b to c, in MODE.
start_relay() {
	"$MITM" "$RELAY_PORT" 127.0.0.1 "$RELAY_TARGET_PORT" "$1" 0 >>"$mlog" 2>&1 &
	MITM_PID=$!
	track_pid "$MITM_PID"
}

start_relay none
start_in_sync a b c
qio "${NODE_NBD_URI[a]}" "write -P 0x11 0 1M" >/dev/null || fail "write through a failed"

kill_node c
qio "${NODE_NBD_URI[a]}" "write -P 0x22 1M 4M" >/dev/null || fail "write through a without c failed"
wait_status b 20 'p["c"]["link"] != "Connected"' || fail "b did not lose c"
stop_pid "$MITM_PID"
untrack_pid "$MITM_PID"
start_relay hold
start_node c
n=0
until grep -q 'holding' "$mlog"; do
	[ "$n" -lt 200 ] || fail "b's link to c never reached the relay's hold: $(cat "$mlog")"
	sleep 0.1
	n=$((n + 1))
done
wait_status c 30 "v[\"disk\"] == \"UpToDate\" and $(healthy c a)" ||
	fail "c was not resynced by a"
log "c is UpToDate again (resynced by a); b: $(status_value b 'p["c"]')"
kill -USR1 "$MITM_PID" || fail "the relay is gone"
wait_status b 20 "$(healthy b c)" || fail "b does not see c UpToDate and in sync"
wait_status c 20 "$(healthy c b)" || fail "c does not see b UpToDate and in sync"
grep -q 'released' "$mlog" || fail "the relay did not release: $(cat "$mlog")"
log "b sees c: $(status_value b 'p["c"]')"

qio "${NODE_NBD_URI[a]}" "write -P 0x33 2M 1M" >/dev/null || fail "write through a failed"
for n in b c; do
	wait_status a 20 "$(healthy a $n)" || fail "a does not see $n in sync"
done
stop_node c
stop_node b
stop_node a
cmp_backings a b || fail "a and b differ"
cmp_backings a c || fail "a and c differ"
log "PASS"
