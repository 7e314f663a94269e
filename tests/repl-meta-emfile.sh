#!/bin/bash
# tests/repl-meta-emfile.sh: a write whose activity-log flush cannot even
# begin (the flush's own descriptor, F_DUPFD, fails with EMFILE) is
# answered with EIO, not left waiting.  a (Primary) and b; an NBD client
# on a writes once; then a's descriptor limit is lowered to what it uses
# (prlimit), and the client writes to a region not yet in the activity
# log: the answer must be EIO within 20 s (it used to be none: the write
# held two references and the failure dropped one).  With the limit back,
# the same write succeeds, reads back, and a can be demoted.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires prlimit find
requires_replagentd
requires_replagent

cluster_config -t 2 -s 64M a b
start_in_sync a b

client_start g a
client g connect || fail "client on a: $CLIENT_LAST"
client g write 0 4096 1 || fail "first write: $CLIENT_LAST"

pid=$(replagentd_pid a)
soft=$(prlimit --pid "$pid" --nofile --output SOFT --noheadings | tr -d ' ')
limit=$(lowest_free_fd "$pid")
prlimit --pid "$pid" --nofile="$limit": || hard_error "prlimit on $pid"
log "a (pid $pid) may open no descriptor now (limit $limit, was $soft)"
CLIENT_WAIT=20
client g write $((32 << 20)) 4096 2
prlimit --pid "$pid" --nofile="$soft": || hard_error "prlimit on $pid"
case $CLIENT_LAST in
"") fail "a write whose activity-log flush failed got no answer in ${CLIENT_WAIT}s" ;;
*"NBD error EIO"*) log "answered: $CLIENT_LAST" ;;
*) fail "a write whose activity-log flush failed: $CLIENT_LAST (expected EIO)" ;;
esac
grep -q 'dup for a bitmap flush.*Too many open files' "$(daemon_log a)" ||
	fail "a does not say why the flush failed"

client g write $((32 << 20)) 4096 3 || fail "the write after the limit came back: $CLIENT_LAST"
client g read $((32 << 20)) 4096 3 || fail "read back: $CLIENT_LAST"
client_end g
wait_status a 10 'v["meta_error"] == ""' || fail "a still says its metadata fails"
out=$(ra_cli a demote "$CLUSTER_VOL" 2>&1) || fail "a refuses demote: $out"
stop_cluster
grep 'write accounting' "$(daemon_log a)" && fail "a found its write accounting wrong"
log "PASS"
