#!/bin/bash
# tests/leaks.sh: the last test of the suite: nothing the tests started is
# left behind (libqb's resources.test is the anchor).  It fails on
#   - a replagentd or replagent of this build still running;
#   - a network namespace of the harness (ra<PID>-..., ra-<PID>-...) whose
#     test (PID) is gone;
#   - a process of a cluster node (corosync, pacemaker, libvirtd, virtlogd,
#     QEMU, replagentd, ...) in a network namespace that has no name any more:
#     its test deleted the namespace but did not stop it (a QEMU that libvirt
#     had put in a mount namespace of its own was once such a leak);
#   - a test directory (/tmp/replagent-NAME.XXXXXX) whose test is not running.
# Tests that run at the same time as this one are not leaks: only what
# belongs to no live test counts.  It lists what it found, and kills
# nothing.  run-all.sh names in $REPLAGENT_LEAKS_BEFORE the namespaces and
# directories that were there before the suite started (an earlier run
# that was interrupted): those are listed too, but do not fail this run.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires ps ip readlink
found=0 old=0
leak() {
	echo "LEAK: $*" >&2
	found=$((found + 1))
}
# was_there KIND NAME: true if the suite found it before it started.
was_there() {
	[ -n "${REPLAGENT_LEAKS_BEFORE:-}" ] && [ -f "$REPLAGENT_LEAKS_BEFORE" ] &&
		grep -qxF "$1 $2" "$REPLAGENT_LEAKS_BEFORE"
}
old_leak() {
	echo "left before this run started (not counted): $*" >&2
	old=$((old + 1))
}

# 1. Our daemons and CLI.
for p in $(ps -e -o pid=); do
	exe=$(readlink "/proc/$p/exe" 2>/dev/null) || continue
	case $exe in
	"$top_builddir"/agent/replagentd | "$top_builddir"/agent/.libs/replagentd | \
		"$top_builddir"/agent/replagent | "$top_builddir"/agent/.libs/replagent)
		leak "pid $p runs $exe: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-160)"
		;;
	esac
done

# 2. The harness's namespaces whose test is gone.
while read -r ns _; do
	[[ $ns =~ ^ra-?([0-9]+)- ]] || continue
	owner=${BASH_REMATCH[1]}
	kill -0 "$owner" 2>/dev/null && continue
	if was_there netns "$ns"; then
		old_leak "network namespace $ns"
	else
		leak "network namespace $ns (its test, pid $owner, is gone)"
	fi
done < <(ip netns list 2>/dev/null)

# 3. Node processes in namespaces without a name.  Only processes in a
# network namespace other than ours are looked at.
ours=$(readlink /proc/self/ns/net)
for p in $(ps -e -o pid=); do
	[ "$p" = $$ ] && continue
	net=$(readlink "/proc/$p/ns/net" 2>/dev/null) || continue
	[ "$net" = "$ours" ] && continue
	comm=$(cat "/proc/$p/comm" 2>/dev/null) || continue
	case $comm in
	corosync | pacemakerd | pacemaker-* | libvirtd | virtlogd | qemu-system-* | replagentd | \
		dnsmasq) ;;
	*) continue ;;
	esac
	[ -n "$(ip netns identify "$p" 2>/dev/null)" ] && continue
	leak "pid $p ($comm) runs in a network namespace that no longer has a name ($net)"
done

# 4. Test directories of tests that are not running.
for d in /tmp/replagent-*.??????; do
	[ -d "$d" ] || continue
	[ "$d" = "$TESTDIR" ] && continue
	name=${d#/tmp/replagent-}
	name=${name%.*}
	if ps -e -o args= | grep -q -E "(tests/|/)$name(\\.sh)?( |$)"; then
		continue
	elif was_there dir "$d"; then
		old_leak "test directory $d"
	else
		leak "test directory $d (no test $name runs)"
	fi
done

[ "$old" = 0 ] || log "$old thing(s) an earlier run left behind, listed above: remove them"
[ "$found" = 0 ] || fail "$found leak(s), listed above"
log "PASS: no daemon, namespace, node process or test directory left behind"
