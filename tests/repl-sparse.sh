#!/bin/bash
# tests/repl-sparse.sh: a sparse volume as NBD clients see it, on two
# replicas on 127.0.0.1.  nbdinfo --map and qemu-img map report the holes
# and the data (base:allocation); qemu-img convert and nbdcopy copy the
# volume out into a file that stays sparse and is identical; a discard
# (qemu-io) and a write of zeroes that may unmap punch holes in the backing
# of every replica (SEEK_DATA and du say so), and the map shows the hole; a
# write of zeroes with NO_HOLE keeps the space allocated.  A full resync
# to a blank b and an online verify read the data, not the holes (rchar of
# the daemons), and b's backing stays sparse.  The backings are identical.
# With root and a loop device, a's backing is the device: the map says
# all allocated, and a discard reaches the loop's file as a hole.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires nbdinfo nbdcopy qemu-img qemu-io timeout cmp du
requires_replagentd
requires_replagent

M=$((1024 * 1024))
cluster_config -s 64M a b
start_in_sync a b
uri=${NODE_NBD_URI[a]}

expect_map() {	# WHAT EXPECTED-LINES
	local got
	got=$(nbd_map "$uri") || fail "$1: nbdinfo --map failed"
	[ "$got" = "$2" ] || fail "$1: nbdinfo --map says
$got
expected
$2"
}

# expect_data NODE WHAT EXPECTED: the allocated extents of NODE's backing.
expect_data() {
	local got
	got=$(data_extents "${NODE_BACKING[$1]}")
	[ "$got" = "$3" ] || fail "$2: backing of $1 has data at
$got
expected
$3"
}

expect_map "empty volume" "0 $((64 * M)) 3"

qio_batch "$uri" "write -P 0x55 $M $((2 * M))
write -P 0x66 $((40 * M)) $M
flush" || fail "qemu-io write"
expect_map "after writes" "0 $M 3
$M $((2 * M)) 0
$((3 * M)) $((37 * M)) 3
$((40 * M)) $M 0
$((41 * M)) $((23 * M)) 3"

# qemu-img map (its own block status client) agrees.
qemu-img map -f raw --output=json "$uri" >"$TESTDIR/map.json" || fail "qemu-img map"
"$PYTHON" - "$TESTDIR/map.json" "$M" <<-'PY' || fail "qemu-img map: wrong data extents"
	import json, sys
	m, M = json.load(open(sys.argv[1])), int(sys.argv[2])
	data = [(e["start"], e["length"]) for e in m if e["data"]]
	zero = all(e["zero"] for e in m if not e["data"])
	if data != [(M, 2 * M), (40 * M, M)] or not zero:
	    print("qemu-img map:", m, file=sys.stderr)
	    sys.exit(1)
PY

# Copies out stay sparse and are identical.
timeout 60 qemu-img convert -f raw -O raw "$uri" "$TESTDIR/convert.raw" ||
	fail "qemu-img convert out of the export"
timeout 60 nbdcopy "$uri" "$TESTDIR/nbdcopy.raw" || fail "nbdcopy out of the export"
truncate -s 64M "$TESTDIR/nbdcopy-pre.raw"
timeout 60 nbdcopy "$uri" "$TESTDIR/nbdcopy-pre.raw" || fail "nbdcopy into a sparse file"
for f in convert.raw nbdcopy.raw nbdcopy-pre.raw; do
	kib=$(du -k "$TESTDIR/$f" | cut -f1)
	[ "$kib" -le 4096 ] || fail "$f takes $kib KiB on disk: not sparse"
	qemu-img compare -f raw -F raw "$TESTDIR/$f" "$uri" >/dev/null ||
		fail "$f differs from the export"
	log "$f: identical, $kib KiB on disk"
done

# A discard punches a hole on both replicas.
qio_batch "$uri" "discard $M $M
flush" || fail "qemu-io discard"
expect_map "after a discard" "0 $((2 * M)) 3
$((2 * M)) $M 0
$((3 * M)) $((37 * M)) 3
$((40 * M)) $M 0
$((41 * M)) $((23 * M)) 3"
for n in a b; do
	expect_data "$n" "after a discard" "$((2 * M)) $M
$((40 * M)) $M"
done

# Zeroes that may unmap: a hole.  With NO_HOLE (qemu-io -z without -u) the
# space stays allocated (du; SEEK_DATA may call ext4's unwritten extents a
# hole, so it is not asked).
qio_batch "$uri" "write -z -u $((40 * M)) $M
write -z $((2 * M)) $((512 * 1024))
flush" || fail "qemu-io write -z"
for n in a b; do
	data_extents "${NODE_BACKING[$n]}" >"$TESTDIR/extents.$n"
	while read -r off len; do
		[ $((off + len)) -le $((40 * M)) ] || [ "$off" -ge $((41 * M)) ] ||
			fail "backing of $n: data at $off+$len after a write of zeroes with unmap"
	done <"$TESTDIR/extents.$n"
	kib=$(du -k "${NODE_BACKING[$n]}" | cut -f1)
	[ "$kib" -ge 1024 ] && [ "$kib" -le 2048 ] ||
		fail "backing of $n takes $kib KiB, expected 1-2 MiB"
done
qio_batch "$uri" "read -P 0 $((2 * M)) $((512 * 1024))
read -P 0x55 $((2 * M + 512 * 1024)) $((512 * 1024))
read -P 0 $((40 * M)) $M" || fail "data after writes of zeroes"

# A full resync to a blank b, then a verify: the holes are not read.
stop_node b
rm -rf "${NODE_DIR[b]}/state" "${NODE_BACKING[b]}"
ra=$(proc_rchar "$(replagentd_pid a)")
start_node b
wait_status a 60 'p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0 and p["b"]["peer_disk"] == "UpToDate"' ||
	fail "b did not resync from a"
grep -q "resync to b: .* (full)" "$(daemon_log a)" || fail "a did not run a full resync to b"
read_a=$(($(proc_rchar "$(replagentd_pid a)") - ra))
log "full resync of 64 MiB with 1.5 MiB of data: a read $read_a bytes"
[ "$read_a" -lt $((16 * M)) ] || fail "a read $read_a bytes for a full resync: it read the holes"
kib=$(du -k "${NODE_BACKING[b]}" | cut -f1)
[ "$kib" -le 4096 ] || fail "b's backing takes $kib KiB after a full resync: not sparse"
ra=$(proc_rchar "$(replagentd_pid a)")
rb=$(proc_rchar "$(replagentd_pid b)")
out=$(ra_cli a verify "$CLUSTER_VOL") || fail "verify finds differences: $out"
read_a=$(($(proc_rchar "$(replagentd_pid a)") - ra))
read_b=$(($(proc_rchar "$(replagentd_pid b)") - rb))
log "verify: $out; a read $read_a bytes, b $read_b"
[ "$read_a" -lt $((16 * M)) ] && [ "$read_b" -lt $((16 * M)) ] ||
	fail "verify read the holes (a $read_a, b $read_b bytes)"

stop_cluster
cmp_backings a b || fail "the replicas differ"

if [ "$(id -u)" != 0 ] || ! command -v losetup >/dev/null; then
	log "block-device part skipped (needs root and losetup)"
	log "PASS"
	exit 0
fi
truncate -s 64M "$TESTDIR/dev-a.img" || hard_error "truncate"
if ! DEV=$(losetup -f --show "$TESTDIR/dev-a.img" 2>/dev/null); then
	log "block-device part skipped (no loop device)"
	log "PASS"
	exit 0
fi
on_cleanup losetup -d "$DEV"
rm -rf "${NODE_DIR[a]}/state"
sed -i "s|^backing = .*|backing = $DEV|" "${NODE_CONF[a]}"
start_node a
promote a --force
qio_batch "$uri" "write -P 0x77 0 $((4 * M))
flush" || fail "qemu-io write to the device"
expect_map "a device" "0 $((64 * M)) 0"
qio_batch "$uri" "discard $M $M
flush" || fail "qemu-io discard on the device"
qio_batch "$uri" "read -P 0 $M $M
read -P 0x77 $((2 * M)) $M" || fail "a discarded range of the device does not read as zeroes"
# (the loop driver turns the device's unmapping zeroes into a punched hole)
got=$(data_extents "$TESTDIR/dev-a.img")
[ "$got" = "0 $M
$((2 * M)) $((2 * M))" ] || fail "a discard on the device did not deallocate: its file has data at
$got"
stop_node a
log "PASS"
