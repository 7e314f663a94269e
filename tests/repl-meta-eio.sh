#!/bin/bash
# tests/repl-meta-eio.sh: when the metadata disk fails (fdatasync of the
# metadata file returns EIO, tests/faultdisk.c) under a writer, every
# write is answered (EIO once its activity-log or bitmap flush failed),
# none hangs, and the volume says why in `replagent status` (critical).
# a (Primary, with the shim) and b; tests/ackcheck.py writes through a,
# 16 in flight over 128 MiB (32 extents, twice its activity log, so
# that writes keep needing transactions); then flushes of a's metadata fail.  The
# writer must end with errors but no request left unanswered; status
# --json has meta_error, the text names it, the exit code is 2; a new
# write gets EIO at once, a read (of a block the writer never wrote) still
# works.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires_replagentd
requires_replagent

cluster_config -t 2 -s 256M a b
# The writer's 32 extents of 4 MiB overflow an activity log of 16: writes
# keep needing activity-log transactions (a hot extent needs none).
volume_option a "al-extents = 16"
faultdisk_init
faultdisk_preload a
start_in_sync a b

start_writer "$TESTDIR/w.log" --unix "${NODE_NBD_SOCK[a]}" --export "$CLUSTER_VOL" \
	--duration 60 --inflight 16 --span $((128 << 20)) --stall-timeout 10 --structured
sleep 2
_alive "$WRITER_PID" || fail "the writer ended early: $(cat "$TESTDIR/w.log.out")"
faultdisk_set eio-flush "${NODE_DIR[a]}/state/"
sleep 3
kill -TERM "$WRITER_PID"
wait_writer && fail "the writer saw no error"
grep -E 'no acknowledgement for|closed the connection' "$WRITER_LOG.out" &&
	fail "a write through a was never answered"
errors=$(awk '$1 == "END" { print $4 }' "$TESTDIR/w.log")
[ "${errors:-0}" -gt 0 ] || fail "the writer's log has no END line with errors"
log "writer: $errors write(s) answered with an error"
faultdisk_log | grep -q '^eio-flush' || fail "the shim did not fail a flush"
wait_status a 15 'v["meta_error"].startswith("metadata failing")' ||
	fail "a does not say that its metadata fails"

node_status a >/dev/null
rc=$?
[ "$rc" = 2 ] || fail "status of a exits $rc, not 2 (critical)"
ra_cli a status "$CLUSTER_VOL" | grep -q 'writes fail: metadata failing' ||
	fail "status of a does not say that writes fail: $(ra_cli a status "$CLUSTER_VOL")"

client_start g a
client g connect || fail "client on a: $CLIENT_LAST"
# shellcheck disable=SC2034 # read by client (functions.sh)
CLIENT_WAIT=10
client g write 0 4096 9 && fail "a took a write with failing metadata"
[[ $CLIENT_LAST == *"NBD error EIO"* ]] || fail "a new write: '$CLIENT_LAST', expected EIO"
# 192 MiB is past the writer's 128 MiB span: never written, so it reads zeros.
client g read $((192 << 20)) 4096 0 || fail "a read with failing metadata: $CLIENT_LAST"
client_end g
stop_replagentd b
stop_replagentd a
grep 'write accounting' "$(daemon_log a)" && fail "a found its write accounting wrong"
log "PASS"
