#!/bin/bash
# tests/repl-events.sh: "replagent events" in static mode, two replicas on
# 127.0.0.1.  A --json and a text subscriber on node a, a --json one for
# vol0 on node b: promote and demote on a show as a's role changes and as
# b's view of its peer; stopping b (SIGTERM) and starting it again shows
# a's link to b going down and up, and b's subscriber ends with exit 1
# (the daemon went away).  A subscriber that never reads is dropped (a log
# line) while a loop of promotions floods it, and status answers stay fast
# throughout; the subscriber that reads still gets every event.  SIGINT
# and SIGTERM end the command with 0; an unknown volume is exit 1, no
# daemon exit 3.  Every event line is one JSON object with a time, a kind,
# its changes and the volume's state as status shows it.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout
requires_replagentd
requires_replagent

# ev_start NODE OUT ARGS...: "replagent events ARGS" against NODE in the
# background (events_bg); EV_PID is its PID.
ev_start() {
	local n=$1 out=$2
	shift 2
	events_bg "$out" "$REPLAGENT" -s "${NODE_CTL[$n]}" events "$@"
}

ev_wait() {
	events_match "$1" "$2" "$3" ||
		fail "$(basename "$1"): no event with $3 within $2 s; got: $(tail -n 5 "$1")"
}

cluster_config -t 5 a b
start_node a
start_node b
for n in a b; do
	m=$([ "$n" = a ] && echo b || echo a)
	wait_status "$n" 30 "p[\"$m\"][\"link\"] == \"Connected\" and v[\"disk\"] == \"UpToDate\"" ||
		fail "$n: not Connected to $m"
done

ev_start a "$TESTDIR/a.json" --json
A_JSON=$EV_PID
ev_start a "$TESTDIR/a.txt"
A_TXT=$EV_PID
ev_start b "$TESTDIR/b.json" "$CLUSTER_VOL" --json
B_JSON=$EV_PID
"$PYTHON" - "$TESTDIR/a.json" <<'PY' || fail "a's snapshot line is not what it should be"
import json, sys
s = json.loads(open(sys.argv[1]).readline())
assert s["ok"] is True and s["kind"] == "snapshot" and s["node"] == "a", s
assert s["time"].endswith("Z") and s["time_ms"] > 0, s
v = s["volumes"][0]
assert v["name"] == "vol0" and v["role"] == "Secondary" and v["peers"][0]["node"] == "b", v
assert s["cluster"] == {"mode": "static"}, s
PY
grep -q "vol0 Secondary UpToDate; peer b Connected Secondary UpToDate" "$TESTDIR/a.txt" ||
	fail "a's text snapshot: $(cat "$TESTDIR/a.txt")"

# ---- roles -------------------------------------------------------------------
promote a
ev_wait "$TESTDIR/a.json" 5 '("role", None, "Secondary", "Primary") in c and e["state"]["role"] == "Primary"'
ev_wait "$TESTDIR/b.json" 5 '("peer_role", "a", "Secondary", "Primary") in c'
ra_cli a demote "$CLUSTER_VOL" || fail "demote on a refused"
ev_wait "$TESTDIR/a.json" 5 '("role", None, "Primary", "Secondary") in c'
ev_wait "$TESTDIR/b.json" 5 '("peer_role", "a", "Primary", "Secondary") in c'
log "promote and demote seen on both nodes"

# ---- a link down and up ------------------------------------------------------------
stop_node b
ev_wait "$TESTDIR/a.json" 10 'e["kind"] == "volume" and any(x[0] == "link" and x[1] == "b" and x[2] == "Connected" for x in c)'
for ((i = 0; i < 50; i++)); do
	_alive "$B_JSON" || break
	sleep 0.1
done
_alive "$B_JSON" && fail "b's events command still runs after b's daemon stopped"
wait "$B_JSON"
st=$?
untrack_pid "$B_JSON"
[ "$st" = 1 ] || fail "events on b: exit $st after its daemon stopped, expected 1"
grep -q "closed the event stream" "$TESTDIR/b.json.err" ||
	fail "events on b does not say why it ended: $(cat "$TESTDIR/b.json.err")"
start_node b
ev_wait "$TESTDIR/a.json" 30 '("link", "b", "Connecting", "Connected") in c or any(x[0] == "link" and x[1] == "b" and x[3] == "Connected" for x in c)'
log "a saw its link to b go down and come back"

# ---- a subscriber that never reads ------------------------------------------------------
wait_status a 30 'p["b"]["link"] == "Connected"' || fail "a and b did not reconnect"
if ! "$PYTHON" - "${NODE_CTL[a]}" "$CLUSTER_VOL" "$(daemon_log a)" >"$TESTDIR/flood.out" 2>&1 <<'PY'; then
import json, socket, sys, time
path, vol, logf = sys.argv[1], sys.argv[2], sys.argv[3]

def ask(req, timeout=5):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(path)
    s.sendall(req.encode() + b"\n")
    out = b""
    while not out.endswith(b"\n"):
        b = s.recv(65536)
        if not b:
            break
        out += b
    s.close()
    return json.loads(out)

stuck = socket.socket(socket.AF_UNIX)
stuck.connect(path)
stuck.sendall(b"events\n")          # and never reads
worst = 0.0
t0 = time.time()
dropped = False
rounds = 0
while time.time() - t0 < 60:
    for req in ("promote " + vol, "demote " + vol):
        a = ask(req)
        assert a["ok"], (req, a)
    rounds += 1
    if rounds % 10 == 0:
        t = time.time()
        a = ask("status")
        worst = max(worst, time.time() - t)
        assert a["ok"], a
        if "does not read" in open(logf, errors="replace").read():
            dropped = True
            break
print("%d promote/demote rounds in %.1f s; slowest status %.3f s" % (rounds, time.time() - t0, worst))
if not dropped:
    sys.exit("the subscriber that does not read was not dropped")
if worst > 1.0:
    sys.exit("a status answer took %.3f s while a subscriber did not read" % worst)
# What it had not read is there, then the end: the daemon closed it.
stuck.settimeout(5)
n = 0
while True:
    b = stuck.recv(1 << 20)
    if not b:
        break
    n += len(b)
print("the stuck subscriber had %d bytes waiting, then end of stream" % n)
PY
	cat "$TESTDIR/flood.out" >&2
	fail "the flood with a stuck subscriber failed"
fi
cat "$TESTDIR/flood.out"
grep "does not read" "$(daemon_log a)" | tail -n 1
wait_status a 10 'v["role"] == "Secondary"' || fail "a is not Secondary after the flood"
_alive "$A_JSON" || fail "the --json subscriber on a was dropped too: $(cat "$TESTDIR/a.json.err")"
_alive "$A_TXT" || fail "the text subscriber on a was dropped too: $(cat "$TESTDIR/a.txt.err")"
ra_cli a status >/dev/null || fail "status on a after the flood: exit $?"
# The one that read got every change: as many role changes as promotions
# and demotions (the flood's plus the two of the start), in order.
sleep 1
"$PYTHON" - "$TESTDIR/a.json" "$TESTDIR/flood.out" <<'PY' || fail "a's --json subscriber missed events"
import json, re, sys
rounds = int(re.search(r"(\d+) promote/demote rounds", open(sys.argv[2]).read()).group(1))
roles = []
for line in open(sys.argv[1]):
    e = json.loads(line)
    assert ("kind" in e and "time_ms" in e), e
    if e["kind"] == "volume":
        assert e["volume"] == "vol0" and e["state"]["name"] == "vol0", e
        roles += [x["to"] for x in e["changes"] if x["field"] == "role"]
want = ["Primary", "Secondary"] * (rounds + 1)
assert roles == want, "got %d role changes, want %d" % (len(roles), len(want))
PY
n=$(grep -c "vol0 role Secondary -> Primary" "$TESTDIR/a.txt")
grep -q "vol0 peer b Connected -> " "$TESTDIR/a.txt" ||
	fail "a's text stream lacks the link change: $(head -n 20 "$TESTDIR/a.txt")"
log "a's text stream: $n promotions, e.g. $(grep -m 1 'role Secondary -> Primary' "$TESTDIR/a.txt")"

# ---- the end of the command -----------------------------------------------------------
kill -INT "$A_TXT"
wait "$A_TXT"
st=$?
untrack_pid "$A_TXT"
[ "$st" = 0 ] || fail "events: exit $st after SIGINT, expected 0"
kill -TERM "$A_JSON"
wait "$A_JSON"
st=$?
untrack_pid "$A_JSON"
[ "$st" = 0 ] || fail "events --json: exit $st after SIGTERM, expected 0"
timeout 10 "$REPLAGENT" -s "${NODE_CTL[a]}" events nosuchvol >/dev/null 2>"$TESTDIR/err"
st=$?
[ "$st" = 1 ] || fail "events nosuchvol: exit $st, expected 1"
grep -q nosuchvol "$TESTDIR/err" || fail "events nosuchvol: $(cat "$TESTDIR/err")"
timeout 10 "$REPLAGENT" -s "$TESTDIR/no.sock" events >/dev/null 2>&1
st=$?
[ "$st" = 3 ] || fail "events without a daemon: exit $st, expected 3"
for n in a b; do
	replagentd_alive "$n" || fail "node $n died"
done
stop_cluster
log "PASS"
