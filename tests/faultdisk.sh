#!/bin/bash
# tests/faultdisk.sh: the disk fault-injection shim (tests/faultdisk.c) does
# what the other tests rely on, checked with a Python process doing
# positional I/O through libc: with "cache", writes stay in the process
# (its reads, also through a dup'd descriptor and preadv2 RWF_NOWAIT, see
# them; the file does not), fsync writes them out, a kill -9 loses what was
# not flushed and keeps what was; eio-flush makes fsync fail with EIO until
# the rule is cleared while the process runs; slow-flush delays fsync;
# eio-write and eio-read fail writes and reads; files that match no rule
# are untouched; every fault is logged.
# shellcheck source=SCRIPTDIR/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

faultdisk_init
F=$TESTDIR/data.img	# the faulty "disk"
G=$TESTDIR/other.img	# a file no rule matches
head -c 65536 /dev/zero >"$F" && head -c 65536 /dev/zero >"$G" || hard_error "cannot create files"

# byte_at FILE OFFSET: the byte at OFFSET, in hex (00..ff), as on disk.
byte_at() { od -An -tx1 -j "$2" -N 1 "$1" | tr -d ' '; }

# shim_py CODE ARGS...: Python CODE (f, g: the two files opened read-write;
# argv: ARGS) with the shim preloaded.
shim_py() {
	local code=$1
	shift
	faultdisk_run "$PYTHON" -c 'import os, sys, time
f = os.open(sys.argv[1], os.O_RDWR)
g = os.open(sys.argv[2], os.O_RDWR)
argv = sys.argv[3:]
'"$code" "$F" "$G" "$@"
}

# ---- cache: held in memory, seen by reads, flushed by fsync, lost by kill -9
faultdisk_set cache data.img
shim_py '
os.pwrite(f, b"\x11" * 4096, 0)
os.fsync(f)
os.pwrite(f, b"\x22" * 4096, 4096)
os.pwrite(f, b"\x33" * 10, 100)           # over flushed data, not flushed
os.pwrite(g, b"\x44" * 4096, 0)           # another file: written at once
d = os.dup(f)
assert os.pread(d, 4096, 4096) == b"\x22" * 4096, "a dup does not see the cache"
b = bytearray(4096)
assert os.preadv(f, [b], 4096, os.RWF_NOWAIT) == 4096 and b == b"\x22" * 4096, "RWF_NOWAIT"
assert os.pread(f, 200, 0) == b"\x11" * 100 + b"\x33" * 10 + b"\x11" * 90, "overlay"
open(argv[0], "w").write("%d ready\n" % os.getpid())
time.sleep(60)
' "$TESTDIR/ready" &
bg=$!
track_pid "$bg"
wait_for_file_text "$TESTDIR/ready" ready 10 ||
	fail "the writer did not get ready (its reads do not see its cached writes?)"
read -r pid _ <"$TESTDIR/ready"	# Python itself (the shell that runs it is $!)
[ "$(byte_at "$F" 4096)" = 00 ] || fail "a cached write reached the file before any flush"
[ "$(byte_at "$G" 0)" = 44 ] || fail "a write to a file without rule did not reach it"
kill -KILL "$pid"
wait "$bg" 2>/dev/null	# the shell ends with Python
untrack_pid "$bg"
[ "$(byte_at "$F" 0)" = 11 ] && [ "$(byte_at "$F" 4095)" = 11 ] ||
	fail "data flushed before the kill -9 is lost"
[ "$(byte_at "$F" 4096)" = 00 ] && [ "$(byte_at "$F" 100)" = 11 ] ||
	fail "data not flushed before the kill -9 survived it"
faultdisk_log | grep -q -x "cache $F" || fail "no 'cache $F' in the log"
faultdisk_log | grep -q -x "cache-flush $F 4096" || fail "no 'cache-flush $F 4096' in the log"
log "cache: flushed data kept, unflushed data lost by kill -9"

# fdatasync, a RWF_DSYNC write, hole punching and truncation; the exit
# without flush is logged.
shim_py '
os.pwrite(f, b"\x55" * 8192, 8192)
os.fdatasync(f)
os.pwrite(f, b"\x66" * 8192, 16384)
os.pwritev(f, [b"\x77" * 512], 32768, os.RWF_DSYNC)
os.pwrite(f, b"\x88" * 512, 40960)
os.ftruncate(f, 40960 + 256)
assert os.pread(f, 512, 40960) == b"\x88" * 256, "truncated cache"
' || fail "fdatasync / RWF_DSYNC / ftruncate under the cache"
[ "$(byte_at "$F" 8192)" = 55 ] || fail "fdatasync did not write the cached data"
[ "$(byte_at "$F" 16384)" = 00 ] || fail "an unflushed write survived an exit"
[ "$(byte_at "$F" 32768)" = 77 ] || fail "a RWF_DSYNC write did not reach the file"
[ "$(stat -c %s "$F")" = $((40960 + 256)) ] || fail "ftruncate did not pass through"
faultdisk_log | grep -q "^cache-drop $F " || fail "no cache-drop logged at exit"
faultdisk_clear cache

# ---- eio-flush, cleared while the process runs
faultdisk_set eio-flush data.img
shim_py '
try:
    os.fsync(f)
    sys.exit("fsync did not fail")
except OSError as e:
    assert e.errno == 5, e
os.fsync(g)
open(argv[0], "w").write("ready\n")
end = time.time() + 10
while time.time() < end:
    try:
        os.fdatasync(f)
        sys.exit(0)
    except OSError:
        time.sleep(0.02)
sys.exit("fdatasync still fails after the rule was cleared")
' "$TESTDIR/eio" &
pid=$!
track_pid "$pid"
wait_for_file_text "$TESTDIR/eio" ready 10 || fail "fsync did not fail with EIO"
faultdisk_log | grep -q -x "eio-flush $F" || fail "no 'eio-flush $F' in the log"
faultdisk_clear eio-flush
wait "$pid" || fail "eio-flush: see above"
untrack_pid "$pid"
log "eio-flush: EIO until cleared"

# ---- slow-flush
faultdisk_set slow-flush "data.img 700"
shim_py '
t = time.monotonic(); os.fsync(g); fast = time.monotonic() - t
t = time.monotonic(); os.fsync(f); slow = time.monotonic() - t
print("fsync: %.3f s on the slow file, %.3f s on the other" % (slow, fast))
assert slow >= 0.7 and fast < 0.5, "slow-flush"
' || fail "slow-flush did not delay fsync by 700 ms"
faultdisk_log | grep -q -x "slow-flush $F 700" || fail "no 'slow-flush $F 700' in the log"
faultdisk_clear slow-flush

# ---- eio-write, eio-read
faultdisk_set eio-write data.img
faultdisk_set eio-read other.img
shim_py '
for what, call in (("pwrite", lambda: os.pwrite(f, b"x", 0)),
                   ("pread", lambda: os.pread(g, 1, 0))):
    try:
        call()
        sys.exit(what + " did not fail")
    except OSError as e:
        assert e.errno == 5, e
os.pread(f, 1, 0)
os.pwrite(g, b"\x99", 1)
' || fail "eio-write / eio-read"
[ "$(byte_at "$F" 0)" = 11 ] || fail "a write failed with EIO changed the file"
[ "$(byte_at "$G" 1)" = 99 ] || fail "eio-read stopped a write"
faultdisk_log | grep -q -x "eio-write $F" && faultdisk_log | grep -q -x "eio-read $G" ||
	fail "eio-write / eio-read not logged"
log "PASS"
