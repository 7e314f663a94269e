#!/bin/bash
# tests/repl-verify.sh: online verify.  a (Primary) and b hold the same
# data; one byte of b's backing file is changed behind the daemon's back
# (on disk, while b is stopped).  "replagent verify" on a, while a writer
# keeps writing elsewhere, must report exactly that region and exit 1;
# "verify --repair" must resync it, after which a second verify finds
# nothing and the backing files are identical.  Then "replagent verify"
# on b, the Secondary, while a writes densely into a few regions, must
# find nothing, each of three times.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp qemu-io
requires_replagentd
requires_replagent

cluster_config -t 5 -s 64M a b
start_pair a b
qemu-io -f raw -c "write -P 0x5a 0 16M" -c flush \
	"nbd+unix:///$CLUSTER_VOL?socket=${NODE_NBD_SOCK[a]}" >/dev/null ||
	fail "writing the data failed"

# One byte in b's copy, at 5 MiB + 1234: region 80 of 64 KiB regions.
stop_node b
printf '\xa5' | dd of="${NODE_BACKING[b]}" bs=1 seek=$((5 * 1048576 + 1234)) conv=notrunc status=none
start_node b
wait_status a 30 'p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0' ||
	fail "b did not reconnect"

# A writer keeps the volume in use (above 32 MiB) during the verify.
start_writer "$TESTDIR/w.log" --unix "${NODE_NBD_SOCK[a]}" --export "$CLUSTER_VOL" \
	--duration 20 --inflight 8 --base $((32 << 20)) --span $((16 << 20)) --structured
out=$(ra_cli a verify "$CLUSTER_VOL")
rc=$?
log "verify: $out (exit $rc)"
[ "$rc" = 1 ] || fail "verify did not exit 1 for a differing region"
[ "$(printf '%s\n' "$out" | grep -c '^differs:')" = 1 ] ||
	fail "verify should report exactly one region"
printf '%s\n' "$out" | grep -q "^differs: offset $((80 * 65536)) length 65536$" ||
	fail "verify reported the wrong region"

out=$(ra_cli a verify "$CLUSTER_VOL" --repair) || fail "verify --repair failed: $out"
log "verify --repair: $out"
out=$(ra_cli a verify "$CLUSTER_VOL") || fail "a second verify still finds differences: $out"
log "verify again: $out"
wait_writer

# On the Secondary, while the Primary writes densely into a few regions:
# both copies are the same all along, so no verify may say otherwise
# (a region written between the two sides' reads is compared again).
start_writer "$TESTDIR/w2.log" --unix "${NODE_NBD_SOCK[a]}" --export "$CLUSTER_VOL" \
	--duration 6 --inflight 8 --base $((52 << 20)) --span $((1 << 20)) --structured
for i in 1 2 3; do
	out=$(ra_cli b verify "$CLUSTER_VOL") ||
		fail "verify on the Secondary during writes reports differences: $out"
	log "verify on b, $i: $out"
done
_alive "$WRITER_PID" ||
	fail "the writer ended before the third verify: it must write during all three"
wait_writer
stop_node a
stop_node b
cmp_backings a b || fail "a and b differ after the repair"
for w in w w2; do
	ackcheck check --log "$TESTDIR/$w.log" --file "${NODE_BACKING[b]}" ||
		fail "b lost writes acknowledged during the verify ($w.log)"
done
log "PASS"
