# shellcheck shell=bash
# Variables set here are used by the scripts that source this file:
# shellcheck disable=SC2034
# tests/guest-cluster-lib.sh: the test guest (tests/guest/) as a KVM guest
# under Pacemaker on a replicated volume, on the nodes of tests/cluster.sh:
# each node runs corosync, replagentd in cluster mode with auto-promote,
# libvirtd (listening on TCP without authentication, for migrations between
# the test's own namespaces only) with the replagent hook, and Pacemaker
# with STONITH (fence_ns); templates/pcs-guest.sh puts the guest under
# Pacemaker as the template says.  Not a test itself; source it (it sources
# ocf-cluster-lib.sh and guest-lib.sh):
#
#   . "${top_srcdir:-$(dirname "$0")/..}/tests/guest-cluster-lib.sh"
#
#   gc_requires            skip (77) unless all of it can run here
#   gc_setup               the whole stack on 3 nodes, the guest created
#                          (enabled: Pacemaker starts it somewhere)
#   gc_libvirt I           virtlogd and libvirtd on node I, the hook installed
#   gc_virsh I ARGS...     virsh -c qemu:///system on node I
#   gc_where I             the node the guest runs on, as Pacemaker on I sees it
#   gc_wait_running I T    until Pacemaker on I shows the guest Started; prints where
#   gc_boots / gc_last     BOOT COUNTER lines so far / the last COUNTER value
#   gc_wait_boots N T      until N BOOT lines are in the serial log
#
# The guest's volume and domain are both GC_NAME (vm1); its disk is the
# template's (<source protocol='nbd' name='vm1'> on /run/replagent/nbd.sock,
# each node's own socket: a symlink in the node's /run); its serial port is
# logged to GC_SERIAL, a file all the nodes share, so that a migrated or
# restarted guest goes on writing into the same log.

# shellcheck source=SCRIPTDIR/ocf-cluster-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/ocf-cluster-lib.sh" || exit 99
# shellcheck source=SCRIPTDIR/guest-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/guest-lib.sh" || exit 99

GC_NAME=vm1
OC_VOL=$GC_NAME		# oc_show and the other ocf-cluster-lib helpers
GC_XML=$TESTDIR/$GC_NAME.xml
GC_SERIAL=$TESTDIR/serial-$GC_NAME.log
GC_TEMPLATE=$top_srcdir/templates/pcs-guest.sh

gc_requires() {
	oc_requires
	requires libvirtd virtlogd virsh qemu-system-x86_64 qemu-io nasm attrd_updater
	id libvirt-qemu >/dev/null 2>&1 || skip "requires the libvirt-qemu user"
	[ -r /usr/lib/ocf/resource.d/heartbeat/VirtualDomain ] ||
		skip "requires ocf:heartbeat:VirtualDomain (resource-agents)"
	[ -x "$HOOK" ] || hard_error "$HOOK missing or not executable"
}

# gc_virsh I ARGS...: virsh on node I (its own libvirtd).
gc_virsh() {
	local i=$1
	shift
	cluster_exec "$i" virsh -q -c qemu:///system "$@"
}

# gc_libvirt I: see the top.  libvirt reads its hooks at start: the hook
# is in place first.
gc_libvirt() {
	local i=$1 d=${CL_DIR[$1]} k
	printf '\n# added by %s\nlisten_tls = 0\nlisten_tcp = 1\nauth_tcp = "none"\n' \
		"$TEST_NAME" >>"$d/libvirt/etc/libvirtd.conf" || hard_error "cannot write libvirtd.conf"
	mkdir -p "$d/libvirt/etc/hooks/qemu.d" "$d/hook-state" || hard_error "mkdir hooks"
	rm -f "$d/libvirt/etc/hooks/qemu"
	cat >"$d/hook.conf" <<-EOF || hard_error "cannot write $d/hook.conf"
		# written by $TEST_NAME for node n$i
		REPLAGENT=$REPLAGENT
		REPLAGENT_SOCKET=${RC_CTL[i]}
		REPLAGENT_NBD_SOCKET=/run/replagent/nbd.sock
		REPLAGENT_CONF=/nonexistent
		REPLAGENT_HOOK_STATE=$d/hook-state
		REPLAGENT_HOOK_SYSLOG=no
	EOF
	printf '#!/bin/sh\nREPLAGENT_HOOK_CONF=%q exec %q "$@"\n' "$d/hook.conf" "$HOOK" \
		>"$d/libvirt/etc/hooks/qemu.d/replagent" &&
		chmod 0755 "$d/libvirt/etc/hooks/qemu.d/replagent" || hard_error "cannot install the hook"
	cluster_start_daemon "$i" virtlogd virtlogd
	cluster_start_daemon "$i" libvirtd libvirtd --listen
	for ((k = 0; k < 300; k++)); do
		CLUSTER_EXEC_TIMEOUT=5 gc_virsh "$i" version >/dev/null 2>&1 && return 0
		cluster_node_alive "$i" || fail "n$i died while libvirtd started"
		sleep 0.1
	done
	tail -n 20 "$d/log/libvirtd.out" >&2
	fail "libvirtd on n$i not answering after 30 s"
}

# gc_nbd_link I: /run/replagent/nbd.sock in node I's /run is its
# replagentd's NBD socket (the path the domain XML names on every node).
gc_nbd_link() {
	local d=${CL_DIR[$1]}
	mkdir -p "$d/run/replagent" && ln -sfn "${RC_NBD[$1]}" "$d/run/replagent/nbd.sock" ||
		hard_error "cannot link n$1's NBD socket"
}

# gc_setup: see the top.
gc_setup() {
	local i disk
	RC_GLOBAL_EXTRA="auto-promote = yes"
	rc_setup 3
	for i in 1 2 3; do
		oc_install "$i"
		gc_nbd_link "$i"
	done
	rc_cli 1 volume create "$GC_NAME" --size 64M --nodes n1,n2,n3 || fail "volume create failed"
	rc_wait_all 30 "$RC_SYNCED" "$GC_NAME" || fail "$GC_NAME: replicas not in sync within 30 s"
	# The guest's system, through n1 (which auto-promotes for the writer
	# and demotes after it).
	build_guest "$(rc_uri 1 "$GC_NAME")"
	rc_wait 1 10 'v["role"] == "Secondary"' "$GC_NAME" || fail "n1 did not auto-demote"
	rc_wait_all 30 "$RC_SYNCED" "$GC_NAME" || fail "$GC_NAME: not in sync after the guest was written"
	# The domain: the template, its own disk element, the shared serial log.
	disk=$(sed -n '/<disk /,/<\/disk>/p' "$top_srcdir/templates/domain-vm1.xml")
	template_domain "$GC_XML" "$GC_NAME" "$disk" "$GC_SERIAL"
	: >"$GC_SERIAL"
	chmod 0644 "$GC_XML" "$GC_SERIAL"
	for i in 1 2 3; do
		gc_libvirt "$i"
	done
	oc_pcmk_up
	log "corosync, replagentd (auto-promote), libvirtd, Pacemaker with STONITH up on 3 nodes"
	cluster_exec 1 env VOLUME="$GC_NAME" GUEST="$GC_NAME" GUEST_XML="$GC_XML" \
		MIGRATION_TRANSPORT=tcp REPLAGENT_CLI="$REPLAGENT" sh "$GC_TEMPLATE" \
		>"$TESTDIR/pcs-guest.out" 2>&1 ||
		fail "templates/pcs-guest.sh failed: $(cat "$TESTDIR/pcs-guest.out")"
}

# gc_where I: where Pacemaker on node I shows the guest Started ("" if not).
gc_where() {
	cluster_pcmk_state "$1" 2>/dev/null |
		awk -v r="$GC_NAME" '$1 == "rsc" && $2 == r && $3 == "Started" { print $4 }'
}

_gc_started() {
	CL_LAST=$(cluster_pcmk_state "$1" 2>&1)
	[ -n "$(gc_where "$1")" ] && { [ -z "$2" ] || [ "$(gc_where "$1")" = "$2" ]; }
}

# gc_wait_running I T [NODE]: until Pacemaker on I shows the guest Started
# (on NODE, if given); prints where.
gc_wait_running() {
	_cl_wait "$GC_NAME Started${3:+ on $3} (seen from n$1)" "$2" _gc_started "$1" "${3:-}" ||
		return 1
	gc_where "$1"
}

gc_boots() { boot_counters "$GC_SERIAL" | wc -l; }
gc_last() { last_counter "$GC_SERIAL"; }

# gc_last_of_boot N: the last COUNTER the guest printed in its Nth run
# (before the N+1th BOOT line): what it had acknowledged when it died.
gc_last_of_boot() {
	tr -d '\r' <"$GC_SERIAL" | awk -v n="$1" '
		/BOOT COUNTER=/ { boots++; next }
		boots == n && /^COUNTER=[0-9]+$/ { sub(/^COUNTER=/, ""); last = $0 }
		END { print last }'
}

# gc_wait_boots N T: until the serial log has N BOOT lines.
gc_wait_boots() {
	local end=$(($(date +%s) + $2))
	until [ "$(gc_boots)" -ge "$1" ]; do
		[ "$(date +%s)" -ge "$end" ] && return 1
		serial_clean "$GC_SERIAL" || return 1
		sleep 0.2
	done
}
