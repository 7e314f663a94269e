#!/bin/bash
# tests/volume-failed.sh: one bad volume does not stop the node (static
# mode, local volumes).  Three volumes: vol0 healthy, bad1 with damaged
# metadata, bad2 whose backing file is missing while its metadata exists.
# The daemon starts and serves vol0 (qemu-io writes and reads back);
# "status" lists bad1 and bad2 as failed with the reason (human and
# --json) and exits 2 (critical); the daemon logs each; a command on a
# failed volume is refused with the reason; once bad2's backing is back, a
# SIGHUP reload serves it.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires qemu-io timeout dd
requires_replagentd
requires_replagent
CLI=("$REPLAGENT" -s "$TESTDIR/control.sock")

# status_py EXPR: EXPR over "status --json" (s: the answer, v: volumes by
# name) is true.
status_py() {
	timeout 10 "${CLI[@]}" status --json | "$PYTHON" -c '
import json, sys
s = json.load(sys.stdin)
v = {x["name"]: x for x in s["volumes"]}
sys.exit(0 if eval(sys.argv[1]) else 1)' "$1"
}

write_config -s 16M
add_volume "$CONFIG" bad1 8M
add_volume "$CONFIG" bad2 8M
# A first run makes every volume's metadata.
start_replagentd "$CONFIG"
stop_replagentd

dd if=/dev/urandom of="$STATE_DIR/bad1.meta" bs=4096 count=4 conv=notrunc status=none ||
	hard_error "cannot damage bad1.meta"
mv "$TESTDIR/bad2.img" "$TESTDIR/bad2.img.away" || hard_error "cannot move bad2.img"

try_start_replagentd_as replagentd "$CONFIG" ||
	fail "replagentd did not start with one damaged and one missing volume (status ${REPLAGENTD_STATUS:-?})"

qio_batch "$NBD_URI" "write -P 0x6b 0 1M
write -P 0x6c 8M 64k
read -P 0x6b 0 1M
read -P 0x6c 8M 64k" || fail "vol0 is not served beside the failed volumes"
qio_batch "$NBD_URI" "read -P 0x6b 0 1M" || fail "vol0 lost a write"
log "vol0 serves I/O"

timeout 10 "${CLI[@]}" status >"$TESTDIR/status.txt"
rc=$?
cat "$TESTDIR/status.txt"
[ "$rc" = 2 ] || fail "status exits $rc with failed volumes, expected 2 (critical)"
grep -q '^bad1 .*failed.*metadata' "$TESTDIR/status.txt" ||
	fail "status does not show bad1 failed with the reason"
grep -q '^bad2 .*failed.*missing' "$TESTDIR/status.txt" ||
	fail "status does not show bad2 failed with the reason"
grep -q '^CRITICAL: bad[12]: failed' "$TESTDIR/status.txt" ||
	fail "status does not name a failed volume as the worst problem"
grep -q '^vol0 .*UpToDate' "$TESTDIR/status.txt" || fail "status does not show vol0 UpToDate"

timeout 10 "${CLI[@]}" status --json >/dev/null
[ $? = 2 ] || fail "status --json does not exit 2 either"
status_py '(v["bad1"]["failed"] is True and "metadata" in v["bad1"]["reason"] and
v["bad2"]["failed"] is True and "missing" in v["bad2"]["reason"] and
v["bad1"]["disk"] == "Failed" and not v["bad1"]["up"] and
not v["vol0"].get("failed") and v["vol0"]["disk"] == "UpToDate")' ||
	fail "status --json: $(timeout 10 "${CLI[@]}" status --json)"
timeout 10 "${CLI[@]}" status bad1 >/dev/null
[ $? = 2 ] || fail "status bad1 does not exit 2"
timeout 10 "${CLI[@]}" status vol0 >/dev/null || fail "status vol0 is not healthy"

grep -q 'volume bad1.*failed' "$(daemon_log)" || fail "the log does not say bad1 failed"
grep -q 'volume bad2.*failed' "$(daemon_log)" || fail "the log does not say bad2 failed"

out=$(timeout 10 "${CLI[@]}" promote bad1 2>&1) && fail "promote of a failed volume succeeded"
log "promote bad1: $out"
grep -q 'failed.*metadata' <<<"$out" || fail "promote bad1 does not say why: $out"
out=$(timeout 10 "${CLI[@]}" up bad2 2>&1) && fail "up of a failed volume succeeded"
grep -q 'failed.*missing' <<<"$out" || fail "up bad2 does not say why: $out"

# The backing is back: a reload tries the failed volumes again.
mv "$TESTDIR/bad2.img.away" "$TESTDIR/bad2.img" || hard_error "cannot restore bad2.img"
kill -HUP "$(replagentd_pid)"
n=0
until status_py '"failed" not in v["bad2"] and v["bad2"]["disk"] == "UpToDate"'; do
	replagentd_alive || fail "replagentd died on SIGHUP"
	[ "$n" -ge 100 ] && fail "bad2 is not served 10 s after the reload"
	sleep 0.1
	n=$((n + 1))
done
qio_batch "nbd+unix:///bad2?socket=$NBD_SOCK" "write -P 0x2b 0 64k
read -P 0x2b 0 64k" || fail "bad2 does not take I/O after the reload"
status_py 'v["bad1"]["failed"] is True' || fail "bad1 is no longer listed failed"
log "bad2 served after the reload; bad1 still failed"

stop_replagentd || fail "replagentd exits $REPLAGENTD_STATUS after SIGTERM"
log "OK"
