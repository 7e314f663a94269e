# shellcheck shell=bash
# Variables set here are used by the scripts that source this file:
# shellcheck disable=SC2034
# tests/cluster.sh: several cluster nodes on one machine, for the tests that
# need real corosync, Pacemaker, libvirtd or replagentd in cluster mode.
# Source it instead of functions.sh (it sources functions.sh):
#
#   . "${top_srcdir:-$(dirname "$0")/..}/tests/cluster.sh"
#
# A node nI (I = 1..N) is a network namespace (eth0, 10.213.X.I/24, lo; no
# default route) plugged into a bridge, plus a mount (and UTS: hostname nI)
# namespace in which its own directories are bind-mounted over /run,
# /dev/shm (a tmpfs), /etc/corosync, /var/lib/corosync, /var/lib/pacemaker,
# /var/log/{corosync,pacemaker}, /etc/pacemaker, /var/lib/pcsd, the
# libvirt directories (/etc/libvirt is a copy of the host's) and /etc/hosts
# (the host's, plus every node's name: libvirt migrates to "n2"), so that
# its daemons see only their own state.  Everything under /tmp (so $TESTDIR) is
# shared: Unix sockets placed under $TESTDIR are reachable from the root
# namespace and from every node (replagentd's control and NBD sockets go to
# $TESTDIR/nodes/nI/sock/, made for that).  The bridge lives in a "switch"
# namespace of its own, so nothing at all is added to the root namespace.
#
# The mount namespace is created by the first process started on the node
# (normally corosync), every later one enters it (nsenter -t ANCHOR -m -n -u,
# the anchor being any live process of the node); after cluster_kill_node
# the next process started creates a fresh one (a reboot).
#
#   cluster_create N                  nodes n1..nN (dirs, configs, network)
#   cluster_start_corosync I          corosync -f on node I
#   cluster_start_pacemaker I         pacemakerd on node I (after corosync)
#   cluster_start_daemon I NAME CMD.. any long-running CMD on node I; its PID
#                                     is in CLUSTER_PID, output in
#                                     $TESTDIR/nodes/nI/log/NAME.out
#   cluster_exec I CMD...             run CMD on node I (bounded by
#                                     CLUSTER_EXEC_TIMEOUT s, default 60)
#   cluster_kill_node I               SIGKILL everything of node I (a crash)
#   cluster_node_alive I              true while a process of node I runs
#   cluster_partition I / cluster_heal I   cut / restore node I's link
#   cluster_wait_quorate I T / cluster_wait_inquorate I T
#   cluster_wait_members I N T        corosync membership of node I is N
#   cluster_quorum I                  corosync-quorumtool -s on node I
#   cluster_pcmk_state I              "dc NAME" / "online A B" / "offline ..."
#                                     / "rsc ID ROLE NODE..." lines (crm_mon)
#   cluster_pcmk_dc I / cluster_pcmk_online I / cluster_rsc_node I RSC
#   cluster_wait_pcmk I N T           N nodes online and a DC, seen from I
#
# T are timeouts in seconds; the waits return 1 (after showing what they
# last saw) on timeout, they do not fail the test themselves.
#
# CLUSTER_CRYPTO=off (before cluster_create): corosync without encryption.
# Set by cluster_create: CLUSTER_N, CLUSTER_NAME (corosync cluster name),
# CL_NS[I], CL_IP[I], CL_DIR[I] ($TESTDIR/nodes/nI), CL_SWITCH (the switch
# namespace, bridge br0, node I on port vethI), CL_FENCE_AGENT.
#
# Fencing: tests/fence_ns is shown in the nodes' /usr/sbin (an overlay
# mount, inside their mount namespaces only) as fence_ns, for Pacemaker's
# fencer:  pcs stonith create F fence_ns testdir=$TESTDIR \
#              pcmk_host_list="n1 n2 n3"
# It kills a node the way cluster_kill_node does (the same code), from the
# files the harness keeps per node: nodes/nI/pids ("PID STARTTIME NAME" of
# every process started there) and nodes/nI/ns (its mount and net ns).
#
# Cleanup (on EXIT, INT, TERM, also when the test fails): SIGTERM to every
# process started on the nodes, SIGKILL to what is left of the nodes after
# CLUSTER_STOP_TIMEOUT s (default 5), then the namespaces (so the veths and
# the bridge) are deleted.  Nothing is ever killed by name.

# shellcheck source=SCRIPTDIR/functions.sh
declare -F on_cleanup >/dev/null ||
	. "$(dirname "${BASH_SOURCE[0]}")/functions.sh" || exit 99

CLUSTER_EXEC_TIMEOUT=${CLUSTER_EXEC_TIMEOUT:-60}
# More lines for corosync.conf's totem section (e.g. "token_coefficient: 0";
# a "token:" among them replaces the default 1000): bench/failover-bench.sh.
CLUSTER_TOTEM_EXTRA=${CLUSTER_TOTEM_EXTRA:-}
CLUSTER_STOP_TIMEOUT=${CLUSTER_STOP_TIMEOUT:-5}
# corosync's knet crypto (aes256/sha256 with an authkey made per test), as
# a real cluster should run; off: crypto_cipher/crypto_hash none.
CLUSTER_CRYPTO=${CLUSTER_CRYPTO:-on}
CL_FENCE_AGENT=$TESTS_SRCDIR/fence_ns
CLUSTER_N=0
CLUSTER_NAME=
CLUSTER_PID=
CL_TAG=
CL_SWITCH=
CL_SUBNET=
declare -a CL_NS=() CL_IP=() CL_DIR=() CL_PIDS=()

# cluster_requires: skip unless nodes can be made here (root, ip netns,
# bridges in a namespace, unshare, nsenter).
cluster_requires() {
	requires_root
	requires ip unshare nsenter setsid timeout find
	requires_netns
}

# cluster_requires_corosync / cluster_requires_pacemaker: skip unless the
# daemons and their tools are installed.
cluster_requires_corosync() {
	cluster_requires
	requires corosync corosync-quorumtool corosync-cmapctl
}
cluster_requires_pacemaker() {
	cluster_requires_corosync
	requires pacemakerd crm_mon stonith_admin pcs
	id hacluster >/dev/null 2>&1 || skip "requires the hacluster user"
	getent group haclient >/dev/null 2>&1 || skip "requires the haclient group"
	# The fence agent reaches the fencer through an overlay over /usr/sbin.
	grep -qw overlay /proc/filesystems 2>/dev/null ||
		skip "requires overlayfs (to show fence_ns in the nodes' /usr/sbin)"
}

# _cl_node I: the node's name.
_cl_node() { echo "n$1"; }

# cluster_create N: N nodes n1..nN, their directories and network (see the
# top of this file).  Registers the cleanup.
cluster_create() {
	local n=$1 i d ns tag x
	[[ $n =~ ^[1-9][0-9]?$ ]] || hard_error "cluster_create: bad node count '$n'"
	cluster_requires
	[ "$CLUSTER_N" = 0 ] || hard_error "cluster_create: only one cluster per test"
	tag=ra$$
	ip netns list 2>/dev/null | grep -q "^$tag-" && tag=ra$$-$RANDOM
	CL_TAG=$tag
	CL_SWITCH=$tag-sw
	CLUSTER_NAME=$tag
	x=$(($$ % 250 + 1))
	CL_SUBNET=10.213.$x
	CLUSTER_N=$n
	# Registered before anything exists: a failure half way is cleaned too.
	on_cleanup _cluster_cleanup
	mkdir -p "$TESTDIR/nodes" "$TESTDIR/sbin" && chmod 0755 "$TESTDIR/nodes" "$TESTDIR/sbin" ||
		hard_error "mkdir $TESTDIR/nodes"
	# The fence agent, as the fencer will see it (an executable copy: the
	# source tree may be read-only or without the x bit).
	cp "$CL_FENCE_AGENT" "$TESTDIR/sbin/fence_ns" && chmod 0755 "$TESTDIR/sbin/fence_ns" ||
		hard_error "cannot copy $CL_FENCE_AGENT"

	ip netns add "$CL_SWITCH" || hard_error "ip netns add $CL_SWITCH"
	ip -n "$CL_SWITCH" link add br0 type bridge &&
		ip -n "$CL_SWITCH" link set br0 up ||
		hard_error "cannot create the bridge in $CL_SWITCH"
	for ((i = 1; i <= n; i++)); do
		ns=$tag-n$i
		ip netns add "$ns" || hard_error "ip netns add $ns"
		ip -n "$ns" link add eth0 type veth peer name "veth$i" netns "$CL_SWITCH" &&
			ip -n "$CL_SWITCH" link set "veth$i" master br0 &&
			ip -n "$CL_SWITCH" link set "veth$i" up &&
			ip -n "$ns" addr add "$CL_SUBNET.$i/24" dev eth0 &&
			ip -n "$ns" link set eth0 up &&
			ip -n "$ns" link set lo up ||
			hard_error "cannot wire namespace $ns"
		CL_NS[i]=$ns
		CL_IP[i]=$CL_SUBNET.$i
		CL_PIDS[i]=
		d=$TESTDIR/nodes/n$i
		CL_DIR[i]=$d
		_cluster_mkdirs "$d"
	done
	# One authkey for the cluster, in every node's /etc/corosync.
	if [ "$CLUSTER_CRYPTO" != off ]; then
		corosync-keygen -k "$TESTDIR/corosync-authkey" >/dev/null 2>&1 ||
			head -c 256 /dev/urandom >"$TESTDIR/corosync-authkey" ||
			hard_error "cannot make a corosync authkey"
	fi
	for ((i = 1; i <= n; i++)); do
		_cluster_corosync_conf >"${CL_DIR[i]}/etc/corosync/corosync.conf" ||
			hard_error "cannot write corosync.conf"
		if [ "$CLUSTER_CRYPTO" != off ]; then
			install -m 0400 "$TESTDIR/corosync-authkey" \
				"${CL_DIR[i]}/etc/corosync/authkey" || hard_error "cannot copy the authkey"
		fi
		{
			grep -v -E '[[:space:]]n[0-9]+([[:space:]]|$)' /etc/hosts 2>/dev/null
			for ((x = 1; x <= n; x++)); do
				printf '%s\tn%d\n' "${CL_IP[x]}" "$x"
			done
		} >"${CL_DIR[i]}/hosts" || hard_error "cannot write the hosts file"
		chmod 0644 "${CL_DIR[i]}/hosts"
	done
	log "cluster $tag: $n nodes on $CL_SUBNET.0/24 (namespaces $tag-n1..n$n, switch $CL_SWITCH)"
}

# _cluster_mkdirs DIR: a node's directories (owners as the packages make
# them: the Pacemaker daemons run as hacluster).
_cluster_mkdirs() {
	local d=$1 s
	mkdir -p "$d"/{run,sock,log,lib/corosync,lib/pcsd,log/corosync,etc/corosync,etc/pacemaker} \
		"$d"/lib/pacemaker/{cib,pengine,blackbox,cores} "$d"/log/pacemaker/bundles \
		"$d"/libvirt/{etc,lib,log,cache} || hard_error "mkdir $d"
	chmod 0755 "$d" "$d"/{run,sock,log} "$d"/libvirt
	chmod 0700 "$d/lib/pcsd"
	if id hacluster >/dev/null 2>&1 && getent group haclient >/dev/null 2>&1; then
		chown hacluster:haclient "$d"/lib/pacemaker/* "$d"/log/pacemaker "$d"/log/pacemaker/bundles
		chmod 0750 "$d"/lib/pacemaker/*
		chmod 0770 "$d"/log/pacemaker "$d"/log/pacemaker/bundles
	fi
	# The host's files, but not its corosync.conf (written next) nor
	# Pacemaker's authkey (the nodes share nothing that could matter).
	[ -d /etc/corosync/uidgid.d ] && cp -a /etc/corosync/uidgid.d "$d/etc/corosync/"
	if [ -d /etc/libvirt ]; then
		cp -a /etc/libvirt/. "$d/libvirt/etc/" || hard_error "cannot copy /etc/libvirt"
		rm -f "$d"/libvirt/etc/qemu/networks/autostart/* "$d"/libvirt/etc/qemu/autostart/*
		if [ -f "$d/libvirt/etc/qemu.conf" ]; then
			printf '\n# added by the replagent tests\ncgroup_controllers = [ ]\n' \
				>>"$d/libvirt/etc/qemu.conf"
		fi
	fi
	for s in corosync pacemaker; do
		_ra_log[$(basename "$d")-$s.log]=$d/log/$s/$s.log
	done
}

# _cluster_corosync_conf: the nodes' corosync.conf on stdout (the same on
# every node).
_cluster_corosync_conf() {
	local i cipher=aes256 hash=sha256
	[ "$CLUSTER_CRYPTO" = off ] && cipher=none hash=none
	cat <<-EOF
		# written by $TEST_NAME (tests/cluster.sh)
		totem {
		    version: 2
		    cluster_name: $CLUSTER_NAME
		    transport: knet
		$(grep -q '^[[:space:]]*token:' <<<"$CLUSTER_TOTEM_EXTRA" || echo '    token: 1000')
		    crypto_cipher: $cipher
		    crypto_hash: $hash
		$(printf '%s\n' "$CLUSTER_TOTEM_EXTRA" | sed -n 's/^[[:space:]]*\([a-z_]*:.*\)/    \1/p')
		}
		logging {
		    to_logfile: yes
		    logfile: /var/log/corosync/corosync.log
		    to_stderr: no
		    to_syslog: no
		    timestamp: on
		}
		quorum {
		    provider: corosync_votequorum
	EOF
	[ "$CLUSTER_N" = 2 ] && echo "    two_node: 1"
	echo "}"
	echo "nodelist {"
	for ((i = 1; i <= CLUSTER_N; i++)); do
		printf '    node {\n        ring0_addr: %s\n        name: n%d\n        nodeid: %d\n    }\n' \
			"${CL_IP[i]}" "$i" "$i"
	done
	echo "}"
}

# The script that makes a node's mount namespace, run by
# "unshare -m -u bash -c" inside the node's network namespace.
# Arguments: NODEDIR TESTDIR NAME CMD...
# shellcheck disable=SC2016 # expanded by that bash
_CL_NS_SETUP='
set -e
d=$1 t=$2 name=$3
shift 3
mount --make-rprivate /
hostname "$name"
mount -t tmpfs -o mode=1777,size=512m tmpfs /dev/shm
mount --bind "$d/run" /run
for m in lib/corosync:/var/lib/corosync lib/pacemaker:/var/lib/pacemaker \
	lib/pcsd:/var/lib/pcsd log/corosync:/var/log/corosync \
	log/pacemaker:/var/log/pacemaker etc/corosync:/etc/corosync \
	etc/pacemaker:/etc/pacemaker libvirt/etc:/etc/libvirt \
	libvirt/lib:/var/lib/libvirt libvirt/log:/var/log/libvirt \
	libvirt/cache:/var/cache/libvirt; do
	src=$d/${m%%:*} dst=${m#*:}
	if [ -d "$src" ] && [ -d "$dst" ]; then
		mount --bind "$src" "$dst"
	fi
done
[ -f "$d/hosts" ] && mount --bind "$d/hosts" /etc/hosts
# Fence agents of the tests, in front of the real /usr/sbin.
if [ -d "$t/sbin" ]; then
	mount -t overlay overlay -o "lowerdir=$t/sbin:/usr/sbin" /usr/sbin ||
		echo "cluster.sh: no overlay on /usr/sbin: fence_ns not available" >&2
fi
: >"$d/ns-ready"
exec "$@"
'

# _cl_starttime PID: field 22 of /proc/PID/stat (empty if PID is gone).
_cl_starttime() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	s=${s##*) }
	# shellcheck disable=SC2086 # split the fields
	set -- $s
	echo "${20}"
}

# _cl_live PID/STARTTIME: that process runs (not a zombie, PID not reused).
_cl_live() {
	[ "$(_cl_starttime "${1%/*}")" = "${1#*/}" ] && _alive "${1%/*}"
}

# _cl_anchor I: a live process of node I (in its current namespaces), empty
# if none.
_cl_anchor() {
	local d=${CL_DIR[$1]} pid st name mnt net
	[ -r "$d/ns" ] && [ -r "$d/pids" ] || return 0
	read -r mnt net <"$d/ns"
	while read -r pid st name; do
		[ "$(_cl_starttime "$pid")" = "$st" ] || continue
		_alive "$pid" || continue
		[ "$(readlink "/proc/$pid/ns/mnt" 2>/dev/null)" = "$mnt" ] &&
			[ "$(readlink "/proc/$pid/ns/net" 2>/dev/null)" = "$net" ] &&
			{ echo "$pid"; return 0; }
	done <"$d/pids"
	return 0
}

# cluster_node_alive I: some process of node I runs.
cluster_node_alive() { [ -n "$(_cl_anchor "$1")" ]; }

_cl_check_node() {
	[[ $1 =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le "$CLUSTER_N" ] ||
		hard_error "no node '$1' (cluster of $CLUSTER_N nodes)"
}

# cluster_start_daemon I NAME CMD...: start CMD on node I in the background
# (own session; stdin /dev/null; output appended to
# $TESTDIR/nodes/nI/log/NAME.out), record it for the fence agent and the
# cleanup.  Its PID (CMD's own: nothing forks in between) is CLUSTER_PID.
# The first process of a node creates its mount namespace.
cluster_start_daemon() {
	local i=$1 name=$2 d anchor pid out st k=0
	shift 2
	_cl_check_node "$i"
	d=${CL_DIR[i]}
	out=$d/log/$name.out
	# Shown with the logs when the test fails (if not empty).
	_ra_log[n$i-$name]=$out
	anchor=$(_cl_anchor "$i")
	if [ -n "$anchor" ]; then
		setsid nsenter -t "$anchor" -m -n -u "$@" </dev/null >>"$out" 2>&1 &
		pid=$!
	else
		rm -f "$d/ns-ready"
		setsid ip netns exec "${CL_NS[i]}" unshare -m -u --propagation private \
			bash -c "$_CL_NS_SETUP" cluster-node "$d" "$TESTDIR" "n$i" "$@" \
			</dev/null >>"$out" 2>&1 &
		pid=$!
		while [ ! -e "$d/ns-ready" ]; do
			if ! _alive "$pid"; then
				wait "$pid" 2>/dev/null
				tail -n 20 "$out" >&2
				fail "node n$i: $name exited while setting up the namespace"
			fi
			[ "$k" -ge 100 ] && fail "node n$i: namespace not set up after 10 s"
			sleep 0.1
			k=$((k + 1))
		done
		echo "$(readlink "/proc/$pid/ns/mnt") $(readlink "/proc/$pid/ns/net")" >"$d/ns.new" &&
			mv "$d/ns.new" "$d/ns" || hard_error "cannot record the namespaces of n$i"
	fi
	st=$(_cl_starttime "$pid")
	echo "$pid $st $name" >>"$d/pids"
	CL_PIDS[i]="${CL_PIDS[i]} $pid/$st"
	CLUSTER_PID=$pid
	# Out of the job table: bash reaps it when it exits and does not report
	# "Killed" then; PIDs are checked with their start time from now on.
	disown "$pid" 2>/dev/null
	return 0
}

# cluster_start_corosync I: corosync on node I (its PID in CLUSTER_PID).
cluster_start_corosync() {
	cluster_start_daemon "$1" corosync corosync -f -c /etc/corosync/corosync.conf
	sleep 0.2
	_alive "$CLUSTER_PID" || {
		tail -n 20 "${CL_DIR[$1]}/log/corosync.out" "${CL_DIR[$1]}/log/corosync/corosync.log" >&2
		fail "corosync on n$1 exited"
	}
}

# cluster_start_pacemaker I: pacemakerd on node I, logging to the node's
# /var/log/pacemaker/pacemaker.log (its PID in CLUSTER_PID).
cluster_start_pacemaker() {
	cluster_start_daemon "$1" pacemaker env PCMK_logfile=/var/log/pacemaker/pacemaker.log \
		PCMK_logfacility=none PCMK_debug=no pacemakerd -f
}

# cluster_exec I CMD...: run CMD on node I, in the foreground.
cluster_exec() {
	local i=$1 anchor
	shift
	_cl_check_node "$i"
	anchor=$(_cl_anchor "$i")
	if [ -z "$anchor" ]; then
		echo "cluster_exec: node n$i is down" >&2
		return 125
	fi
	timeout -k 5 "$CLUSTER_EXEC_TIMEOUT" nsenter -t "$anchor" -m -n -u "$@"
}

# _cl_forget I: forget the processes of node I that have exited.
_cl_forget() {
	local p left=''
	for p in ${CL_PIDS[$1]:-}; do
		_cl_live "$p" && left="$left $p"
	done
	CL_PIDS[$1]=$left
}

# cluster_kill_node I: SIGKILL every process of node I (a crash: the same
# code as the fence agent's "off").
cluster_kill_node() {
	_cl_check_node "$1"
	bash "$CL_FENCE_AGENT" --action=off --plug="n$1" --testdir="$TESTDIR" 2>/dev/null ||
		fail "could not kill node n$1"
	_cl_forget "$1"
	log "node n$1 killed"
}

# cluster_partition I / cluster_heal I: node I's port on the bridge down/up.
cluster_partition() {
	_cl_check_node "$1"
	ip -n "$CL_SWITCH" link set "veth$1" down || hard_error "cannot set veth$1 down"
	log "node n$1 cut off"
}
cluster_heal() {
	_cl_check_node "$1"
	ip -n "$CL_SWITCH" link set "veth$1" up || hard_error "cannot set veth$1 up"
	log "node n$1 reconnected"
}

# cluster_quorum I: corosync-quorumtool -s on node I (its exit status).
cluster_quorum() {
	CLUSTER_EXEC_TIMEOUT=10 cluster_exec "$1" corosync-quorumtool -s
}

# _cl_wait DESC TIMEOUT CMD...: poll CMD (0.5 s) until it succeeds; on
# timeout, show DESC and CL_LAST (what the check saw last), return 1.
CL_LAST=
_cl_wait() {
	local desc=$1 t=$2 end
	shift 2
	end=$(($(date +%s) + t))
	while ! "$@"; do
		if [ "$(date +%s)" -ge "$end" ]; then
			echo "after ${t}s still not: $desc" >&2
			printf '%s\n' "$CL_LAST" | sed 's/^/  | /' >&2
			return 1
		fi
		sleep 0.5
	done
}

_cl_quorate_is() {
	CL_LAST=$(cluster_quorum "$1" 2>&1)
	[ "$(sed -n 's/^Quorate:[[:space:]]*//p' <<<"$CL_LAST")" = "$2" ]
}
_cl_members_are() {
	CL_LAST=$(cluster_quorum "$1" 2>&1)
	[ "$(sed -n 's/^Nodes:[[:space:]]*//p' <<<"$CL_LAST")" = "$2" ]
}

# cluster_wait_quorate I T / cluster_wait_inquorate I T
cluster_wait_quorate() {
	_cl_wait "n$1 quorate" "$2" _cl_quorate_is "$1" Yes
}
cluster_wait_inquorate() {
	_cl_wait "n$1 not quorate" "$2" _cl_quorate_is "$1" No
}

# cluster_wait_members I N T: node I's corosync membership has N nodes.
cluster_wait_members() {
	_cl_wait "n$1 sees $2 members" "$3" _cl_members_are "$1" "$2"
}

# cluster_pcmk_state I: Pacemaker's view from node I (crm_mon XML), as
# lines: "dc NAME" (if there is one), "online NAME...", "offline NAME...",
# "unclean NAME...", "rsc ID ROLE NODE..." (one per primitive, NODE: where
# it is active).
_CL_MON_PY='
import sys, xml.etree.ElementTree as ET
root = ET.fromstring(sys.stdin.read())
dc = root.find("summary/current_dc")
if dc is not None and dc.get("present") == "true":
    print("dc", dc.get("name"))
on, off, unclean = [], [], []
for n in root.iter("node"):
    if n.get("type") not in (None, "member"):
        continue
    if n.get("online") is None:
        continue
    (on if n.get("online") == "true" else off).append(n.get("name"))
    if n.get("unclean") == "true":
        unclean.append(n.get("name"))
print("online", *on)
print("offline", *off)
print("unclean", *unclean)
for r in root.iter("resource"):
    print("rsc", r.get("id"), r.get("role"), *[x.get("name") for x in r.findall("node")])
'
cluster_pcmk_state() {
	local x
	x=$(CLUSTER_EXEC_TIMEOUT=15 cluster_exec "$1" crm_mon -1 --output-as=xml 2>/dev/null) ||
		[ -n "$x" ] || return 1
	"$PYTHON" -c "$_CL_MON_PY" <<<"$x"
}

# cluster_pcmk_dc I: the DC's name as node I sees it (empty if none).
cluster_pcmk_dc() { cluster_pcmk_state "$1" | sed -n 's/^dc //p'; }
# cluster_pcmk_online I: the online nodes' names (one line).
cluster_pcmk_online() { cluster_pcmk_state "$1" | sed -n 's/^online //p'; }
# cluster_rsc_node I RSC: the node(s) where RSC is active, as I sees it.
cluster_rsc_node() {
	cluster_pcmk_state "$1" | awk -v r="$2" '$1 == "rsc" && $2 == r { $1 = $2 = $3 = ""; print }' |
		xargs
}

_cl_pcmk_is() {
	CL_LAST=$(cluster_pcmk_state "$1" 2>&1)
	grep -q '^dc ' <<<"$CL_LAST" &&
		[ "$(sed -n 's/^online//p' <<<"$CL_LAST" | wc -w)" = "$2" ]
}

# cluster_wait_pcmk I N T: node I sees N nodes online and a DC.
cluster_wait_pcmk() {
	_cl_wait "n$1 sees $2 Pacemaker nodes online and a DC" "$3" _cl_pcmk_is "$1" "$2"
}

# _cluster_cleanup: stop the nodes' processes, delete the namespaces.
_cluster_cleanup() {
	local i p end live
	for ((i = CLUSTER_N; i >= 1; i--)); do
		for p in ${CL_PIDS[i]:-}; do
			_cl_live "$p" && kill -TERM "${p%/*}" 2>/dev/null
		done
	done
	end=$(($(date +%s) + CLUSTER_STOP_TIMEOUT))
	while [ "$(date +%s)" -lt "$end" ]; do
		live=
		for ((i = 1; i <= CLUSTER_N; i++)); do
			for p in ${CL_PIDS[i]:-}; do
				_cl_live "$p" && live=1
			done
		done
		[ -z "$live" ] && break
		sleep 0.2
	done
	for ((i = 1; i <= CLUSTER_N; i++)); do
		# Whatever is left (also what daemonized), as a crash would.
		[ -d "${CL_DIR[i]:-}" ] &&
			bash "$CL_FENCE_AGENT" --action=off --plug="n$i" --testdir="$TESTDIR" \
				>/dev/null 2>&1
		_cl_forget "$i"
	done
	for ((i = 1; i <= CLUSTER_N; i++)); do
		[ -n "${CL_NS[i]:-}" ] && ip netns del "${CL_NS[i]}" 2>/dev/null
	done
	[ -n "$CL_SWITCH" ] && ip netns del "$CL_SWITCH" 2>/dev/null
	true
}
