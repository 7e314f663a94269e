#!/bin/bash
# tests/nbd-flood.sh: a flood on the NBD socket while a real client works.
# One daemon (the usual 1024 descriptors).  tests/flood.py keeps 2,000 idle
# connections and 200 connections that loop NBD_OPT_LIST without ever
# reading a reply, for FLOOD_S seconds; meanwhile qemu-io, a new
# connection each round, writes and reads back a pattern.  Then:
#   - every qemu-io round succeeded, and at least 2 ran;
#   - a slow client (one connection; it sends its first option and reads
#     each reply 1.5 s late, as a client on a loaded machine may, and as
#     qemu-io once was in CI) finishes its handshake
#     and reads: the flooders' own handshakes make the room, not its;
#   - the daemon's RSS grew by less than 64 MiB (VmHWM);
#   - the daemon logged what it dropped, and afterwards holds no more
#     descriptors than before and still serves (qemu-io, nbd_raw.py).
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires qemu-io timeout
requires_root	# resetting VmHWM (clear_refs)
requires_replagentd
[ -x "$PYTHON" ] || skip "requires $PYTHON"

FLOOD_S=${FLOOD_S:-15}
GROWTH_MAX_KIB=$((64 << 10))
if grep -q -a __asan_init "$REPLAGENTD"; then
	GROWTH_MAX_KIB=$((320 << 10))
	log "sanitizer build (its quarantine keeps freed memory): RSS growth bound raised to 320 MiB"
fi
ulimit -S -n 1024 || hard_error "cannot lower the descriptor limit"

write_config -s 16M
start_replagentd "$CONFIG"
pid=$(replagentd_pid)

# qio_round I: one qemu-io connection writes pattern I and reads it back.
qio_round() {
	local pat=$(($1 % 255 + 1)) off=$((($1 % 64) * 65536)) out
	out=$(timeout 20 qemu-io -f raw -c "write -P $pat $off 64k" \
		-c "read -P $pat $off 64k" "$NBD_URI" 2>&1) &&
		! grep -q -i -E 'fail|error' <<<"$out" && return 0
	echo "round $1: $(grep -i -E 'fail|error|qemu-io' <<<"$out" | head -n 3)"
	return 1
}

qio_round 0 || fail "qemu-io does not work before the flood"
sleep 1
fds=$(fd_count "$pid")
rss_peak_reset "$pid"
base=$(mem_kib "$pid" VmRSS)
log "before the flood: $base KiB, $fds fds"

start_flood "$TESTDIR/flood.out" nbd --unix "$NBD_SOCK" --idle 2000 --list 200 --procs 8 \
	--duration "$FLOOD_S"
(
	sleep 2
	i=1
	while _alive "$FLOOD_PID"; do
		t0=$(date +%s.%N)
		if qio_round "$i"; then echo "ok $i ($(time_add "$(date +%s.%N)" "-$t0") s)"; else echo "FAIL $i"; fi
		i=$((i + 1))
		sleep 0.5
	done
) >"$TESTDIR/good.log" 2>&1 &
good=$!
track_pid "$good"
# slow_client: one connection that is slow to send its first option and
# to read each reply, like a real client descheduled on a busy machine.
slow_client() {
	"$PYTHON" - "$TESTS_SRCDIR" "$NBD_SOCK" "$VOL" <<'PY'
import sys, time
sys.path.insert(0, sys.argv[1])
import nbd_raw
# The flood keeps the listen backlog full: connecting may take tries.
for i in range(200):
    try:
        c = nbd_raw.Conn(("unix", sys.argv[2]))
        break
    except BlockingIOError:
        time.sleep(0.05)
else:
    sys.exit("slow client: the socket's backlog stayed full for 10 s")
c.greeting()
time.sleep(1.5)
c.client_flags()
c.option(nbd_raw.OPT_STRUCTURED_REPLY)
time.sleep(1.5)
opt, rtype, _ = c.opt_reply()
assert rtype == nbd_raw.REP_ACK, rtype
c.structured = True
nm = sys.argv[3].encode()
c.option(nbd_raw.OPT_GO, len(nm).to_bytes(4, "big") + nm + b"\0\0")
time.sleep(1.5)
while True:
    opt, rtype, data = c.opt_reply()
    if rtype == nbd_raw.REP_ACK:
        break
    assert not rtype & nbd_raw.REP_FLAG_ERROR, rtype
c.check_usable()
print("slow client: handshake with late reads, then a read: ok")
PY
}
sleep 3
slow_ok=0
slow_out=$(slow_client 2>&1) || slow_ok=1
echo "$slow_out"
guard_ok=0
rss_guard $((base + 2 * GROWTH_MAX_KIB)) "$pid" || guard_ok=1
wait_flood
wait "$good"
untrack_pid "$good"
cat "$TESTDIR/flood.out" "$TESTDIR/good.log"
peak=$(mem_kib "$pid" VmHWM)
log "during the flood: RSS peaked at $peak KiB (+$((peak - base)))"
grep -h -E 'dropping an NBD client|cannot accept' "$(daemon_log)" | tail -n 3

replagentd_alive || fail "the daemon died"
[ "$guard_ok" = 0 ] || fail "the daemon's RSS ran away during the flood"
ok=$(grep -c '^ok' "$TESTDIR/good.log")
nfail=$(grep -c '^FAIL' "$TESTDIR/good.log")
log "qemu-io during the flood: $ok rounds ok, $nfail failed"
[ "$nfail" = 0 ] || { grep -v '^ok' "$TESTDIR/good.log" | head -n 6 >&2; fail "qemu-io failed during the flood"; }
[ "$ok" -ge 2 ] || fail "qemu-io made only $ok rounds during the flood"
[ "$slow_ok" = 0 ] || fail "a slow client was dropped during the flood: $(tail -n 2 <<<"$slow_out")"
[ $((peak - base)) -lt "$GROWTH_MAX_KIB" ] ||
	fail "the daemon's RSS grew by $(((peak - base) >> 10)) MiB during the flood"
grep -q 'dropping an NBD client' "$(daemon_log)" || fail "the daemon did not log what it dropped"

# Recovery.
sleep 2
log "after the flood: $(fd_count "$pid") fds"
[ "$(fd_count "$pid")" -le $((fds + 2)) ] || fail "the daemon still holds the flood's descriptors"
qio_round 99 || fail "qemu-io fails after the flood"
timeout 60 "$PYTHON" "$TESTS_SRCDIR/nbd_raw.py" --unix "$NBD_SOCK" --export "$VOL" \
	option_list_with_data flags_advertised pipelined_reads || fail "nbd_raw.py fails after the flood"
stop_replagentd || fail "exit status $REPLAGENTD_STATUS after SIGTERM"
log "PASS"
