#!/bin/bash
# tests/repl-link-security.sh: link-security (aead by default, or none)
# must be the same on both ends of a replica link.  q has none and p the
# default: each must refuse the other and say why in its log (the setting
# of both), neither volume may change, and q must warn at start that its
# links are unprotected.  With none on both, they connect and replicate.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp qemu-io
requires_replagentd
requires_replagent

log "==== p: aead (default), q: none"
cluster_config -t 3 p q
NODE_GLOBAL_EXTRA='link-security = none' write_node_config q "${NODE_CONF[q]}" \
	"$CLUSTER_KEY" "$CLUSTER_VOL" "$CLUSTER_SIZE" "${NODE_BACKING[q]}"
start_node p
start_node q
wait_log q 5 'link-security = none: replica links are' ||
	fail "q does not warn at start that its links are unprotected"
ERE='link-security = (none|aead), this node (aead|none)'
wait_log p 20 "$ERE" || fail "p does not say that q's link-security differs"
wait_log q 20 "$ERE" || fail "q does not say that p's link-security differs"
log "p: $(grep -h -E "$ERE" "$(daemon_log p)" | head -n 1 | sed 's/^.*\] //')"
log "q: $(grep -h -E "$ERE" "$(daemon_log q)" | head -n 1 | sed 's/^.*\] //')"
wait_status p 5 'p["q"]["link"] != "Connected"' || fail "p shows q connected"
! grep -q 'peer p authenticated' "$(daemon_log q)" || fail "q took p as authenticated"
! grep -q 'peer q authenticated' "$(daemon_log p)" || fail "p took q as authenticated"
stop_node q
stop_node p

log "==== none on both"
rm -rf "${NODE_DIR[p]}" "${NODE_DIR[q]}"
cluster_config -t 3 p q
for n in p q; do
	NODE_GLOBAL_EXTRA='link-security = none' write_node_config "$n" "${NODE_CONF[$n]}" \
		"$CLUSTER_KEY" "$CLUSTER_VOL" "$CLUSTER_SIZE" "${NODE_BACKING[$n]}"
done
start_in_sync p q
qio "${NODE_NBD_URI[p]}" "write -P 0x5a 0 1M" >/dev/null || fail "write through p failed"
wait_status p 10 'p["q"]["link"] == "Connected" and p["q"]["out_of_sync_bytes"] == 0' ||
	fail "q is not in sync"
stop_node q
stop_node p
cmp_backings p q || fail "p and q differ"
log "PASS"
