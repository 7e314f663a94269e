#!/bin/bash
# tests/nbd-qemu-img.sh: qemu-img convert a random 16 MiB raw file into the
# export (16 coroutines, out-of-order writes) and back out to a new file; the
# three must be identical (cmp, qemu-img compare).  Then the same with a
# mostly-zero sparse source, which makes qemu-img zero the export's tail with
# WRITE_ZEROES.
# shellcheck source=SCRIPTDIR/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires qemu-img cmp timeout

SIZE=$((16 * 1024 * 1024))
write_config -s 16M
start_replagentd "$CONFIG"

img() { timeout 30 qemu-img "$@"; }

src=$TESTDIR/src.raw
out=$TESTDIR/out.raw
head -c "$SIZE" /dev/urandom >"$src" || hard_error "cannot create $src"

vsize=$(img info --output=json -f raw "$NBD_URI" | sed -n 's/.*"virtual-size": *\([0-9]*\).*/\1/p')
[ "$vsize" = "$SIZE" ] || fail "qemu-img info: virtual size '$vsize', expected $SIZE"

check_round_trip() {
	local what=$1
	img convert -p -n -f raw -O raw -m 16 -W "$src" "$NBD_URI" >/dev/null ||
		fail "$what: convert into the export failed"
	rm -f "$out"
	img convert -f raw -O raw -m 16 "$NBD_URI" "$out" ||
		fail "$what: convert out of the export failed"
	cmp "$src" "$out" || fail "$what: the copy out differs from the source"
	img compare -f raw -F raw "$src" "$NBD_URI" ||
		fail "$what: qemu-img compare source vs export"
	img compare -f raw -F raw "$out" "$NBD_URI" ||
		fail "$what: qemu-img compare copy vs export"
	log "$what: ok"
}

check_round_trip "random data"

# Sparse source: 1 MiB of data at 2 MiB, the rest holes.
rm -f "$src"
truncate -s "$SIZE" "$src"
head -c $((1024 * 1024)) /dev/urandom |
	dd of="$src" bs=1M seek=2 conv=notrunc status=none || hard_error "dd failed"
check_round_trip "sparse source"

stop_replagentd || fail "replagentd exited with status $REPLAGENTD_STATUS"
cmp "$src" "$BACKING" || fail "backing file differs from the source"
log "PASS"
