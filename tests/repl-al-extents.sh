#!/bin/bash
# tests/repl-al-extents.sh: the activity log is a set of 4 MiB extents
# (al-extents = 16 here): a write into an extent already in the set writes
# no metadata at all (the activity-log transaction and bitmap-write
# counters of /metrics stay put, even for another 64 KiB region of the
# extent and after the old 2 s sweep), a write into a new extent writes one
# transaction.  Then writes over 32 extents fill and overflow the set, a
# writer hammers 8 MiB of it, the Primary is killed with SIGKILL in the
# middle, restarts and is promoted again: the resync covers at most the
# set and the 2 extents the hammered span evicted (72 MiB, not the 128 MiB
# written), and afterwards the replicas are byte-identical and hold every
# acknowledged write.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires curl qemu-io timeout cmp
requires_replagentd
requires_replagent

MIB=$((1 << 20))
AL_SERIES='replagent_activity_log_transactions_total{volume="vol0"}'
BM_SERIES='replagent_bitmap_writes_total{volume="vol0"}'
cluster_config -t 5 -s 256M a b
volume_option a "al-extents = 16"
volume_option b "al-extents = 16"
metrics_on a
start_in_sync a b

# counters: "AL BITMAP" of a, from /metrics
counters() {
	local f=$TESTDIR/metrics.txt al bm
	metrics_get a >"$f" || fail "GET /metrics on a failed"
	al=$(metric_value "$f" "$AL_SERIES") || fail "no $AL_SERIES in /metrics"
	bm=$(metric_value "$f" "$BM_SERIES") || fail "no $BM_SERIES in /metrics"
	echo "$al $bm"
}
write_4k() {	# write_4k OFFSET PATTERN
	qio "${NODE_NBD_URI[a]}" "write -P $2 $1 4k" >/dev/null || fail "write at $1 failed"
}

write_4k 0 0x11
c1=$(counters)
write_4k $((1 * MIB)) 0x12	# another 64 KiB region of extent 0
write_4k 4096 0x13
c2=$(counters)
log "counters (transactions, bitmap writes): after the first write $c1, after two more in its extent $c2"
[ "$c1" = "$c2" ] || fail "writes into a hot extent wrote metadata: $c1 -> $c2"
sleep 3	# longer than the old intent sweep: extents leave only on overflow
write_4k 8192 0x14
c3=$(counters)
[ "$c2" = "$c3" ] || fail "a write into an extent idle for 3 s wrote metadata: $c2 -> $c3"
write_4k $((8 * MIB)) 0x15	# extent 2: new
c4=$(counters)
read -r al3 _ <<<"$c3"
read -r al4 _ <<<"$c4"
[ "$al4" -eq $((al3 + 1)) ] || fail "a write into a new extent: transactions $al3 -> $al4, expected one more"
log "a new extent: $c3 -> $c4"

# 32 extents (128 MiB), twice the set: it overflows and evicts.
start_writer "$TESTDIR/fill.log" --unix "${NODE_NBD_SOCK[a]}" --export "$CLUSTER_VOL" \
	--duration 4 --inflight 8 --span $((128 * MIB)) --structured
wait_writer || fail "the writer over 128 MiB failed"
sleep 2.5	# the Secondary hears that those writes are everywhere
start_writer "$TESTDIR/w.log" --unix "${NODE_NBD_SOCK[a]}" --export "$CLUSTER_VOL" \
	--duration 30 --inflight 16 --flush-every 64 --base $((64 * MIB)) --span $((8 * MIB)) \
	--structured
sleep 1.5
_alive "$WRITER_PID" || fail "the writer ended early"
kill_node a
wait_writer
grep -q '^A ' "$TESTDIR/w.log" || fail "nothing acknowledged before the crash"
start_node a
wait_status a 15 'v["role"] == "Secondary" and p["b"]["link"] == "Connected"' ||
	fail "a did not come back connected"
before=$(grep -c . "$(daemon_log a)")
# a crashed as Primary and b, connected and UpToDate, did not: a refuses
# to be promoted in b's place unless told so with --force (then it
# resyncs its activity log to b, which is what is tested here).
promote a --force
wait_status a 60 'p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0 and p["b"]["peer_disk"] == "UpToDate"' ||
	fail "the resync to b did not finish"
line=$(tail -n +"$before" "$(daemon_log a)" | grep -E 'resync to b: [0-9]+ bytes' | tail -n 1)
bytes=$(printf '%s\n' "$line" | sed -E 's/.*resync to b: ([0-9]+) bytes.*/\1/')
[ -n "$bytes" ] || fail "no resync logged"
log "$line"
[ "$bytes" -gt 0 ] || fail "nothing resynced after the crash"
# The set, and the two extents the hammered span brought in evicted: an
# evicted extent's bits are cleared in memory once a data flush after its
# eviction worked, and reach the disk with a later bitmap write (al_vol.c),
# so a crash before that one resyncs them too (17 extents in a CI run
# under ASan).
[ "$bytes" -le $(((16 + 2) * 4 * MIB)) ] ||
	fail "resynced $bytes bytes, more than the 16 extents of the activity log" \
		"and the 2 it evicted last"
stop_node a
stop_node b
cmp_backings a b || fail "a and b differ"
for n in a b; do
	ackcheck check --log "$TESTDIR/w.log" --file "${NODE_BACKING[$n]}" ||
		fail "$n lost writes acknowledged before the crash"
done
log "PASS"
