#!/bin/bash
# tests/repl-link-dead.sh: an idle replication link still notices a dead
# peer in time now that its pings are rare (issue 16: every link pinged
# every second, 334 links at 200 volumes; now every 5 s, and a peer silent
# for 15 s is dropped).  Two nodes in namespaces of their own
# (make_netns_cluster), vol0 Primary on a, no I/O.  First b's bridge port
# goes down: only the sockets' keepalive (replication/sys.c: a peer silent
# for 3 s is dropped) can tell in time, and a must report b away within
# 9 s (the pings alone take 10 s at least: 15 s after the last one, which
# came at most 5 s before the cut).  The link comes back and reconnects.
# Then b's daemon is stopped (SIGSTOP): its kernel still answers keepalive
# probes, so only the pings can tell, and a must report b away within
# 30 s.  b continues and reconnects.  Skipped (77) without network
# namespaces.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires_replagentd
requires_replagent
make_netns_cluster a b

AWAY='p["b"]["link"] in ("Disconnected", "Connecting")'
BACK='p["b"]["link"] == "Connected" and p["b"]["out_of_sync_bytes"] == 0'
cluster_config -s 16M a b
start_node a
start_node b
wait_status a 30 "$BACK" || fail "a and b did not connect over the bridge"
promote a
sleep 2

t_cut=$(now_s)
link_down b
wait_status a 9 "$AWAY" || fail "a did not notice within 9 s that b is cut off (idle link)"
log "a reports b away $(time_add "$(now_s)" "-$t_cut") s after the cut"
link_up b
wait_status a 60 "$BACK" || fail "a and b did not reconnect after the cut"

pid=$(replagentd_pid b)
[ -n "$pid" ] || hard_error "no pid of b's daemon"
t_stop=$(now_s)
kill -STOP "$pid"
on_cleanup kill -CONT "$pid"
wait_status a 30 "$AWAY" || fail "a did not notice within 30 s that b's daemon hangs"
log "a reports b away $(time_add "$(now_s)" "-$t_stop") s after b's daemon stopped"
kill -CONT "$pid"
wait_status a 60 "$BACK" || fail "a and b did not reconnect after b continued"
log "PASS"
