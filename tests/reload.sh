#!/bin/bash
# tests/reload.sh: SIGHUP rereads the configuration file (static mode, one
# daemon, local volumes).  A new resync-rate-max reaches the running volume
# (status --json "tuning"), a new [volume] section is served at once (NBD
# writes and reads on it, an events subscriber sees it added), a changed
# volume line is logged as needing a restart, by name, and a one-line
# summary is logged; a broken file is logged as FILE:LINE and changes
# nothing (the daemon keeps running with what it had); log-level applies.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires qemu-io timeout
requires_replagentd
requires_replagent
CLI=("$REPLAGENT" -s "$TESTDIR/control.sock")

# status_py EXPR: EXPR over "status --json" (s: the answer, v: volumes by
# name) is true.
status_py() {
	timeout 10 "${CLI[@]}" status --json | "$PYTHON" -c '
import json, sys
s = json.load(sys.stdin)
v = {x["name"]: x for x in s["volumes"]}
sys.exit(0 if eval(sys.argv[1]) else 1)' "$1"
}

# hup_and_wait: SIGHUP, then wait for the next summary (or error) line.
hup_and_wait() {
	local before n=0
	before=$(grep -c -E 'reload of |reload: .*running configuration stays' "$(daemon_log)")
	kill -HUP "$(replagentd_pid)"
	while [ "$(grep -c -E 'reload of |reload: .*running configuration stays' \
		"$(daemon_log)")" -le "$before" ]; do
		replagentd_alive || fail "replagentd died on SIGHUP"
		[ "$n" -ge 100 ] && fail "no reload line in the log 10 s after SIGHUP"
		sleep 0.1
		n=$((n + 1))
	done
	grep -E 'reload of |reload: ' "$(daemon_log)" | tail -n 1
}

write_config -s 16M
sed -i '/^\[global\]/a resync-rate-max = 10M' "$CONFIG"
start_replagentd "$CONFIG"
status_py 'v["vol0"]["tuning"]["resync_rate_max"] == 10 << 20' ||
	fail "vol0 does not start with resync-rate-max 10M"
# Subscribed (its snapshot printed) before the reload: vol1 must come as
# a change, not in the snapshot.
events_bg "$TESTDIR/ev.json" "${CLI[@]}" events --json
EV=$EV_PID

# ---- what applies, what is added, what needs a restart ------------------------------------
sed -i 's/^resync-rate-max = 10M$/resync-rate-max = 20M\nlog-level = debug/' "$CONFIG"
sed -i 's/^\(backing = .*vol0.img\)$/\1\nio-threads = 2/' "$CONFIG"
add_volume "$CONFIG" vol1 8M
line=$(hup_and_wait)
log "$line"
grep -q -F "applied log-level, resync-rate-max; added volume vol1; restart needed for [volume vol0] io-threads" <<<"$line" ||
	fail "unexpected reload summary: $line"
status_py 'v["vol0"]["tuning"]["resync_rate_max"] == 20 << 20' ||
	fail "vol0's resync-rate-max is not 20M after the reload"
status_py '"vol1" in v and v["vol1"]["size"] == 8 << 20 and v["vol1"]["tuning"]["resync_rate_max"] == 20 << 20' ||
	fail "vol1 is not served (8M, the new tuning) after the reload"
qio_batch "nbd+unix:///vol1?socket=$NBD_SOCK" "write -P 0x5a 0 64k
read -P 0x5a 0 64k" || fail "vol1 does not take I/O after the reload"
timeout 10 "${CLI[@]}" status >/dev/null || fail "status after the reload: exit $?"
for ((i = 0; i < 50; i++)); do
	grep -q '"volume":"vol1","changes":\[{"field":"present","from":false,"to":true}' \
		"$TESTDIR/ev.json" && break
	sleep 0.1
done
[ "$i" -lt 50 ] || fail "the events subscriber did not see vol1 added: $(cat "$TESTDIR/ev.json")"
# log-level = debug took effect: the daemon now logs debug lines.
timeout 10 "${CLI[@]}" status --json >/dev/null
timeout 5 "$PYTHON" -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"stat"); s.close()' \
	"$TESTDIR/control.sock"
sleep 0.5
grep -q "debug: control: client left without a whole request" "$(daemon_log)" ||
	fail "log-level = debug did not apply: no debug line after the reload"

# ---- a broken file changes nothing ----------------------------------------------------------
cp "$CONFIG" "$TESTDIR/good.conf"
sed -i 's/^resync-rate-max = 20M$/resync-rate-max = 30M/' "$CONFIG"
printf '\n[volume vol2]\nbacking = relative/path.img\n' >>"$CONFIG"
add_volume "$CONFIG" vol3 8M
bad=$(grep -n 'relative/path.img' "$CONFIG" | cut -d: -f1)
line=$(hup_and_wait)
log "$line"
grep -q -F "$CONFIG:$bad: " <<<"$line" || fail "the broken file is not named as $CONFIG:$bad: $line"
grep -q "running configuration stays" <<<"$line" || fail "unexpected error line: $line"
replagentd_alive || fail "replagentd died on a broken file"
status_py 'v["vol0"]["tuning"]["resync_rate_max"] == 20 << 20 and "vol2" not in v and "vol3" not in v' ||
	fail "a broken file changed something"

# ---- back, and a reload that changes nothing ---------------------------------------------------
cp "$TESTDIR/good.conf" "$CONFIG"
line=$(hup_and_wait)
grep -q -F "restart needed for [volume vol0] io-threads" <<<"$line" ||
	fail "unexpected summary for the good file again: $line"
sed -i '/^io-threads = 2$/d' "$CONFIG"
line=$(hup_and_wait)
grep -q -F "nothing changed" <<<"$line" || fail "unexpected summary for an unchanged file: $line"
_alive "$EV" || fail "the events subscriber went with the reloads"
stop_pid "$EV"
untrack_pid "$EV"
stop_replagentd || fail "replagentd exit status $REPLAGENTD_STATUS after SIGTERM"
log "PASS"
