#!/bin/sh
# cli-errors.sh: the replagent command line and the daemon's control socket
# against a real replagentd with one local volume.
#
# Checks the command line's exit codes (64 for usage errors, 0 for a healthy
# status, 3 for a status error or no daemon, 1 for a refused promote), that
# status --json is valid JSON (one object with "state":"unknown" and the
# reason when there is no daemon), that the socket is mode 0600, and that
# clients sending garbage, too much, nothing, or hanging up midway leave the
# daemon answering.  Role changes and peer states need replicas: the
# multi-node tests cover those.  POSIX sh (not tests/functions.sh, which is
# bash); it starts the daemon itself and stops it by PID.  Exit 77 (skip)
# when the programs have not been built.

here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$here/..}"
: "${top_builddir:=$here/../build}"
daemon=${REPLAGENTD:-$top_builddir/agent/replagentd}
cli=$top_builddir/agent/replagent
python=${PYTHON:-/usr/bin/python3}

for prog in "$daemon" "$cli"; do
	if [ ! -x "$prog" ]; then
		echo "SKIP: $prog not built"
		exit 77
	fi
done
for prog in timeout "$python"; do
	if ! command -v "$prog" >/dev/null 2>&1; then
		echo "SKIP: $prog not found"
		exit 77
	fi
done

dir=$(mktemp -d "${TMPDIR:-/tmp}/cli-errors.XXXXXX") || exit 99
pid=
# shellcheck disable=SC2317  # called by the trap
cleanup() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# The control socket sits in a directory the daemon must create.
sock=$dir/run/control.sock
conf=$dir/replagent.conf
cat >"$conf" <<EOF
[global]
node = n1
nbd-socket = $dir/nbd.sock
control-socket = $sock
state-dir = $dir/state
pidfile = $dir/replagentd.pid
key-file = $dir/cluster.key

[volume vol0]
backing = $dir/vol0.img
size = 16M
EOF

failures=0
fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}
ok() {
	echo "ok: $*"
}

# cli ARGS...: runs replagent on our socket (at most 10 s), stdout and
# stderr to $dir/out and $dir/err; sets rc.
cli() {
	timeout 10 "$cli" -s "$sock" "$@" >"$dir/out" 2>"$dir/err" </dev/null
	rc=$?
}

# expect RC WHAT: the last cli call exited with RC.
expect() {
	if [ "$rc" -eq "$1" ]; then
		ok "$2: exit $rc"
		return 0
	fi
	fail "$2: exit status $rc, expected $1"
	sed 's/^/	stdout: /' "$dir/out"
	sed 's/^/	stderr: /' "$dir/err"
	return 1
}

# expect_text FILE TEXT WHAT: FILE (out or err) contains TEXT.
expect_text() {
	grep -F -q -- "$2" "$dir/$1" || fail "$3: $1 lacks \"$2\""
}

start_daemon() {
	n=0
	"$daemon" -f -c "$conf" >>"$dir/daemon.log" 2>&1 </dev/null &
	pid=$!
	while [ ! -S "$sock" ]; do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid"
			echo "replagentd exited with status $? during startup:"
			cat "$dir/daemon.log"
			pid=
			exit 1
		fi
		if [ "$n" -ge 100 ]; then
			echo "replagentd: no control socket after 10 s"
			cat "$dir/daemon.log"
			exit 1
		fi
		sleep 0.1
		n=$((n + 1))
	done
}

# ---- no daemon yet ------------------------------------------------------------

cli status
expect 3 "status without a daemon"
expect_text err "$sock" "status without a daemon"
cli promote vol0
expect 1 "promote without a daemon"
expect_text err "$sock" "promote without a daemon"
cli events
expect 3 "events without a daemon"
expect_text err "$sock" "events without a daemon"
# A monitor that parses stdout gets one JSON object, not nothing.
unknown_json() {
	if "$python" -c '
import json, sys
s = json.load(open(sys.argv[1]))
assert s["state"] == "unknown" and s["ok"] is False and sys.argv[2] in s["reason"], s
' "$dir/out" "$sock" 2>"$dir/json.err"; then
		ok "$1: one JSON object with the state unknown and the reason"
	else
		fail "$1: stdout is not the unknown-state object: $(cat "$dir/out") $(cat "$dir/json.err")"
	fi
}
cli status --json
expect 3 "status --json without a daemon"
unknown_json "status --json without a daemon"
cli status vol0 --json
expect 3 "status vol0 --json without a daemon"
unknown_json "status vol0 --json without a daemon"

# ---- usage errors (no daemon needed) ------------------------------------------

cli frobnicate
expect 64 "unknown command" && expect_text err "Usage:" "unknown command"
cli status --frobnicate
expect 64 "unknown flag" && expect_text err "Usage:" "unknown flag"
timeout 10 "$cli" --frobnicate status >"$dir/out" 2>"$dir/err"
rc=$?
expect 64 "unknown global flag"
cli promote
expect 64 "promote without a volume"
cli up vol0 extra
expect 64 "up with two volumes"
cli events --frobnicate
expect 64 "events with an unknown flag"
cli events vol0 vol1
expect 64 "events with two volumes"
cli
expect 64 "no command"
cli help
expect 0 "help" && expect_text out "Usage:" "help"

# ---- with the daemon ------------------------------------------------------------

start_daemon

mode=$(stat -c %a "$sock")
[ "$mode" = 600 ] || fail "control socket mode $mode, expected 600"

cli status
expect 0 "status"
expect_text out "node n1" "status"
expect_text out "vol0" "status"

cli status vol0
expect 0 "status vol0"

cli status --json
if expect 0 "status --json"; then
	if "$python" -m json.tool "$dir/out" >/dev/null 2>"$dir/json.err"; then
		ok "status --json is valid JSON"
	else
		fail "status --json is not valid JSON: $(cat "$dir/json.err")"
	fi
	"$python" -c 'import json, sys
a = json.load(open(sys.argv[1]))
assert a["ok"] is True and a["node"] == "n1", a
v = a["volumes"][0]
assert v["name"] == "vol0" and v["size"] == 16 << 20, v
assert v["role"] == "Primary" and v["disk"] == "UpToDate", v
assert isinstance(v["peers"], list) and v["io_frozen"] is False, v
assert a["cluster"] == {"mode": "static"}, a
assert v["tuning"]["resync_rate_max"] == 0, v' "$dir/out" ||
		fail "status --json: unexpected content"
fi

cli status nosuchvol
expect 3 "status of an unknown volume"
expect_text err "nosuchvol" "status of an unknown volume"

cli promote nosuchvol
expect 1 "promote of an unknown volume"
expect_text err "nosuchvol" "promote of an unknown volume"

cli demote nosuchvol
expect 1 "demote of an unknown volume"

# promote takes several volumes (a node's Primaries failing over in one
# process): each is tried in turn, and one refused makes it exit 1.
cli promote vol0 nosuchvol vol0
expect 1 "promote of a known and an unknown volume"
expect_text err "nosuchvol" "promote of a known and an unknown volume"
cli promote vol0 vol0
expect 0 "promote of two volumes"

cli version
expect 0 "version" && expect_text out "replagentd" "version"

cli events nosuchvol
expect 1 "events of an unknown volume"
expect_text err "nosuchvol" "events of an unknown volume"

# A stream: the snapshot first, then it runs until a signal (exit 0).
"$cli" -s "$sock" events --json >"$dir/ev.out" 2>"$dir/ev.err" </dev/null &
evpid=$!
n=0
while [ ! -s "$dir/ev.out" ] && [ "$n" -lt 50 ]; do
	sleep 0.1
	n=$((n + 1))
done
kill -TERM "$evpid"
wait "$evpid"
rc=$?
expect 0 "events --json after SIGTERM"
"$python" -c 'import json, sys
a = json.loads(open(sys.argv[1]).readline())
assert a["ok"] is True and a["kind"] == "snapshot" and a["volumes"][0]["name"] == "vol0", a' \
	"$dir/ev.out" || fail "events --json: unexpected snapshot: $(cat "$dir/ev.out")"

# ---- misbehaving clients ------------------------------------------------------------

# Each one is dropped or answered with an error; meanwhile the command line
# still gets through while idle clients hold connections open.
if "$python" - "$sock" "$cli" >"$dir/garbage.out" 2>&1 <<'EOF'
import json, os, socket, subprocess, sys, time

path, cli = sys.argv[1], sys.argv[2]

def talk(data, read=True, shut=True):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)         # blocking: waits if the backlog is full
    s.settimeout(10)
    out = b""
    try:                    # the daemon may hang up on us at any point
        s.sendall(data)
        if shut:
            s.shutdown(socket.SHUT_WR)
    except (BrokenPipeError, ConnectionResetError):
        pass
    try:
        while read:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except ConnectionResetError:
        pass
    s.close()
    return out

def expect_error(data, what):
    out = talk(data)
    line = out.split(b"\n")[0]
    try:
        a = json.loads(line)
    except ValueError:
        sys.exit("%s: answer is no JSON: %r" % (what, out[:200]))
    if a.get("ok") is not False or not a.get("error"):
        sys.exit("%s: expected an error, got %r" % (what, line))

expect_error(b"frobnicate\n", "unknown command")
expect_error(b"status vol0 extra\n", "too many arguments")
expect_error(b"promote\n", "too few arguments")
expect_error(b"promote nosuchvol\n", "unknown volume")
expect_error(b"promote vol0 --frobnicate\n", "unknown option")
expect_error(b"\n", "empty line")
expect_error(b"sta\x00tus\n", "NUL byte")
expect_error(b"\x01\x02\xff\xfe\n", "binary junk")
expect_error(b"x" * 5000, "no newline within 4096 bytes")
talk(os.urandom(10000))
talk(os.urandom(3000), read=False)
talk(b"stat", read=False)
talk(b"", read=False)
for _ in range(20):
    talk(os.urandom(100), read=False, shut=False)

def sync():
    """Waits until the daemon has seen the clients above hang up: once a
    new client gets an answer, it has."""
    for _ in range(50):
        if b'"ok":true' in talk(b"version\n"):
            return
        time.sleep(0.1)
    sys.exit("the daemon does not answer after the garbage")

# The 33rd concurrent client is told to come back later.
sync()
idle = [socket.socket(socket.AF_UNIX) for _ in range(32)]
for s in idle:
    s.connect(path)
out = talk(b"version\n")
if b"too many" not in out:
    sys.exit("33rd client: expected \"too many\", got %r" % out)
for s in idle:
    s.close()
sync()

# A few idle clients and one that does not read do not stop the CLI.
idle = []
for _ in range(8):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    idle.append(s)
silent = socket.socket(socket.AF_UNIX)
silent.connect(path)
silent.sendall(b"status\n")         # and never reads the answer
t = time.time()
r = subprocess.run([cli, "-s", path, "status"], capture_output=True, timeout=10)
if r.returncode != 0 or time.time() - t > 4:
    sys.exit("status with idle clients: exit %d after %.1fs: %r"
             % (r.returncode, time.time() - t, r.stderr))
for s in idle + [silent]:
    s.close()
EOF
then
	ok "misbehaving clients"
else
	fail "misbehaving clients: $(cat "$dir/garbage.out")"
fi
kill -0 "$pid" 2>/dev/null || fail "replagentd died on misbehaving clients"

cli status
expect 0 "status after misbehaving clients"
expect_text out "vol0" "status after misbehaving clients"

# ---- stop ---------------------------------------------------------------------------

kill "$pid"
wait "$pid"
rc=$?
pid=
[ "$rc" -eq 0 ] || fail "replagentd exit status $rc after SIGTERM"
[ -e "$sock" ] && fail "control socket left behind after SIGTERM"

cli status
expect 3 "status after the daemon stopped"
cli status --json
expect 3 "status --json after the daemon stopped"
unknown_json "status --json after the daemon stopped"

if [ "$failures" -ne 0 ]; then
	echo "$failures failure(s); daemon log:"
	cat "$dir/daemon.log"
	exit 1
fi
echo "all ok"
exit 0
