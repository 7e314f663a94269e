#!/bin/bash
# tests/cluster-replagent-cbt.sh: incremental backups across a failover in
# cluster mode.  Three nodes (tests/cluster.sh: corosync + replagentd in
# network namespaces); vol0 is Primary on n1.  Checkpoint c1 made on n1
# reaches n2 and n3; a full backup and an incremental one since c1 are
# taken through n1 (templates/replagent-backup), checkpoint c2 is made,
# more writes follow, and n1 crashes (SIGKILL of corosync and replagentd).
# n2 is promoted, takes writes (a discard, zeroes too), and the second
# incremental (since c2) is taken through n2: full + both incrementals
# restore to a file identical to vol0 as n2 serves it.  When n1 boots
# again and resyncs, its c2 is complete, and a checkpoint c3 made on n2
# while n1 was down is incomplete on n1.  Skipped (77) without root,
# network namespaces or corosync.
# shellcheck source=SCRIPTDIR/cluster-replagent-lib.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/cluster-replagent-lib.sh" || exit 99

rc_requires
requires nbdcopy qemu-io cmp
/usr/bin/python3 -c 'import nbd' 2>/dev/null || skip "python3-libnbd is not installed"
BACKUP=$top_srcdir/templates/replagent-backup
K=1024
M=$((1024 * K))
t0=$(now_s)

# ckpt_wait T NAME STATE NODE...: NAME is STATE on every NODE within T s.
ckpt_wait() {
	local t=$1 name=$2 want=$3 i end
	shift 3
	end=$(($(date +%s) + t))
	for i in "$@"; do
		until [ "$(rc_cli "$i" checkpoint list vol0 --json | checkpoint_state "$name")" = "$want" ]; do
			[ "$(date +%s)" -ge "$end" ] && return 1
			sleep 0.2
		done
	done
}

rc_setup 3
rc_vol0_on_n1
uri1=$(rc_uri 1)
uri2=$(rc_uri 2)

rc_cli 1 checkpoint create vol0 c1 || fail "checkpoint create c1 on n1"
ckpt_wait 10 c1 complete 1 2 3 || fail "c1 is not complete on every node"
timeout 60 "$BACKUP" full "$uri1" "$TESTDIR/full.raw" || fail "full backup through n1"
qio_batch "$uri1" "write -P 0x11 $M $((128 * K))
write -P 0x22 $((10 * M)) $((4 * K))
flush" || fail "writes through n1 (1)"
rc_cli 1 checkpoint create vol0 c2 || fail "checkpoint create c2 on n1"
timeout 60 "$BACKUP" incremental "$uri1" c1 "$TESTDIR/inc1.raw" || fail "incremental 1 through n1"
ckpt_wait 10 c2 complete 2 3 || fail "c2 is not complete on n2 and n3"
qio_batch "$uri1" "write -P 0x33 $((20 * M)) $((64 * K))
write -P 0x34 $((M + 64 * K)) $((4 * K))
flush" || fail "writes through n1 (2)"

cluster_kill_node 1
rc_promote_retry 2 15 || fail "promote on n2 not possible within 15 s of n1's crash"
log "n1 crashed, n2 promoted ($(rc_elapsed "$t0") s)"
qio_batch "$uri2" "write -P 0x44 $((30 * M)) $((256 * K))
discard $((10 * M)) $((64 * K))
write -z $((40 * M)) $((64 * K))
flush" || fail "writes through n2"
rc_cli 2 checkpoint create vol0 c3 || fail "checkpoint create c3 on n2"
timeout 60 "$BACKUP" incremental "$uri2" c2 "$TESTDIR/inc2.raw" || fail "incremental 2 through n2"
timeout 60 "$BACKUP" restore "$TESTDIR/restored.raw" "$TESTDIR/full.raw" \
	"$TESTDIR/inc1.raw" "$TESTDIR/inc2.raw" || fail "restore"
timeout 60 nbdcopy "$uri2" "$TESTDIR/now.raw" || fail "nbdcopy of vol0 through n2"
cmp "$TESTDIR/restored.raw" "$TESTDIR/now.raw" ||
	fail "full + incrementals (the second after a failover) differ from vol0"
log "full + 2 incrementals across n1's crash restore to a byte-identical vol0"

rc_start_node 1
rc_wait 1 40 "$RC_SYNCED" || fail "n1 not resynced after its restart"
ckpt_wait 10 c2 complete 1 || fail "c2 is not complete on n1 after its resync"
ckpt_wait 10 c3 incomplete 1 || fail "c3 (made while n1 was down) is not incomplete on n1"
rc_finish
log "PASS ($(rc_elapsed "$t0") s)"
