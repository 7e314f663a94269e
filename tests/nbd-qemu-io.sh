#!/bin/bash
# tests/nbd-qemu-io.sh: qemu-io writes distinct patterns at several offsets
# (sector-aligned and byte-granular, small and large, across 1 MiB
# boundaries, the very end of the volume; plain, FUA and write-zeroes), then
# reads them back with pattern verification in new connections, over the
# Unix socket and over TCP on 127.0.0.1; finally checks that the backing
# file holds the same bytes.
# shellcheck source=SCRIPTDIR/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires qemu-io timeout

# Unix socket and TCP on 127.0.0.1.
write_config -s 64M
start_replagentd_tcp "$CONFIG"
log "serving $NBD_URI and $NBD_TCP_URI"

M=$((1024 * 1024))
SIZE=$((64 * M))

# "offset length pattern" triples; pattern 0 marks a gap that must stay
# zero (never written).  Unix socket regions are in the first 32 MiB, TCP
# ones in the second half.
unix_regions="
0 4096 0x11
4096 512 0
4608 512 0x12
5120 512 0
$((M - 1024)) 512 0
$((M - 512)) 1024 0x13
$((M + 512)) 512 0
$((2 * M)) 1 0
$((2 * M + 1)) 3333 0x17
$((2 * M + 3334)) 1 0
$((3 * M + 1024)) 512 0
$((3 * M + 1536)) 65536 0x14
$((3 * M + 1536 + 65536)) 512 0
$((8 * M - 4096)) 4096 0
$((8 * M)) $((4 * M)) 0x15
$((12 * M)) 4096 0
$((13 * M - 4096)) 8192 0x16
$((13 * M + 4096)) 4096 0
"
tcp_regions="
$((32 * M)) 4096 0x21
$((32 * M + 4096)) 4096 0
$((33 * M - 1024)) 512 0
$((33 * M - 512)) 1536 0x22
$((33 * M + 1024)) 512 0
$((40 * M)) 512 0
$((40 * M + 512)) 131072 0x23
$((40 * M + 512 + 131072)) 512 0
$((45 * M + 776)) 1 0
$((45 * M + 777)) 100000 0x26
$((45 * M + 100777)) 1 0
$((48 * M)) $((2 * M)) 0x24
$((50 * M)) 512 0
$((SIZE - 8192)) 4096 0
$((SIZE - 4096)) 4096 0x25
"

# write_cmds REGIONS: qemu-io write commands for the non-gap regions,
# alternating plain and FUA writes.
write_cmds() {
	local off len pat i=0
	while read -r off len pat; do
		[ -n "$off" ] && [ "$pat" != 0 ] || continue
		if [ $((i % 2)) = 0 ]; then
			echo "write -P $pat $off $len"
		else
			echo "write -f -P $pat $off $len"
		fi
		i=$((i + 1))
	done <<<"$1"
}

# read_cmds REGIONS: verify every region, gaps included.
read_cmds() {
	local off len pat
	while read -r off len pat; do
		[ -n "$off" ] || continue
		echo "read -P $pat $off $len"
	done <<<"$1"
}

# A fresh volume reads as zeroes.
qio_batch "$NBD_URI" "read -P 0 0 $((4 * M))
read -P 0 $((SIZE - M)) $M" || fail "fresh volume does not read as zeroes"

qio_batch "$NBD_URI" "$(write_cmds "$unix_regions")
flush" || fail "writes over the Unix socket failed"
qio_batch "$NBD_TCP_URI" "$(write_cmds "$tcp_regions")
flush" || fail "writes over TCP failed"

# Write zeroes over the middle of a written region, then check it.
qio_batch "$NBD_URI" "write -z $((9 * M)) $M" || fail "write -z failed"
unix_regions_z="${unix_regions/$((8 * M)) $((4 * M)) 0x15/$((8 * M)) $M 0x15
$((9 * M)) $M 0
$((10 * M)) $((2 * M)) 0x15}"

all=$(read_cmds "$unix_regions_z")
all+=$'\n'$(read_cmds "$tcp_regions")
qio_batch "$NBD_URI" "$all" || fail "read back over the Unix socket failed"
qio_batch "$NBD_TCP_URI" "$all" || fail "read back over TCP failed"

# The last sector.
qio_batch "$NBD_URI" "write -P 0x99 $((SIZE - 512)) 512
read -P 0x99 $((SIZE - 512)) 512" || fail "last sector"

stop_replagentd || fail "replagentd exited with status $REPLAGENTD_STATUS after SIGTERM"
[ -e "$NBD_SOCK" ] && fail "the NBD socket was not removed"

# The backing file is the volume's content.
[ "$(stat -c %s "$BACKING")" = "$SIZE" ] ||
	fail "backing file size $(stat -c %s "$BACKING") != $SIZE"
tcp_regions_end="${tcp_regions/$((SIZE - 4096)) 4096 0x25/$((SIZE - 4096)) 3584 0x25}"
qio_batch "$BACKING" "$(read_cmds "$unix_regions_z")
$(read_cmds "$tcp_regions_end")
read -P 0x99 $((SIZE - 512)) 512" || fail "backing file content differs"
log "PASS"
