#!/bin/bash
# tests/repl-bitmap-damage.sh: a damaged page of the dirty bitmap must not
# drop a region from a resync.  a (Primary) and b; b stops; a writes 64 KiB
# at 8 MiB, which b misses (a's bitmap for b has that one bit); a stops and
# one bit of its metadata file flips: the bit of that region.  a restarts
# and is promoted, b returns: the resync must bring b the region anyway (the
# page fails its check, so its whole range is resynced), the backings must
# end identical, and a's log and status must say that a bitmap page was
# damaged.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp qemu-io
requires_replagentd
requires_replagent

MiB=$((1 << 20))
REGION=$((64 << 10))

cluster_config -t 5 a b
start_in_sync a b
qio_batch "${NODE_NBD_URI[a]}" "write -P 0x61 0 16M" || fail "writing through a failed"
wait_status a 10 'p["b"]["out_of_sync_bytes"] == 0' || fail "b is behind"
stop_node b
qio_batch "${NODE_NBD_URI[a]}" "write -P 0x62 $((8 * MiB)) $REGION" ||
	fail "writing with b away failed"
oos=$(status_value a 'p["b"]["out_of_sync_bytes"]')
[ "$oos" = "$REGION" ] || fail "a counts $oos bytes out of sync for b, expected $REGION"
stop_node a

# b is a's only peer: peer slot 0, whose bitmap starts at byte 8192 of the
# file; region 128 (8 MiB / 64 KiB) is bit 0 of byte 16 of it.
META=${NODE_DIR[a]}/state/$CLUSTER_VOL.meta
off=$((8192 + 128 / 8))
byte=$(od -An -tu1 -j "$off" -N1 "$META" | tr -d ' ')
[ $((byte & 1)) = 1 ] || fail "the bit of region 128 is not where the format says (byte $byte)"
printf "$(printf '\\%03o' $((byte ^ 1)))" |
	dd of="$META" bs=1 seek="$off" conv=notrunc status=none || hard_error "cannot flip the bit"
log "flipped the bit of region 128 in a's bitmap for b"

start_node a
promote a
start_node b
wait_status a 60 'p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0 and p["b"]["peer_disk"] == "UpToDate"' ||
	fail "b did not resync"
wait_status b 10 'v["disk"] == "UpToDate"' || fail "b is not UpToDate"
damaged=$(status_value a 'v.get("bitmap_damaged_pages", 0)')
out=$(ra_cli a status)
stop_node b
stop_node a
cmp_backings a b || fail "a and b differ: the resync skipped what the damaged bitmap lost"
[ "$damaged" = 1 ] || fail "a's status says $damaged damaged bitmap pages, expected 1"
case $out in
*"1 damaged bitmap page"*) ;;
*) fail "a's status does not mention the damaged bitmap page: $out" ;;
esac
grep -q "page 0 of the bitmap of peer slot 0 fails its checksum" "$(daemon_log a)" ||
	fail "a's log does not say which bitmap page was damaged"
log "PASS"
