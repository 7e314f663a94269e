#!/bin/bash
# tests/cluster-replagent-crypto.sh: replagentd in cluster mode warns at
# start when corosync runs without encryption (totem crypto_cipher /
# crypto_hash read from cmap), and does not once corosync runs with knet's
# aes256/sha256 and an authkey (the harness's default).  One node: corosync
# without crypto, then the node rebooted with crypto.
# shellcheck source=SCRIPTDIR/cluster-replagent-lib.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/cluster-replagent-lib.sh" || exit 99

rc_requires
requires corosync-keygen

WARN='corosync traffic is neither encrypted nor authenticated'
CLUSTER_CRYPTO=off
rc_setup 1
out=${CL_DIR[1]}/log/replagentd.out
[ "$(cluster_exec 1 corosync-cmapctl -g totem.crypto_cipher 2>/dev/null | sed 's/.* = //')" = none ] ||
	fail "corosync does not run with crypto_cipher none"
for _ in $(seq 1 50); do
	grep -q "$WARN" "$out" && break
	sleep 0.1
done
grep -q "$WARN" "$out" || fail "no warning with corosync crypto off (see $out)"
log "crypto off: $(grep -o "$WARN" "$out" | head -n 1)"

rc_stop 1
cluster_kill_node 1
# shellcheck disable=SC2034 # read by _cluster_corosync_conf (cluster.sh)
CLUSTER_CRYPTO=on
corosync-keygen -k "$TESTDIR/corosync-authkey" >/dev/null 2>&1 || hard_error "corosync-keygen"
_cluster_corosync_conf >"${CL_DIR[1]}/etc/corosync/corosync.conf" || hard_error "corosync.conf"
install -m 0400 "$TESTDIR/corosync-authkey" "${CL_DIR[1]}/etc/corosync/authkey" ||
	hard_error "authkey"
rc_start_node 1
[ "$(cluster_exec 1 corosync-cmapctl -g totem.crypto_cipher 2>/dev/null | sed 's/.* = //')" = aes256 ] ||
	fail "corosync does not run with crypto_cipher aes256"
for _ in $(seq 1 50); do
	[ "$(grep -c 'joined corosync group' "$out")" -ge 2 ] && break
	sleep 0.1
done
[ "$(grep -c 'joined corosync group' "$out")" = 2 ] || fail "replagentd did not join again"
[ "$(grep -c "corosync traffic is" "$out")" = 1 ] ||
	fail "a warning with corosync crypto on: $(grep "corosync traffic is" "$out" | tail -n 1)"
log "crypto on: no warning"
rc_stop 1
log "PASS"
