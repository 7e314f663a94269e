#!/bin/sh
# tests/guest/build.sh: builds the test guest (counter.asm, see there) and
# writes it, with a counter record holding 0, onto a disk.
#
#   build.sh OUT [SIZE]
#
# OUT is a raw image file (created or extended to SIZE, default 64M; sizes
# as truncate(1) takes them), a block device, or an NBD URI
# (nbd://HOST:PORT/EXPORT, nbd+unix:///EXPORT?socket=PATH: written with
# qemu-io, SIZE ignored).  Only sectors 0..3 (the program) and the counter
# sector (LBA 2048, offset 1 MiB) are written.  Needs nasm (and qemu-io for
# NBD).  Exit status 0 on success, 1 on failure, 64 on a usage error.
set -eu

COUNTER_LBA=2048

usage() {
	echo "usage: $0 OUT [SIZE]" >&2
	exit 64
}
[ $# -ge 1 ] && [ $# -le 2 ] || usage
out=$1
size=${2:-64M}
here=$(cd "$(dirname "$0")" && pwd)
command -v nasm >/dev/null 2>&1 || { echo "$0: nasm not found" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/replagent-guest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

nasm -f bin -D COUNTER_LBA=$COUNTER_LBA -o "$tmp/counter.bin" "$here/counter.asm"
# The counter record: magic, 0 (LE), its complement, zeros up to 512 bytes.
{
	printf 'REPLAGENT-COUNT1'
	printf '\000\000\000\000\377\377\377\377'
	head -c $((512 - 24)) /dev/zero
} >"$tmp/record.bin"
prog_len=$(wc -c <"$tmp/counter.bin")
rec_off=$((COUNTER_LBA * 512))

case $out in
nbd:* | nbd+unix:*)
	command -v qemu-io >/dev/null 2>&1 || { echo "$0: qemu-io not found" >&2; exit 1; }
	res=$(timeout 60 qemu-io -f raw \
		-c "write -s $tmp/counter.bin 0 $prog_len" \
		-c "write -s $tmp/record.bin $rec_off 512" \
		-c flush "$out" 2>&1) || {
		printf '%s\n' "$res" >&2
		exit 1
	}
	case $res in
	*rror* | *ailed*) printf '%s\n' "$res" >&2; exit 1 ;;
	esac
	;;
*)
	if [ ! -b "$out" ]; then
		[ -e "$out" ] || : >"$out"
		cur=$(stat -c %s "$out")
		want=$(truncate -s "$size" "$tmp/size" && stat -c %s "$tmp/size")
		[ "$want" -ge $((rec_off + 512)) ] || {
			echo "$0: SIZE must be at least $((rec_off + 512)) bytes" >&2
			exit 1
		}
		[ "$cur" -ge "$want" ] || truncate -s "$want" "$out"
	fi
	dd if="$tmp/counter.bin" of="$out" bs=512 conv=notrunc,fsync status=none
	dd if="$tmp/record.bin" of="$out" bs=512 seek=$COUNTER_LBA conv=notrunc,fsync status=none
	;;
esac
