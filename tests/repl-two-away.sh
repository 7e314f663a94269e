#!/bin/bash
# tests/repl-two-away.sh: with three replicas, both Secondaries away at
# overlapping times must each get back only what they missed.  a (Primary),
# b, c; 32 MiB of data written while all are connected; b crashes, 1 MiB is
# written; c crashes, 1 MiB more is written; c comes back (it misses 1 MiB),
# then b (it misses 2 MiB).  a's per-peer out_of_sync_bytes say so (plus
# what each had acknowledged and perhaps not flushed), and each
# resync must send about that much (resync_sent_bytes), not the whole
# volume's data; all three end identical with every acknowledged write.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp
requires_replagentd
requires_replagent

MiB=$((1 << 20))

cluster_config -t 5 a b c
for n in a b c; do
	start_node "$n"
done
wait_status a 30 'all(p[n]["link"] == "Connected" and p[n]["out_of_sync_bytes"] == 0 for n in "bc")' ||
	fail "a, b and c did not connect"
promote a

# write_area NAME BASE SPAN SECONDS: ackcheck writes through a.
write_area() {
	local name=$1 base=$2 span=$3 secs=$4
	shift 4
	ackcheck write --unix "${NODE_NBD_SOCK[a]}" --export "$CLUSTER_VOL" \
		--log "$TESTDIR/$name.log" --base "$base" --span "$span" --duration "$secs" "$@" ||
		fail "writes $name failed"
}

write_area w0 0 $((32 * MiB)) 60 --sequential
kill_node b
wait_status a 10 'p["b"]["link"] != "Connected"' || fail "a does not notice b is gone"
write_area w1 $((40 * MiB)) "$MiB" 1
kill_node c
wait_status a 10 'p["c"]["link"] != "Connected"' || fail "a does not notice c is gone"
write_area w2 $((48 * MiB)) "$MiB" 1
oos=$(status_value a '(p["b"]["out_of_sync_bytes"], p["c"]["out_of_sync_bytes"])')
log "a: out of sync (b, c) = $oos"
# What it missed, and up to 1 MiB more: a peer that crashed may not have
# flushed what it acknowledged since the last FLUSH (peer_unflushed.c).
oos_b=$(status_value a 'p["b"]["out_of_sync_bytes"]')
oos_c=$(status_value a 'p["c"]["out_of_sync_bytes"]')
if [ "$oos_b" -lt $((2 * MiB)) ] || [ "$oos_b" -gt $((3 * MiB)) ] ||
	[ "$oos_c" -lt "$MiB" ] || [ "$oos_c" -gt $((2 * MiB)) ]; then
	fail "a should count 2 MiB (+ up to 1) out of sync for b, 1 MiB (+ up to 1) for c"
fi

# rejoin NODE MISSED: restart NODE; its resync must send MISSED bytes (up to
# 1 MiB more), far from the 32+ MiB of data on the volume.
rejoin() {
	local n=$1 missed=$2 before sent
	before=$(status_value a "p[\"$n\"][\"resync_sent_bytes\"]")
	start_node "$n"
	wait_status a 30 "p[\"$n\"][\"link\"] == \"Connected\" and p[\"$n\"][\"out_of_sync_bytes\"] == 0" ||
		fail "$n did not resync"
	wait_status "$n" 10 'v["disk"] == "UpToDate"' || fail "$n is not UpToDate after its resync"
	sent=$(($(status_value a "p[\"$n\"][\"resync_sent_bytes\"]") - before))
	log "$n: resync sent $sent bytes for $missed missed; $(grep -h "resync to $n:" "$(daemon_log a)" | tail -n 1 | sed 's/^.*\] //')"
	[ "$sent" -ge "$missed" ] || fail "$n: resync sent $sent bytes, less than the $missed it missed"
	[ "$sent" -le $((missed + MiB)) ] ||
		fail "$n: resync sent $sent bytes for $missed missed (a full resync?)"
}
rejoin c "$MiB"
rejoin b $((2 * MiB))

stop_cluster
cmp_backings a b c || fail "the replicas differ"
for n in a b c; do
	for w in w0 w1 w2; do
		ackcheck check --log "$TESTDIR/$w.log" --file "${NODE_BACKING[$n]}" >/dev/null ||
			fail "$n lost acknowledged writes of $w"
	done
done
log "PASS"
