#!/bin/bash
# tests/repl-primary-flush-eio.sh: a Primary whose disk fails a FLUSH may
# have lost the plain writes it acknowledged and had not flushed: Linux
# leaves a page whose writeback failed clean, and a later fsync does not
# write it again (the faultdisk shim's volatile cache on a's backing
# drops them when the flush fails).  b, in sync, holds them.  a must stop
# being the reference: it steps down (its clients get errors, its data is
# resynced in full), b is promoted, and every write acknowledged before
# the failed FLUSH reads back from b; the backings end identical.  a used
# to stay Primary over data that lacked them, and later resync it to b.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp qemu-io
requires_replagentd
requires_replagent

cached_pair a

# Plain writes, acknowledged by both, not flushed anywhere.
unflushed_writes a 0x61

faultdisk_set eio-flush "${NODE_BACKING[a]}"
! qio_batch "${NODE_NBD_URI[a]}" "flush" 2>/dev/null ||
	fail "a FLUSH whose local fdatasync failed was acknowledged"
faultdisk_log | grep -q "^cache-drop ${NODE_BACKING[a]}" ||
	hard_error "the failed flush dropped none of a's writes: nothing to test"
wait_status a 10 'v["role"] == "Secondary" and v["disk"] == "Inconsistent"' ||
	fail "a, whose disk dropped writes it acknowledged, did not step down"
log "a stepped down after its disk dropped acknowledged writes"

faultdisk_clear eio-flush
promote b
qio_batch "${NODE_NBD_URI[b]}" "read -P 0x61 1M 4M" ||
	fail "the writes acknowledged before the failed flush are gone from b"
wait_status b 60 'p["a"]["link"] == "Connected" and p["a"]["out_of_sync_bytes"] == 0 and p["a"]["peer_disk"] == "UpToDate"' ||
	fail "a was not resynced from b"
qio_batch "${NODE_NBD_URI[b]}" "write -P 0x62 0 64k
flush" || fail "b does not take writes"
stop_node a
stop_node b
cmp_backings a b || fail "a and b differ after the resync"
log "PASS"
