#!/bin/bash
# tests/nbd-limits.sh: what the NBD server allows a client that has not
# attached, and who may open its socket.  One daemon at a time:
#   1. NBD_FLAG_SEND_DF only with structured replies (nbd_raw.py);
#   2. nbd-clients-max = 2: a third client's NBD_OPT_GO is refused with a
#      message that names the limit (nbd_raw.py and qemu-io), and the
#      daemon logs it; once one detaches, a client gets in again;
#   3. a client that stays in the option phase (or sends nothing) is
#      closed after the 10 s handshake timeout;
#   4. a client that sends NBD_OPT_LIST over and over and never reads is
#      no longer read from: it cannot push more than a few hundred KiB in,
#      and the daemon's RSS does not grow;
#   5. the socket: group kvm and mode 0660 by default; nbd-socket-group =
#      none gives 0600; another group gives 0660 with that group; a group
#      that does not exist stops the daemon (exit 78); without a kvm group
#      (a private /etc/group in a mount namespace) it is 0600 and the log
#      says why.  Never writable by others.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires qemu-io timeout stat
requires_root
requires_replagentd
[ -x "$PYTHON" ] || skip "requires $PYTHON"
RAW=$TESTS_SRCDIR/nbd_raw.py

# global_set KEY VALUE: KEY = VALUE in the [global] section of $CONFIG.
global_set() { sed -i "/^\[global\]/a $1 = $2" "$CONFIG" || hard_error "sed $CONFIG"; }

# raw_py CODE ARGS...: Python with nbd_raw's Conn, target t and export e.
raw_py() {
	local code=$1
	shift
	timeout 60 "$PYTHON" -c "
import sys, time, socket, struct
sys.path.insert(0, '$TESTS_SRCDIR')
from nbd_raw import *
t = ('unix', '$NBD_SOCK')
e = '$VOL'
$code" "$@"
}

write_config -s 16M
start_replagentd "$CONFIG"

# ---- 1. SEND_DF --------------------------------------------------------
log "==== 1. NBD_FLAG_SEND_DF"
timeout 30 "$PYTHON" "$RAW" --unix "$NBD_SOCK" --export "$VOL" df_only_with_structured ||
	later_fail "NBD_FLAG_SEND_DF advertised without structured replies"

# ---- 3. handshake timeout ------------------------------------------------
log "==== 3. handshake timeout"
raw_py '
def idle(flags):
    c = Conn(t)
    c.greeting()
    if flags:
        c.client_flags()
    t0 = time.monotonic()
    try:
        c.expect_close(timeout=16, what="close an idle handshake")
    except Fail as x:
        print("FAIL: %s (client flags sent: %s)" % (x, flags))
        return False
    print("idle handshake closed after %.1f s (client flags sent: %s)"
          % (time.monotonic() - t0, flags))
    return True
sys.exit(0 if idle(True) and idle(False) else 1)' ||
	later_fail "an idle client in the handshake was not closed in time"
grep -q 'within the handshake timeout' "$(daemon_log)" ||
	later_fail "the daemon did not log the handshake timeout"

# ---- 4. back-pressure ----------------------------------------------------
log "==== 4. a client that never reads its option replies"
pid=$(replagentd_pid)
rss_peak_reset "$pid"
base=$(mem_kib "$pid" VmRSS)
raw_py '
c = Conn(t)
c.greeting()
c.client_flags()
c.s.setblocking(False)
burst = struct.pack(">QII", IHAVEOPT, OPT_LIST, 0) * 4096
sent, last = 0, time.monotonic()
while sent < (16 << 20) and time.monotonic() - last < 2:
    try:
        sent += c.s.send(burst)
        last = time.monotonic()
    except BlockingIOError:
        time.sleep(0.01)
print("the daemon took %d KiB of NBD_OPT_LIST from a client that does not read"
      % (sent >> 10))
c.close()
sys.exit(0 if sent < (4 << 20) else 1)' ||
	later_fail "the daemon keeps reading options from a client that does not read"
peak=$(mem_kib "$pid" VmHWM)
log "RSS $base KiB before, peak $peak KiB"
[ $((peak - base)) -lt $((16 << 10)) ] ||
	later_fail "RSS grew by $(((peak - base) >> 10)) MiB for one client that does not read"
stop_replagentd || fail "exit status $REPLAGENTD_STATUS after SIGTERM"

# ---- 2. client cap -----------------------------------------------------
log "==== 2. nbd-clients-max = 2"
write_config -s 16M
global_set nbd-clients-max 2
if ! try_start_replagentd_as replagentd "$CONFIG"; then
	later_fail "the daemon does not take nbd-clients-max"
else
	raw_py '
held = [Conn(t), Conn(t)]
for c in held:
    c.handshake(e)
c = Conn(t)
c.greeting()
c.client_flags()
rtype, msg = c.go(e)
print("third client: reply %#x: %s" % (rtype, msg.decode(errors="replace")))
ok = rtype == REP_ERR_POLICY and b"nbd-clients-max" in msg
c.close()
held[0].close()
time.sleep(0.5)
c = Conn(t)
c.handshake(e)
print("after one detached, a client attached again")
sys.exit(0 if ok else 1)' || later_fail "a third client was not refused clearly"
	# qemu-io says why it cannot attach while two clients are attached.
	raw_py '
held = [Conn(t), Conn(t)]
for c in held:
    c.handshake(e)
sys.stdout.write("held\n")
sys.stdout.flush()
time.sleep(8)' >"$TESTDIR/held.out" 2>&1 &
	holder=$!
	track_pid "$holder"
	for _ in $(seq 1 50); do
		grep -q held "$TESTDIR/held.out" && break
		sleep 0.1
	done
	out=$(timeout 20 qemu-io -f raw -c "read 0 4k" "$NBD_URI" 2>&1)
	log "qemu-io with 2 clients attached: $out"
	grep -q 'too many NBD clients' <<<"$out" ||
		later_fail "qemu-io does not say why it was refused"
	stop_pid "$holder"
	untrack_pid "$holder"
	grep -q 'nbd-clients-max' "$(daemon_log)" || later_fail "the daemon did not log the refusal"
	timeout 20 qemu-io -f raw -c "read 0 4k" "$NBD_URI" >/dev/null ||
		later_fail "qemu-io fails with no other client attached"
	stop_replagentd || fail "exit status $REPLAGENTD_STATUS after SIGTERM"
fi

# ---- 5. socket mode and group -------------------------------------------
log "==== 5. the socket's mode and group"
# sock_is MODE GROUP WHAT: the socket has that mode and group.
sock_is() {
	local got
	got=$(stat -c '%a %G' "$NBD_SOCK")
	log "$3: socket $got"
	[ "$got" = "$1 $2" ] || later_fail "$3: socket is $got, expected $1 $2"
}
# with_group VALUE: a fresh config with nbd-socket-group = VALUE (none: unset).
with_group() {
	write_config -s 16M
	[ "$1" = unset ] || global_set nbd-socket-group "$1"
}

with_group unset
start_replagentd "$CONFIG"
if getent group kvm >/dev/null; then
	sock_is 660 kvm "default, with a kvm group"
else
	sock_is 600 root "default, without a kvm group"
fi
stop_replagentd || fail "exit status $REPLAGENTD_STATUS after SIGTERM"

with_group none
if try_start_replagentd_as replagentd "$CONFIG"; then
	sock_is 600 root "nbd-socket-group = none"
	grep -q 'mode 0600' "$(daemon_log)" || later_fail "the log does not say the socket is 0600"
	stop_replagentd || fail "exit status $REPLAGENTD_STATUS after SIGTERM"
else
	later_fail "the daemon does not take nbd-socket-group = none"
fi

other=$(getent group | awk -F: '$1 != "kvm" && $3 != 0 { print $1; exit }')
with_group "$other"
if try_start_replagentd_as replagentd "$CONFIG"; then
	sock_is 660 "$other" "nbd-socket-group = $other"
	stop_replagentd || fail "exit status $REPLAGENTD_STATUS after SIGTERM"
else
	later_fail "the daemon does not take nbd-socket-group = $other"
fi

with_group no-such-group-$$
if try_start_replagentd_as replagentd "$CONFIG" 2>/dev/null; then
	later_fail "the daemon started with a group that does not exist"
	stop_replagentd
elif [ "$REPLAGENTD_STATUS" != 78 ]; then
	later_fail "a group that does not exist: exit $REPLAGENTD_STATUS, expected 78"
elif ! grep -q "there is no group \"no-such-group-$$\"" "$(daemon_log)"; then
	later_fail "a group that does not exist: the log does not say so"
else
	log "a group that does not exist: $(grep -h 'no-such-group' "$(daemon_log)" | tail -n 1)"
fi

if command -v unshare >/dev/null && unshare -m true 2>/dev/null; then
	grep -v '^kvm:' /etc/group >"$TESTDIR/group"
	with_group unset
	RA_EXEC_PREFIX=(unshare -m --propagation private sh -c
		'mount --bind "$0" /etc/group && exec "$@"' "$TESTDIR/group")
	try_start_replagentd_as replagentd "$CONFIG"
	st=$?
	RA_EXEC_PREFIX=()
	if [ "$st" = 0 ]; then
		sock_is 600 root "no kvm group"
		grep -q 'no group kvm' "$(daemon_log)" ||
			later_fail "the log does not say that there is no kvm group"
		stop_replagentd || fail "exit status $REPLAGENTD_STATUS after SIGTERM"
	else
		later_fail "the daemon did not start without a kvm group"
	fi
else
	log "no mount namespaces here: the case without a kvm group is not run"
fi

check_later_failures
log "PASS"
