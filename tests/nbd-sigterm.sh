#!/bin/bash
# tests/nbd-sigterm.sh: SIGTERM while clients are writing.
#
# Two libnbd clients (Python, one connection each, queue depth 16, every
# fourth write with FUA) write 4 KiB blocks, each block with its own sequence
# number and pattern, into disjoint halves of the volume at a steady rate,
# logging every write they issue and every reply.  The daemon gets SIGTERM
# while they are busy.  It must exit with status 0 within a few seconds and
# remove its socket; after a restart every write the clients saw succeed
# must be there, every block never written must be zero, and a block whose
# write was in flight must hold either zeroes or exactly that write.
# shellcheck source=SCRIPTDIR/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout
[ -x "$PYTHON" ] || skip "requires $PYTHON"
"$PYTHON" -c 'import nbd' 2>/dev/null || skip "requires the libnbd Python module"

BLOCKS=8192	# per client: 32 MiB each
RATE=1500	# writes per second per client: about 5.5 s for all
STOP_AFTER=1.5	# seconds of writing before SIGTERM
STOP_LIMIT=5	# seconds the daemon may take to exit

write_config -s 64M
start_replagentd "$CONFIG"

cat >"$TESTDIR/blocks.py" <<'EOF'
# Shared by the writer and the checker: the content of block SEQ of a
# client, a 16-byte header (magic, client, seq) and a fill byte.
import struct
BS = 4096
def block(client, seq):
    fill = (seq * 7 + client * 13) % 251 + 1
    return struct.pack(">8sII", b"RA-SIGT ", client, seq) + bytes([fill]) * (BS - 16)
EOF

cat >"$TESTDIR/writer.py" <<'EOF'
import sys, time, os
sys.path.insert(0, os.path.dirname(sys.argv[0]))
import nbd
from blocks import BS, block
uri, client, nblocks, rate, logpath = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
base = client * nblocks * BS
log = open(logpath, "w", buffering=1)
h = nbd.NBD()
h.connect_uri(uri)
log.write("CONNECTED\n")
inflight = {}
seq = 0
dead = False
t0 = time.monotonic()

def harvest():
    for c in list(inflight):
        s = inflight[c][0]
        try:
            if not h.aio_command_completed(c):
                continue
            log.write("D %d\n" % s)
        except nbd.Error as e:
            log.write("E %d %s\n" % (s, e))
        del inflight[c]

while not dead and (seq < nblocks or inflight):
    try:
        while (seq < nblocks and len(inflight) < 16
               and seq < (time.monotonic() - t0) * rate):
            buf = nbd.Buffer.from_bytearray(block(client, seq))
            flags = nbd.CMD_FLAG_FUA if seq % 4 == 0 else 0
            # Logged before it is sent: "I" means "may have reached the server".
            log.write("I %d\n" % seq)
            c = h.aio_pwrite(buf, base + seq * BS, flags=flags)
            inflight[c] = (seq, buf)
            seq += 1
        h.poll(5)
    except nbd.Error as e:
        log.write("X %s\n" % e)
        dead = True
    harvest()
    if h.aio_is_dead() or h.aio_is_closed():
        dead = True
harvest()
for c, (s, _) in inflight.items():
    log.write("E %d unfinished\n" % s)
log.write("END dead=%d issued=%d\n" % (dead, seq))
EOF

cat >"$TESTDIR/check.py" <<'EOF'
import sys, os
sys.path.insert(0, os.path.dirname(sys.argv[0]))
import nbd
from blocks import BS, block
uri, nblocks = sys.argv[1], int(sys.argv[2])
h = nbd.NBD()
h.connect_uri(uri)
bad = 0
for client, logpath in enumerate(sys.argv[3:]):
    issued, done, failed = set(), set(), set()
    for line in open(logpath):
        w = line.split()
        if w[0] == "I": issued.add(int(w[1]))
        elif w[0] == "D": done.add(int(w[1]))
        elif w[0] == "E": failed.add(int(w[1]))
    base = client * nblocks * BS
    zero = bytes(BS)
    counts = {"done": 0, "inflight-written": 0, "inflight-not": 0, "never": 0}
    chunk = 256
    for first in range(0, nblocks, chunk):
        data = h.pread(chunk * BS, base + first * BS)
        for i in range(chunk):
            seq = first + i
            got = data[i * BS:(i + 1) * BS]
            want = block(client, seq)
            if seq in done:
                ok = got == want
                counts["done"] += ok
            elif seq in issued:
                ok = got == want or got == zero
                counts["inflight-written" if got == want else "inflight-not"] += ok
            else:
                ok = got == zero
                counts["never"] += ok
            if not ok:
                bad += 1
                if bad <= 10:
                    state = "done" if seq in done else "in flight" if seq in issued else "never written"
                    print("client %d block %d (%s): wrong content %r..." % (client, seq, state, got[:20]), file=sys.stderr)
    print("client %d: issued %d, succeeded %d, failed %d; verified %s"
          % (client, len(issued), len(done), len(failed), counts))
sys.exit(1 if bad else 0)
EOF

wlog0=$TESTDIR/writer0.log
wlog1=$TESTDIR/writer1.log
timeout 60 "$PYTHON" "$TESTDIR/writer.py" "$NBD_URI" 0 "$BLOCKS" "$RATE" "$wlog0" &
w0=$!
track_pid "$w0"
timeout 60 "$PYTHON" "$TESTDIR/writer.py" "$NBD_URI" 1 "$BLOCKS" $((RATE * 2 / 3)) "$wlog1" &
w1=$!
track_pid "$w1"

# Both connected and writing?
for _ in $(seq 1 50); do
	grep -q '^CONNECTED' "$wlog0" 2>/dev/null && grep -q '^CONNECTED' "$wlog1" 2>/dev/null && break
	sleep 0.1
done
grep -q '^CONNECTED' "$wlog0" && grep -q '^CONNECTED' "$wlog1" || fail "writers did not connect"
sleep "$STOP_AFTER"
done0=$(grep -c '^D' "$wlog0")
[ "$done0" -gt 0 ] || fail "no write completed before SIGTERM"

log "SIGTERM with $done0 + $(grep -c '^D' "$wlog1") writes done"
start=$(date +%s%N)
kill -TERM "$REPLAGENTD_PID"
wait_replagentd_exit replagentd "$STOP_LIMIT" ||
	fail "replagentd still running ${STOP_LIMIT}s after SIGTERM with busy clients"
ms=$((($(date +%s%N) - start) / 1000000))
log "replagentd exited with status $REPLAGENTD_STATUS after ${ms} ms"
[ "$REPLAGENTD_STATUS" = 0 ] || fail "exit status $REPLAGENTD_STATUS after SIGTERM, expected 0"
[ -e "$NBD_SOCK" ] && fail "NBD socket still exists after SIGTERM"

wait "$w0"; st0=$?
wait "$w1"; st1=$?
untrack_pid "$w0"
untrack_pid "$w1"
for f in "$wlog0" "$wlog1"; do
	tail -n 1 "$f"
	grep -q '^END' "$f" || fail "writer did not finish cleanly: $(tail -n 3 "$f")"
done
[ "$st0" = 0 ] && [ "$st1" = 0 ] || fail "writer failed (status $st0, $st1)"
grep -q '^END dead=1' "$wlog0" ||
	fail "writer 0 finished all its writes before SIGTERM: test too slow to interrupt it"

start_replagentd "$CONFIG"
timeout 60 "$PYTHON" "$TESTDIR/check.py" "$NBD_URI" "$BLOCKS" "$wlog0" "$wlog1" ||
	fail "data after restart does not match what the clients saw"
stop_replagentd || fail "exit status $REPLAGENTD_STATUS after SIGTERM, expected 0"
log "PASS"
