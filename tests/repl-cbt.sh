#!/bin/bash
# tests/repl-cbt.sh: changed-block tracking on two replicas on 127.0.0.1.
# The checkpoint commands give clear errors (unknown volume, bad name,
# duplicate, on a Secondary); a checkpoint made on the Primary exists on
# both replicas; nbdinfo lists replagent:changed:NAME and --map of it
# shows exactly the regions written since (writes, a discard, a write of
# zeroes).  templates/replagent-backup takes a full backup and two
# incrementals, with a failover (a stops, b is promoted) between them: full
# + increments restore to a file identical to the volume (cmp).  A crash
# of the Primary (SIGKILL) loses no mark.  A checkpoint made while a was
# down reaches a as incomplete when it rejoins, and its context then
# answers with an error, while one made before is complete on a and
# includes what the resync brought.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires nbdinfo nbdcopy qemu-io timeout cmp
requires_replagentd
requires_replagent
/usr/bin/python3 -c 'import nbd' 2>/dev/null || skip "python3-libnbd is not installed"

K=1024
M=$((1024 * K))
BACKUP=$top_srcdir/templates/replagent-backup
cluster_config -s 64M a b
start_in_sync a b
uria=${NODE_NBD_URI[a]}
urib=${NODE_NBD_URI[b]}

# expect_fail WHAT TEXT CMD...: CMD fails and says TEXT.
expect_fail() {
	local what=$1 text=$2 out
	shift 2
	out=$("$@" 2>&1) && fail "$what: succeeded"
	case $out in
	*"$text"*) log "$what: refused: $out" ;;
	*) fail "$what: expected \"$text\", got: $out" ;;
	esac
}

# expect_map URI CKPT WHAT EXPECTED: nbdinfo --map of the checkpoint.
expect_map() {
	local got
	got=$(nbd_map "$1" "replagent:changed:$2") || fail "$3: nbdinfo --map failed"
	[ "$got" = "$4" ] || fail "$3: the map of $2 is
$got
expected
$4"
}

# expect_changed URI CKPT WHAT OFF:LEN...: the map of the checkpoint marks
# at least these ranges changed (a resync may add regions: it copies
# whole activity-log extents) and less than 16 MiB in all.
expect_changed() {
	local uri=$1 ck=$2 what=$3 got
	shift 3
	got=$(nbd_map "$uri" "replagent:changed:$ck") || fail "$what: nbdinfo --map failed"
	printf '%s\n' "$got" | /usr/bin/python3 -c '
import sys
ch = [tuple(map(int, l.split()[:2])) for l in sys.stdin if l.split()[2:3] == ["1"]]
for want in sys.argv[1:]:
    o, n = map(int, want.split(":"))
    if not any(a <= o and o + n <= a + l for a, l in ch):
        sys.exit("range %d+%d not marked changed" % (o, n))
if sum(l for _, l in ch) >= 16 << 20:
    sys.exit("%d bytes marked changed" % sum(l for _, l in ch))' "$@" ||
		fail "$what: the map of $ck is
$got"
}

# ckpt_state NODE NAME: complete, incomplete or missing.
ckpt_state() { ra_cli "$1" checkpoint list "$CLUSTER_VOL" --json | checkpoint_state "$2"; }

# wait_ckpt NODE NAME STATE: within 10 s.
wait_ckpt() {
	local i
	for ((i = 0; i < 50; i++)); do
		[ "$(ckpt_state "$1" "$2")" = "$3" ] && return 0
		sleep 0.2
	done
	fail "checkpoint $2 on $1 is $(ckpt_state "$1" "$2"), not $3"
}

# ---- the commands and their errors
expect_fail "unknown volume" 'no volume "nosuch"' ra_cli a checkpoint create nosuch c1
expect_fail "bad name" "invalid checkpoint name" ra_cli a checkpoint create "$CLUSTER_VOL" 'a/b'
expect_fail "on a Secondary" "Secondary" ra_cli b checkpoint create "$CLUSTER_VOL" c1
ra_cli a checkpoint create "$CLUSTER_VOL" c1 || fail "checkpoint create c1"
expect_fail "duplicate" "exists already" ra_cli a checkpoint create "$CLUSTER_VOL" c1
expect_fail "delete unknown" "no checkpoint" ra_cli a checkpoint delete "$CLUSTER_VOL" c9
wait_ckpt a c1 complete
wait_ckpt b c1 complete
timeout 30 nbdinfo --content "$uria" | grep -q 'replagent:changed:c1' ||
	fail "nbdinfo does not list the context replagent:changed:c1"
expect_map "$uria" c1 "new checkpoint" "0 $((64 * M)) 0"

# ---- full backup, writes, an incremental
timeout 60 "$BACKUP" full "$uria" "$TESTDIR/full.raw" || fail "full backup"
qio_batch "$uria" "write -P 0x11 $M $((128 * K))
write -P 0x22 $((10 * M + 4 * K)) $((4 * K))
flush" || fail "qemu-io writes (1)"
ra_cli a checkpoint create "$CLUSTER_VOL" c2 || fail "checkpoint create c2"
expect_map "$uria" c1 "after writes" "0 $M 0
$M $((128 * K)) 1
$((M + 128 * K)) $((9 * M - 128 * K)) 0
$((10 * M)) $((64 * K)) 1
$((10 * M + 64 * K)) $((54 * M - 64 * K)) 0"
timeout 60 "$BACKUP" incremental "$uria" c1 "$TESTDIR/inc1.raw" || fail "incremental 1"
ra_cli a checkpoint delete "$CLUSTER_VOL" c1 || fail "checkpoint delete c1"
wait_ckpt b c1 missing

# ---- a crash of the Primary loses no mark
qio_batch "$uria" "write -P 0x33 $((20 * M)) $((64 * K))
flush" || fail "qemu-io writes (2)"
kill_node a
start_node a
# a crashed as Primary and b, connected and UpToDate, did not: a refuses
# to be promoted in b's place unless told so with --force (then it
# resyncs its activity log to b, which is what is tested here).
promote a --force
wait_status a 30 'p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0' ||
	fail "a did not reconnect after its crash"
expect_map "$uria" c2 "after a crash" "0 $((20 * M)) 0
$((20 * M)) $((64 * K)) 1
$((20 * M + 64 * K)) $((44 * M - 64 * K)) 0"

# ---- failover: a stops, b takes over, writes, a discard, zeroes
stop_node a
promote b
qio_batch "$urib" "write -P 0x44 $((30 * M)) $((256 * K))
discard $M $((64 * K))
write -z $((40 * M)) $((64 * K))
flush" || fail "qemu-io writes on b"
ra_cli b checkpoint create "$CLUSTER_VOL" c3 || fail "checkpoint create c3 on b"
expect_changed "$urib" c2 "on b after the failover" "$M:$((64 * K))" \
	"$((20 * M)):$((64 * K))" "$((30 * M)):$((256 * K))" "$((40 * M)):$((64 * K))"
timeout 60 "$BACKUP" incremental "$urib" c2 "$TESTDIR/inc2.raw" || fail "incremental 2"
timeout 60 "$BACKUP" restore "$TESTDIR/restored.raw" "$TESTDIR/full.raw" \
	"$TESTDIR/inc1.raw" "$TESTDIR/inc2.raw" || fail "restore"
timeout 60 nbdcopy "$urib" "$TESTDIR/now.raw" || fail "nbdcopy of the volume"
cmp "$TESTDIR/restored.raw" "$TESTDIR/now.raw" ||
	fail "full + 2 incrementals (one after a failover) differ from the volume"
log "full + 2 incrementals restore to a byte-identical volume"
# A crashed Primary resyncs its activity log's extents (4 MiB each) to b,
# and b counts what a resync wrote as changed (it may differ): the second
# increment holds the writes plus those extents, nothing else.
resynced=$(sed -n 's/.*resync to b: \([0-9]*\) bytes out of sync.*/\1/p' "$(daemon_log a)" | tail -n 1)
[ -n "$resynced" ] || fail "a's log has no resync to b after its crash"
inc=$(du -k "$TESTDIR/inc2.raw" | cut -f1)
[ "$inc" -le $((1024 + resynced / 1024)) ] ||
	fail "inc2.raw takes $inc KiB: more than the changed regions and the $resynced bytes resynced"

# ---- a was away when c3 was made: incomplete there, and its map refused
start_node a
wait_status b 30 'p["a"]["link"] == "Connected" and p["a"]["out_of_sync_bytes"] == 0' ||
	fail "a did not resync from b"
wait_ckpt a c3 incomplete
wait_ckpt a c2 complete
ra_cli b demote "$CLUSTER_VOL" || fail "demote b"
promote a
expect_fail "map of an incomplete checkpoint" "" nbdinfo --map=replagent:changed:c3 "$uria"
expect_changed "$uria" c2 "on a after its resync" "$M:$((64 * K))" \
	"$((20 * M)):$((64 * K))" "$((30 * M)):$((256 * K))" "$((40 * M)):$((64 * K))"
log "c2 on a has the regions the resync brought"
stop_cluster
cmp_backings a b || fail "backings differ"
