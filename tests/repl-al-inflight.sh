#!/bin/bash
# tests/repl-al-inflight.sh: a write is not acknowledged before the
# activity-log bit that covers it is on disk, even when that bit was set
# in memory by an earlier write whose flush is still running.  a (Primary)
# and b; a's metadata gets slow flushes (3 s) and a volatile write cache,
# b's backing a volatile write cache (tests/faultdisk.c: a kill -9 loses
# unflushed writes, like a power loss).  A raw NBD client sends W1 (4 KiB,
# a region never written) and, 0.2 s later, W2 (the next 4 KiB, same
# region) without waiting for W1's answer; 1 s after W1, a and b are
# killed together, W1's activity-log flush still sleeping.  W2 used to be
# sent and written at once (its bit was already set, no page changed): it
# was acknowledged, kept by a's backing, lost by b's cache, and the
# recovery (which resyncs what the durable activity log names) did not
# know its region: the replicas differed for good.  Both restart, a is
# promoted again, and once in sync the backings must be identical and hold
# every write that was acknowledged.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp
requires_replagentd
requires_replagent

IN_SYNC='p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0 and p["b"]["peer_disk"] == "UpToDate"'
OFF=$((40 << 20))	# a 64 KiB region nothing else writes

cluster_config -t 5 a b
faultdisk_init
faultdisk_preload a
faultdisk_preload b
start_node a
start_node b
wait_status a 30 "$IN_SYNC" || fail "a and b did not connect"
promote a
wait_status b 10 'v["disk"] == "UpToDate" and p["a"]["link"] == "Connected"' ||
	fail "b is not in sync"

META_A=${NODE_DIR[a]}/state/$CLUSTER_VOL.meta
faultdisk_set cache "$META_A" "${NODE_BACKING[b]}"
faultdisk_set slow-flush "$META_A 3000"

# W1 and W2 pipelined; a and b are killed 1 s after W1 (by the client, so
# that the moment does not depend on this shell).  Prints "acked W..."
# for every write answered before that.
"$PYTHON" - "$TESTS_SRCDIR" "${NODE_NBD_SOCK[a]}" "$CLUSTER_VOL" "$OFF" \
	"$(replagentd_pid a)" "$(replagentd_pid b)" >"$TESTDIR/client.out" 2>&1 <<-'EOF' ||
	import os, select, signal, struct, sys, time
	sys.path.insert(0, sys.argv[1])
	import nbd_raw
	off = int(sys.argv[4])
	c = nbd_raw.Conn(("unix", sys.argv[2]), timeout=10)
	c.handshake(sys.argv[3])
	names = {}
	t0 = time.monotonic()
	names[c.request(nbd_raw.CMD_WRITE, off, 4096, payload=b"\x58" * 4096)] = "W1"
	time.sleep(0.2)
	names[c.request(nbd_raw.CMD_WRITE, off + 4096, 4096, payload=b"\x59" * 4096)] = "W2"
	while names and select.select([c.s], [], [], max(0, t0 + 1.0 - time.monotonic()))[0]:
	    magic, err, ck = struct.unpack(">IIQ", c.recv_exact(16))
	    print("acked" if err == 0 else "error %d" % err, names.pop(ck), flush=True)
	for pid in sys.argv[5:]:
	    os.kill(int(pid), signal.SIGKILL)
	print("killed a and b; unanswered:", *sorted(names.values()), flush=True)
	EOF
	fail "the NBD client failed: $(cat "$TESTDIR/client.out")"
log "client: $(tr '\n' ';' <"$TESTDIR/client.out")"
kill_node a
kill_node b
faultdisk_log | grep -q "^slow-flush $META_A" || hard_error "the shim slowed no flush of a's metadata"
grep -q 'acked W1' "$TESTDIR/client.out" && hard_error "W1 acknowledged within 1 s: the flush was not slow"

# Both come back without the shim; a, the crashed Primary, is promoted
# again and resyncs what its activity log names.
ra_env a
ra_env b
faultdisk_clear cache
faultdisk_clear slow-flush
start_node a
start_node b
wait_status a 30 'v["role"] == "Secondary" and p["b"]["link"] == "Connected"' ||
	fail "a did not come back connected"
# a crashed as Primary and b, connected and UpToDate, did not: a refuses
# to be promoted in b's place unless told so with --force (then it
# resyncs its activity log to b, which is what is tested here).
promote a --force
wait_status a 60 "$IN_SYNC" || fail "a and b did not get in sync"
stop_node b
stop_node a

# has NODE OFFSET BYTE: NODE's backing holds 4 KiB of BYTE at OFFSET.
has() {
	cmp -s -n 4096 -i "$2:0" "${NODE_BACKING[$1]}" <(head -c 4096 /dev/zero | tr '\0' "\\$3")
}
lost=
for w in W1:$OFF:130 W2:$((OFF + 4096)):131; do
	IFS=: read -r name off byte <<<"$w"
	grep -q "acked $name" "$TESTDIR/client.out" || continue
	for n in a b; do
		has "$n" "$off" "$byte" || lost+=" $name on $n"
	done
done
cmp_backings a b || fail "a and b differ after the recovery (acknowledged but lost:${lost:- none}): a write went out before its activity-log bit was durable"
[ -z "$lost" ] || fail "acknowledged but lost:$lost"
log "PASS"
