#!/bin/bash
# tests/repl-primary-powerloss.sh: a Primary that loses power loses the
# plain writes it acknowledged and had not flushed, but its Secondary has
# them: they must survive.  a (Primary) runs with the faultdisk shim's
# volatile write cache on its backing (a kill -9 drops what was not
# flushed, like a power loss); b is in sync.  A client writes 4 MiB
# through a without any flush, a is killed and restarted without the
# shim, and the cluster asks a to be Primary again (a refusal is fine:
# then b is promoted).  Once the two are in sync, the Primary must read
# the 4 MiB and the backings must be identical.  a used to be promoted
# and to resync its activity log to b, its older data over b's newer.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp qemu-io
requires_replagentd
requires_replagent

cached_pair a
ra_env a

# Plain writes only (no FLUSH).
unflushed_writes a 0x61
kill_node a
! faultdisk_log | grep -q "^cache-flush ${NODE_BACKING[a]}" ||
	hard_error "a flushed its writes: nothing to test"
log "a lost power with unflushed writes it had acknowledged"

recover_pair a b
primary=$RECOVERED_PRIMARY
qio_batch "${NODE_NBD_URI[$primary]}" "read -P 0x61 1M 4M" ||
	fail "the writes a acknowledged before its power loss are gone from $primary"
stop_node b
stop_node a
cmp_backings a b || fail "a and b differ after the recovery"
log "PASS"
