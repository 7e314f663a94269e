#!/bin/bash
# tests/nbd-bad-input.sh: hostile and malformed NBD clients (tests/nbd_raw.py:
# bad handshakes, bad requests, garbage, truncated messages, oversized
# requests, pipelining and back-pressure; each scenario on its own
# connection, over the Unix socket and over TCP) while a well-behaved client
# (qemu-io, a new connection per round) keeps writing and reading its own
# region.  Afterwards: every scenario passed, the good client never failed,
# the daemon is still alive, and, with the daemon stopped, the volume outside
# the good client's region is byte for byte what it was before.
# shellcheck source=SCRIPTDIR/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires qemu-io qemu-img sha256sum timeout
[ -x "$PYTHON" ] || skip "requires $PYTHON"
RAW=$TESTS_SRCDIR/nbd_raw.py
[ -f "$RAW" ] || hard_error "$RAW not found"

MB=$((1024 * 1024))
GOOD_START=8	# MiB: the good client's region [8M, 10M)
GOOD_LEN=2

write_config -s 16M
start_replagentd_tcp "$CONFIG"

# Known content everywhere.
ref=$TESTDIR/ref.raw
head -c $((16 * MB)) /dev/urandom >"$ref" || hard_error "cannot create $ref"
timeout 60 qemu-img convert -n -f raw -O raw "$ref" "$NBD_URI" ||
	fail "cannot fill the volume"

# sums FILE: sha256 of the file outside the good client's region.
sums() {
	{
		head -c $((GOOD_START * MB)) "$1" | sha256sum
		tail -c +$(((GOOD_START + GOOD_LEN) * MB + 1)) "$1" | sha256sum
	} | awk '{ printf "%s ", $1 }'
}
want=$(sums "$ref")
[ ${#want} = 130 ] || hard_error "sums: '$want'"

# The good client: rounds of "write pattern N to a 64 KiB block of its
# region, read it back" until told to stop; one line per round in good.log.
stopfile=$TESTDIR/good.stop
goodlog=$TESTDIR/good.log
(
	i=0
	while [ ! -e "$stopfile" ] && [ "$i" -lt 2000 ]; do
		pat=$((i % 255 + 1))
		off=$((GOOD_START * MB + (i % 32) * 65536))
		if out=$(timeout 20 qemu-io -f raw -c "write -P $pat $off 64k" \
			-c "read -P $pat $off 64k" "$NBD_URI" 2>&1) &&
			! grep -q -i -E 'fail|error' <<<"$out"; then
			echo "ok $i"
		else
			echo "FAIL $i: $(grep -i -E 'fail|error|qemu-io' <<<"$out" | head -n 3)"
		fi
		i=$((i + 1))
	done
) >"$goodlog" 2>&1 &
good=$!
track_pid "$good"

# run_raw WHAT ARGS...: all nbd_raw.py scenarios; sets bad=1 on a failure.
run_raw() {
	local what=$1 st
	shift
	log "hostile clients: $what"
	timeout 300 "$PYTHON" "$RAW" "$@" --export "$VOL" >"$TESTDIR/raw-$what.out" 2>&1
	st=$?
	cat "$TESTDIR/raw-$what.out"
	[ "$st" = 124 ] && echo "nbd_raw.py ($what) timed out"
	[ "$st" = 0 ] || bad=1
	log "$what: $(grep -c '^ok' "$TESTDIR/raw-$what.out") scenarios ok, $(grep -c '^FAIL' "$TESTDIR/raw-$what.out") failed"
	replagentd_alive || fail "replagentd died during the $what scenarios"
}

sleep 0.5
bad=0
run_raw unix --unix "$NBD_SOCK"
run_raw tcp --tcp "127.0.0.1:$NBD_PORT"

# Stop the good client after one more round at least.
rounds=$(grep -c . "$goodlog")
for _ in $(seq 1 100); do
	[ "$(grep -c . "$goodlog")" -gt "$rounds" ] && break
	sleep 0.1
done
touch "$stopfile"
for _ in $(seq 1 250); do
	_alive "$good" || break
	sleep 0.1
done
stop_pid "$good" 1
untrack_pid "$good"
ok=$(grep -c '^ok' "$goodlog")
nfail=$(grep -c '^FAIL' "$goodlog")
log "good client: $ok rounds ok, $nfail failed"
[ "$nfail" = 0 ] || { grep '^FAIL' "$goodlog" | head -n 5 >&2; fail "the good client failed"; }
[ "$ok" -ge 3 ] || fail "the good client made only $ok rounds"

replagentd_alive || fail "replagentd is not running any more"
[ "$bad" = 0 ] || fail "some hostile-client scenarios failed (see above)"

stop_replagentd || fail "exit status $REPLAGENTD_STATUS after SIGTERM, expected 0"
got=$(sums "$BACKING")
[ "$got" = "$want" ] ||
	fail "the volume changed outside the good client's region"
log "PASS"
