#!/bin/bash
# tests/repl-peer-wire.sh: what a replica accepts from an authenticated
# peer (issue 12, items 6 and 7).  tests/replwire.py speaks for replica a
# with the cluster key:
#   1. b alone (UpToDate, Secondary); a connects in sync and says it is
#      Primary: its WRITE is acknowledged and lands in b's backing (the
#      fake peer works); then it says it is Secondary and sends a WRITE:
#      b must drop the link, say why in its log, and not apply it.
#   2. b Primary with c (real) and a (fake) connected; c is killed: b
#      records c Outdated and holds acknowledgements until a confirms the
#      notice.  a first sends an unrelated STATE, which must not release
#      them (status io_frozen stays true), then confirms the notice (its
#      token echoed): they are released at once, long before the outdate
#      timeout (60 s).
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout
requires_replagentd
requires_replagent

MiB=$((1 << 20))
# replwire.py speaks the frames in the clear after the handshake: the real
# nodes run link-security = none (repl-mitm.sh tests the sealed links).
NODE_GLOBAL_EXTRA='link-security = none'

# fake SCENARIO TARGET [ARGS...]: replwire.py as replica a towards TARGET.
fake() {
	local sc=$1 target=$2
	shift 2
	"$PYTHON" "$TESTS_SRCDIR/replwire.py" --key "$CLUSTER_KEY" --node a --peer "$target" \
		--volume "$CLUSTER_VOL" --wait 15 "$@" "${NODE_ADDR[$target]}" "$sc"
}

# has_data NODE OFFSET: NODE's backing holds replwire's write at OFFSET.
has_data() {
	"$PYTHON" -c 'import sys
with open(sys.argv[1], "rb") as f:
    f.seek(int(sys.argv[2]))
    sys.exit(0 if f.read(17) == b"REPLWIRE-SECWRITE" else 1)' "${NODE_BACKING[$1]}" "$2"
}

log "==== 1. writes from a peer that is not Primary"
cluster_config -t 5 a b
start_node b
promote b --force
ra_cli b demote "$CLUSTER_VOL" || fail "demote b refused"
wait_status b 5 'v["role"] == "Secondary" and v["disk"] == "UpToDate"' ||
	fail "b is not an UpToDate Secondary"
fake primwrite b --offset "$MiB" || fail "b did not take a write from a Primary peer"
has_data b "$MiB" || fail "the Primary peer's write is not in b's backing"
fake secwrite b --offset $((2 * MiB)) ||
	fail "b acknowledged a write from a peer that says it is Secondary"
has_data b $((2 * MiB)) && fail "a Secondary peer's write landed in b's backing"
wait_log b 5 'peer a: .*not the Primary' || fail "b does not log why it dropped the link"
log "b: $(grep -h -E 'peer a: .*not the Primary' "$(daemon_log b)" | sed 's/^.*\] //')"
stop_node b

log "==== 2. an unrelated STATE does not release held acknowledgements"
cluster_config -t 60 a b c
start_in_sync b c
fake confirm b --hold 6 >"$TESTDIR/confirm.out" 2>&1 &
FAKE_PID=$!
track_pid "$FAKE_PID"
wait_status b 20 'p["a"]["link"] == "Connected"' || fail "the fake a did not connect to b"
kill_node c
wait_for_file_text "$TESTDIR/confirm.out" notice 15 ||
	fail "a got no outdate notice: $(cat "$TESTDIR/confirm.out")"
[ "$(status_value b 'v["io_frozen"]')" = True ] ||
	fail "b does not hold acknowledgements while c's outdate is unconfirmed"
wait_for_file_text "$TESTDIR/confirm.out" unrelated-sent 5 ||
	fail "a did not send its STATE: $(cat "$TESTDIR/confirm.out")"
# For 3 s (a confirms after 6): still held.
end=$(($(date +%s) + 3))
while [ "$(date +%s)" -lt "$end" ]; do
	frozen=$(status_value b 'v["io_frozen"]')
	grep -q confirmed "$TESTDIR/confirm.out" && hard_error "a confirmed too early to tell"
	[ "$frozen" = True ] ||
		fail "an unrelated STATE released the acknowledgements held for c's outdate"
	sleep 0.2
done
wait_for_file_text "$TESTDIR/confirm.out" confirmed 10 ||
	fail "a did not confirm: $(cat "$TESTDIR/confirm.out")"
wait_status b 5 'not v["io_frozen"]' ||
	fail "b still holds acknowledgements after a confirmed the notice"
wait "$FAKE_PID" || fail "the fake a failed: $(cat "$TESTDIR/confirm.out")"
untrack_pid "$FAKE_PID"
cat "$TESTDIR/confirm.out"
log "PASS"
