#!/bin/bash
# tests/repl-link-names.sh: a listener on the wire of a replica link must
# learn neither node's name nor the volume's.  alphanode connects to
# bravonode through tests/mitm (relaying only), which records every byte of
# both directions; with link-security = aead (the default) none of the
# three names may appear anywhere in the recording, with none not in the
# handshake (after it the user accepted clear frames: there the volume name
# must show up, which also shows that the search finds a name when it is
# there).  Since names no longer travel in clear, two refusals that
# used to read them must still say why: a relay of alphanode's connection
# back to alphanode itself, and a node of the previous release (wire
# version 2, names in HELLO; tests/replwire.py v2hello).
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout qemu-io
requires_replagentd
requires_replagent
MITM=${MITM:-$top_builddir/tests/mitm}
[ -x "$MITM" ] || hard_error "$MITM not built"

A=alphanode
B=bravonode
VOL=charlievol

# leaks FILE: the names found in FILE, one per line.
leaks() {
	local s
	for s in "$A" "$B" "$VOL"; do
		! grep -a -q -F "$s" "$1" || echo "$s"
	done
}

run() {
	local security=$1 real mport pid cap n extra=
	log "==== link-security = $security"
	cluster_config -v "$VOL" -t 3 "$A" "$B"
	# A (the initiator: its name sorts first) reaches B through the relay.
	real=${NODE_ADDR[$B]}
	mport=$(free_port)
	[ "$security" = aead ] || extra='link-security = none'
	for n in "$A" "$B"; do
		if [ "$n" = "$A" ]; then NODE_ADDR[$B]=127.0.0.1:$mport; fi
		NODE_GLOBAL_EXTRA=$extra write_node_config "$n" "${NODE_CONF[$n]}" \
			"$CLUSTER_KEY" "$VOL" "$CLUSTER_SIZE" "${NODE_BACKING[$n]}"
		NODE_ADDR[$B]=$real
	done
	cap=$TESTDIR/capture-$security
	"$MITM" "$mport" 127.0.0.1 "${real##*:}" none 0 "$cap" >"$TESTDIR/mitm-$security.log" 2>&1 &
	pid=$!
	track_pid "$pid"
	start_in_sync "$A" "$B"
	qio "${NODE_NBD_URI[$A]}" "write -P 0x5a 0 1M" >/dev/null || fail "write through $A failed"
	wait_status "$A" 20 "p[\"$B\"][\"link\"] == \"Connected\" and p[\"$B\"][\"out_of_sync_bytes\"] == 0" ||
		fail "$B is not in sync"
	stop_node "$B"
	stop_node "$A"
	stop_pid "$pid"
	untrack_pid "$pid"
	[ -s "$cap.handshake" ] || fail "the relay recorded no handshake"
	log "recorded: $(wc -c <"$cap.all") bytes, handshake $(wc -c <"$cap.handshake") bytes"
	n=$(leaks "$cap.handshake" | tr '\n' ' ')
	[ -z "$n" ] || fail "$security: the handshake shows a listener these names: $n"
	if [ "$security" = aead ]; then
		n=$(leaks "$cap.all" | tr '\n' ' ')
		[ -z "$n" ] || fail "aead: the sealed link shows a listener these names: $n"
	else
		grep -a -q -F "$VOL" "$cap.all" ||
			fail "none: the volume name is not in the clear frames (is the search blind?)"
	fi
	rm -rf "${NODE_DIR[$A]}" "${NODE_DIR[$B]}"
}

run aead
run none

log "==== a relay back to the node itself"
cluster_config -v "$VOL" -t 3 "$A" "$B"
mport=$(free_port)
real=${NODE_ADDR[$B]}
NODE_ADDR[$B]=127.0.0.1:$mport
write_node_config "$A" "${NODE_CONF[$A]}" "$CLUSTER_KEY" "$VOL" "$CLUSTER_SIZE" \
	"${NODE_BACKING[$A]}"
NODE_ADDR[$B]=$real
"$MITM" "$mport" 127.0.0.1 "${NODE_ADDR[$A]##*:}" none 0 >"$TESTDIR/mitm-self.log" 2>&1 &
pid=$!
track_pid "$pid"
start_node "$A"
SELF_ERE='the peer is this node itself'
wait_log "$A" 20 "$SELF_ERE" || fail "$A does not say that its link came back to itself"
log "$A: $(grep -h -E "$SELF_ERE" "$(daemon_log "$A")" | head -n 1 | sed 's/^.*\] //')"
! grep -q "peer $A authenticated" "$(daemon_log "$A")" || fail "$A took itself as its peer"
stop_node "$A"
stop_pid "$pid"
untrack_pid "$pid"
rm -rf "${NODE_DIR[$A]}" "${NODE_DIR[$B]}"

log "==== a node of the previous release (wire version 2)"
cluster_config -v "$VOL" -t 3 "$A" "$B"
start_node "$B"
"$PYTHON" "$TESTS_SRCDIR/replwire.py" --wait 15 "${NODE_ADDR[$B]}" v2hello ||
	fail "$B did not close a version 2 connection"
wait_log "$B" 10 'another protocol version' ||
	fail "$B does not say that the peer speaks another protocol version"
log "$B: $(grep -h 'another protocol version' "$(daemon_log "$B")" | head -n 1 | sed 's/^.*\] //')"
stop_node "$B"
log "PASS"
