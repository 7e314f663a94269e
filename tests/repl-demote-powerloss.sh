#!/bin/bash
# tests/repl-demote-powerloss.sh: a Primary that is demoted (Pacemaker
# moving the role: demote here, promote there) with plain writes it
# acknowledged and had not flushed, and that then loses power, must not
# come back in sync without them.  a (Primary) runs with the faultdisk
# shim's volatile write cache on its backing (a kill -9 drops what was not
# flushed, like a power loss); b is in sync.  A client writes 4 MiB
# through a without a FLUSH and goes (a killed QEMU flushes nothing), a is
# demoted and b promoted, then a loses power and comes back without the
# shim.  Once b sees a in sync, a (promoted in b's place) must read the
# 4 MiB and the backings must be identical.  As a Secondary, a kept no
# record of what it wrote as Primary and b had none either: a came back
# "in sync" without the writes.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp qemu-io
requires_replagentd
requires_replagent

cached_pair a
ra_env a

unflushed_writes a 0x61
ra_cli a demote "$CLUSTER_VOL" >/dev/null || fail "a does not demote"
promote b
kill_node a
log "a lost power after its demotion"

start_node a
wait_status b 60 'p["a"]["link"] == "Connected" and p["a"]["out_of_sync_bytes"] == 0 and p["a"]["peer_disk"] == "UpToDate"' ||
	fail "a did not come back in sync with b"
ra_cli b demote "$CLUSTER_VOL" >/dev/null || fail "b does not demote"
promote a
qio_batch "${NODE_NBD_URI[a]}" "read -P 0x61 1M 4M" ||
	fail "a, in sync again, lacks the writes it acknowledged before its demotion"
stop_node a
stop_node b
cmp_backings a b || fail "a and b differ"
log "PASS"
