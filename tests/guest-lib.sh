# shellcheck shell=bash
# tests/guest-lib.sh: helpers for the tests that run the test guest
# (tests/guest/) under the private libvirtd with the replagent hook.
# Source it after tests/functions.sh.  Not a test itself.
#
#   build_guest URI                 the guest and a counter 0 onto a volume
#   hook_setup ETC                  LIBVIRT_SETUP: installs the hook
#   hook_for NODE_CTL NODE_NBD      which daemon the hook asks
#   template_domain OUT NAME DISK_XML SERIAL [UUID]
#   define_domain XMLFILE           virsh define, undefined by the cleanup
#   counters FILE / last_counter FILE / boot_counters FILE
#   wait_counter FILE MIN TIMEOUT   serial_clean FILE

GUEST_DIR=${top_srcdir:?source tests/functions.sh first}/tests/guest
HOOK=$top_srcdir/libvirt-hooks/qemu
HOOK_CONF=$TESTDIR/hook.conf

# build_guest URI: tests/guest/build.sh onto the NBD export URI.
build_guest() {
	"$GUEST_DIR/build.sh" "$1" || fail "cannot write the test guest onto $1"
}

# hook_setup ETC: installs the hook into the private /etc/libvirt copy
# ETC as hooks/qemu.d/replagent.  libvirt hands hooks a cleared
# environment, so the installed file is a two-line wrapper that points the
# real hook at $HOOK_CONF and runs it.  (Use as LIBVIRT_SETUP.)
hook_setup() {
	local d=$1/hooks/qemu.d
	mkdir -p "$d" || return 1
	rm -f "$1/hooks/qemu"
	printf '#!/bin/sh\nREPLAGENT_HOOK_CONF=%q exec %q "$@"\n' "$HOOK_CONF" "$HOOK" \
		>"$d/replagent" && chmod 0755 "$d/replagent"
}

# hook_for CONTROL_SOCKET NBD_SOCKET: the hook asks this daemon (the node
# the private libvirtd plays now).
hook_for() {
	cat >"$HOOK_CONF" <<-EOF
		# written by $TEST_NAME
		REPLAGENT=$REPLAGENT
		REPLAGENT_SOCKET=$1
		REPLAGENT_NBD_SOCKET=$2
		REPLAGENT_CONF=/nonexistent
		REPLAGENT_HOOK_STATE=$TESTDIR/hook-state
		REPLAGENT_HOOK_SYSLOG=no
	EOF
}

# template_domain OUT NAME DISK_XML SERIAL [UUID]: templates/domain-vm1.xml
# with the domain name NAME, its <disk> element replaced by DISK_XML (as
# "replagent disk-xml" prints it), the serial log at SERIAL and, if given,
# a <uuid> (to define the same domain again with another disk).
template_domain() {
	local out=$1 name=$2 disk=$3 serial=$4 uuid=${5:-}
	awk -v disk="$disk" -v name="$name" -v serial="$serial" -v uuid="$uuid" '
		/<disk / { skip = 1; print disk; next }
		skip && /<\/disk>/ { skip = 0; next }
		skip { next }
		/<name>vm1<\/name>/ {
			sub(/vm1/, name)
			if (uuid != "") { print; print "  <uuid>" uuid "</uuid>"; next }
		}
		/vm1-serial.log/ { sub(/\/var\/log\/libvirt\/qemu\/vm1-serial.log/, serial) }
		{ print }
	' "$top_srcdir/templates/domain-vm1.xml" >"$out" || hard_error "cannot write $out"
	grep -q "<name>$name</name>" "$out" && grep -q -F "$serial" "$out" ||
		hard_error "template_domain: templates/domain-vm1.xml has changed shape"
}

# define_domain XMLFILE: virsh define; destroyed and undefined at the end.
define_domain() {
	local name
	name=$(sed -n 's:.*<name>\(.*\)</name>.*:\1:p' "$1" | head -n 1)
	virsh_ns define "$1" >/dev/null || fail "virsh define $1 failed"
	on_cleanup _undefine_domain "$name"
}

_undefine_domain() {
	virsh_ns destroy "$1" >/dev/null 2>&1
	virsh_ns undefine "$1" >/dev/null 2>&1
	true
}

# counters FILE: the values of the COUNTER= lines of a serial log, in order.
counters() {
	tr -d '\r' <"$1" 2>/dev/null | sed -n 's/^COUNTER=\([0-9][0-9]*\)$/\1/p'
}

# last_counter FILE: the last COUNTER value (empty if none).
last_counter() { counters "$1" | tail -n 1; }

# boot_counters FILE: the values of the BOOT COUNTER= lines, in order.
boot_counters() {
	tr -d '\r' <"$1" 2>/dev/null | sed -n 's/.*BOOT COUNTER=\([0-9][0-9]*\)$/\1/p'
}

# wait_counter FILE MIN TIMEOUT: until a COUNTER >= MIN is printed.
wait_counter() {
	local end=$(($(date +%s) + $3)) c
	while :; do
		c=$(last_counter "$1")
		[ -n "$c" ] && [ "$c" -ge "$2" ] && return 0
		serial_clean "$1" || return 1
		[ "$(date +%s)" -ge "$end" ] && return 1
		sleep 0.2
	done
}

# serial_clean FILE: the guest reported no lost write, no corrupt record,
# no missing BIOS service.
serial_clean() {
	! grep -a -q -E 'COUNTER-LOST|COUNTER-CORRUPT|NO-EDD|LOAD-ERROR' "$1" 2>/dev/null
}

# show_serial FILE [NAME]: the end of a serial log and of the QEMU log, on
# stderr (before a failure).
show_serial() {
	echo "---- last lines of $1 ----" >&2
	tr -d '\r' <"$1" 2>/dev/null | tail -n 15 >&2
	if [ -n "${2:-}" ] && [ -f "$LIBVIRT_DIR/log/qemu/$2.log" ]; then
		echo "---- qemu log of $2 ----" >&2
		tail -n 15 "$LIBVIRT_DIR/log/qemu/$2.log" >&2
	fi
}

# check_sequence FILE FROM: the COUNTER lines of FILE from line FROM on
# (1-based, over the COUNTER lines only) go up by exactly one each time.
check_sequence() {
	counters "$1" | tail -n +"$2" | awk '
		NR > 1 && $1 != prev + 1 { printf "COUNTER=%s after COUNTER=%s\n", $1, prev; bad = 1 }
		{ prev = $1 }
		END { exit bad }'
}
