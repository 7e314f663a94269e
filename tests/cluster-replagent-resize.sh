#!/bin/bash
# tests/cluster-replagent-resize.sh: "replagent volume resize" (online
# grow) in cluster mode on three nodes of tests/cluster.sh.  vol0 (64 MiB)
# is Primary on n1, with tests/ackcheck.py writing through n1's NBD socket,
# and n3's replagentd down.  "volume resize vol0 --size 96M" on n2 (a
# Secondary): n1 and n2 grow while the writer runs, their link stays
# Connected (never StandAlone, n2 never Outdated), both report 96 MiB; a
# client connected before the resize keeps 64 MiB (it cannot write past
# it), a new one (nbdinfo, then a second writer in the new area) gets 96
# MiB.  n3 comes back with its old 64 MiB replica: it learns the new size,
# grows, resyncs (the new area included); verify on n1 finds nothing
# different.  n1 crashes, n3 is promoted: every acknowledged write, old
# area and new, is there.  Shrinking, the same size, bad sizes, an unknown
# volume, bad requests and a partition without quorum are refused with a
# clear error; the replicas end identical.  Skipped (77) without root,
# network namespaces or corosync.
# shellcheck source=SCRIPTDIR/cluster-replagent-lib.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/cluster-replagent-lib.sh" || exit 99

rc_requires
requires nbdinfo
t0=$(now_s)
ACK1=$TESTDIR/ack-old-area.log
ACK2=$TESTDIR/ack-new-area.log
OLD=$((64 << 20))
NEW=$((96 << 20))

# refused I WANT ARGS...: the CLI on node I exits 1 and says WANT.
refused() {
	local i=$1 want=$2 out
	shift 2
	if out=$(rc_cli "$i" "$@" 2>&1); then
		problem "'$*' on n$i accepted: $out"
	elif ! grep -qi -- "$want" <<<"$out"; then
		problem "'$*' on n$i refused without saying '$want': $out"
	else
		log "refused as it should: $* -> $out"
	fi
}

rc_setup 3
rc_vol0_on_n1

# n3 is away during the resize.
rc_stop 3
rc_wait 1 10 'p["n3"]["link"] != "Connected"' || fail "n1 still sees n3 connected"
log "vol0 Primary on n1, n3 down, after $(rc_elapsed "$t0") s"

# A client that connects before the resize: it must keep 64 MiB.
"$PYTHON" - "$TESTS_SRCDIR" "${RC_NBD[1]}" "$TESTDIR/resized" >"$TESTDIR/old-client.out" 2>&1 <<-'EOF' &
	import os, sys, time
	sys.path.insert(0, sys.argv[1])
	import nbd_raw
	c = nbd_raw.Conn(("unix", sys.argv[2]), timeout=60)
	c.handshake("vol0")
	print("negotiated", c.size, flush=True)
	end = time.monotonic() + 90
	while not os.path.exists(sys.argv[3]):
	    if time.monotonic() > end:
	        sys.exit("the resize never came")
	    time.sleep(0.1)
	block = b"\x5a" * 4096
	err1, _ = c.cmd(nbd_raw.CMD_WRITE, c.size - 4096, 4096, payload=block)
	err2, _ = c.cmd(nbd_raw.CMD_WRITE, c.size, 4096, payload=block)
	print("write below the end: error %d; at the old end: error %d" % (err1, err2))
	sys.exit(0 if c.size == 64 << 20 and err1 == 0 and err2 != 0 else 1)
EOF
OLD_CLIENT=$!
track_pid "$OLD_CLIENT"

# The writer: 16 writes in flight over the first 16 MiB, through the resize.
start_writer "$ACK1" --unix "${RC_NBD[1]}" --export vol0 --duration 12 \
	--inflight 16 --flush-every 64 --span $((16 << 20)) --stall-timeout 20
W1_PID=$WRITER_PID
sleep 2
[ "$(rc_acks "$ACK1")" -ge 50 ] || fail "fewer than 50 writes acknowledged by n1 in 2 s"

# ---- the resize, on a Secondary ------------------------------------------------
t1=$(now_s)
out=$(rc_cli 2 volume resize vol0 --size 96M 2>&1) || fail "volume resize on n2 failed: $out"
log "volume resize on n2: $out"
rc_wait_all 20 "v.get(\"size\") == $NEW and \"grow\" not in v" vol0 1 2 ||
	fail "n1 and n2 did not both grow to 96 MiB within 20 s"
rc_wait 1 10 "v[\"export_size\"] == $NEW" ||
	fail "n1 does not export 96 MiB although n2 has grown"
log "n1 and n2 grew to 96 MiB $(rc_elapsed "$t1") s after the resize, under writes"
_alive "$W1_PID" || problem "the writer on the old connection ended during the resize"
rc_wait 1 5 'p["n2"]["link"] == "Connected" and p["n2"]["peer_disk"] == "UpToDate"' ||
	problem "n1's link to n2 is not Connected and UpToDate after the resize"
grep -a -q 'peer n2 is gone' "$(rc_log 1)" && problem "n1 lost n2 during the resize"
for i in 1 2; do
	grep -a -q "grown from 64.0 MiB to 96.0 MiB" "$(rc_log "$i")" ||
		problem "n$i did not log its grow"
done
rc_cli 1 status | grep -q "96.0 MiB" || problem "status on n1 does not show 96.0 MiB"
for i in 1 2; do
	[ "$(stat -c %s "$(rc_backing "$i")")" = "$NEW" ] ||
		problem "n$i's backing file is not 96 MiB"
done

# Old connection: 64 MiB, no write past it.  New ones: 96 MiB.
touch "$TESTDIR/resized"
if wait "$OLD_CLIENT"; then
	log "the client connected before the resize: $(tr '\n' ' ' <"$TESTDIR/old-client.out")"
else
	problem "the client connected before the resize: $(cat "$TESTDIR/old-client.out")"
fi
untrack_pid "$OLD_CLIENT"
sz=$(nbdinfo --size "$(rc_uri 1)") || fail "nbdinfo on n1 failed"
[ "$sz" = "$NEW" ] || problem "a new NBD client of n1 sees $sz bytes, not $NEW"
log "a new NBD client of n1 sees $sz bytes"

# Writes in the new area, through a new connection, while the first
# writer still runs on its old one.
start_writer "$ACK2" --unix "${RC_NBD[1]}" --export vol0 --duration 4 \
	--inflight 16 --flush-every 64 --base "$OLD" --span $((NEW - OLD)) --stall-timeout 20
wait_writer || problem "writes in the new area (through n1) failed"
[ "$(rc_acks "$ACK2")" -gt 100 ] || problem "only $(rc_acks "$ACK2") writes in the new area"
# shellcheck disable=SC2034 # WRITER_LOG: read by wait_writer
WRITER_PID=$W1_PID WRITER_LOG=$ACK1
wait_writer || problem "the writer on the connection made before the resize failed"

# ---- refusals -------------------------------------------------------------------
refused 1 "only grows" volume resize vol0 --size 32M
refused 2 "that size already" volume resize vol0 --size 96M
refused 1 "multiple of 512" volume resize vol0 --size 100000001
refused 1 "invalid size" volume resize vol0 --size 12Q
refused 1 "beyond" volume resize vol0 --size 200T
refused 1 "no such volume" volume resize nosuch --size 1G
rc_cli 1 volume resize vol0 >/dev/null 2>&1
[ $? = 64 ] || problem "volume resize without --size: not a usage error (64)"
rc_cli 1 volume resize vol0 --size 1G extra >/dev/null 2>&1
[ $? = 64 ] || problem "volume resize with an extra argument: not a usage error (64)"
"$PYTHON" - "${RC_CTL[2]}" <<-'EOF' || problem "a bad volume-resize request was not refused"
	import json, socket, sys
	rc = 0
	for req in ["volume-resize", "volume-resize vol0", "volume-resize vol0 1G x",
	            "volume-resize ../vol0 1G", "volume-resize vol0 -1", "volume-resize vol0 0"]:
	    s = socket.socket(socket.AF_UNIX)
	    s.settimeout(10)
	    s.connect(sys.argv[1])
	    s.sendall(req.encode() + b"\n")
	    buf = b""
	    while not buf.endswith(b"\n"):
	        d = s.recv(4096)
	        if not d:
	            break
	        buf += d
	    s.close()
	    a = json.loads(buf)
	    if a.get("ok") or not a.get("error"):
	        print("%r: %s" % (req, buf.decode().strip()))
	        rc = 1
	sys.exit(rc)
EOF
for i in 1 2; do
	[ "$(rc_value "$i" 'v["size"]')" = "$NEW" ] || problem "n$i changed size after refused resizes"
	[ "$(rc_cli "$i" volume list --json | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["volumes"][0]["size"])')" = "$NEW" ] ||
		problem "volume list on n$i does not say 96 MiB"
done

# ---- n3 comes back: it grows and resyncs, the new area included ----------------
t1=$(now_s)
rc_start 3
rc_wait 3 20 "v.get(\"size\") == $NEW" || problem "n3 did not grow to 96 MiB within 20 s of its start"
if rc_wait_all 40 "$RC_SYNCED"; then
	log "n3 grew and resynced $(rc_elapsed "$t1") s after its start; n1 sent it" \
		"$(rc_value 1 'p["n3"]["resync_sent_bytes"]') bytes"
else
	problem "n3 not resynced 40 s after its start"
fi
grep -a -q "grown from 64.0 MiB to 96.0 MiB" "$(rc_log 3)" || problem "n3 did not log its grow"
if out=$(rc_cli 1 verify vol0 2>&1); then
	log "verify on n1: $out"
else
	problem "verify on n1 after the resize: $out"
fi
for i in 1 2 3; do
	grep -a -q 'StandAlone' "$(rc_log "$i")" && problem "n$i had a link StandAlone"
done

# ---- n1 crashes: n3, which was away during the resize, has every write ----------
cluster_kill_node 1
rc_promote_retry 3 20 || problem "promote on n3 not possible within 20 s of n1's crash"
sz=$(nbdinfo --size "$(rc_uri 3)") || problem "nbdinfo on n3 failed"
[ "$sz" = "$NEW" ] || problem "n3 exports $sz bytes, not $NEW"
for f in "$ACK1" "$ACK2"; do
	ackcheck check --log "$f" --unix "${RC_NBD[3]}" --export vol0 ||
		problem "n3 lacks acknowledged writes ($(basename "$f"))"
done

# ---- without quorum: refused -------------------------------------------------------
cluster_kill_node 2
cluster_wait_inquorate 3 20 || problem "n3 still quorate alone"
refused 3 "quorum" volume resize vol0 --size 128M
rc_stop 3
for i in 1 2 3; do
	[ "$(stat -c %s "$(rc_backing "$i")")" = "$NEW" ] || problem "n$i's backing is not 96 MiB"
	for f in "$ACK1" "$ACK2"; do
		ackcheck check --log "$f" --file "$(rc_backing "$i")" >/dev/null ||
			problem "n$i's backing file lacks acknowledged writes ($(basename "$f"))"
	done
done
rc_cmp_backings vol0 1 2 3 || problem "the replicas differ at the end"
rc_finish
log "PASS ($(rc_elapsed "$t0") s)"
