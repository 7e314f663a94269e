#!/bin/bash
# tests/faultdisk-nbd.sh: a power loss under a single replagentd, played by
# the faultdisk shim's volatile write cache on the backing file and kill -9.
# A client (qemu-io with a write-back cache, so plain writes carry no FUA)
# writes and stays connected without flushing: the daemon reads its own
# writes, the backing file does not have them, and after kill -9 and a
# restart they are gone; a FUA write of the same moment is not.  Then the
# same with an NBD FLUSH before the kill: the data survives.  This is what
# the engine promises a guest (durable once FLUSH or FUA is answered) and
# nothing more; a test of a durability bug uses the same steps.
# shellcheck source=SCRIPTDIR/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires qemu-io timeout od stdbuf

M=$((1024 * 1024))
SENTINEL=$((15 * M))	# never written: its read marks "all answered"

faultdisk_init
write_config -s 16M
faultdisk_set cache "$BACKING"
faultdisk_preload replagentd
start_replagentd "$CONFIG"

# held_qio CMD...: qemu-io runs the CMDs on $NBD_URI, then stays connected
# (a long sleep: qemu would flush at its exit) in the background; returns
# once every CMD is answered.  QIO_PID is qemu-io.
held_qio() {
	local out=$TESTDIR/held.qio a
	local -a args=()
	for a in "$@"; do args+=(-c "$a"); done
	: >"$out"
	# (stdbuf: its answers are wanted before it exits)
	stdbuf -oL qemu-io -f raw -t writeback "${args[@]}" -c "read -P 0 $SENTINEL 512" \
		-c "sleep 600000" "$NBD_URI" >"$out" 2>&1 &
	QIO_PID=$!
	track_pid "$QIO_PID"
	wait_for_file_text "$out" "bytes at offset $SENTINEL" "$QIO_TIMEOUT" ||
		{ cat "$out" >&2; fail "qemu-io did not finish its commands"; }
	if grep -q -i -E 'fail|error' "$out"; then
		cat "$out" >&2
		fail "qemu-io: a command failed"
	fi
}

# on_disk OFFSET: the byte at OFFSET of the backing file as stored, in hex.
on_disk() { od -An -tx1 -j "$1" -N 1 "$BACKING" | tr -d ' '; }

# crash_and_restart: kill -9 the daemon (a power loss: the shim's cache is
# gone with it), drop the client, start the daemon again.
crash_and_restart() {
	kill_replagentd
	stop_pid "$QIO_PID" 2>/dev/null
	untrack_pid "$QIO_PID"
	start_replagentd "$CONFIG"
}

# ---- unflushed writes are lost; a FUA write is not
held_qio "write -P 0x5a $M 65536" "write -f -P 0x6b $((2 * M)) 4096" \
	"read -P 0x5a $M 65536" "read -P 0x6b $((2 * M)) 4096"
[ "$(on_disk "$M")" = 00 ] || fail "an unflushed write reached the backing file"
[ "$(on_disk $((2 * M)))" = 6b ] || fail "a FUA write did not reach the backing file"
faultdisk_log | grep -q -x "cache $BACKING" || fail "the shim held no write of $BACKING"
crash_and_restart
qio_batch "$NBD_URI" "read -P 0 $M 65536" ||
	fail "data never flushed survived kill -9 of the daemon (is the shim working?)"
qio_batch "$NBD_URI" "read -P 0x6b $((2 * M)) 4096" || fail "a FUA write was lost by kill -9"
log "unflushed write lost, FUA write kept"

# ---- flushed writes survive
held_qio "write -P 0x5a $M 65536" "flush"
[ "$(on_disk "$M")" = 5a ] || fail "FLUSH did not write the data to the backing file"
faultdisk_log | grep -q -x "cache-flush $BACKING 65536" || fail "no cache-flush of 64 KiB logged"
crash_and_restart
qio_batch "$NBD_URI" "read -P 0x5a $M 65536" || fail "flushed data lost by kill -9"
log "flushed write kept"

stop_replagentd || fail "replagentd exited with status $REPLAGENTD_STATUS after SIGTERM"
log "PASS"
