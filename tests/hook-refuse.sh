#!/bin/bash
# tests/hook-refuse.sh: the libvirt hook refuses to start a domain on a
# replica that must not be written, with its reason in virsh's error, and
# lets it start on the Primary.
#
# Three replagentd in static mode on 127.0.0.1 (a, b, c) replicate the
# volume vm1; a is Primary and holds the test guest (tests/guest/).  One
# private libvirtd, with the hook installed in its /etc/libvirt/hooks/qemu.d,
# plays each node in turn: the hook is pointed at that node's daemon and the
# domain (templates/domain-vm1.xml) is redefined with its disk on that
# node's NBD socket.
#   1. b (Secondary, UpToDate): "virsh start" fails, the error says Secondary.
#   2. a (Primary): it starts; the guest counts.
#   3. c is killed while the guest writes (a records c Outdated, and tells
#      b); the domain is destroyed and a is killed (a crashed node), then b
#      is stopped too.  a and c restart: a tells c that it is Outdated, and
#      c stays so (a crashed as Primary, so it is no resync source for a
#      Secondary; b, UpToDate, would resync c at once without a Primary).
#      "virsh start" on c fails, the error says Outdated.
#   4. b returns and is promoted; on b the domain starts and the guest goes
#      on from at least the last counter value it printed on a.
# shellcheck source=SCRIPTDIR/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99
# shellcheck source=SCRIPTDIR/guest-lib.sh
. "$top_srcdir/tests/guest-lib.sh" || exit 99

requires_root
requires libvirtd virtlogd virsh qemu-system-x86_64 qemu-io nasm unshare nsenter timeout
id libvirt-qemu >/dev/null 2>&1 || skip "requires the libvirt-qemu user"
requires_replagentd
requires_replagent

DOM=vm1
UUID=$(cat /proc/sys/kernel/random/uuid) || hard_error "no uuid"
serial=$TESTDIR/serial.log

cluster_config -v vm1 -s 64M -t 3 a b c
for n in a b c; do start_node "$n"; done
for n in a b c; do
	wait_status "$n" 30 'all(x["link"] == "Connected" and x["out_of_sync_bytes"] == 0 for x in p.values())' ||
		fail "$n: replicas not all connected"
done
promote a
build_guest "${NODE_NBD_URI[a]}"
wait_status a 10 'all(x["out_of_sync_bytes"] == 0 for x in p.values())' || fail "replicas behind"

LIBVIRT_SETUP() { hook_setup "$1"; }
hook_for "${NODE_CTL[a]}" "${NODE_NBD_SOCK[a]}"
start_private_libvirtd

# on_node NODE: the private libvirtd is NODE now: the hook asks NODE's
# daemon, the domain's disk is on NODE's NBD socket.
on_node() {
	local disk
	hook_for "${NODE_CTL[$1]}" "${NODE_NBD_SOCK[$1]}"
	disk=$(ra_cli "$1" disk-xml vm1) || fail "disk-xml on $1 failed"
	template_domain "$TESTDIR/domain-$1.xml" "$DOM" "$disk" "$serial" "$UUID"
	virsh_ns define "$TESTDIR/domain-$1.xml" >/dev/null || fail "virsh define on $1 failed"
}

# start_refused NODE TEXT: "virsh start" fails on NODE and its error holds
# the hook's message, which contains TEXT; the domain is not running.
start_refused() {
	local out st
	on_node "$1"
	out=$(virsh_ns start "$DOM" 2>&1)
	st=$?
	[ "$st" != 0 ] || fail "virsh start on $1 ($2) succeeded"
	log "virsh start on $1 refused (exit $st): $out"
	grep -q -F "replagent-hook: $DOM: volume vm1" <<<"$out" ||
		fail "the hook's message is not in virsh's error: $out"
	grep -q -F -- "$2" <<<"$out" || fail "virsh's error does not say '$2': $out"
	[ "$(virsh_ns domstate "$DOM" 2>/dev/null)" = "shut off" ] ||
		fail "domain not shut off after the refusal: $(virsh_ns domstate "$DOM" 2>&1)"
}

on_cleanup _undefine_domain "$DOM"

# 1. a Secondary
start_refused b "is Secondary on this node, not Primary"

# 2. the Primary
on_node a
virsh_ns start "$DOM" >/dev/null || fail "virsh start on the Primary a failed"
wait_counter "$serial" 20 60 || { show_serial "$serial" "$DOM"; fail "no COUNTER=20 on a"; }
log "the guest runs on a: COUNTER=$(last_counter "$serial")"

# 3. an Outdated replica
kill_node c
wait_status a 20 'p["c"]["peer_disk"] == "Outdated"' || fail "a did not record c as Outdated"
wait_status b 20 'p["c"]["peer_disk"] == "Outdated"' || fail "b did not hear that c is Outdated"
before=$(last_counter "$serial")
wait_counter "$serial" $((before + 10)) 30 ||
	{ show_serial "$serial" "$DOM"; fail "the guest stopped writing after c was killed"; }
virsh_ns destroy "$DOM" >/dev/null || fail "virsh destroy on a failed"
last=$(last_counter "$serial")
kill_node a
log "a crashed after COUNTER=$last"
kill_node b
start_node a
start_node c
wait_status c 30 'v["disk"] == "Outdated" and p["a"]["link"] == "Connected"' ||
	fail "c did not come back Outdated"
start_refused c "the local replica is Outdated"

# 4. failover to b
start_node b
wait_status b 30 'v["disk"] == "UpToDate" and p["a"]["link"] == "Connected" and p["c"]["link"] == "Connected"' ||
	fail "b did not come back UpToDate, Connected to a and c"
promote b
on_node b
nboot=$(boot_counters "$serial" | wc -l)
virsh_ns start "$DOM" >/dev/null || fail "virsh start on the new Primary b failed"
end=$(($(date +%s) + 60))
until [ "$(boot_counters "$serial" | wc -l)" -gt "$nboot" ]; do
	[ "$(date +%s)" -ge "$end" ] && { show_serial "$serial" "$DOM"; fail "no BOOT line on b"; }
	sleep 0.2
done
boot=$(boot_counters "$serial" | tail -n 1)
log "on b: BOOT COUNTER=$boot (last acknowledged on a: $last)"
[ "$boot" -ge "$last" ] || fail "BOOT COUNTER=$boot < $last: an acknowledged write was lost in the failover"
[ "$boot" -le $((last + 1)) ] || fail "BOOT COUNTER=$boot > $last + 1"
wait_counter "$serial" $((boot + 10)) 60 || { show_serial "$serial" "$DOM"; fail "no counting on b"; }
serial_clean "$serial" || { show_serial "$serial" "$DOM"; fail "the guest reported an error"; }
virsh_ns destroy "$DOM" >/dev/null || fail "virsh destroy on b failed"
for n in a b c; do replagentd_alive "$n" || fail "node $n died"; done
log "PASS"
