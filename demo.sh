#!/bin/bash
# demo.sh: the main job of replagent, on this one machine, narrated.
#
#   sudo ./demo.sh                 a KVM guest on a 3-node cluster fails over
#   sudo ./demo.sh --replication   just the replication: two replicas, one
#                                  killed and resynced (no cluster stack)
#
# Installs what it needs (apt-get), builds, then makes three cluster nodes
# n1 n2 n3 out of network and mount namespaces on this machine, each running
# real corosync, Pacemaker, libvirtd and replagentd.  It creates a volume
# replicated on all three, writes a small test guest onto it (it counts on
# its disk and prints every value its disk acknowledged), and lets Pacemaker
# run it as a KVM (TCG) guest, as templates/pcs-guest.sh says.  It moves the
# running guest to another node (a live migration), then kills the node the
# guest runs on, and shows Pacemaker fencing it and starting the guest on a
# survivor, which reads back every value it had acknowledged.  It narrates
# with "replagent status" and "pcs status", prints the failover time, and
# takes everything down at the end (also on Ctrl-C): processes by PID,
# namespaces, files.  Nothing leaves this machine; nothing outside the
# namespaces it makes is touched.  Exit status 0 only if every acknowledged
# write survived (1 otherwise, or if a step failed).
#
# For CI (tests/demo-short.sh): DEMO_SHORT=1 runs the same steps with
# shorter waits between them (the guest counts 5 values, not 20, before a
# step); DEMO_BUILD=DIR uses the build in DIR instead of building one.
set -u
cd "$(dirname "$0")" || exit 1
top=$(pwd)
# shellcheck source=tests/setup.sh
. "$top/tests/setup.sh"

mode=cluster
case ${1:-} in
'') ;;
--replication) mode=replication ;;
-h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
*) echo "usage: $0 [--replication]" >&2; exit 64 ;;
esac
[ "$(id -u)" = 0 ] || { echo "demo.sh: run as root (it installs packages, makes namespaces)"; exit 1; }
setup_packages || { echo "demo.sh: package installation failed"; exit 1; }
if [ -n "${DEMO_BUILD:-}" ]; then
	build=$DEMO_BUILD
	[ -x "$build/agent/replagentd" ] || { echo "demo.sh: no replagentd in $build"; exit 1; }
else
	build="$top/build-demo"
	setup_build "$top" "$build" || { echo "demo.sh: build failed"; exit 1; }
fi
# How many values the guest counts before the next step, and the pause
# before the crash.
steps=20 pause=2
[ "${DEMO_SHORT:-0}" = 1 ] && steps=5 pause=0

say() { printf '\n\033[1m>>> %s\033[0m\n' "$*"; }
note() { printf '    %s\n' "$*"; }

# ---- the cluster demo ----------------------------------------------------------

cluster_demo() {
	local on oi to ti t_kill dt last boot2 now_on k lost=

	gc_requires

	# on I CMD...: a command run on node I, shown as typed there.
	on() {
		local i=$1
		shift
		printf '\033[2mn%s#\033[0m %s\n' "$i" "$*" >&2
		cluster_exec "$i" "$@"
	}
	# ra I ARGS...: the replagent command line on node I.
	ra() {
		local i=$1
		shift
		printf '\033[2mn%s#\033[0m replagent %s\n' "$i" "$*" >&2
		rc_cli "$i" "$@"
	}

	say "Three nodes, n1 n2 n3: network namespaces on a private bridge, each with its own /run, /etc/libvirt, /var/lib/pacemaker, ..."
	note "On each: corosync, replagentd (cluster mode, auto-promote = yes), libvirtd with the replagent hook, Pacemaker with fencing."
	note "Setting it all up takes a minute or two (Pacemaker elects its DC, the volume syncs, the guest is written)."
	gc_setup
	note "The volume was made with one command, on n1:"
	note "  replagent volume create $GC_NAME --size 64M --nodes n1,n2,n3"
	note "and the guest put under Pacemaker by templates/pcs-guest.sh: a plain clone of the volume,"
	note "the guest as VirtualDomain (allow-migrate), and these constraints:"
	on 1 pcs constraint 2>/dev/null | sed 's/^/    /'

	say "Pacemaker starts the guest $GC_NAME on one node; its QEMU makes that replica Primary"
	on=$(gc_wait_running 1 120) || { echo "the guest did not start"; exit 1; }
	oi=${on#n}
	wait_counter "$GC_SERIAL" "$steps" 90 || { show_serial "$GC_SERIAL"; exit 1; }
	on 1 pcs status --full 2>/dev/null | sed -n '/^Node List/,/^Migration Summary/p' | grep -v '^Migration Summary'
	ra "$oi" status "$GC_NAME"
	note "The guest's serial port: every COUNTER line is a write its disk acknowledged, on all three replicas"
	tr -d '\r' <"$GC_SERIAL" | grep -E 'COUNTER' | tail -n 3 | sed 's/^/    | /'

	say "Starting the guest by hand on another node is refused by the libvirt hook"
	to=$((oi % 3 + 1))
	on "$to" virsh -c qemu:///system create "$GC_XML" 2>&1 | grep -o 'replagent-hook: .*' | sed 's/^/    /'

	say "Live migration: pcs resource move $GC_NAME n$to (the guest keeps running; the Primary role follows it)"
	on 1 pcs resource move "$GC_NAME" "n$to" 2>&1 | sed 's/^/    /'
	gc_wait_running 1 120 "n$to" >/dev/null || { echo "the migration did not finish"; exit 1; }
	k=$(gc_last)
	wait_counter "$GC_SERIAL" $((k + steps)) 60 || true
	on 1 pcs resource clear "$GC_NAME" >/dev/null 2>&1
	note "booted $(gc_boots) time(s) so far; the counter went on: $(gc_last)"
	grep -h -E 'took the Primary role|handed the Primary role' "$(rc_log "$to")" "$(rc_log "$oi")" |
		sed 's/^.*\] /    replagentd: /' | tail -n 2
	ra "$to" status "$GC_NAME"

	ti=$to
	say "Now the node under the guest, n$ti, dies (every process of it gets SIGKILL, as at a power cut)"
	sleep "$pause"
	cluster_kill_node "$ti" >/dev/null
	t_kill=$(oc_kill_time "n$ti")
	note "waiting for Pacemaker to notice, fence n$ti and start the guest elsewhere..."
	gc_wait_boots 2 120 || { show_serial "$GC_SERIAL"; echo "the guest did not come back"; exit 1; }
	dt=$(rc_elapsed "$t_kill")
	last=$(gc_last_of_boot 1)
	boot2=$(boot_counters "$GC_SERIAL" | sed -n 2p)
	k=$((ti % 3 + 1))
	now_on=$(gc_wait_running "$k" 30) || now_on='?'
	say "The guest runs again on $now_on, $dt s after the crash"
	note "last value it printed on n$ti (acknowledged): COUNTER=$last"
	note "the value it read from its disk at boot on $now_on: BOOT COUNTER=$boot2"
	if [ -n "$last" ] && [ -n "$boot2" ] && [ "$boot2" -ge "$last" ] && serial_clean "$GC_SERIAL"; then
		note "=> every acknowledged write survived the crash"
	else
		note "=> AN ACKNOWLEDGED WRITE WAS LOST: this is a bug"
		lost=1
	fi
	on "$k" pcs status 2>/dev/null | sed -n '/^Node List/,/^Full List/p' | grep -v '^Full List'
	on "$k" stonith_admin --history "n$ti" 2>&1 | grep -m 1 . | sed "s/^/    /"
	ra "${now_on#n}" status "$GC_NAME"
	note "(exit code $?: 1 = degraded, n$ti is gone; it resyncs what it missed when it comes back)"
	say "Tearing everything down (the nodes' processes by PID, the namespaces, the files)"
	[ -z "${lost:-}" ]
}

# ---- the replication demo (no cluster stack) -------------------------------------

replication_demo() {
	local D n
	declare -A PID=()
	D=$(mktemp -d /tmp/replagent-demo.XXXXXX)
	# shellcheck disable=SC2317 # called by the trap
	cleanup() {
		for n in "${!PID[@]}"; do
			kill "${PID[$n]}" 2>/dev/null && wait "${PID[$n]}" 2>/dev/null
		done
		rm -rf "$D"
	}
	trap cleanup EXIT INT TERM
	run() { printf '$ %s\n' "$*"; "$@"; }
	ctl() { local n=$1; shift; "$build/agent/replagent" -s "$D/$n/control.sock" "$@"; }
	nbd() { echo "nbd+unix:///vm1-disk?socket=$D/$1/nbd.sock"; }
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

	head -c 32 /dev/urandom >"$D/key"
	chmod 600 "$D/key"
	for n in alpha beta; do
		mkdir -p "$D/$n"
		cat >"$D/$n/replagent.conf" <<-CONF
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

	say "Two replicas, alpha and beta, of the 256 MiB volume vm1-disk (static mode, loopback)"
	start alpha
	start beta
	wait_connected
	run "$build/agent/replagent" -s "$D/alpha/control.sock" status
	say "Promote alpha: it now serves the volume over NBD; beta is its Secondary"
	run "$build/agent/replagent" -s "$D/alpha/control.sock" promote vm1-disk
	say "A second Primary is refused while alpha is Primary"
	run "$build/agent/replagent" -s "$D/beta/control.sock" promote vm1-disk
	say "Write 64 MiB through NBD (qemu-io, QEMU's own NBD client)"
	run qemu-io -f raw -c "write -P 0x11 0 64M" -c flush "$(nbd alpha)" | grep -v ops
	say "Kill beta with SIGKILL: alpha records it Outdated and keeps serving"
	kill -9 "${PID[beta]}"
	wait "${PID[beta]}" 2>/dev/null
	unset 'PID[beta]'
	run qemu-io -f raw -c "write -P 0x22 128M 8M" -c flush "$(nbd alpha)" | grep -v ops
	run "$build/agent/replagent" -s "$D/alpha/control.sock" status
	echo "(exit code $? = degraded)"
	say "beta returns: only the 8 MiB it missed is resynced"
	start beta
	wait_connected
	run "$build/agent/replagent" -s "$D/alpha/control.sock" status
	grep -h "resync" "$D/alpha/log" "$D/beta/log" | sed 's/^/    /'
	say "Stop both daemons cleanly and compare the replicas byte for byte"
	for n in alpha beta; do
		kill "${PID[$n]}"
		wait "${PID[$n]}"
		unset "PID[$n]"
	done
	run sha256sum "$D/alpha/vm1-disk.img" "$D/beta/vm1-disk.img"
	if cmp -s "$D/alpha/vm1-disk.img" "$D/beta/vm1-disk.img"; then
		say "The replicas are identical. Done."
	else
		say "The replicas differ: this is a bug"
		exit 1
	fi
}

if [ "$mode" = cluster ]; then
	export top_srcdir=$top top_builddir=$build
	set +u	# the harness is written for bash without -u
	# The project's test harness makes the nodes (tests/cluster.sh); its
	# cleanup stops what it started and deletes the namespaces.  Sourced
	# here, not in a function, where its arrays would be local.
	# shellcheck source=tests/guest-cluster-lib.sh
	. "$top/tests/guest-cluster-lib.sh" || exit 1
	cluster_demo
	exit $?
else
	replication_demo
fi
