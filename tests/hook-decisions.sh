#!/bin/bash
# tests/hook-decisions.sh: the libvirt hook's decisions, from a table,
# without libvirt or a daemon.  A stand-in for the replagent CLI answers
# "show VOL" with a line the table gives; the hook gets a domain XML on
# stdin and the operation in its arguments, as libvirt passes them.  Each
# row: operation, the volume states, the expected exit status and a piece of
# the expected message.  Also: disks that are not replagent's are not asked
# about, the NBD socket is recognised through a symlink and from
# replagentd's configuration, hook.conf is read, a daemon that does not
# answer is a refusal, and the hook never writes to stdout (libvirt would
# take it as a new domain XML on migrate).  An incoming migration opens the
# volume's migration window ("window open VOL"), a refused window refuses
# the migration, a "release end" of an incoming domain closes it; with
# auto-promote a Secondary may start the domain unless a peer is Primary.
# Every row runs with xmllint and with the awk fallback.
# shellcheck source=SCRIPTDIR/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires timeout awk sed find
HOOK=$top_srcdir/libvirt-hooks/qemu
[ -x "$HOOK" ] || hard_error "$HOOK missing or not executable"

SOCK=$TESTDIR/run/nbd.sock
mkdir -p "$TESTDIR/run" "$TESTDIR/answers" && : >"$SOCK"
ln -s run "$TESTDIR/varrun"
CALLS=$TESTDIR/calls

# The stand-in CLI: "-s SOCKET show VOL" prints answers/VOL, or fails like
# the real one for an unknown volume; answers/VOL.sleep makes it hang.
# "-s SOCKET window open|close VOL" succeeds unless answers/VOL.nowindow
# exists (then it fails with its text).
cat >"$TESTDIR/fake-replagent" <<EOF
#!/bin/sh
echo "\$*" >>"$CALLS"
if [ "\$1" = -s ] && [ "\$3" = window ]; then
	[ -f "$TESTDIR/answers/\$5.nowindow" ] || exit 0
	cat "$TESTDIR/answers/\$5.nowindow" >&2
	exit 1
fi
if [ "\$1" = -s ] && [ "\$3" = can-promote ]; then
	[ -f "$TESTDIR/answers/\$4.nopromote" ] || exit 0
	cat "$TESTDIR/answers/\$4.nopromote" >&2
	exit 1
fi
[ "\$1" = -s ] && [ "\$3" = show ] || { echo "fake: bad call: \$*" >&2; exit 64; }
[ -f "$TESTDIR/answers/\$4.sleep" ] && sleep 30
[ -f "$TESTDIR/answers/\$4" ] || { echo "replagent: unknown volume \$4" >&2; exit 1; }
cat "$TESTDIR/answers/\$4"
EOF
chmod +x "$TESTDIR/fake-replagent"

# answer VOL ROLE DISK [UP FROZEN CONNECTED AUTO_PROMOTE PEER_PRIMARY]
answer() {
	echo "role=$2 disk=$3 up=${4:-yes} frozen=${5:-no} clients=0 peers=1 connected=${6:-1}" \
		"uptodate_peers=1 window=none auto_promote=${7:-no} peer_primary=${8:--}" \
		>"$TESTDIR/answers/$1"
}

# domain_with SOCKET VOL...: a domain XML (as libvirt formats it) with one
# replagent disk per VOL on SOCKET, a local file disk and a cdrom.
UUID=0b6c1a2e-7d3f-4b8e-9a51-3c0d2e4f5a6b
domain_with() {
	local sock=$1 v i=0
	shift
	echo "<domain type='qemu'>"
	echo "  <name>vm1</name>"
	echo "  <uuid>$UUID</uuid>"
	echo "  <devices>"
	echo "    <disk type='file' device='disk'><source file='/var/lib/x.img'/><target dev='sda' bus='sata'/></disk>"
	for v in "$@"; do
		i=$((i + 1))
		cat <<-EOF
			    <disk type='network' device='disk'>
			      <driver name='qemu' type='raw' cache='none' io='native' discard='unmap'/>
			      <source protocol='nbd' name='$v'>
			        <host transport='unix' socket='$sock'/>
			        <reconnect delay='10'/>
			      </source>
			      <target dev='vd$(printf "\\x$(printf %x $((96 + i)))")' bus='virtio'/>
			    </disk>
		EOF
	done
	echo "    <disk type='network' device='disk'><source protocol='nbd' name='other'><host name='10.0.0.9' port='10809'/></source><target dev='vdz' bus='virtio'/></disk>"
	echo "  </devices>"
	echo "</domain>"
}

# run_hook OP SUBOP XMLFILE [ENV...]: sets ST, OUT (stdout), ERR (stderr).
run_hook() {
	local op=$1 sub=$2 xml=$3
	shift 3
	: >"$CALLS"
	env -i PATH="$PATH" REPLAGENT="$TESTDIR/fake-replagent" REPLAGENT_SOCKET="$TESTDIR/ctl.sock" \
		REPLAGENT_NBD_SOCKET="$SOCK" REPLAGENT_HOOK_STATE="$TESTDIR/state" \
		REPLAGENT_HOOK_CONF=/nonexistent REPLAGENT_CONF=/nonexistent REPLAGENT_HOOK_SYSLOG=no \
		REPLAGENT_HOOK_XMLLINT="$XMLLINT" TMPDIR="$TESTDIR" "$@" \
		timeout 30 "$HOOK" vm1 "$op" "$sub" - <"$xml" >"$TESTDIR/out" 2>"$TESTDIR/err"
	ST=$?
	OUT=$(cat "$TESTDIR/out")
	ERR=$(cat "$TESTDIR/err")
}

# expect ST MSG WHAT: the last run_hook ended with ST, its stderr contains
# MSG (empty: no stderr at all), it wrote nothing to stdout.
expect() {
	[ "$ST" = "$1" ] || fail "$3 [$XMLLINT]: exit $ST, expected $1 (stderr: $ERR)"
	[ -z "$OUT" ] || fail "$3 [$XMLLINT]: wrote to stdout: $OUT"
	if [ -z "$2" ]; then
		[ -z "$ERR" ] || fail "$3 [$XMLLINT]: unexpected stderr: $ERR"
	else
		grep -q -F -- "$2" <<<"$ERR" || fail "$3 [$XMLLINT]: stderr lacks '$2': $ERR"
		[ "$(wc -l <<<"$ERR")" = 1 ] || fail "$3 [$XMLLINT]: more than one line on stderr: $ERR"
	fi
	log "ok [$XMLLINT] $3${ERR:+: $ERR}"
}

domain_with "$SOCK" vm1 >"$TESTDIR/one.xml"
domain_with "$TESTDIR/varrun/nbd.sock" vm1 >"$TESTDIR/link.xml"
domain_with "$SOCK" vm1 vm2 >"$TESTDIR/two.xml"
domain_with "$TESTDIR/elsewhere.sock" vm1 >"$TESTDIR/foreign.xml"
# double quotes, attributes in another order, all on one line
tr -d '\n' <"$TESTDIR/one.xml" | sed "s/'/\"/g; s/protocol=\"nbd\" name=\"vm1\"/name=\"vm1\" protocol=\"nbd\"/" \
	>"$TESTDIR/dq.xml"
sed "s/ name='vm1'//" "$TESTDIR/one.xml" >"$TESTDIR/noname.xml"

# The table: OPERATION SUBOP ROLE DISK UP FROZEN CONNECTED EXIT MESSAGE
TABLE="
prepare begin Primary   UpToDate     yes no  1 0 -
start   begin Primary   UpToDate     yes no  0 0 -
prepare begin Secondary UpToDate     yes no  1 1 not Primary
start   begin Secondary UpToDate     yes no  1 1 not Primary
prepare begin Primary   Outdated     yes no  0 1 replica is Outdated
prepare begin Secondary Inconsistent yes no  1 1 replica is Inconsistent
prepare begin Primary   UpToDate     yes yes 0 1 quorum lost
prepare begin Primary   UpToDate     no  no  0 1 is down
migrate begin Secondary UpToDate     yes no  1 0 -
migrate begin Secondary UpToDate     yes no  0 1 not connected
migrate begin Secondary Outdated     yes no  1 1 cannot receive
migrate begin Secondary UpToDate     yes yes 1 1 quorum lost
migrate begin Secondary UpToDate     no  no  1 1 is down
migrate begin Primary   UpToDate     yes no  0 0 -
release end   Secondary Outdated     no  yes 0 0 -
stopped end   Secondary Outdated     no  yes 0 0 -
reconnect begin Secondary Outdated   no  yes 0 0 -
attach  begin Secondary Outdated     no  yes 0 0 -
restore begin Secondary Outdated     no  yes 0 0 -
started begin Secondary Outdated     no  yes 0 0 -
"

run_table() {
	local op sub role disk up frozen conn st msg
	while read -r op sub role disk up frozen conn st msg; do
		[ -n "$op" ] || continue
		rm -rf "$TESTDIR/state"
		answer vm1 "$role" "$disk" "$up" "$frozen" "$conn"
		run_hook "$op" "$sub" "$TESTDIR/one.xml"
		[ "$msg" = - ] && msg=
		expect "$st" "$msg" "$op $sub on $role/$disk up=$up frozen=$frozen connected=$conn"
	done <<<"$TABLE"
}

run_others() {
	rm -rf "$TESTDIR/state"
	# Not replagent's disks: nothing asked, whatever the volume's state.
	answer vm1 Secondary Outdated
	run_hook prepare begin "$TESTDIR/foreign.xml"
	expect 0 "" "a domain without replagent disks"
	[ ! -s "$CALLS" ] || fail "the CLI was called for a domain without replagent disks"

	# The socket through a symlink (/var/run -> /run); double quotes.
	answer vm1 Secondary UpToDate
	run_hook start begin "$TESTDIR/link.xml"
	expect 1 "not Primary" "the socket path through a symlink"
	run_hook start begin "$TESTDIR/dq.xml"
	expect 1 "not Primary" "double-quoted attributes on one line"
	run_hook start begin "$TESTDIR/noname.xml"
	expect 1 "names no export" "a disk on the socket without an export name"

	# Two disks: the second one is refused, by name.
	answer vm1 Primary UpToDate
	answer vm2 Secondary UpToDate
	run_hook prepare begin "$TESTDIR/two.xml"
	expect 1 "volume vm2 is Secondary" "two disks, the second Secondary"
	grep -q "show vm1" "$CALLS" && grep -q "show vm2" "$CALLS" || fail "not both volumes asked"
	answer vm2 Primary UpToDate
	run_hook prepare begin "$TESTDIR/two.xml"
	expect 0 "" "two disks, both Primary"

	# Unknown volume, daemon silent.
	rm -f "$TESTDIR/answers/vm1"
	run_hook prepare begin "$TESTDIR/one.xml"
	expect 1 "unknown volume vm1" "an unknown volume"
	answer vm1 Primary UpToDate
	: >"$TESTDIR/answers/vm1.sleep"
	run_hook prepare begin "$TESTDIR/one.xml" REPLAGENT_TIMEOUT=1
	expect 1 "did not answer within 1s" "a daemon that does not answer"
	rm -f "$TESTDIR/answers/vm1.sleep"

	# An incoming migration: prepare/start on the destination of a domain
	# that "migrate begin" allowed are checked as incoming (Secondary is
	# fine), until "started begin" or "release end" drops the mark.
	answer vm1 Secondary UpToDate yes no 1
	for end in "started begin" "release end"; do
		run_hook migrate begin "$TESTDIR/one.xml"
		expect 0 "" "migrate begin on a connected UpToDate Secondary"
		run_hook prepare begin "$TESTDIR/one.xml"
		expect 0 "" "prepare begin of the incoming domain"
		run_hook start begin "$TESTDIR/one.xml"
		expect 0 "" "start begin of the incoming domain"
		# shellcheck disable=SC2086 # two words
		run_hook $end "$TESTDIR/one.xml"
		expect 0 "" "$end of the incoming domain"
		run_hook start begin "$TESTDIR/one.xml"
		expect 1 "not Primary" "a plain start after $end"
	done
	# The window: opened by migrate begin on a Secondary (not on a
	# Primary), closed by the release end of an incoming domain, and a
	# window that cannot open refuses the migration.
	run_hook migrate begin "$TESTDIR/one.xml"
	expect 0 "" "migrate begin opens the window"
	grep -q -F -- "window open vm1" "$CALLS" || fail "migrate begin did not open the window: $(cat "$CALLS")"
	run_hook release end "$TESTDIR/one.xml"
	expect 0 "" "release end of an incoming domain"
	grep -q -F -- "window close vm1" "$CALLS" || fail "release end did not close the window: $(cat "$CALLS")"
	run_hook release end "$TESTDIR/one.xml"
	grep -q -F -- "window" "$CALLS" && fail "release end of a domain that did not come in touched a window"
	echo "replagent: window open vm1: not in sync with the Primary n1 (differs)" \
		>"$TESTDIR/answers/vm1.nowindow"
	run_hook migrate begin "$TESTDIR/one.xml"
	expect 1 "cannot open the migration window: replagent: window open vm1: not in sync" \
		"migrate begin when the window cannot open"
	rm -f "$TESTDIR/answers/vm1.nowindow" "$TESTDIR/state/incoming-$UUID"
	answer vm1 Primary UpToDate yes no 1
	run_hook migrate begin "$TESTDIR/one.xml"
	expect 0 "" "migrate begin on a Primary"
	grep -q -F -- "window" "$CALLS" && fail "migrate begin on a Primary opened a window"
	rm -f "$TESTDIR/state/incoming-$UUID"

	# auto-promote: a Secondary may start it (QEMU's connection promotes)
	# unless a peer is Primary; not when it is not UpToDate.
	answer vm1 Secondary UpToDate yes no 1 yes -
	run_hook prepare begin "$TESTDIR/one.xml"
	expect 0 "" "start on an auto-promote Secondary, no Primary"
	answer vm1 Secondary UpToDate yes no 1 yes n2
	run_hook prepare begin "$TESTDIR/one.xml"
	expect 1 "volume vm1 is Primary on n2" "start on an auto-promote Secondary while n2 is Primary"
	answer vm1 Secondary Outdated yes no 1 yes -
	run_hook prepare begin "$TESTDIR/one.xml"
	expect 1 "replica is Outdated" "start on an Outdated auto-promote Secondary"
	answer vm1 Secondary UpToDate yes no 1 yes -
	echo "replagent: can-promote vm1: this node's partition has no quorum" \
		>"$TESTDIR/answers/vm1.nopromote"
	run_hook prepare begin "$TESTDIR/one.xml"
	expect 1 "cannot become Primary here: can-promote vm1: this node's partition has no quorum" \
		"start on an auto-promote Secondary the daemon would not promote"
	rm -f "$TESTDIR/answers/vm1.nopromote"
	answer vm1 Secondary UpToDate yes no 1

	# A stale mark (older than a minute) does not count.
	run_hook migrate begin "$TESTDIR/one.xml"
	touch -d '2 minutes ago' "$TESTDIR/state/incoming-$UUID"
	run_hook prepare begin "$TESTDIR/one.xml"
	expect 1 "not Primary" "prepare begin after a stale migrate mark"

	# Settings from replagentd's configuration and from hook.conf.
	cat >"$TESTDIR/replagent.conf" <<-EOF
		[global]
		nbd-socket = $SOCK   # comment
		control-socket = "$TESTDIR/ctl2.sock"
		[volume vm1]
		nbd-socket = /not/this
	EOF
	cat >"$TESTDIR/hook.conf" <<-EOF
		# hook settings
		REPLAGENT="$TESTDIR/fake-replagent"
		REPLAGENT_TIMEOUT='5'
	EOF
	answer vm1 Secondary UpToDate
	run_hook prepare begin "$TESTDIR/one.xml" REPLAGENT_NBD_SOCKET= REPLAGENT_SOCKET= \
		REPLAGENT= REPLAGENT_CONF="$TESTDIR/replagent.conf" REPLAGENT_HOOK_CONF="$TESTDIR/hook.conf"
	expect 1 "not Primary" "sockets from replagent.conf, the CLI from hook.conf"
	grep -q -F -- "-s $TESTDIR/ctl2.sock show vm1" "$CALLS" ||
		fail "control socket not taken from replagent.conf: $(cat "$CALLS")"
}

modes=(no)
command -v xmllint >/dev/null 2>&1 && modes=(yes no)
for XMLLINT in "${modes[@]}"; do
	run_table
	run_others
done
[ "${#modes[@]}" = 2 ] || log "xmllint not installed: the awk fallback only"
log "PASS"
