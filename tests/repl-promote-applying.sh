#!/bin/bash
# tests/repl-promote-applying.sh: a Secondary promoted while a write of
# its lost Primary is still being written to its disk must not resync
# that region to the others before the write lands: it would send them
# the data from before it, and end with data they lack.  a (Primary), b
# and c in sync; b's disk is slow (the faultdisk shim's slow-write: each
# write sleeps 8 s, then lands).  A client writes 64 KiB through a; c has
# it at once, b is still writing it when a is killed.  b is promoted: it
# resyncs the regions it and c applied last (recent.c), this one among
# them.  Once c is in sync, b and c must be identical.  b used to read
# the region for c before its own write landed (simulator seeds 500, 633,
# ...: "after heal and resync n2 differs from the Primary n1").
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp od qemu-io
requires_replagentd
requires_replagent

cluster_config -t 5 a b c
# b applies the write on a worker, as a disk that is slow gets it (an
# inline write on b's loop thread would hold b still until it lands:
# nothing to race).
sed -i '/^\[volume /a io-inline = no' "${NODE_CONF[b]}"
faultdisk_init
faultdisk_preload b
start_in_sync a b c

faultdisk_set slow-write "${NODE_BACKING[b]} 8000"
# Not acknowledged (b answers after 8 s, a dies before): it ends when a does.
qio_unflushed "${NODE_NBD_URI[a]}" "write -P 0x62 0 64k" &
track_pid $!
for ((i = 0; i < 100; i++)); do
	faultdisk_log | grep -q "^slow-write ${NODE_BACKING[b]}" &&
		[ "$(od -An -tx1 -N1 "${NODE_BACKING[c]}" | tr -d ' ')" = 62 ] && break
	sleep 0.1
done
[ "$i" -lt 100 ] || fail "the write did not reach c, or b's disk did not hold it"
kill_node a
faultdisk_clear slow-write
log "a killed while b was still writing what c has"

wait_status b 30 'p["a"]["link"] != "Connected"' || fail "b did not see a go"
promote b
[ "$(od -An -tx1 -N1 "${NODE_BACKING[b]}" | tr -d ' ')" != 62 ] ||
	log "b's write landed before its promotion: this run did not test the race"
wait_status b 60 'p["c"]["link"] == "Connected" and p["c"]["out_of_sync_bytes"] == 0 and p["c"]["peer_disk"] == "UpToDate"' ||
	fail "c did not get in sync with b"
# b's write lands before it exits (a clean stop waits for its I/O).
stop_node c
stop_node b
cmp_backings b c || fail "b and c differ after b resynced c"
log "PASS"
