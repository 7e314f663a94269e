# shellcheck shell=bash
# Variables set here are used by the scripts that source this file:
# shellcheck disable=SC2034
# tests/ocf-cluster-lib.sh: helpers for the tests that run the OCF agent
# ocf-resources/volume under real Pacemaker, on the nodes of tests/cluster.sh
# with replagentd in cluster mode (tests/cluster-replagent-lib.sh).  Not a
# test itself; source it instead of cluster-replagent-lib.sh:
#
#   . "${top_srcdir:-$(dirname "$0")/..}/tests/ocf-cluster-lib.sh"
#
#   oc_requires                skip (77) unless all of it can run here
#   oc_install I               the agent in node I's /usr/lib/ocf/resource.d
#                              (an overlay inside the node's mount namespace
#                              only) and its default control socket
#                              /run/replagent/control.sock (a symlink to the
#                              node's socket, in the node's own /run)
#   oc_setup                   3 nodes: corosync, replagentd, vol0 created
#                              and in sync, Pacemaker with STONITH (fence_ns),
#                              then templates/pcs-volume.sh run on n1 (with
#                              the variables in OC_TEMPLATE_ENV)
#   oc_start_node I            node I boots again: corosync, the agent,
#                              replagentd, pacemakerd (in that order)
#   oc_roles I                 "n1=Promoted n2=Unpromoted n3=Stopped" as
#                              Pacemaker on node I sees vol0's instances
#   oc_wait_roles I T EXPR     wait until oc_roles matches the regex EXPR
#   oc_promoted I              the node where vol0 is Promoted (empty if none)
#   oc_score I NODE            NODE's promotion score of vol0 ("" if none)
#   oc_nbd_read I              one 4 KiB read through node I's NBD socket
#
# The agent gets the project's CLI (replagent=) and otherwise its defaults.

# shellcheck source=SCRIPTDIR/cluster-replagent-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/cluster-replagent-lib.sh" || exit 99

OC_AGENT=$top_srcdir/ocf-resources/volume
OC_TEMPLATE=$top_srcdir/templates/pcs-volume.sh
OC_VOL=vol0
# More VAR=VALUE for templates/pcs-volume.sh (e.g. GUEST=...).
OC_TEMPLATE_ENV=()

oc_requires() {
	rc_requires
	cluster_requires_pacemaker
	requires qemu-io crm_attribute crm_resource
	[ -r /usr/lib/ocf/lib/heartbeat/ocf-shellfuncs ] ||
		skip "requires ocf-shellfuncs (resource-agents)"
	[ -d /usr/lib/ocf/resource.d ] || skip "requires /usr/lib/ocf/resource.d"
	[ -r "$OC_AGENT" ] || hard_error "$OC_AGENT not found"
}

# oc_install I: see the top.  The overlay's lower layer is
# $TESTDIR/ocf (replagent/volume, a copy with mode 0755).
oc_install() {
	local i=$1 d=${CL_DIR[$1]}
	if [ ! -x "$TESTDIR/ocf/replagent/volume" ]; then
		mkdir -p "$TESTDIR/ocf/replagent" &&
			cp "$OC_AGENT" "$TESTDIR/ocf/replagent/volume" &&
			chmod 0755 "$TESTDIR/ocf" "$TESTDIR/ocf/replagent" "$TESTDIR/ocf/replagent/volume" ||
			hard_error "cannot copy the agent"
	fi
	cluster_exec "$i" mount -t overlay overlay \
		-o "lowerdir=$TESTDIR/ocf:/usr/lib/ocf/resource.d" /usr/lib/ocf/resource.d ||
		fail "n$i: cannot show the agent in /usr/lib/ocf/resource.d"
	cluster_exec "$i" test -x /usr/lib/ocf/resource.d/replagent/volume ||
		fail "n$i: the agent is not in /usr/lib/ocf/resource.d/replagent"
	mkdir -p "$d/run/replagent" && ln -sfn "$d/sock/control.sock" "$d/run/replagent/control.sock" ||
		hard_error "cannot link n$i's control socket"
}

# oc_pcmk_up: pacemakerd on every node, a DC, STONITH enabled with fence_ns.
oc_pcmk_up() {
	local i
	for ((i = 1; i <= CLUSTER_N; i++)); do
		cluster_start_pacemaker "$i"
	done
	cluster_wait_pcmk 1 "$CLUSTER_N" 60 || fail "Pacemaker: no DC with $CLUSTER_N nodes within 60 s"
	cluster_exec 1 pcs property set stonith-enabled=true || fail "pcs property set failed"
	cluster_exec 1 pcs stonith create fence-ns fence_ns testdir="$TESTDIR" \
		pcmk_host_list="$(seq -f 'n%g' -s ' ' 1 "$CLUSTER_N")" op monitor interval=30s ||
		fail "pcs stonith create failed"
	_oc_fence_started() {
		CL_LAST=$(cluster_pcmk_state 1)
		grep -q "^rsc fence-ns Started n" <<<"$CL_LAST"
	}
	_cl_wait "fence-ns started" 30 _oc_fence_started || fail "the fence device did not start"
}

# oc_setup: see the top.
oc_setup() {
	local i
	rc_setup 3
	for i in 1 2 3; do
		oc_install "$i"
	done
	rc_cli 1 volume create "$OC_VOL" --size 64M --nodes n1,n2,n3 || fail "volume create failed"
	rc_wait_all 30 "$RC_SYNCED" "$OC_VOL" || fail "$OC_VOL: replicas not in sync within 30 s"
	oc_pcmk_up
	log "corosync, replagentd (cluster mode), $OC_VOL in sync, Pacemaker with STONITH up"
	cluster_exec 1 env VOLUME="$OC_VOL" REPLICAS=3 REPLAGENT_CLI="$REPLAGENT" \
		"${OC_TEMPLATE_ENV[@]}" sh "$OC_TEMPLATE" >"$TESTDIR/pcs-volume.out" 2>&1 ||
		fail "templates/pcs-volume.sh failed: $(cat "$TESTDIR/pcs-volume.out")"
}

# oc_start_node I: see the top.
oc_start_node() {
	local i=$1
	cluster_start_corosync "$i"
	cluster_wait_quorate "$i" 30 || fail "n$i: corosync not quorate within 30 s"
	oc_install "$i"
	rc_start "$i"
	cluster_start_pacemaker "$i"
}

# oc_roles I: vol0's instances as Pacemaker on node I sees them, sorted by
# node; "nN=ROLE" (the role of an instance on no node is left out).
oc_roles() {
	cluster_pcmk_state "$1" 2>/dev/null |
		awk -v r="$OC_VOL" '$1 == "rsc" && $2 == r && NF >= 4 { print $4 "=" $3 }' | sort | xargs
}

# oc_wait_roles I T EXPR: until oc_roles I matches the (extended) regex EXPR.
_oc_roles_match() {
	CL_LAST=$(oc_roles "$1")
	[[ $CL_LAST =~ $2 ]]
}
oc_wait_roles() {
	_cl_wait "$OC_VOL roles matching /$3/ (seen from n$1)" "$2" _oc_roles_match "$1" "$3"
}

# oc_promoted I: the node where vol0 is Promoted, as node I sees it.
oc_promoted() {
	oc_roles "$1" | tr ' ' '\n' | sed -n 's/=Promoted$//p' | head -n 1
}

# oc_score I NODE: NODE's promotion score for vol0 (crm_attribute on node I).
oc_score() {
	CLUSTER_EXEC_TIMEOUT=15 cluster_exec "$1" crm_attribute --promotion="$OC_VOL" \
		-N "$2" -G -q 2>/dev/null
}

# oc_nbd_read I: a 4 KiB read of vol0 through node I's NBD socket (true if
# it was served).
oc_nbd_read() {
	timeout -k 2 5 qemu-io -f raw -r -c 'read 0 4k' "$(rc_uri "$1" "$OC_VOL")" >/dev/null 2>&1
}

# oc_kill_time NODE: when fence_ns (also cluster_kill_node) last sent
# SIGKILL to NODE's processes, in seconds since the epoch (with fractions).
oc_kill_time() {
	local t
	t=$(awk -v n="$1" '$3 ~ /^(off|reboot)$/ && $4 == n { run = $2 }
		$3 == "SIGKILL" && $2 == run { t = $1 } END { print t }' "$TESTDIR/fence_ns.log")
	[ -n "$t" ] && date -d "$t" +%s.%N
}

# oc_show I: "replagent show vol0" on node I (as the agent sees it).
oc_show() { rc_cli "$1" show "$OC_VOL" 2>&1; }
