#!/bin/bash
# demo.sh: the main job of replagent, on this one machine, narrated.
#
# Installs what it needs (apt-get, as root), builds, then runs two replicas
# of one volume as two replagentd daemons replicating over loopback:
# a Primary serving the volume over NBD, a Secondary receiving every write
# synchronously.  It writes through NBD, kills the Secondary with SIGKILL,
# keeps writing, brings it back and shows that only what it missed is
# resynced, then proves both replicas hold the same bytes.  Everything it
# starts is stopped by PID and its temp directory removed at the end.
set -u
cd "$(dirname "$0")" || exit 1
top=$(pwd)
# shellcheck source=tests/setup.sh
. "$top/tests/setup.sh"

[ "$(id -u)" = 0 ] || { echo "demo.sh: run as root (it installs packages)"; exit 1; }
setup_packages || { echo "demo.sh: package installation failed"; exit 1; }
build="$top/build-demo"
setup_build "$top" "$build" || { echo "demo.sh: build failed"; exit 1; }

D=$(mktemp -d /tmp/replagent-demo.XXXXXX)
declare -A PID=()
cleanup() {
	for n in "${!PID[@]}"; do
		kill "${PID[$n]}" 2>/dev/null && wait "${PID[$n]}" 2>/dev/null
	done
	rm -rf "$D"
}
trap cleanup EXIT INT TERM

say() { printf '\n\033[1m>>> %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }
ctl() { local n=$1; shift; "$build/agent/replagent" -s "$D/$n/control.sock" "$@"; }
nbd() { echo "nbd+unix:///vm1-disk?socket=$D/$1/nbd.sock"; }

head -c 32 /dev/urandom >"$D/key"; chmod 600 "$D/key"
for n in alpha beta; do
	mkdir -p "$D/$n"
	cat >"$D/$n/replagent.conf" <<CONF
[global]
node = $n
nbd-socket = $D/$n/nbd.sock
control-socket = $D/$n/control.sock
state-dir = $D/$n/state
pidfile = $D/$n/replagentd.pid
key-file = $D/key
outdate-timeout = 5
[volume vm1-disk]
backing = $D/$n/vm1-disk.img
size = 256M
replica = alpha 127.0.0.1:17789
replica = beta 127.0.0.1:17790
CONF
done

start() {
	"$build/agent/replagentd" -f -c "$D/$1/replagent.conf" >>"$D/$1/log" 2>&1 &
	PID[$1]=$!
	for _ in $(seq 50); do [ -S "$D/$1/control.sock" ] && return; sleep 0.1; done
}
wait_connected() {
	for _ in $(seq 100); do
		ctl alpha status --json 2>/dev/null | grep -q '"link":"Connected"' &&
			ctl alpha status vm1-disk >/dev/null && return
		sleep 0.2
	done
}

say "Two nodes, alpha and beta, each with a replica of the 256 MiB volume vm1-disk"
start alpha; start beta; wait_connected
run "$build/agent/replagent" -s "$D/alpha/control.sock" status

say "Promote alpha: it now serves the volume over NBD; beta is its Secondary"
run "$build/agent/replagent" -s "$D/alpha/control.sock" promote vm1-disk
say "A second Primary is refused while alpha is Primary"
run "$build/agent/replagent" -s "$D/beta/control.sock" promote vm1-disk

say "Write 64 MiB through NBD (qemu-io, QEMU's own NBD client)"
run qemu-io -f raw -c "write -P 0x11 0 64M" -c flush "$(nbd alpha)" | grep -v ops

say "Kill beta with SIGKILL: alpha records it Outdated and keeps serving"
kill -9 "${PID[beta]}"; wait "${PID[beta]}" 2>/dev/null; unset 'PID[beta]'
run qemu-io -f raw -c "write -P 0x22 128M 8M" -c flush "$(nbd alpha)" | grep -v ops
run "$build/agent/replagent" -s "$D/alpha/control.sock" status
echo "(exit code $? = degraded)"

say "beta returns: only the 8 MiB it missed is resynced"
start beta; wait_connected
run "$build/agent/replagent" -s "$D/alpha/control.sock" status
grep -h "resync" "$D/alpha/log" "$D/beta/log" | sed 's/^/    /'

say "Stop both daemons cleanly and compare the replicas byte for byte"
for n in alpha beta; do kill "${PID[$n]}"; wait "${PID[$n]}"; unset "PID[$n]"; done
run sha256sum "$D/alpha/vm1-disk.img" "$D/beta/vm1-disk.img"
if cmp -s "$D/alpha/vm1-disk.img" "$D/beta/vm1-disk.img"; then
	say "The replicas are identical. Done."
else
	say "The replicas differ: this is a bug"; exit 1
fi
