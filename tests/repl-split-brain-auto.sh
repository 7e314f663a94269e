#!/bin/bash
# tests/repl-split-brain-auto.sh: the automatic split-brain policies
# (after-sb-0pri, after-sb-1pri; templates/replagent.conf) with real
# daemons.  In each case A and B were in sync, A (Primary) went on while B
# was down, then B was promoted alone while A was down, and A comes back
# as the Primary with B Secondary: their generations show a split brain.
#   1. defaults (consensus, discard-zero-changes), B wrote nothing: resolved
#      automatically, B takes A's writes, both end identical.
#   2. defaults, A wrote nothing while apart but B did: consensus would
#      discard the side that wrote, so the link stays StandAlone and B's
#      writes stay on B.
#   3. after-sb-1pri = disconnect, as 1: StandAlone, nothing moves.
#   4. after-sb-0pri = disconnect (consensus follows it), as 1: StandAlone.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp qemu-io
requires_replagentd
requires_replagent

uri() { echo "nbd+unix:///$CLUSTER_VOL?socket=${NODE_NBD_SOCK[$1]}"; }
write() { qemu-io -f raw -c "write -P $2 $3 1M" -c flush "$(uri "$1")" >/dev/null || fail "write on $1"; }
# region NODE OFFSET_MIB BYTE: NODE's backing holds BYTE (octal) in that MiB.
region() {
	cmp -s <(dd if="${NODE_BACKING[$1]}" bs=1M skip="$2" count=1 status=none) \
		<(head -c 1048576 /dev/zero | tr '\0' "\\$3")
}

# apart A B A_WRITES B_WRITES POLICY_LINE...: the split brain above, A
# Primary again and B starting.  A writes 0xaa at 8 MiB, B 0xbb at 16 MiB.
apart() {
	local a=$1 b=$2 wa=$3 wb=$4 n l
	shift 4
	cluster_config -t 2 -s 32M "$a" "$b"
	for n in "$a" "$b"; do
		for l in "$@"; do
			sed -i "/^\[global\]/a $l" "${NODE_CONF[$n]}"
		done
	done
	start_in_sync "$a" "$b"
	write "$a" 0x11 0
	stop_node "$b"
	[ "$wa" = 1 ] && write "$a" 0xaa 8M
	ra_cli "$a" demote "$CLUSTER_VOL" >/dev/null || fail "demote $a"
	stop_node "$a"
	start_node "$b"
	promote "$b"
	[ "$wb" = 1 ] && write "$b" 0xbb 16M
	ra_cli "$b" demote "$CLUSTER_VOL" >/dev/null || fail "demote $b"
	stop_node "$b"
	start_node "$a"
	promote "$a"
	start_node "$b"
}

# standalone A B: the split brain is left to a person.
standalone() {
	wait_status "$1" 30 "p[\"$2\"][\"link\"] == \"StandAlone\"" ||
		fail "$1: the split brain with $2 was not left StandAlone"
	grep -q 'resolved automatically' "$(daemon_log "$1")" "$(daemon_log "$2")" &&
		fail "$1/$2: resolved automatically against the policy"
	ra_cli "$1" status "$CLUSTER_VOL" | grep -q "replagent resolve $CLUSTER_VOL --keep" ||
		fail "$1: status does not name the command that resolves it"
}

# finish A B: stop both, in that order.
finish() { stop_node "$2"; stop_node "$1"; }

log "1. defaults, only the Primary wrote: resolved, B takes A's data"
apart a1 b1 1 0
wait_status a1 30 'p["b1"]["link"] == "Connected" and p["b1"]["out_of_sync_bytes"] == 0 and p["b1"]["peer_disk"] == "UpToDate"' ||
	fail "1: b1 did not take a1's data"
grep -h 'resolved automatically' "$(daemon_log a1)" "$(daemon_log b1)" | sed 's/^/    /'
grep -q 'resolved automatically' "$(daemon_log a1)" "$(daemon_log b1)" ||
	fail "1: the log does not say the split brain was resolved automatically"
finish a1 b1
cmp_backings a1 b1 || fail "1: a1 and b1 differ"
region b1 8 252 || fail "1: a1's write is not on b1"

log "2. defaults, only the Secondary wrote: StandAlone, its writes kept"
apart a2 b2 0 1
standalone a2 b2
finish a2 b2
region b2 16 273 || fail "2: b2's write was overwritten"

log "3. after-sb-1pri = disconnect, only the Primary wrote: StandAlone"
apart a3 b3 1 0 'after-sb-1pri = disconnect'
standalone a3 b3
finish a3 b3
region b3 8 0 || fail "3: a3's write reached b3"

log "4. after-sb-0pri = disconnect, only the Primary wrote: StandAlone"
apart a4 b4 1 0 'after-sb-0pri = disconnect'
standalone a4 b4
finish a4 b4
region b4 8 0 || fail "4: a4's write reached b4"
log "PASS"
