#!/bin/bash
# tests/repl-resize.sh: replicas of different sizes, in static mode (three
# daemons on this machine), where a larger "size =" at start grows a
# replica.  a is Primary, b and c Secondaries, 64 MiB, writes go on.
# b restarts with 96M: it grows, but a resync from a is due and a is
# smaller, so they wait (Disconnected with a reason, never StandAlone).
# a restarts with 96M (Secondary again): it grows, resyncs b, connects to
# c (64 MiB, in sync: no data to move) and is promoted: new NBD clients get
# 64 MiB, the size every connected replica has.  c restarts with 32M:
# refused, a volume never shrinks; with 96M: it grows, resyncs, and new
# clients get 96 MiB and write in the new area.  verify finds nothing
# different; the three backing files end identical with every
# acknowledged write.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp nbdinfo
requires_replagentd
requires_replagent

OLD=$((64 << 20))
NEW=$((96 << 20))
ACK1=$TESTDIR/ack1.log
ACK2=$TESTDIR/ack2.log
ACK3=$TESTDIR/ack3.log

# resize_conf NODE SIZE: NODE's config with another "size =".
resize_conf() {
	write_node_config "$1" "${NODE_CONF[$1]}" "$CLUSTER_KEY" "$CLUSTER_VOL" "$2" \
		"${NODE_BACKING[$1]}"
}

# writes LOG ARGS...: a short writer on a's export.
writes() {
	local logf=$1
	shift
	ackcheck write --unix "${NODE_NBD_SOCK[a]}" --export "$CLUSTER_VOL" --log "$logf" \
		--duration 2 --inflight 8 --flush-every 32 --stall-timeout 20 "$@" >/dev/null ||
		fail "writes through a failed: $(tail -n 3 "$logf")"
}

SYNCED='all(x["link"] == "Connected" and x["out_of_sync_bytes"] == 0 and x["peer_disk"] == "UpToDate" for x in p.values())'

cluster_config -t 5 -s 64M a b c
for n in a b c; do
	start_node "$n"
done
wait_status a 30 "$SYNCED" || fail "a, b and c did not connect"
promote a
writes "$ACK1" --span $((8 << 20))

# ---- b grows first; a resync is due: both wait -----------------------------------
stop_node b
writes "$ACK2" --base $((8 << 20)) --span $((8 << 20))
resize_conf b 96M
start_node b
wait_status b 10 "v[\"size\"] == $NEW and \"grow\" not in v" || fail "b did not grow to 96 MiB"
grep -q "grown from 64.0 MiB to 96.0 MiB" "$(daemon_log b)" || fail "b did not log its grow"
wait_status a 10 'p["b"]["link"] in ("Disconnected", "Connecting") and ("grow" in p["b"]["reason"] or "resize" in p["b"]["reason"])' ||
	fail "a does not say that it waits for a grow"
sleep 2
for n in a b; do
	wait_status "$n" 1 'all(x["link"] != "StandAlone" for x in p.values())' ||
		fail "$n has a StandAlone link while the sizes differ"
done
log "a and b wait: $(status_value a 'p["b"]["reason"]')"

# ---- a grows too (it comes back as Secondary) ----------------------------------------
stop_node a
resize_conf a 96M
start_node a
wait_status a 10 "v[\"size\"] == $NEW" || fail "a did not grow to 96 MiB"
# c, in sync and 64 MiB, may connect to the larger a (no data to move).
wait_status a 20 'p["c"]["link"] == "Connected" and p["b"]["link"] == "Connected"' ||
	fail "a did not connect to b and c as a Secondary"
promote a
wait_status a 30 'p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0' ||
	fail "a and b did not connect (and resync) once both had grown"
wait_status a 10 'p["c"]["link"] == "Connected" and p["c"]["size"] == 64 << 20' ||
	fail "a and c (in sync, 64 MiB) did not connect"
[ "$(status_value a 'v["export_size"]')" = "$OLD" ] || fail "a does not export 64 MiB while c has 64 MiB"
sz=$(nbdinfo --size "${NODE_NBD_URI[a]}") || fail "nbdinfo on a failed"
[ "$sz" = "$OLD" ] || fail "a new NBD client of a sees $sz bytes while c has 64 MiB"
ra_cli a verify "$CLUSTER_VOL" >/dev/null 2>"$TESTDIR/verify.err" &&
	fail "verify accepted while the sizes differ"
grep -q "resize" "$TESTDIR/verify.err" || fail "verify refused without naming the resize: $(cat "$TESTDIR/verify.err")"
log "a (96 MiB) exports 64 MiB while c has 64 MiB"
writes "$ACK3" --base $((16 << 20)) --span $((8 << 20))

# ---- c: never smaller; then it grows --------------------------------------------------
stop_node c
resize_conf c 32M
# The daemon serves its other volumes; this one is failed, with the reason.
start_node c
wait_status c 10 'v.get("failed") and "never shrinks" in v.get("reason", "")' ||
	fail "c took 32M for a 64 MiB replica, or did not say why: $(tail -n 3 "$(daemon_log c)")"
ra_cli c status >/dev/null 2>&1
rc=$?
[ "$rc" = 2 ] || fail "status of c with a failed volume exits $rc, not 2 (critical)"
stop_node c
resize_conf c 96M
start_node c
wait_status a 30 "$SYNCED and v[\"export_size\"] == $NEW" || fail "c did not grow and resync"
sz=$(nbdinfo --size "${NODE_NBD_URI[a]}") || fail "nbdinfo on a failed"
[ "$sz" = "$NEW" ] || fail "a new NBD client of a sees $sz bytes, not $NEW"
log "every replica has 96 MiB: new NBD clients see $sz bytes"
ackcheck write --unix "${NODE_NBD_SOCK[a]}" --export "$CLUSTER_VOL" --log "$TESTDIR/new.log" \
	--duration 2 --inflight 8 --base "$OLD" --span $((NEW - OLD)) --stall-timeout 20 >/dev/null ||
	fail "writes in the new area failed"
wait_status a 10 "$SYNCED" || fail "b and c are behind after writes in the new area"
ra_cli a verify "$CLUSTER_VOL" || fail "verify found differences"

stop_cluster
for n in a b c; do
	[ "$(stat -c %s "${NODE_BACKING[$n]}")" = "$NEW" ] || fail "$n's backing is not 96 MiB"
	for f in "$ACK1" "$ACK2" "$ACK3" "$TESTDIR/new.log"; do
		ackcheck check --log "$f" --file "${NODE_BACKING[$n]}" >/dev/null ||
			fail "$n lacks acknowledged writes ($(basename "$f"))"
	done
done
cmp_backings a b c || fail "the replicas differ"
log "PASS"
