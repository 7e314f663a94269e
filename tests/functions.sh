# shellcheck shell=bash
# Variables set here are used by the scripts that source this file:
# shellcheck disable=SC2034
# tests/functions.sh: helpers shared by the shell tests.  Source it first:
#
#   . "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
#
# Sourcing it creates $TESTDIR (mode 0755, under /tmp) and installs a trap
# (EXIT INT TERM) that undoes everything the test registered: it stops the
# processes this test started, by PID and newest first, waits for them, and
# removes $TESTDIR.  It never kills anything by name.
#
# Exit codes follow automake: 0 pass, 1 fail, 77 skip, 99 hard error.
#
# Layout of this file:
#   1. paths and basic reporting (requires, skip, fail, log)
#   2. cleanup stack and process tracking
#   3. replagentd: config files, start/stop, waiting for listeners
#   4. NBD client helpers (qemu-io, ports)
#   4b. disk faults: the faultdisk shim (tests/faultdisk.c)
#   5. several daemons (one per node)
#   6. libvirt: a private libvirtd in its own mount namespace, boot sector
#   7. replicated clusters: nodes, the CLI, network namespaces
#
# The scripts are bash (arrays, local, $RANDOM); they must pass
# "shellcheck -S warning" with and without -x.  Variables that this file sets
# for the tests are in capitals (TESTDIR, CONFIG, NBD_URI...), so shellcheck
# does not need to follow the "." to know they are assigned.

# ---- 1. paths and reporting -------------------------------------------------

TEST_NAME=$(basename "$0" .sh)

if [ -z "${top_srcdir:-}" ]; then
	top_srcdir=$(cd "$(dirname "$0")/.." && pwd) || exit 99
fi
if [ -z "${top_builddir:-}" ]; then
	# By hand: an in-tree build, else the customary VPATH build in ./build.
	if [ -x "$top_srcdir/agent/replagentd" ]; then
		top_builddir=$top_srcdir
	else
		top_builddir=$top_srcdir/build
	fi
fi
export top_srcdir top_builddir
# The tests' own directory (nbd_raw.py etc.).
TESTS_SRCDIR=$top_srcdir/tests

# REPLAGENTD may point at another binary (an installed one, a stand-in).
REPLAGENTD=${REPLAGENTD:-$top_builddir/agent/replagentd}
PYTHON=${PYTHON:-/usr/bin/python3}
# Seconds to wait for a daemon's listeners / for it to exit after SIGTERM.
# Sanitizer builds are slower; the harness may raise these.
RA_START_TIMEOUT=${RA_START_TIMEOUT:-10}
RA_STOP_TIMEOUT=${RA_STOP_TIMEOUT:-10}

log() { printf '%s: %s\n' "$TEST_NAME" "$*"; }
# later_fail MSG: a failure that does not stop the test (the other parts
# still run); check_later_failures at the end fails the test if there was one.
LATER_FAILURES=()
later_fail() {
	echo "$TEST_NAME: FAIL (continuing): $*" >&2
	LATER_FAILURES+=("$*")
}
check_later_failures() {
	[ ${#LATER_FAILURES[@]} = 0 ] || fail "$(printf '%s; ' "${LATER_FAILURES[@]}")"
}
skip() { printf '%s: SKIP: %s\n' "$TEST_NAME" "$*" >&2; exit 77; }
fail() { printf '%s: FAIL: %s\n' "$TEST_NAME" "$*" >&2; exit 1; }
hard_error() { printf '%s: ERROR: %s\n' "$TEST_NAME" "$*" >&2; exit 99; }

# requires CMD...: skip the test unless every command is available.
requires() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || skip "requires $c"
	done
}

# requires_root: skip unless running as root.
requires_root() {
	[ "$(id -u)" = 0 ] || skip "requires root"
}

# requires_replagentd: the daemon must have been built.
requires_replagentd() {
	[ -x "$REPLAGENTD" ] ||
		hard_error "$REPLAGENTD not found: build it first (make agent/replagentd)"
}

# ---- 2. cleanup stack -------------------------------------------------------

# Commands run by the trap, last registered first.  Each entry is a shell
# command line (built with printf %q, so arguments survive).
_cleanup_stack=()
_in_cleanup=

# on_cleanup CMD [ARGS...]: run CMD ARGS when the test ends, however it ends.
on_cleanup() {
	local q
	printf -v q '%q ' "$@"
	_cleanup_stack+=("$q")
}

# _cleanup_remove CMD [ARGS...]: forget an entry registered with on_cleanup.
_cleanup_remove() {
	local q i
	printf -v q '%q ' "$@"
	for i in "${!_cleanup_stack[@]}"; do
		[ "${_cleanup_stack[$i]}" = "$q" ] && unset '_cleanup_stack[i]'
	done
	_cleanup_stack=("${_cleanup_stack[@]}")
}

# _descendants PID: the children of PID, their children, and so on (all
# started by this test when PID was): a background loop's current command.
_descendants() {
	local c
	for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
		echo "$c"
		_descendants "$c"
	done
}

# _alive PID: PID runs (a zombie child of ours, not yet waited for, does not
# count although it still answers kill -0).
_alive() {
	kill -0 "$1" 2>/dev/null || return 1
	case $(ps -o stat= -p "$1" 2>/dev/null) in
	Z*) return 1 ;;
	esac
	return 0
}

# stop_pid PID [TIMEOUT]: SIGTERM PID and its descendants (a background
# subshell's current command), wait up to TIMEOUT seconds (default 5) for
# PID, then SIGKILL whatever is left of them.  Reaps PID if it is our child
# and returns its exit status (else 0 or 127).
stop_pid() {
	local pid=$1 t=${2:-5} n=0 st=0 desc
	kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return $?; }
	# Parent first, so that a loop does not start another command.
	desc=$(_descendants "$pid")
	kill -TERM "$pid" 2>/dev/null
	# shellcheck disable=SC2086 # a list of PIDs
	[ -n "$desc" ] && kill -TERM $desc 2>/dev/null
	while _alive "$pid" && [ "$n" -lt $((t * 10)) ]; do
		sleep 0.1
		n=$((n + 1))
	done
	if _alive "$pid"; then
		log "pid $pid did not stop within ${t}s, sending SIGKILL"
		desc=$(_descendants "$pid")
		kill -KILL "$pid" 2>/dev/null
		# shellcheck disable=SC2086
		[ -n "$desc" ] && kill -KILL $desc 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
	st=$?
	return "$st"
}

# track_pid PID: stop PID (see stop_pid) when the test ends.
track_pid() { on_cleanup stop_pid "$1"; }
untrack_pid() { _cleanup_remove stop_pid "$1"; }

_cleanup() {
	local st=$? i
	[ -n "$_in_cleanup" ] && return
	_in_cleanup=1
	# A second signal must not cut the cleanup short (every step in it is
	# bounded); a handler, not "ignore", so that children get the default.
	trap 'log "signal during cleanup: finishing it first"' INT TERM
	if [ "$st" != 0 ] && [ "$st" != 77 ]; then
		_show_daemon_logs
	fi
	for ((i = ${#_cleanup_stack[@]} - 1; i >= 0; i--)); do
		eval "${_cleanup_stack[$i]}" || true
	done
	declare -F _release_ports >/dev/null && _release_ports
	if [ -n "${TESTDIR:-}" ] && [ -d "$TESTDIR" ] && [ -z "${KEEP_TESTDIR:-}" ]; then
		rm -rf "$TESTDIR"
	elif [ -n "${TESTDIR:-}" ]; then
		log "kept $TESTDIR"
	fi
	exit "$st"
}

TESTDIR=$(mktemp -d /tmp/replagent-"$TEST_NAME".XXXXXX) || hard_error "mktemp failed"
# Readable by others: QEMU under libvirt runs as libvirt-qemu and must reach
# sockets and logs in here.
chmod 0755 "$TESTDIR"
trap _cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- 3. replagentd ---------------------------------------------------------

# Daemon instances by name (one per node in multi-node tests).
declare -A _ra_pid=() _ra_log=() _ra_conf=()
# Prefix for the daemon's command line, e.g. (ip netns exec NS) for a node
# in a network namespace; empty for the local node.
RA_EXEC_PREFIX=()
# Extra environment of an instance, by name: VAR=value lines (see ra_env).
declare -A _ra_env=()
# Status of the last stop_replagentd / wait_replagentd_exit.
REPLAGENTD_STATUS=

# cfg_get CONFIG KEY: first "KEY = value" of CONFIG (any section).
cfg_get() {
	sed -n "s/^[[:space:]]*$2[[:space:]]*=[[:space:]]*\\([^#]*[^#[:space:]]\\).*/\\1/p" "$1" |
		head -n 1
}

# write_config [-d DIR] [-v VOLUME] [-s SIZE] [-l HOST:PORT] [-o CONFIG]
# Writes a one-volume config (default $TESTDIR/replagent.conf, volume vol0 of
# 64M backed by DIR/VOLUME.img, everything else in DIR, default $TESTDIR)
# and sets CONFIG, NBD_SOCK, CONTROL_SOCK, STATE_DIR, VOL, BACKING, NBD_URI
# and, with -l, NBD_TCP_URI.  Add volumes with add_volume.
write_config() {
	local dir=$TESTDIR size=64M listen='' OPTIND=1 opt out=''
	VOL=vol0
	while getopts d:v:s:l:o: opt; do
		case $opt in
		d) dir=$OPTARG ;;
		v) VOL=$OPTARG ;;
		s) size=$OPTARG ;;
		l) listen=$OPTARG ;;
		o) out=$OPTARG ;;
		*) hard_error "write_config: bad option" ;;
		esac
	done
	mkdir -p "$dir" && chmod 0755 "$dir" || hard_error "mkdir $dir"
	CONFIG=${out:-$dir/replagent.conf}
	NBD_SOCK=$dir/nbd.sock
	CONTROL_SOCK=$dir/control.sock
	STATE_DIR=$dir/state
	BACKING=$dir/$VOL.img
	NBD_URI="nbd+unix:///$VOL?socket=$NBD_SOCK"
	NBD_TCP_URI=
	{
		echo "# written by $TEST_NAME"
		echo "[global]"
		echo "nbd-socket = $NBD_SOCK"
		[ -n "$listen" ] && echo "nbd-listen = $listen"
		echo "control-socket = $CONTROL_SOCK"
		echo "state-dir = $STATE_DIR"
		echo "pidfile = $dir/replagentd.pid"
	} >"$CONFIG" || hard_error "cannot write $CONFIG"
	if [ -n "$listen" ]; then
		NBD_TCP_URI="nbd://$listen/$VOL"
	fi
	add_volume "$CONFIG" "$VOL" "$size" "$BACKING"
}

# add_volume CONFIG NAME SIZE [BACKING]: append a [volume NAME] section
# (backing default: the config's directory/NAME.img).
add_volume() {
	local backing=${4:-$(dirname "$1")/$2.img}
	printf '\n[volume %s]\nbacking = %s\nsize = %s\n' "$2" "$backing" "$3" >>"$1" ||
		hard_error "cannot write $1"
}

# daemon_log [NAME]: the log file of an instance (default "replagentd").
daemon_log() { echo "${_ra_log[${1:-replagentd}]}"; }

# wait_log NAME TIMEOUT ERE: true once NAME's log has a line matching ERE
# (the daemon's output may reach the file a little after the event).
wait_log() {
	local n=0
	while ! grep -q -E -- "$3" "$(daemon_log "$1")" 2>/dev/null; do
		[ "$n" -ge $(($2 * 10)) ] && return 1
		sleep 0.1
		n=$((n + 1))
	done
}

_show_daemon_logs() {
	local n
	for n in "${!_ra_log[@]}"; do
		[ -s "${_ra_log[$n]}" ] || continue
		echo "---- last lines of ${_ra_log[$n]} ----" >&2
		tail -n 30 "${_ra_log[$n]}" >&2
		echo "----" >&2
	done
}

# ra_env NAME [VAR=VALUE...]: the instance NAME (start_replagentd_as NAME,
# start_node NAME) is started from now on with these variables added to its
# environment, replacing those of an earlier ra_env NAME; none: the plain
# environment again.  E.g. ra_env b LD_PRELOAD=... (see faultdisk_preload).
ra_env() {
	local name=$1
	shift
	if [ $# = 0 ]; then
		unset '_ra_env[$name]'
	else
		_ra_env[$name]=$(printf '%s\n' "$@")
	fi
}

# try_start_replagentd_as NAME CONFIG [ARGS...]: start replagentd -f -c
# CONFIG ARGS in the background (output appended to $TESTDIR/NAME.log),
# wait up to RA_START_TIMEOUT s for its NBD socket (and its TCP listener if
# the config has nbd-listen).  Sets _ra_pid[NAME] and REPLAGENTD_PID.
# Returns 0 when ready, 1 if the daemon died (log tail shown, status in
# REPLAGENTD_STATUS), 2 on timeout (the daemon is left running).
try_start_replagentd_as() {
	local name=$1 conf=$2 sock listen pid n=0 logf stale
	local -a envv=()
	shift 2
	requires_replagentd
	if [ -n "${_ra_env[$name]:-}" ]; then
		mapfile -t envv <<<"${_ra_env[$name]}"
		envv=(env "${envv[@]}")
	fi
	logf=$TESTDIR/$name.log
	sock=$(cfg_get "$conf" nbd-socket)
	listen=$(cfg_get "$conf" nbd-listen)
	# A socket left by a killed daemon is stale until the new one replaces
	# it: wait for a new inode or ctime (inode numbers get reused).
	stale=$(stat -c "%i %z" "$sock" 2>/dev/null)
	echo "==== $(date '+%T') starting: ${envv[*]:+${envv[*]} }$REPLAGENTD -f -c $conf $*" >>"$logf"
	"${RA_EXEC_PREFIX[@]}" "${envv[@]}" "$REPLAGENTD" -f -c "$conf" "$@" >>"$logf" 2>&1 &
	pid=$!
	_ra_pid[$name]=$pid
	_ra_log[$name]=$logf
	_ra_conf[$name]=$conf
	REPLAGENTD_PID=$pid
	track_pid "$pid"
	while :; do
		if ! _alive "$pid"; then
			wait "$pid"
			REPLAGENTD_STATUS=$?
			untrack_pid "$pid"
			unset '_ra_pid[$name]'
			echo "$name (pid $pid) exited with status $REPLAGENTD_STATUS during startup" >&2
			tail -n 20 "$logf" >&2
			return 1
		fi
		if { [ -z "$sock" ] || { [ -S "$sock" ] &&
			[ "$(stat -c "%i %z" "$sock" 2>/dev/null)" != "$stale" ]; }; } &&
			{ [ -z "$listen" ] || tcp_listening "${listen##*:}"; }; then
			return 0
		fi
		if [ "$n" -ge $((RA_START_TIMEOUT * 10)) ]; then
			echo "$name (pid $pid) not listening after ${RA_START_TIMEOUT}s" >&2
			return 2
		fi
		sleep 0.1
		n=$((n + 1))
	done
}

# start_replagentd_as NAME CONFIG [ARGS...]: the same, but fail the test if
# the daemon does not come up.
start_replagentd_as() {
	try_start_replagentd_as "$@" || fail "replagentd ($1) did not start"
}

# start_replagentd CONFIG [ARGS...]: the single-daemon case.
start_replagentd() { start_replagentd_as replagentd "$@"; }

# start_replagentd_tcp CONFIG [ARGS...]: start_replagentd with TCP on
# 127.0.0.1: sets "nbd-listen = 127.0.0.1:PORT" in CONFIG with a free PORT
# (and nbd-tls = off if CONFIG does not say nbd-tls)
# and starts the daemon, with a new port if it could not bind (up to 5
# tries).  Sets NBD_PORT, and NBD_TCP_URI for $VOL.
start_replagentd_tcp() {
	local conf=$1 attempt rc
	for attempt in 1 2 3 4 5; do
		NBD_PORT=$(free_port)
		sed -i '/^[[:space:]]*nbd-listen[[:space:]]*=/d' "$conf"
		sed -i "/^\[global\]/a nbd-listen = 127.0.0.1:$NBD_PORT" "$conf"
		# Plain TCP unless the test set up TLS (nbd-tls = require is the
		# default with nbd-listen and needs certificates).
		grep -q '^[[:space:]]*nbd-tls[[:space:]]*=' "$conf" ||
			sed -i "/^\[global\]/a nbd-tls = off" "$conf"
		grep -q "^nbd-listen = 127.0.0.1:$NBD_PORT\$" "$conf" ||
			hard_error "no [global] section in $conf"
		NBD_TCP_URI="nbd://127.0.0.1:$NBD_PORT/$VOL"
		try_start_replagentd_as replagentd "$@"
		rc=$?
		[ "$rc" = 0 ] && return 0
		[ "$rc" = 2 ] && fail "replagentd is not listening"
		log "replagentd did not start (port $NBD_PORT taken?), attempt $attempt"
	done
	fail "replagentd did not start (5 tries)"
}

# replagentd_pid [NAME]: the PID of a running instance (empty if none).
replagentd_pid() { echo "${_ra_pid[${1:-replagentd}]:-}"; }

# replagentd_alive [NAME]: true while the instance runs.
replagentd_alive() {
	local pid=${_ra_pid[${1:-replagentd}]:-}
	[ -n "$pid" ] && _alive "$pid"
}

# wait_replagentd_exit NAME TIMEOUT: wait for the instance to exit on its
# own; sets REPLAGENTD_STATUS; returns 1 (daemon still running) on timeout.
wait_replagentd_exit() {
	local name=$1 t=$2 pid n=0
	pid=${_ra_pid[$name]:-}
	[ -n "$pid" ] || hard_error "no replagentd instance $name"
	while replagentd_alive "$name"; do
		[ "$n" -ge $((t * 10)) ] && return 1
		sleep 0.1
		n=$((n + 1))
	done
	wait "$pid" 2>/dev/null
	REPLAGENTD_STATUS=$?
	untrack_pid "$pid"
	unset '_ra_pid[$name]'
	echo "==== $(date '+%T') exited with status $REPLAGENTD_STATUS" >>"${_ra_log[$name]}"
	return 0
}

# stop_replagentd [NAME] [SIGNAL]: send SIGNAL (default TERM) and wait up to
# RA_STOP_TIMEOUT s.  Sets REPLAGENTD_STATUS and returns it; fails the test
# if the daemon does not exit in time (it is then killed).
stop_replagentd() {
	local name=${1:-replagentd} sig=${2:-TERM} pid
	pid=${_ra_pid[$name]:-}
	[ -n "$pid" ] || hard_error "stop_replagentd: $name is not running"
	kill -"$sig" "$pid" 2>/dev/null
	if ! wait_replagentd_exit "$name" "$RA_STOP_TIMEOUT"; then
		kill -KILL "$pid" 2>/dev/null
		wait_replagentd_exit "$name" 5
		fail "$name (pid $pid) did not exit within ${RA_STOP_TIMEOUT}s of SIG$sig"
	fi
	log "$name (pid $pid) stopped by SIG$sig, exit status $REPLAGENTD_STATUS"
	return "$REPLAGENTD_STATUS"
}

# kill_replagentd [NAME]: SIGKILL (a crash); no status check.
kill_replagentd() {
	# (stderr: bash's own "Killed" job report is expected here)
	stop_replagentd "${1:-replagentd}" KILL 2>/dev/null
	true
}

# ---- 4. NBD client helpers -------------------------------------------------

# tcp_listening PORT: something listens on TCP PORT (any address), in the
# current network namespace.
tcp_listening() {
	local hex
	hex=$(printf '%04X' "$1")
	# /proc/net/tcp{,6}: local_address is ADDR:PORT in hex, st 0A = LISTEN.
	awk -v p=":$hex" 'NR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p { f = 1 }
		END { exit !f }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# free_port: print a TCP port on 127.0.0.1 that nothing listens on right
# now and that no running test has handed out: two nodes of one
# configuration got the same random port once in CI, and twice a port
# went to two tests running side by side (make -j2), so that one daemon
# could not listen.  Every port handed out is recorded in
# $PORT_REGISTRY/PORT (holding the owning test's $TESTDIR, under a lock);
# an entry whose test directory is gone is free again, and _cleanup
# removes this test's own.  The range stays below the kernel's
# ephemeral ports (ip_local_port_range), which outgoing connections take
# at any moment.  Callers still retry if the daemon then fails to bind
# (something outside the tests took the port): see start_replagentd_tcp.
PORT_REGISTRY=${PORT_REGISTRY:-/tmp/replagent-test-ports}
free_port() {
	local p i lock owner lo=20000 hi=32767 eph
	read -r eph _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || eph=32768
	[ "$eph" -gt $((lo + 1000)) ] && [ "$eph" -le "$hi" ] && hi=$((eph - 1))
	mkdir -p "$PORT_REGISTRY" || hard_error "cannot create $PORT_REGISTRY"
	exec {lock}>"$PORT_REGISTRY/.lock" || hard_error "cannot open $PORT_REGISTRY/.lock"
	flock "$lock" || hard_error "cannot lock $PORT_REGISTRY/.lock"
	for i in $(seq 1 100); do
		p=$((lo + RANDOM % (hi - lo + 1)))
		if [ -e "$PORT_REGISTRY/$p" ]; then
			owner=$(cat "$PORT_REGISTRY/$p" 2>/dev/null)
			[ -n "$owner" ] && [ -d "$owner" ] && continue
		fi
		tcp_listening "$p" && continue
		if "$PYTHON" -c 'import socket,sys
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1])))' "$p" 2>/dev/null; then
			echo "$TESTDIR" >"$PORT_REGISTRY/$p"
			echo "$p" >>"$TESTDIR/ports"
			exec {lock}>&-
			echo "$p"
			return 0
		fi
	done
	exec {lock}>&-
	hard_error "no free TCP port found"
}

# _release_ports: this test's entries leave the registry (from _cleanup).
_release_ports() {
	local p
	[ -f "$TESTDIR/ports" ] || return 0
	while read -r p; do
		[ "$(cat "$PORT_REGISTRY/$p" 2>/dev/null)" = "$TESTDIR" ] &&
			rm -f "$PORT_REGISTRY/$p"
	done <"$TESTDIR/ports"
	return 0
}

QIO_TIMEOUT=${QIO_TIMEOUT:-20}

# qio URI CMD...: qemu-io on a raw NBD URI, each CMD a -c command; output
# goes to stdout; fails (returns 1) if qemu-io fails or any pattern check
# fails.  QIO_CACHE=writeback: plain writes (qemu-io's default cache mode,
# writethrough, makes every write FUA).
qio() {
	local uri=$1 out st a
	shift
	local args=()
	[ -n "${QIO_CACHE:-}" ] && args+=(-t "$QIO_CACHE")
	for a in "$@"; do args+=(-c "$a"); done
	out=$(timeout "$QIO_TIMEOUT" qemu-io -f raw "${args[@]}" "$uri" 2>&1)
	st=$?
	printf '%s\n' "$out"
	[ "$st" = 124 ] && echo "qemu-io: timed out after ${QIO_TIMEOUT}s: $*"
	[ "$st" = 0 ] || return 1
	case $out in
	*"verification failed"* | *"ailed"* | *rror*) return 1 ;;
	esac
	return 0
}

# qio_unflushed URI CMD...: qemu-io's CMDs on a raw NBD URI (-t unsafe) with
# no FLUSH after them: qemu-io sends one when it closes the image, so it
# aborts instead (its "abort" command) once they are acknowledged.  Output
# dropped; the status is that of the abort.
qio_unflushed() {
	local uri=$1 c args=()
	shift
	for c in "$@"; do args+=(-c "$c"); done
	# (the braces keep bash's "Aborted" report of the subshell quiet too)
	{ (timeout "$QIO_TIMEOUT" qemu-io -f raw -t unsafe "${args[@]}" -c abort "$uri") >/dev/null 2>&1; } 2>/dev/null
}

# qio_batch URI CMDS: like qio with newline-separated commands, quiet: on
# failure only the failing lines go to stderr.
qio_batch() {
	local uri=$1 out
	local -a cmds
	mapfile -t cmds <<<"$2"
	out=$(qio "$uri" "${cmds[@]}") || {
		grep -i -E 'fail|error|can.t|qemu-io:' <<<"$out" >&2 ||
			printf '%s\n' "$out" >&2
		return 1
	}
}

# user_can_connect USER SOCKET: USER may connect to the Unix SOCKET
# (permissions of the socket and its directories); needs root and runuser.
user_can_connect() {
	runuser -u "$1" -- "$PYTHON" -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
s.connect(sys.argv[1])' "$2"
}

# ---- 4b. disk faults ----------------------------------------------------------
#
# tests/faultdisk.so, preloaded into one process, plays a faulty disk under
# the files whose path contains a given substring: a volatile write cache
# (writes stay in the process's memory until fsync/fdatasync/a DSYNC write,
# so a kill -9 loses them as a power loss loses a disk's cache), EIO on
# flush, write or read, slow flushes.  Rules can change while the process
# runs; every fault that fires is logged (faultdisk_log).  No rule: pure
# pass-through.  E.g.
#
#   faultdisk_init
#   write_config
#   faultdisk_set cache "$BACKING"
#   faultdisk_preload replagentd        (or a node's name, before start_node)
#   start_replagentd "$CONFIG"
#   ... kill_replagentd; faultdisk_log | grep -q "^cache $BACKING" || fail ...
#
# Rules (the RULE of faultdisk_set): cache, eio-flush, eio-write (also hole
# punching and zeroing), eio-read, slow-flush ("SUBSTRING MILLISECONDS"),
# slow-write (the same: each write sleeps first, then lands).

# The shim, built by make check (without sanitizers: ASan builds take it
# with verify_asan_link_order=0, which faultdisk_env sets).
FAULTDISK_SO=${FAULTDISK_SO:-$top_builddir/tests/faultdisk.so}
FAULTDISK_DIR=

# faultdisk_init: requires the shim; creates the empty rule directory
# $TESTDIR/faultdisk and sets FAULTDISK_DIR.  Nothing is preloaded yet.
faultdisk_init() {
	[ -f "$FAULTDISK_SO" ] ||
		hard_error "$FAULTDISK_SO not found: build it first (make check, or make tests/faultdisk.so)"
	FAULTDISK_DIR=$TESTDIR/faultdisk
	mkdir -p "$FAULTDISK_DIR" || hard_error "mkdir $FAULTDISK_DIR"
}

# faultdisk_env: the VAR=value lines that load the shim (for env(1)).
faultdisk_env() {
	[ -n "$FAULTDISK_DIR" ] || hard_error "faultdisk: call faultdisk_init first"
	printf '%s\n' "LD_PRELOAD=$FAULTDISK_SO${LD_PRELOAD:+ $LD_PRELOAD}" \
		"FAULTDISK_DIR=$FAULTDISK_DIR" \
		"ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
}

# faultdisk_run CMD [ARGS...]: runs CMD with the shim preloaded.
faultdisk_run() {
	local -a e
	mapfile -t e < <(faultdisk_env)
	env "${e[@]}" "$@"
}

# faultdisk_preload NAME: the daemon instance NAME (start_replagentd_as
# NAME, start_node NAME) is started with the shim from now on; undo with
# "ra_env NAME".
faultdisk_preload() {
	local -a e
	mapfile -t e < <(faultdisk_env)
	ra_env "$1" "${e[@]}"
}

# faultdisk_same_boot: every process started under the shim from now on
# sees one boot id (by default each start is a new boot: a kill -9 under
# the shim plays a power loss), so a restart of a daemon is one on the
# same boot of its host.
faultdisk_same_boot() {
	[ -n "$FAULTDISK_DIR" ] || hard_error "faultdisk: call faultdisk_init first"
	cat /proc/sys/kernel/random/uuid >"$FAULTDISK_DIR/boot-id" ||
		hard_error "cannot write $FAULTDISK_DIR/boot-id"
}

# cached_pair NODE [same-boot]: the two-node cluster of the tests of
# unflushed writes: a and b (cluster_config -t 5), NODE's daemon under
# the faultdisk shim with a volatile write cache on its backing (a kill -9
# drops what it holds, as a power loss drops a disk's cache; with
# same-boot, its restarts are on one boot), a promoted and b in sync.
cached_pair() {
	cluster_config -t 5 a b
	faultdisk_init
	[ "${2:-}" != same-boot ] || faultdisk_same_boot
	faultdisk_set cache "${NODE_BACKING[$1]}"
	faultdisk_preload "$1"
	start_pair a b
}

# unflushed_writes NODE BYTE: 4 MiB of BYTE at 1 MiB through a, with no
# FLUSH; NODE's shim must hold some of them (else there is nothing to
# test: a hard error).
unflushed_writes() {
	qio_unflushed "${NODE_NBD_URI[a]}" "write -P $2 1M 4M"
	faultdisk_log | grep -q "^cache ${NODE_BACKING[$1]}" ||
		hard_error "the shim held none of $1's writes: nothing to test"
}

# faultdisk_set RULE LINE...: makes RULE match the files whose path
# contains one of the LINEs (for slow-flush, slow-write: "SUBSTRING
# MILLISECONDS"),
# replacing RULE's earlier lines; in force for every call the processes
# start from its return on.
faultdisk_set() {
	local rule=$1
	shift
	case $rule in
	cache | eio-flush | eio-write | eio-read | slow-flush | slow-write) ;;
	*) hard_error "faultdisk_set: unknown rule $rule" ;;
	esac
	[ -n "$FAULTDISK_DIR" ] || hard_error "faultdisk: call faultdisk_init first"
	# Renamed into place: the shim never reads half a rule.
	printf '%s\n' "$@" >"$FAULTDISK_DIR/.$rule.new" &&
		mv -f "$FAULTDISK_DIR/.$rule.new" "$FAULTDISK_DIR/$rule" ||
		hard_error "cannot write rule $rule"
	# The shim re-reads its rules at most 50 ms after a change.
	sleep 0.1
	log "faultdisk: $rule on $*"
}

# faultdisk_clear RULE: RULE matches nothing any more (data the cache
# holds stays there until flushed).
faultdisk_clear() {
	[ -n "$FAULTDISK_DIR" ] || hard_error "faultdisk: call faultdisk_init first"
	rm -f "$FAULTDISK_DIR/$1"
	sleep 0.1
	log "faultdisk: $1 cleared"
}

# faultdisk_log: the faults that fired so far, one a line ("eio-flush PATH",
# "slow-flush PATH MS", "slow-write PATH MS", "cache PATH" when a file's first write is held,
# "cache-flush PATH BYTES" when held writes are written out, "cache-drop
# PATH BYTES" when an exit without flush drops them ...).
faultdisk_log() {
	[ -n "$FAULTDISK_DIR" ] || hard_error "faultdisk: call faultdisk_init first"
	cat "$FAULTDISK_DIR/log" 2>/dev/null
	true
}

# ---- floods and resource use ------------------------------------------------

# mem_kib PID FIELD: a /proc/PID/status field in KiB (VmRSS, VmHWM); 0 if gone.
mem_kib() {
	awk -v f="$2:" '$1 == f { print $2; found = 1 } END { if (!found) print 0 }' \
		"/proc/$1/status" 2>/dev/null || echo 0
}

# proc_stat_sum AWK-EXPR PID...: the sum over the processes of AWK-EXPR over
# the fields of /proc/PID/stat after the ")" of comm (state is $1, minflt
# $8, utime $12, stime $13).
proc_stat_sum() {
	local sum_of=$1 p t=0 f
	shift
	for p in "$@"; do
		f=$(sed 's/.*) //' "/proc/$p/stat") || hard_error "no /proc/$p/stat"
		t=$((t + $(awk "{ print $sum_of }" <<<"$f")))
	done
	echo "$t"
}

# cpu_ticks PID...: utime + stime of the processes, all threads, in ticks
# (USER_HZ, 100 a second on Debian).
cpu_ticks() { proc_stat_sum '$12 + $13' "$@"; }

# minflt PID...: minor page faults of the processes so far (a buffer that
# malloc maps afresh faults once per page).
minflt() { proc_stat_sum '$8' "$@"; }

# rss_peak_reset PID: VmHWM starts again from the current RSS (needs root).
rss_peak_reset() { echo 5 >"/proc/$1/clear_refs" 2>/dev/null; }

# fd_count PID: open descriptors of PID.
fd_count() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }

# start_flood OUT ARGS...: tests/flood.py ARGS in the background with enough
# descriptors of its own (the daemons keep the limit they were started
# with); its summary goes to OUT.  Sets FLOOD_PID.
FLOOD_PID=
start_flood() {
	local out=$1
	shift
	(
		ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)"
		exec "$PYTHON" "$TESTS_SRCDIR/flood.py" "$@"
	) >"$out" 2>&1 &
	FLOOD_PID=$!
	track_pid "$FLOOD_PID"
}

# rss_guard MAX_KIB PID...: while the flood runs, the daemons' RSS stays under
# MAX_KIB; past it the flood is stopped at once (so that a daemon without
# limits does not take the machine's memory) and 1 returned.
rss_guard() {
	local max=$1 pid rss
	shift
	while _alive "$FLOOD_PID"; do
		for pid in "$@"; do
			rss=$(mem_kib "$pid" VmRSS)
			if [ "$rss" -gt "$max" ]; then
				echo "RSS of $pid reached $rss KiB during the flood: stopping it" >&2
				stop_pid "$FLOOD_PID"
				return 1
			fi
		done
		sleep 0.2
	done
}

# wait_flood: waits for the flood, shows its summary.
wait_flood() {
	wait "$FLOOD_PID" 2>/dev/null
	untrack_pid "$FLOOD_PID"
}

# ---- 5. several daemons (one per node) ---------------------------------------
#
# The building blocks: one daemon instance per node with
#   write_config -d "$TESTDIR/NODE" ...     per-node directory and config
#   RA_EXEC_PREFIX=(ip netns exec NS) start_replagentd_as NODE CONFIG -n NODE
#   stop_replagentd NODE / kill_replagentd NODE / replagentd_alive NODE
# Replicated clusters and network namespaces: section 7.

# ---- 6. libvirt ------------------------------------------------------------

# LIBVIRT_NS_PID: the libvirtd whose mount namespace virsh must run in.
LIBVIRT_NS_PID=
LIBVIRT_VIRTLOGD_PID=
LIBVIRT_DIR=

# start_private_libvirtd: run virtlogd and libvirtd (qemu:///system) in a new
# mount namespace where /etc/libvirt is a private copy ($LIBVIRT_DIR/etc;
# put hooks etc. there before calling, via LIBVIRT_SETUP, a function run
# with the copy's path as $1) and /run/libvirt, /var/lib/libvirt,
# /var/log/libvirt, /var/cache/libvirt are empty per-test directories, so
# nothing of a system libvirtd is seen or touched.  Domains get no cgroups.
# virsh_ns runs virsh against it.  Everything is stopped by the cleanup trap.
start_private_libvirtd() {
	local d n=0
	requires_root
	requires libvirtd virtlogd virsh unshare nsenter
	LIBVIRT_DIR=$TESTDIR/libvirt
	for d in etc run lib log cache; do
		mkdir -p "$LIBVIRT_DIR/$d" || hard_error "mkdir"
	done
	chmod 0755 "$LIBVIRT_DIR" "$LIBVIRT_DIR"/*
	cp -a /etc/libvirt/. "$LIBVIRT_DIR/etc/" || hard_error "cannot copy /etc/libvirt"
	# No autostarted networks (they would create bridges on the host).
	rm -f "$LIBVIRT_DIR"/etc/qemu/networks/autostart/* "$LIBVIRT_DIR"/etc/qemu/autostart/*
	cat >>"$LIBVIRT_DIR/etc/qemu.conf" <<-'EOF'

		# added by the replagent tests: leave the host's cgroups alone
		cgroup_controllers = [ ]
	EOF
	if declare -F LIBVIRT_SETUP >/dev/null; then
		LIBVIRT_SETUP "$LIBVIRT_DIR/etc" || hard_error "LIBVIRT_SETUP failed"
	fi
	# The shell inside the new mount namespace mounts, then becomes
	# libvirtd (not daemonized: our child, so we can wait for it).  setsid:
	# its own session and process group, so that a Ctrl-C or a harness
	# timeout signalling our process group does not kill it before the
	# cleanup has destroyed its domains.
	setsid unshare -m --propagation private bash -c '
		set -e
		d=$1
		mount --bind "$d/etc" /etc/libvirt
		# A private /run: pid files and sockets of a system libvirtd or
		# virtlogd (if one runs) are neither seen nor taken.
		mkdir -p "$d/runroot/libvirt"
		mount --bind "$d/runroot" /run
		mount --bind "$d/run" /run/libvirt
		mount --bind "$d/lib" /var/lib/libvirt
		mount --bind "$d/log" /var/log/libvirt
		mount --bind "$d/cache" /var/cache/libvirt
		exec libvirtd >>"$d/libvirtd.log" 2>&1
	' private-libvirtd "$LIBVIRT_DIR" &
	LIBVIRT_NS_PID=$!
	_ra_log[libvirtd]=$LIBVIRT_DIR/libvirtd.log
	on_cleanup _stop_private_libvirtd "$LIBVIRT_NS_PID" "$LIBVIRT_DIR"
	# Wait until the namespace is set up (libvirtd's /run/libvirt is ours).
	while [ "$(stat -L -c %i "/proc/$LIBVIRT_NS_PID/root/run/libvirt" 2>/dev/null)" != \
		"$(stat -c %i "$LIBVIRT_DIR/run")" ]; do
		_alive "$LIBVIRT_NS_PID" || {
			tail -n 20 "$LIBVIRT_DIR/libvirtd.log" >&2
			fail "private libvirtd exited"
		}
		[ "$n" -ge 100 ] && fail "private libvirtd: namespace not set up after 10s"
		sleep 0.1
		n=$((n + 1))
	done
	# virtlogd (QEMU's logs go through it) in the same namespace, also our
	# child (nsenter execs it).
	setsid nsenter -t "$LIBVIRT_NS_PID" -m virtlogd >>"$LIBVIRT_DIR/virtlogd.log" 2>&1 &
	LIBVIRT_VIRTLOGD_PID=$!
	_ra_log[virtlogd]=$LIBVIRT_DIR/virtlogd.log
	on_cleanup stop_pid "$LIBVIRT_VIRTLOGD_PID" 5
	n=0
	while ! virsh_ns version >/dev/null 2>&1; do
		_alive "$LIBVIRT_NS_PID" || {
			tail -n 20 "$LIBVIRT_DIR/libvirtd.log" >&2
			fail "private libvirtd exited"
		}
		[ "$n" -ge 300 ] && fail "private libvirtd not answering after 30s"
		sleep 0.1
		n=$((n + 1))
	done
}

# _stop_private_libvirtd PID DIR: stop the guests it started (QEMU is
# daemonized, so not our descendant: found by the pidfiles in DIR/run/qemu,
# checked against their command line), then libvirtd.
_stop_private_libvirtd() {
	local pid=$1 dir=$2 f qpid name
	for f in "$dir"/run/qemu/*.pid; do
		[ -f "$f" ] || continue
		qpid=$(cat "$f" 2>/dev/null)
		name=$(basename "$f" .pid)
		[ -n "$qpid" ] && tr '\0' ' ' <"/proc/$qpid/cmdline" 2>/dev/null |
			grep -q -F -- "guest=$name," || continue
		log "stopping guest $name (pid $qpid) left running"
		stop_pid "$qpid" 5
	done
	stop_pid "$pid" 15
	true
}

# virsh_ns ARGS...: virsh -c qemu:///system in the private libvirtd's mount
# namespace (bounded by timeout).
virsh_ns() {
	[ -n "$LIBVIRT_NS_PID" ] || hard_error "virsh_ns: no private libvirtd"
	timeout -k 5 60 nsenter -t "$LIBVIRT_NS_PID" -m virsh -q -c qemu:///system "$@"
}

# start_domain XMLFILE: virsh create (transient domain), destroyed by the
# cleanup trap.  Prints nothing; the domain name is the XML's <name>.
start_domain() {
	local name
	name=$(sed -n 's:.*<name>\(.*\)</name>.*:\1:p' "$1" | head -n 1)
	[ -n "$name" ] || hard_error "start_domain: no <name> in $1"
	on_cleanup _destroy_domain "$name"
	virsh_ns create "$1" || fail "virsh create $1 failed"
}

_destroy_domain() {
	virsh_ns destroy "$1" >/dev/null 2>&1
	true
}

# domain_xml NAME DISK_SOURCE_XML SERIAL_LOG: a minimal TCG x86 guest (64 MiB,
# machine pc, boots from its virtio disk vda, serial port 0 to a file, no
# network, no graphics) on stdout.
domain_xml() {
	cat <<-EOF
		<domain type='qemu'>
		  <name>$1</name>
		  <memory unit='MiB'>64</memory>
		  <vcpu>1</vcpu>
		  <os>
		    <type arch='x86_64' machine='pc'>hvm</type>
		    <boot dev='hd'/>
		  </os>
		  <on_poweroff>destroy</on_poweroff>
		  <on_reboot>destroy</on_reboot>
		  <on_crash>destroy</on_crash>
		  <devices>
		    <emulator>$(command -v qemu-system-x86_64)</emulator>
		    <disk type='network' device='disk'>
		      <driver name='qemu' type='raw' cache='none'/>
		      $2
		      <target dev='vda' bus='virtio'/>
		    </disk>
		    <serial type='file'>
		      <source path='$3'/>
		      <target port='0'/>
		    </serial>
		    <controller type='usb' model='none'/>
		    <video><model type='none'/></video>
		    <memballoon model='none'/>
		  </devices>
		</domain>
	EOF
}

# nbd_disk_source SOCKET EXPORT: the <source> element of a disk on a Unix
# socket NBD export.
nbd_disk_source() {
	echo "<source protocol='nbd' name='$2'><host transport='unix' socket='$1'/></source>"
}

# build_boot_sector OUT TOKEN: a 1 KiB image (2 sectors) for an x86 BIOS: the
# boot sector initialises COM1, prints "REPLAGENT-BOOT-OK ", reads sector 2
# from the boot drive with int 13h and prints the NUL-terminated string at
# its start (TOKEN), then halts.  Seeing TOKEN on the serial port proves the
# guest read the disk beyond what the BIOS loaded.  Needs nasm.
BOOT_MARKER='REPLAGENT-BOOT-OK'
build_boot_sector() {
	local out=$1 token=$2
	requires nasm
	cat >"$TESTDIR/boot.asm" <<-'EOF'
		bits 16
		org 0x7c00
		start:
		    cli
		    cld
		    xor ax, ax
		    mov ds, ax
		    mov es, ax
		    mov ss, ax
		    mov sp, 0x7c00
		    sti
		    mov [drive], dl
		    ; COM1: 115200 8N1, no interrupts
		    mov dx, 0x3f9
		    xor al, al
		    out dx, al
		    mov dx, 0x3fb
		    mov al, 0x80
		    out dx, al
		    mov dx, 0x3f8
		    mov al, 1
		    out dx, al
		    mov dx, 0x3f9
		    xor al, al
		    out dx, al
		    mov dx, 0x3fb
		    mov al, 3
		    out dx, al
		    mov si, banner
		    call puts
		    ; read CHS 0/0/2 (LBA 1), one sector, to 0x7e00
		    mov ax, 0x0201
		    mov cx, 0x0002
		    xor dh, dh
		    mov dl, [drive]
		    mov bx, 0x7e00
		    int 0x13
		    jc .err
		    mov si, 0x7e00
		    call puts
		    jmp .halt
		.err:
		    mov si, readerr
		    call puts
		.halt:
		    cli
		    hlt
		    jmp .halt
		puts:
		    lodsb
		    test al, al
		    jz .ret
		    mov ah, al
		.wait:
		    mov dx, 0x3fd
		    in al, dx
		    test al, 0x20
		    jz .wait
		    mov al, ah
		    mov dx, 0x3f8
		    out dx, al
		    jmp puts
		.ret:
		    ret
		drive db 0
		banner db "REPLAGENT-BOOT-OK ", 0
		readerr db "READ-ERROR", 13, 10, 0
		    times 510-($-$$) db 0
		    dw 0xaa55
	EOF
	nasm -f bin -o "$out" "$TESTDIR/boot.asm" || hard_error "nasm failed"
	[ "$(stat -c %s "$out")" = 512 ] || hard_error "boot sector is not 512 bytes"
	# sector 2: the token, CRLF, NUL, padded to 512 bytes
	{
		printf '%s\r\n' "$token"
		head -c $((512 - ${#token} - 2)) /dev/zero
	} >>"$out"
}

# wait_for_file_text FILE TEXT TIMEOUT: true once FILE contains TEXT.
wait_for_file_text() {
	local n=0
	while ! grep -q -a -F -- "$2" "$1" 2>/dev/null; do
		[ "$n" -ge $(($3 * 10)) ] && return 1
		sleep 0.1
		n=$((n + 1))
	done
}

# ---- 7. replicated clusters: several nodes, the CLI, network namespaces -----
#
# One replagentd per node, each with its own directory $TESTDIR/NODE
# (config, sockets, state, backing file), one shared key file.  Nodes talk
# over 127.0.0.1 (free ports), or, after make_netns_cluster, each node runs
# in its own network namespace on a private bridge (nothing is added to the
# root namespace: the bridge lives in a "switch" namespace of its own).
# Control sockets are Unix sockets under $TESTDIR, so the CLI always runs in
# the root namespace.
#
#   cluster_config [-v VOL] [-s SIZE] [-t OUTDATE] NODE...
#   start_node NODE [ARGS...]       stop_node NODE      kill_node NODE
#   ra_cli NODE ARGS...             node_status NODE
#   wait_status NODE TIMEOUT EXPR   status_value NODE EXPR
#   make_netns_cluster NODE...      link_down NODE      link_up NODE
#
# EXPR is a Python expression over the node's "status --json" answer: s is
# the whole object, v the volume $CLUSTER_VOL, p its peers by node name,
# e.g.  'v["role"] == "Primary" and p["b"]["link"] == "Connected"'.

# The command line client (REPLAGENT may point at another binary).
REPLAGENT=${REPLAGENT:-$top_builddir/agent/replagent}
# Per-node settings, filled by cluster_config / make_netns_cluster.
declare -A NODE_DIR=() NODE_CONF=() NODE_CTL=() NODE_NBD_SOCK=() NODE_NBD_URI=()
declare -A NODE_BACKING=() NODE_ADDR=() NODE_NS=() NODE_IP=() NODE_SWITCH_IF=()
CLUSTER_NODES=()
CLUSTER_VOL=vol0
CLUSTER_SIZE=64M
CLUSTER_OUTDATE=5
CLUSTER_KEY=
NETNS_SWITCH=
# Seconds a status query may take (the CLI bounds itself at 5 s).
RA_CLI_TIMEOUT=${RA_CLI_TIMEOUT:-15}

# requires_replagent: the command line client must have been built.
requires_replagent() {
	[ -x "$REPLAGENT" ] ||
		hard_error "$REPLAGENT not found: build it first (make agent/replagent)"
}

# make_key FILE [TEXT]: a key file (mode 0600); TEXT default: 32 random
# bytes in hex.
make_key() {
	local text=${2:-}
	[ -n "$text" ] || text=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
	(umask 077 && printf '%s\n' "$text" >"$1") || hard_error "cannot write key $1"
	chmod 0600 "$1"
}

# cluster_config [-v VOL] [-s SIZE] [-t OUTDATE] [-k KEYFILE] NODE...
# Writes $TESTDIR/NODE/replagent.conf for every NODE: one volume VOL (default
# vol0) of SIZE (64M) replicated on all the nodes, outdate-timeout OUTDATE
# (5).  Replica addresses: NODE_IP[NODE] (set by make_netns_cluster) with
# port 7788, else 127.0.0.1 with a free port.  The key (default a new
# $TESTDIR/cluster.key) is CLUSTER_KEY.  Sets the NODE_* arrays and
# CLUSTER_NODES.
cluster_config() {
	local OPTIND=1 opt n d
	CLUSTER_KEY=
	while getopts v:s:t:k: opt; do
		case $opt in
		v) CLUSTER_VOL=$OPTARG ;;
		s) CLUSTER_SIZE=$OPTARG ;;
		t) CLUSTER_OUTDATE=$OPTARG ;;
		k) CLUSTER_KEY=$OPTARG ;;
		*) hard_error "cluster_config: bad option" ;;
		esac
	done
	shift $((OPTIND - 1))
	[ $# -ge 2 ] || hard_error "cluster_config: needs 2 or 3 nodes"
	CLUSTER_NODES=("$@")
	if [ -z "$CLUSTER_KEY" ]; then
		CLUSTER_KEY=$TESTDIR/cluster.key
		make_key "$CLUSTER_KEY"
	fi
	for n in "$@"; do
		d=$TESTDIR/$n
		mkdir -p "$d" && chmod 0755 "$d" || hard_error "mkdir $d"
		NODE_DIR[$n]=$d
		NODE_CONF[$n]=$d/replagent.conf
		NODE_CTL[$n]=$d/control.sock
		NODE_NBD_SOCK[$n]=$d/nbd.sock
		NODE_NBD_URI[$n]="nbd+unix:///$CLUSTER_VOL?socket=$d/nbd.sock"
		NODE_BACKING[$n]=$d/$CLUSTER_VOL.img
		if [ -n "${NODE_IP[$n]:-}" ]; then
			NODE_ADDR[$n]=${NODE_IP[$n]}:7788
		else
			NODE_ADDR[$n]=127.0.0.1:$(free_port)
		fi
	done
	for n in "$@"; do
		write_node_config "$n" "${NODE_CONF[$n]}" "$CLUSTER_KEY" "$CLUSTER_VOL" \
			"$CLUSTER_SIZE" "${NODE_BACKING[$n]}"
	done
}

# volume_option NODE "KEY = VALUE": adds the line to NODE's volume section
# (after cluster_config, before start_node).
volume_option() {
	sed -i "/^\[volume /a $2" "${NODE_CONF[$1]}" || hard_error "cannot edit ${NODE_CONF[$1]}"
}

# write_node_config NODE FILE KEYFILE VOL SIZE BACKING: NODE's config with
# one volume replicated on CLUSTER_NODES (their NODE_ADDR), for tests that
# need a node with something different (another key, volume name, size).
# NODE_GLOBAL_EXTRA, if set, is a line added to its [global] section (e.g.
# "link-security = none").
write_node_config() {
	local n=$1 f=$2 d m
	d=${NODE_DIR[$n]}
	{
		echo "# written by $TEST_NAME for node $n"
		echo "[global]"
		echo "node = $n"
		echo "nbd-socket = $d/nbd.sock"
		echo "control-socket = $d/control.sock"
		echo "state-dir = $d/state"
		echo "pidfile = $d/replagentd.pid"
		echo "key-file = $3"
		echo "outdate-timeout = $CLUSTER_OUTDATE"
		[ -z "${NODE_GLOBAL_EXTRA:-}" ] || echo "$NODE_GLOBAL_EXTRA"
		echo
		echo "[volume $4]"
		echo "backing = $6"
		echo "size = $5"
		for m in "${CLUSTER_NODES[@]}"; do
			echo "replica = $m ${NODE_ADDR[$m]}"
		done
	} >"$f" || hard_error "cannot write $f"
}

# ra_cli NODE ARGS...: the CLI on NODE's control socket, bounded in time.
ra_cli() {
	local n=$1
	shift
	requires_replagent
	timeout "$RA_CLI_TIMEOUT" "$REPLAGENT" -s "${NODE_CTL[$n]}" "$@"
}

# node_status NODE: NODE's "status VOL --json" on stdout; the CLI's exit
# status (0 healthy, 1 degraded, 2 critical, 3 unreachable).
node_status() {
	ra_cli "$1" status "$CLUSTER_VOL" --json
}

# The Python side of wait_status / status_value: reads the JSON on stdin,
# evaluates argv[2] with s, v, p bound; mode "test" exits 0 if true, 1 if
# false, 2 if the JSON cannot be used; mode "value" prints the result.
_STATUS_PY='
import json, sys
mode, expr, vol = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    s = json.load(sys.stdin)
    vs = [x for x in s.get("volumes", []) if x.get("name") == vol]
    v = vs[0] if vs else {}
    p = {x.get("node"): x for x in v.get("peers", [])}
    r = eval(expr)
except Exception as e:
    print("status expression %r: %s: %s" % (expr, type(e).__name__, e), file=sys.stderr)
    sys.exit(2)
if mode == "value":
    print(r)
sys.exit(0 if r or mode == "value" else 1)
'

# status_value NODE EXPR: prints EXPR over NODE's status (see above).
status_value() {
	local js
	js=$(node_status "$1")
	[ $? = 3 ] && { echo "node $1 unreachable" >&2; return 3; }
	printf '%s' "$js" | "$PYTHON" -c "$_STATUS_PY" value "$2" "$CLUSTER_VOL"
}

# wait_status NODE TIMEOUT EXPR: waits until EXPR holds for NODE's status;
# on timeout shows the last answer and returns 1.
wait_status() {
	local n=$1 t=$2 expr=$3 js end
	end=$(($(date +%s) + t))
	while :; do
		js=$(node_status "$n" 2>"$TESTDIR/.status.err")
		if printf '%s' "$js" | "$PYTHON" -c "$_STATUS_PY" test "$expr" "$CLUSTER_VOL" 2>/dev/null; then
			return 0
		fi
		if [ "$(date +%s)" -ge "$end" ]; then
			echo "node $n: after ${t}s still not: $expr" >&2
			echo "last status of $n: $js" >&2
			cat "$TESTDIR/.status.err" >&2
			return 1
		fi
		sleep 0.2
	done
}

# start_node NODE [ARGS...]: starts NODE's daemon (in its namespace, if it
# has one) and waits until its control socket answers.
start_node() {
	local n=$1 i
	shift
	requires_replagent
	if [ -n "${NODE_NS[$n]:-}" ]; then
		RA_EXEC_PREFIX=(ip netns exec "${NODE_NS[$n]}")
	else
		RA_EXEC_PREFIX=()
	fi
	start_replagentd_as "$n" "${NODE_CONF[$n]}" -n "$n" "$@"
	RA_EXEC_PREFIX=()
	for ((i = 0; i < RA_START_TIMEOUT * 10; i++)); do
		ra_cli "$n" version >/dev/null 2>&1 && return 0
		replagentd_alive "$n" || fail "node $n died during startup"
		sleep 0.1
	done
	fail "node $n: control socket ${NODE_CTL[$n]} not answering after ${RA_START_TIMEOUT}s"
}

# start_in_sync PRIMARY NODE...: starts PRIMARY and the NODEs in that
# order, waits (30 s) until PRIMARY sees every NODE Connected with nothing
# out of sync, promotes PRIMARY, and waits (30 s) until it sees every NODE
# Connected, UpToDate and with nothing out of sync again.  Two Secondaries
# where one is blank only carry state until a Primary exists (gen.c rules
# 40-42): the promotion reconnects such a NODE to resync it, so right
# after it the NODE is not yet in sync, nor even connected (repl-peer-
# wire.sh killed one then, and its Primary never lost it).
start_in_sync() {
	local primary=$1 n
	for n in "$@"; do
		start_node "$n"
	done
	shift
	wait_status "$primary" 30 "all(p[n][\"link\"] == \"Connected\" and p[n][\"out_of_sync_bytes\"] == 0 for n in \"$*\".split())" ||
		fail "$primary and $* did not connect"
	promote "$primary"
	wait_status "$primary" 30 "all(p[n][\"link\"] == \"Connected\" and p[n][\"peer_disk\"] == \"UpToDate\" and p[n][\"out_of_sync_bytes\"] == 0 for n in \"$*\".split())" ||
		fail "$primary did not see $* in sync after its promotion"
}

# stop_node NODE: SIGTERM; fails the test unless the daemon exits 0.
stop_node() {
	stop_replagentd "$1" TERM ||
		fail "node $1 exited with status $REPLAGENTD_STATUS after SIGTERM"
}

# relay_route FROM TO: rewrites FROM's configuration so that FROM reaches
# TO at 127.0.0.1:RELAY_PORT (a free port, for a relay such as tests/mitm);
# TO still listens at its own address, whose port is RELAY_TARGET_PORT.
relay_route() {
	local real=${NODE_ADDR[$2]}
	RELAY_PORT=$(free_port)
	RELAY_TARGET_PORT=${real##*:}
	NODE_ADDR[$2]=127.0.0.1:$RELAY_PORT
	write_node_config "$1" "${NODE_CONF[$1]}" "$CLUSTER_KEY" "$CLUSTER_VOL" "$CLUSTER_SIZE" \
		"${NODE_BACKING[$1]}"
	NODE_ADDR[$2]=$real
}

# kill_node NODE: SIGKILL (a crash).
kill_node() { kill_replagentd "$1"; }

# stop_cluster: stops every node still running (in reverse order).
stop_cluster() {
	local i
	for ((i = ${#CLUSTER_NODES[@]} - 1; i >= 0; i--)); do
		replagentd_alive "${CLUSTER_NODES[$i]}" && stop_node "${CLUSTER_NODES[$i]}"
	done
	return 0
}

# promote NODE [--force]: the CLI's promote; fails the test if refused.
promote() {
	local n=$1
	shift
	ra_cli "$n" promote "$CLUSTER_VOL" "$@" || fail "promote on $n refused"
	log "$n is Primary"
}

# recover_pair LOST OTHER: after LOST (Primary) crashed: starts LOST,
# waits (30 s) until it is Secondary and connected to OTHER, asks it to be
# Primary again and, if it refuses (a fine answer when it lost power),
# promotes OTHER; then waits (60 s) until the Primary sees the other in
# sync.  Sets RECOVERED_PRIMARY and RECOVERED_OTHER.
recover_pair() {
	local lost=$1 other=$2 out
	start_node "$lost"
	wait_status "$lost" 30 "v[\"role\"] == \"Secondary\" and p[\"$other\"][\"link\"] == \"Connected\"" ||
		fail "$lost did not come back connected"
	if out=$(ra_cli "$lost" promote "$CLUSTER_VOL" 2>&1); then
		RECOVERED_PRIMARY=$lost RECOVERED_OTHER=$other
		log "$lost was promoted again"
	else
		log "$lost refused: $out"
		RECOVERED_PRIMARY=$other RECOVERED_OTHER=$lost
		promote "$other"
	fi
	wait_status "$RECOVERED_PRIMARY" 60 "p[\"$RECOVERED_OTHER\"][\"link\"] == \"Connected\" and p[\"$RECOVERED_OTHER\"][\"out_of_sync_bytes\"] == 0 and p[\"$RECOVERED_OTHER\"][\"peer_disk\"] == \"UpToDate\"" ||
		fail "$RECOVERED_OTHER did not get in sync with $RECOVERED_PRIMARY"
}

# start_pair A B: starts nodes A and B of the cluster_config, waits (30 s)
# until A sees B connected with nothing out of sync, and promotes A: the
# start of most two-node tests.
start_pair() {
	start_node "$1"
	start_node "$2"
	wait_status "$1" 30 "p[\"$2\"][\"link\"] == \"Connected\" and p[\"$2\"][\"out_of_sync_bytes\"] == 0" ||
		fail "$1 and $2 did not connect"
	promote "$1"
}

# cmp_backings NODE...: the nodes' backing files are identical (stop the
# daemons first: replicas write through the page cache).
cmp_backings() {
	local first=$1 n ok=0
	shift
	for n in "$@"; do
		if cmp "${NODE_BACKING[$first]}" "${NODE_BACKING[$n]}"; then
			log "backing files of $first and $n are identical"
		else
			ok=1
			echo "backing files of $first and $n differ" >&2
			cmp -l "${NODE_BACKING[$first]}" "${NODE_BACKING[$n]}" 2>/dev/null |
				awk '{ print int(($1 - 1) / 4096) * 4096 }' | uniq | head -n 10 |
				sed 's/^/  differing 4 KiB block at offset /' >&2
		fi
	done
	return "$ok"
}

# requires_netns: skip unless network namespaces work here.
requires_netns() {
	local probe=ra-probe-$$-$RANDOM
	requires_root
	requires ip
	ip netns add "$probe" >/dev/null 2>&1 || skip "ip netns does not work here"
	if ! ip -n "$probe" link add rap0 type bridge >/dev/null 2>&1; then
		ip netns del "$probe" 2>/dev/null
		skip "cannot create a bridge in a network namespace"
	fi
	ip netns del "$probe" 2>/dev/null
	true
}

# make_netns_cluster NODE...: a namespace per node, named uniquely
# ra-PID-RANDOM-NODE, and a switch namespace ra-PID-RANDOM-sw holding a
# bridge; each node has eth0 (10.213.0.I/24) linked to port NODE_SWITCH_IF
# (vNODE) of the bridge.  Sets NODE_NS and NODE_IP (call it before
# cluster_config) and NETNS_SWITCH.  All of it is deleted by cleanup_netns,
# registered with on_cleanup.
make_netns_cluster() {
	local tag n i=0 ns
	requires_netns
	tag=ra-$$-$RANDOM
	NETNS_SWITCH=$tag-sw
	on_cleanup cleanup_netns "$tag" "$@"
	ip netns add "$NETNS_SWITCH" || hard_error "ip netns add $NETNS_SWITCH"
	ip -n "$NETNS_SWITCH" link add br0 type bridge &&
		ip -n "$NETNS_SWITCH" link set br0 up ||
		hard_error "cannot create the bridge"
	for n in "$@"; do
		i=$((i + 1))
		ns=$tag-$n
		ip netns add "$ns" || hard_error "ip netns add $ns"
		# Both ends are created directly in their namespaces.
		ip -n "$ns" link add eth0 type veth peer name "v$n" netns "$NETNS_SWITCH" &&
			ip -n "$NETNS_SWITCH" link set "v$n" master br0 &&
			ip -n "$NETNS_SWITCH" link set "v$n" up &&
			ip -n "$ns" addr add "10.213.0.$i/24" dev eth0 &&
			ip -n "$ns" link set eth0 up &&
			ip -n "$ns" link set lo up ||
			hard_error "cannot wire namespace $ns"
		NODE_NS[$n]=$ns
		NODE_IP[$n]=10.213.0.$i
		NODE_SWITCH_IF[$n]=v$n
	done
	log "network namespaces $tag-{sw,$(IFS=,; echo "$*")}"
}

# cleanup_netns TAG NODE...: deletes the namespaces make_netns_cluster
# created (their veths and the bridge go with them).  Only after the
# daemons in them have stopped (on_cleanup order sees to that).
cleanup_netns() {
	local tag=$1 n
	shift
	for n in "$@"; do
		ip netns del "$tag-$n" 2>/dev/null
	done
	ip netns del "$tag-sw" 2>/dev/null
	true
}

# link_down NODE / link_up NODE: cut / restore NODE's link at the bridge.
link_down() {
	ip -n "$NETNS_SWITCH" link set "${NODE_SWITCH_IF[$1]}" down ||
		hard_error "cannot set ${NODE_SWITCH_IF[$1]} down"
	log "link of $1 cut"
}
link_up() {
	ip -n "$NETNS_SWITCH" link set "${NODE_SWITCH_IF[$1]}" up ||
		hard_error "cannot set ${NODE_SWITCH_IF[$1]} up"
	log "link of $1 restored"
}

# ackcheck ARGS...: tests/ackcheck.py (see there).
ackcheck() { "$PYTHON" "$TESTS_SRCDIR/ackcheck.py" "$@"; }

# events_bg OUT CMD...: runs CMD (a "replagent ... events" command line) in
# the background, its stdout to OUT and stderr to OUT.err, and waits for
# its first line (the snapshot: what it prints after that are changes
# made after it subscribed); EV_PID is its PID, stopped at cleanup.
EV_PID=
events_bg() {
	local out=$1 i
	shift
	"$@" >"$out" 2>"$out.err" &
	EV_PID=$!
	track_pid "$EV_PID"
	for ((i = 0; i < 100; i++)); do
		[ -s "$out" ] && return 0
		_alive "$EV_PID" || fail "$* ended at once: $(cat "$out.err")"
		sleep 0.1
	done
	fail "$*: no first line within 10 s"
}

# events_match FILE T EXPR: true once a line of FILE (a "replagent events
# --json" stream being written) makes the Python expression EXPR true (e:
# the event, c: its changes as (field, peer or node, from, to) tuples);
# false after T seconds.
_EVENTS_PY='
import json, sys, time
path, t, expr = sys.argv[1], float(sys.argv[2]), sys.argv[3]
end = time.time() + t
while True:
    with open(path) as f:
        for line in f:
            e = json.loads(line)
            c = [(x["field"], x.get("peer", x.get("node")), x["from"], x["to"])
                 for x in e.get("changes", [])]
            if eval(expr):
                sys.exit(0)
    if time.time() > end:
        sys.exit(1)
    time.sleep(0.1)
'
events_match() { "$PYTHON" -c "$_EVENTS_PY" "$1" "$2" "$3"; }

# now_s: wall-clock seconds with fractions (ackcheck.py logs the same clock).
now_s() { date +%s.%N; }

# time_add T DELTA: T + DELTA (seconds with fractions; DELTA may be < 0).
time_add() { awk -v t="$1" -v d="$2" 'BEGIN { printf "%.6f\n", t + d }'; }

# start_writer LOG ARGS...: ackcheck.py write --log LOG ARGS in the
# background (its output in LOG.out); WRITER_PID is ackcheck.py itself, so
# SIGTERM reaches it (it then drains and ends cleanly).  wait_writer waits
# for it, shows its summary and returns its status.
WRITER_PID=
start_writer() {
	local logf=$1
	shift
	"$PYTHON" "$TESTS_SRCDIR/ackcheck.py" write --log "$logf" "$@" >"$logf.out" 2>&1 &
	WRITER_PID=$!
	WRITER_LOG=$logf
	track_pid "$WRITER_PID"
}
wait_writer() {
	local st
	wait "$WRITER_PID"
	st=$?
	untrack_pid "$WRITER_PID"
	cat "$WRITER_LOG.out"
	return "$st"
}

# writer_gap_ms: the writer's longest wait for an acknowledgement, in ms
# (ackcheck.py's END line).
writer_gap_ms() { awk '$1 == "END" { printf "%d\n", $5 * 1000 }' "$WRITER_LOG"; }

# disk_stall_ms NAME...: the longest request the disks of these instances
# logged as slow ("the disk took N ms", replication/iopool.c), 0 if none.
disk_stall_ms() {
	local n
	for n in "$@"; do
		grep -h -o -E 'the disk took [0-9]+ ms' "$(daemon_log "$n")"
	done | awk '$4 > m { m = $4 } END { print m + 0 }'
}

# ---- NBD clients driven line by line ----------------------------------------
# A QEMU that attaches, waits, writes and reads when the test says: an
# nbdclient.py per NAME, fed through a FIFO this shell keeps open.

declare -A CL_FD=() CL_OUT=()
CLIENT_LAST=
# How long `client` waits for an answer (s): a request never answered
# shows as no new line after it.
CLIENT_WAIT=${CLIENT_WAIT:-60}

# client_start NAME NODE: an nbdclient.py on NODE's NBD socket.
client_start() {
	local name=$1 node=$2 fifo=$TESTDIR/client-$1.in out=$TESTDIR/client-$1.out fd
	rm -f "$fifo"
	mkfifo "$fifo" || hard_error "mkfifo $fifo"
	: >"$out"
	"$PYTHON" "$TESTS_SRCDIR/nbdclient.py" --unix "${NODE_NBD_SOCK[$node]}" \
		--export "$CLUSTER_VOL" --timeout 60 <"$fifo" >>"$out" 2>&1 &
	track_pid $!
	exec {fd}>"$fifo"
	CL_FD[$name]=$fd
	CL_OUT[$name]=$out
}

# client NAME CMD...: sends CMD and waits (up to CLIENT_WAIT s) for its
# answer; true if it was "ok".  The answer is in CLIENT_LAST ("" when none
# came in time).
client() {
	local name=$1 out n i
	shift
	out=${CL_OUT[$name]}
	n=$(wc -l <"$out")
	echo "$*" >&"${CL_FD[$name]}" || hard_error "client $name is gone"
	CLIENT_LAST=
	for ((i = 0; i < CLIENT_WAIT * 10; i++)); do
		if [ "$(wc -l <"$out")" -gt "$n" ]; then
			CLIENT_LAST=$(tail -n 1 "$out")
			break
		fi
		sleep 0.1
	done
	[[ $CLIENT_LAST == ok* ]]
}

# client_end NAME: quit, and close our end of its FIFO.
client_end() {
	local fd=${CL_FD[$1]}
	client "$1" quit || true
	exec {fd}>&-
}

# lowest_free_fd PID: the descriptor number a new open() in PID would get.
lowest_free_fd() {
	local n=0 fd
	for fd in $(find "/proc/$1/fd" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -n); do
		[ "$fd" = "$n" ] && n=$((n + 1))
	done
	echo "$n"
}

# ---- metrics (metrics-listen, agent/metrics.c) ---------------------------------

declare -A NODE_METRICS=()

# metrics_on NODE: turns on /metrics for NODE (after cluster_config) on
# 127.0.0.1 and a free port; NODE_METRICS[NODE] is that HOST:PORT.
metrics_on() {
	local n=$1
	NODE_METRICS[$n]=127.0.0.1:$(free_port)
	sed -i "/^\[global\]/a metrics-listen = ${NODE_METRICS[$n]}" "${NODE_CONF[$n]}" ||
		hard_error "cannot edit ${NODE_CONF[$n]}"
}

# metrics_get NODE [PATH]: the body of GET http://NODE_METRICS[NODE]PATH
# (default /metrics) on stdout; fails on an HTTP error.
metrics_get() {
	curl -sS -f --max-time 10 "http://${NODE_METRICS[$1]}${2:-/metrics}"
}

# metric_value FILE SERIES: the value of SERIES (name{labels} exactly as
# replagentd writes it) in the exposition text FILE; fails if absent.
metric_value() {
	awk -v s="$2" 'substr($0, 1, length(s) + 1) == s " " { print $2; f = 1; exit }
		END { exit !f }' "$1"
}

# pid_tcp_listen_ports PID: the TCP ports PID listens on, one a line.
pid_tcp_listen_ports() {
	local inodes
	inodes=$(find "/proc/$1/fd" -mindepth 1 -maxdepth 1 -lname 'socket:*' -printf '%l\n' 2>/dev/null |
		sed 's/socket:\[\(.*\)\]/\1/' | sort -u | tr '\n' ' ')
	local hex
	for hex in $(awk -v inodes=" $inodes" 'NR > 1 && $4 == "0A" && index(inodes, " " $10 " ") {
		n = split($2, a, ":"); print a[n] }' /proc/net/tcp /proc/net/tcp6); do
		echo $((16#$hex))
	done | sort -un
}

# make_tls_certs DIR: a CA and, signed by it, a server certificate for
# localhost/127.0.0.1 and two client certificates, laid out as QEMU's
# tls-creds-x509 dir (ca-cert.pem, server-cert.pem, server-key.pem,
# client-cert.pem, client-key.pem; DN "O=replagent test,CN=client"), plus
# DIR/other/ with a client certificate of DN "O=replagent test,CN=other"
# (and the CA), and DIR/rogue/ with a client certificate of another CA.
make_tls_certs() {
	local d=$1
	requires certtool
	mkdir -p "$d/other" "$d/rogue" || hard_error "mkdir $d"
	_certtool() { certtool "$@" >>"$d/certtool.log" 2>&1 || hard_error "certtool $*"; }
	_cert_tmpl() {	# FILE CN [server]
		{
			echo "organization = replagent test"
			echo "cn = $2"
			echo "expiration_days = 2"
			if [ "${3:-}" = server ]; then
				echo "dns_name = localhost"
				echo "ip_address = 127.0.0.1"
				echo "tls_www_server"
			else
				echo "tls_www_client"
			fi
			echo "encryption_key"
			echo "signing_key"
		} >"$1"
	}
	printf 'cn = replagent test CA\nca\ncert_signing_key\nexpiration_days = 2\n' >"$d/ca.info"
	_certtool --generate-privkey --outfile "$d/ca-key.pem"
	_certtool --generate-self-signed --load-privkey "$d/ca-key.pem" \
		--template "$d/ca.info" --outfile "$d/ca-cert.pem"
	# _cert_make PREFIX CN KIND CA-DIR
	_cert_make() {
		_cert_tmpl "$1.info" "$2" "$3"
		_certtool --generate-privkey --outfile "$1-key.pem"
		_certtool --generate-certificate --load-privkey "$1-key.pem" \
			--load-ca-certificate "$4/ca-cert.pem" --load-ca-privkey "$4/ca-key.pem" \
			--template "$1.info" --outfile "$1-cert.pem"
	}
	_cert_make "$d/server" localhost server "$d"
	_cert_make "$d/client" client client "$d"
	_cert_make "$d/other/client" other client "$d"
	cp "$d/ca-cert.pem" "$d/other/" || hard_error "cp"
	_certtool --generate-privkey --outfile "$d/rogue/ca-key.pem"
	printf 'cn = rogue CA\nca\ncert_signing_key\nexpiration_days = 2\n' >"$d/rogue/ca.info"
	_certtool --generate-self-signed --load-privkey "$d/rogue/ca-key.pem" \
		--template "$d/rogue/ca.info" --outfile "$d/rogue/ca-cert.pem"
	_cert_make "$d/rogue/client" client client "$d/rogue"
	# The client trusts the real server: the rogue dir has our CA, its own
	# key signed by the rogue CA.
	cp "$d/ca-cert.pem" "$d/rogue/ca-cert.pem" || hard_error "cp"
	chmod 0600 "$d"/*-key.pem "$d"/*/*-key.pem
}

# ---- 8. sparse files ------------------------------------------------------

# data_extents FILE: the allocated data of FILE, one "OFFSET LENGTH" line per
# extent (SEEK_DATA / SEEK_HOLE), nothing for a file that is all holes.
data_extents() {
	"$PYTHON" -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
end = os.fstat(fd).st_size
pos = 0
while pos < end:
    try:
        d = os.lseek(fd, pos, os.SEEK_DATA)
    except OSError:
        break
    h = os.lseek(fd, d, os.SEEK_HOLE)
    print(d, h - d)
    pos = h' "$1"
}

# checkpoint_state NAME: from "replagent checkpoint list VOL --json" on
# stdin: complete, incomplete or missing.
checkpoint_state() {
	/usr/bin/python3 -c '
import json, sys
try:
    c = [x for x in json.load(sys.stdin)["checkpoints"] if x["name"] == sys.argv[1]]
except Exception:
    c = None
print(("complete" if c[0]["complete"] else "incomplete") if c else "missing")' "$1"
}

# nbd_map URI [CONTEXT]: "OFFSET LENGTH FLAGS" lines of nbdinfo --map, with
# adjacent extents of the same flags merged (servers split them freely).
nbd_map() {
	timeout 30 nbdinfo --map${2:+=$2} "$1" |
		awk '{ if (n && $3 == f && $1 == o + l) { l += $2 } else { if (n) print o, l, f; o = $1; l = $2; f = $3; n = 1 } }
		     END { if (n) print o, l, f }'
}

# proc_rchar PID: bytes PID has read so far (files and sockets, rchar of
# /proc/PID/io); 0 if gone.
proc_rchar() {
	awk '/^rchar:/ { print $2; f = 1 } END { if (!f) print 0 }' "/proc/$1/io" 2>/dev/null ||
		echo 0
}

# ---- many volumes on a 3-node replagent cluster ---------------------------------
# tests/cluster-replagent-many.sh and bench/scale-bench.sh (which source
# tests/cluster-replagent-lib.sh for rc_cli and rc_wait) make the same set:
# volumes v0..v(N-1), every other one on all three nodes, the others on
# two (the pairs n1-n2, n2-n3, n3-n1 in turn).

# many_nodes_of K: the replica nodes of volume vK (its first is where it is
# made Primary, its second where it fails over to).
many_nodes_of() {
	local k=$1 a b c
	a=$((k % 3 + 1)) b=$(((k + 1) % 3 + 1)) c=$(((k + 2) % 3 + 1))
	if [ $((k % 2)) = 0 ]; then echo "n$a,n$b,n$c"; else echo "n$a,n$b"; fi
}

# many_held N I: how many of v0..v(N-1) have a replica on node nI.
many_held() {
	local k n=0
	for ((k = 0; k < $1; k++)); do
		case ,$(many_nodes_of "$k"), in *,n$2,*) n=$((n + 1)) ;; esac
	done
	echo "$n"
}

# many_create N SIZE: "replagent volume create" of v0..v(N-1) on n1.
many_create() {
	local k
	for ((k = 0; k < $1; k++)); do
		rc_cli 1 volume create "v$k" --size "$2" --nodes "$(many_nodes_of "$k")" >/dev/null ||
			fail "volume create v$k failed"
	done
}

# Over node I's whole status (rc_wait/rc_value): it has all its replicas
# (the count goes where rc_wait takes a volume name: sys.argv[3]), and
# every one is UpToDate with every peer Connected, UpToDate, nothing out
# of sync; MANY_NOT_SYNCED lists (10 of) those that are not.
MANY_ALL_SYNCED='len(vols) == int(sys.argv[3]) and all(x.get("disk") == "UpToDate" and all(q["link"] == "Connected" and q["out_of_sync_bytes"] == 0 and q["peer_disk"] == "UpToDate" for q in x.get("peers", [])) for x in s["volumes"])'
MANY_NOT_SYNCED='[x["name"] for x in s["volumes"] if not (x.get("disk") == "UpToDate" and all(q["link"] == "Connected" and q["out_of_sync_bytes"] == 0 and q["peer_disk"] == "UpToDate" for q in x.get("peers", [])))][:10]'

# many_wait_synced N T I...: within T s, each node I has all its replicas
# of v0..v(N-1), all in sync; else says which are not, and which it lacks,
# and returns 1.
many_wait_synced() {
	local nvol=$1 t=$2 i k names missing
	shift 2
	for i in "$@"; do
		rc_wait "$i" "$t" "$MANY_ALL_SYNCED" "$(many_held "$nvol" "$i")" >/dev/null 2>&1 || {
			names=" $(rc_value "$i" "' '.join(str(n) for n in vols)") " missing=
			for ((k = 0; k < nvol; k++)); do
				case ,$(many_nodes_of "$k"),$names in
				*,n$i,*" v$k "*) ;;
				*,n$i,*) missing+=" v$k" ;;
				esac
			done
			echo "n$i: not in sync: $(rc_value "$i" "$MANY_NOT_SYNCED")" \
				"($(rc_value "$i" 'len(vols)') volumes; lacks:${missing:- none})" >&2
			many_explain "$(rc_value "$i" "' '.join(${MANY_NOT_SYNCED}[:3])")${missing}"
			return 1
		}
	done
}

# many_explain "VOL...": for a failure report, each VOL's status and its
# last log lines on every node that holds a replica of it.
many_explain() {
	local v j
	for v in $1; do
		for j in "${!CL_DIR[@]}"; do
			[ -f "$(rc_log "$j")" ] || continue
			grep -q -E "\[$v\]|volume $v( |$)" "$(rc_log "$j")" || continue
			echo "---- $v on n$j: $(rc_value "$j" "[x for x in s['volumes'] if x['name'] == '$v']")" >&2
			grep -E "\[$v\]|volume $v( |$)" "$(rc_log "$j")" | tail -n 25 >&2
		done
	done
}

# many_promote I T VOL...: "replagent promote VOL..." on node I, one CLI
# process for all of them, again (the refused ones; the promoted answer ok)
# until all are Primary there, for up to T s.  No VOL: nothing to do.
many_promote() {
	local i=$1 t=$2 end
	shift 2
	[ $# -gt 0 ] || return 0
	end=$(($(date +%s) + t))
	until RC_PROMOTE_OUT=$(rc_cli "$i" promote "$@" 2>&1); do
		if [ "$(date +%s)" -ge "$end" ]; then
			echo "n$i: promote still refused after ${t}s: $RC_PROMOTE_OUT" >&2
			return 1
		fi
		sleep 0.2
	done
}
