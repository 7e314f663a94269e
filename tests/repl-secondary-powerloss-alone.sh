#!/bin/bash
# tests/repl-secondary-powerloss-alone.sh: a Secondary that lost power may lack
# writes it acknowledged; a Primary whose daemon alone crashed holds them
# all.  a (Primary) and b; b runs under the faultdisk shim's volatile write
# cache (a kill -9 drops what it had not flushed, and its boot id changes,
# as after a power loss).  Plain writes go through a; then b loses power
# and a's daemon is killed (its host, and so its page cache, live on).
#  - b comes back first, alone: it must refuse to be promoted without
#    --force, as a may hold writes it lost (it was promoted and served
#    zeroes: simulator seed 3435);
#  - a comes back: its boot id is unchanged, so it knows it lost nothing,
#    and is promoted without --force (it used to ask for --force after any
#    crash as Primary); b resyncs from it, fully, and both hold the writes.
# Status shows "power_lost" on b until its resync, never on a.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout cmp qemu-io
requires_replagentd
requires_replagent

cached_pair b

# Plain writes only (no FLUSH): b acknowledges them from its cache.
unflushed_writes b 0x62
kill_node b
kill_node a
log "b lost power holding the writes in its cache; a's daemon was killed"

start_node b
wait_status b 30 'v["role"] == "Secondary"' || fail "b did not come back"
if out=$(ra_cli b promote "$CLUSTER_VOL" 2>&1); then
	fail "b, which lost power, was promoted while a (away) holds writes it lost"
fi
log "b refused: $out"
grep -q "a holds" <<<"$out" || fail "b's refusal does not name a: $out"
wait_log b 1 "host restarted since" || fail "b's log does not say that it lost power"
wait_status b 5 'v.get("power_lost") is True' || fail "b's status does not say that it lost power"

start_node a
wait_status a 30 'v["role"] == "Secondary"' || fail "a did not come back"
promote a
wait_log a 1 "only the daemon stopped" || fail "a's log does not say that only its daemon crashed"
wait_status a 5 'v.get("power_lost") is None' || fail "a's status says that it lost power"
qio_batch "${NODE_NBD_URI[a]}" "read -P 0x62 1M 4M" ||
	fail "a lost writes it acknowledged (only its daemon crashed)"
wait_status a 60 'p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0 and p["b"]["peer_disk"] == "UpToDate"' ||
	fail "b did not get in sync with a"
wait_status b 10 'v["disk"] == "UpToDate" and v.get("power_lost") is None' ||
	fail "b is still marked as having lost power after its resync"
stop_node b
stop_node a
cmp_backings a b || fail "a and b differ after the recovery"
log "PASS"
