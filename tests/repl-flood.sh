#!/bin/bash
# tests/repl-flood.sh: strangers flooding the replication ports while the
# Primary serves a guest.  Two replicas a (Primary) and b on 127.0.0.1, each
# daemon with the usual 1024 descriptors; ackcheck.py writes through a the
# whole time.  tests/flood.py keeps 2,000 connections to each replication
# port, every one sending the header of a 4 MiB WRITE frame (no key) and
# then 256 KiB of its payload, for FLOOD_S seconds.  Then:
#   - a's link to b stayed Connected (authenticated once, never dropped);
#   - every write was answered in time (no gap over 5 s beyond the longest
#     request a daemon logged its disk as slow for), and after the
#     daemons stop, both replicas hold every acknowledged write and are
#     identical (cmp);
#   - neither daemon's RSS grew by 64 MiB or more (VmHWM);
#   - afterwards b restarts and is Connected again at once, and the
#     daemons hold no more descriptors than before the flood.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp
requires_root	# resetting VmHWM (clear_refs)
requires_replagentd
requires_replagent
[ -x "$PYTHON" ] || skip "requires $PYTHON"

FLOOD_S=${FLOOD_S:-15}
CONNS=2000
MAX_GAP_S=5
GROWTH_MAX_KIB=$((64 << 10))
# A sanitizer build keeps freed memory in quarantine and shadow: the bound
# is about this daemon, not ASan's bookkeeping.
if grep -q -a __asan_init "$REPLAGENTD"; then
	GROWTH_MAX_KIB=$((320 << 10))
	log "sanitizer build (its quarantine keeps freed memory): RSS growth bound raised to 320 MiB"
fi
# The daemons get the descriptor limit a systemd service has by default.
ulimit -S -n 1024 || hard_error "cannot lower the descriptor limit"

cluster_config -t 5 a b
start_in_sync a b
pa=$(replagentd_pid a)
pb=$(replagentd_pid b)

start_writer "$TESTDIR/ack.log" --unix "${NODE_NBD_SOCK[a]}" --export "$CLUSTER_VOL" \
	--duration $((FLOOD_S + 10)) --span $((8 << 20)) --max-gap "$MAX_GAP_S"
sleep 2
fds_a=$(fd_count "$pa")
fds_b=$(fd_count "$pb")
rss_peak_reset "$pa"
rss_peak_reset "$pb"
base_a=$(mem_kib "$pa" VmRSS)
base_b=$(mem_kib "$pb" VmRSS)
log "before the flood: a $base_a KiB, $fds_a fds; b $base_b KiB, $fds_b fds"

start_flood "$TESTDIR/flood-a.out" repl "${NODE_ADDR[a]}" --conns "$CONNS" \
	--payload $((256 << 10)) --duration "$FLOOD_S"
flood_a=$FLOOD_PID
start_flood "$TESTDIR/flood-b.out" repl "${NODE_ADDR[b]}" --conns "$CONNS" \
	--payload $((256 << 10)) --duration "$FLOOD_S"
guard_ok=0
# Watch both floods (the guard follows FLOOD_PID, b's; a's ends at the same
# time) and the link while they run.
link_lost=0
(
	while _alive "$flood_a" || _alive "$FLOOD_PID"; do
		sleep 1
		node_status a 2>/dev/null | "$PYTHON" -c "$_STATUS_PY" test \
			'p["b"]["link"] == "Connected"' "$CLUSTER_VOL" 2>/dev/null ||
			echo "$(date +%T) a does not show b Connected"
	done
) >"$TESTDIR/link.out" 2>&1 &
watcher=$!
track_pid "$watcher"
rss_guard $((base_a + 2 * GROWTH_MAX_KIB)) "$pa" "$pb" || guard_ok=1
FLOOD_PID=$flood_a
rss_guard $((base_a + 2 * GROWTH_MAX_KIB)) "$pa" "$pb" || guard_ok=1
wait_flood
wait "$watcher"
untrack_pid "$watcher"
cat "$TESTDIR/flood-a.out" "$TESTDIR/flood-b.out"
[ -s "$TESTDIR/link.out" ] && { cat "$TESTDIR/link.out"; link_lost=1; }

peak_a=$(mem_kib "$pa" VmHWM)
peak_b=$(mem_kib "$pb" VmHWM)
log "during the flood: a peaked at $peak_a KiB (+$((peak_a - base_a))), b at $peak_b KiB (+$((peak_b - base_b)))"
grep -h 'dropping an incoming replication connection' "$(daemon_log a)" | tail -n 2

writer_ok=0
wait_writer || writer_ok=$?
if [ "$writer_ok" = 3 ]; then
	# Every write was answered, one late.  The bound is about the flood:
	# a disk that itself stalled (the daemons log a request over 1 s) adds
	# its stall to it.
	gap_ms=$(writer_gap_ms)
	disk_ms=$(disk_stall_ms a b)
	if [ "$disk_ms" -gt 0 ] && [ "$gap_ms" -le $((MAX_GAP_S * 1000 + disk_ms)) ]; then
		log "the writer once waited $gap_ms ms, and a disk itself took $disk_ms ms for one request: within the bound of ${MAX_GAP_S} s beyond the disk's stall"
		writer_ok=0
	fi
fi
n_auth=$(grep -c 'peer b authenticated' "$(daemon_log a)")
if [ "$writer_ok" != 0 ] || [ "$n_auth" != 1 ]; then
	# What the daemons said besides the flood's warnings, which would fill
	# the last lines the failure shows.
	for n in a b; do
		echo "---- $n's log without the flood's warnings ----" >&2
		grep -v 'dropping an incoming replication connection' "$(daemon_log "$n")" | tail -n 40 >&2
	done
	echo "----" >&2
fi
[ "$writer_ok" = 0 ] || fail "the writer through a failed (a write unanswered or late)"
replagentd_alive a || fail "a died"
replagentd_alive b || fail "b died"
[ "$guard_ok" = 0 ] || fail "a daemon's RSS ran away during the flood"
[ "$link_lost" = 0 ] || fail "a lost its link to b during the flood"
[ "$n_auth" = 1 ] || fail "the link a-b was re-established $((n_auth - 1)) time(s)"
[ $((peak_a - base_a)) -lt "$GROWTH_MAX_KIB" ] ||
	fail "a's RSS grew by $(((peak_a - base_a) >> 10)) MiB during the flood"
[ $((peak_b - base_b)) -lt "$GROWTH_MAX_KIB" ] ||
	fail "b's RSS grew by $(((peak_b - base_b) >> 10)) MiB during the flood"

# Recovery: the strangers are gone, so are their descriptors, and a real
# peer connects again at once.
sleep 4
log "after the flood: a $(fd_count "$pa") fds, b $(fd_count "$pb") fds"
[ "$(fd_count "$pa")" -le $((fds_a + 4)) ] || fail "a still holds the flood's descriptors"
[ "$(fd_count "$pb")" -le $((fds_b + 4)) ] || fail "b still holds the flood's descriptors"
wait_status a 10 'p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0' ||
	fail "a and b not in sync after the flood"
stop_node b
start_node b
wait_status a 15 'p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0' ||
	fail "b did not reconnect after the flood"
stop_node b
stop_node a
cmp_backings a b || fail "a and b differ"
ackcheck check --log "$TESTDIR/ack.log" --file "${NODE_BACKING[a]}" || fail "a lost writes"
ackcheck check --log "$TESTDIR/ack.log" --file "${NODE_BACKING[b]}" || fail "b lost writes"
log "PASS"
