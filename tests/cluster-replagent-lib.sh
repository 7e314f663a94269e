# shellcheck shell=bash
# Variables set here are used by the scripts that source this file:
# shellcheck disable=SC2034
# tests/cluster-replagent-lib.sh: helpers shared by the tests that run
# replagentd in cluster mode (cluster = corosync) on the nodes of
# tests/cluster.sh.  Not a test itself; source it instead of cluster.sh:
#
#   . "${top_srcdir:-$(dirname "$0")/..}/tests/cluster-replagent-lib.sh"
#
#   rc_requires                    skip (77) unless the cluster can be made
#   rc_setup N                     N nodes, corosync quorate, replagentd
#                                  answering on every node
#   rc_write_conf I                node I's config ($TESTDIR/nodes/nI/replagent.conf;
#                                  RC_GLOBAL_EXTRA: more lines for [global])
#   rc_start I                     replagentd on node I (corosync must run)
#   rc_start_node I                corosync + replagentd on node I (a reboot)
#   rc_stop I                      SIGTERM node I's replagentd, wait for it
#   rc_cli I ARGS...               the CLI on node I's control socket
#   rc_status I                    node I's "status --json"
#   rc_value I EXPR [VOL]          EXPR over node I's status (see RC_PY)
#   rc_wait I T EXPR [VOL]         wait until EXPR holds on node I
#   rc_wait_all T EXPR [VOL] [I..] the same on several nodes (default all)
#   rc_promote_retry I T VOL       promote on node I until it works
#   rc_vol0_on_n1                  vol0 on n1..n3, in sync, Primary on n1
#   rc_acks LOG [FROM]             writes an ackcheck.py log acknowledged
#   rc_cut_writing_n1 LOG D S      a writer on n1, then n1 cut off, frozen
#   rc_check_backings VOL REF LOG.. stop all; every backing as REF's, with
#                                  every write of the LOGs (problems)
#   problem MSG / rc_finish        record a failure, go on; fail at the end
#
# EXPR is a Python expression where s is the whole status answer, v the
# volume VOL (default vol0; {} if absent), p its peers by node name, and
# vols the names of all the volumes in the answer; e.g.
#   'v["role"] == "Primary" and all(x["link"] == "Connected" for x in p.values())'

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	echo "$0: a library for the cluster-replagent-* tests, not a test" >&2
	exit 77
fi
# shellcheck source=SCRIPTDIR/cluster.sh
. "$(dirname "${BASH_SOURCE[0]}")/cluster.sh" || exit 99

REPLAGENT=${REPLAGENT:-$top_builddir/agent/replagent}
RC_CLI_TIMEOUT=${RC_CLI_TIMEOUT:-15}
RC_KEY=
RC_GLOBAL_EXTRA=
declare -a RC_PID=() RC_CONF=() RC_CTL=() RC_NBD=() RC_DATA=()
# RC_ENV[I]: VAR=value lines node I's replagentd starts with (rc_faultdisk).
declare -a RC_ENV=()

rc_requires() {
	cluster_requires_corosync
	requires_replagentd
	[ -x "$REPLAGENT" ] || hard_error "$REPLAGENT not found: build it first"
	requires timeout cmp "$PYTHON"
}

# rc_write_conf I: node I's cluster-mode config, no volume sections.
rc_write_conf() {
	local i=$1 d=${CL_DIR[$1]}
	RC_CONF[i]=$d/replagent.conf
	RC_CTL[i]=$d/sock/control.sock
	RC_NBD[i]=$d/sock/nbd.sock
	RC_DATA[i]=$d/data
	mkdir -p "$d/state" "$d/data" || hard_error "mkdir $d/state"
	cat >"${RC_CONF[i]}" <<-EOF || hard_error "cannot write ${RC_CONF[i]}"
		# written by $TEST_NAME for node n$i
		[global]
		cluster = corosync
		nbd-socket = ${RC_NBD[i]}
		control-socket = ${RC_CTL[i]}
		state-dir = $d/state
		data-dir = $d/data
		pidfile = $d/sock/replagentd.pid
		key-file = $RC_KEY
		log-level = debug
	EOF
	[ -z "$RC_GLOBAL_EXTRA" ] || printf '%s\n' "$RC_GLOBAL_EXTRA" >>"${RC_CONF[i]}" ||
		hard_error "cannot write ${RC_CONF[i]}"
}

# rc_uri I [VOL]: the NBD URI of VOL on node I.
rc_uri() { echo "nbd+unix:///${2:-vol0}?socket=${RC_NBD[$1]}"; }

# rc_cli I ARGS...: the CLI against node I, bounded in time.
rc_cli() {
	local i=$1
	shift
	timeout -k 5 "$RC_CLI_TIMEOUT" "$REPLAGENT" -s "${RC_CTL[i]}" "$@"
}

# rc_alive I: node I's replagentd runs.
rc_alive() { [ -n "${RC_PID[$1]:-}" ] && _alive "${RC_PID[$1]}"; }

# rc_start I: replagentd -f on node I; waits until its control socket
# answers (RA_START_TIMEOUT s).
rc_start() {
	local i=$1 k
	local -a e=()
	[ -n "${RC_CONF[i]:-}" ] || rc_write_conf "$i"
	[ -z "${RC_ENV[i]:-}" ] || mapfile -t e <<<"${RC_ENV[i]}"
	if [ ${#e[@]} -gt 0 ]; then
		cluster_start_daemon "$i" replagentd env "${e[@]}" "$REPLAGENTD" -f -c "${RC_CONF[i]}"
	else
		cluster_start_daemon "$i" replagentd "$REPLAGENTD" -f -c "${RC_CONF[i]}"
	fi
	RC_PID[i]=$CLUSTER_PID
	for ((k = 0; k < RA_START_TIMEOUT * 10; k++)); do
		rc_cli "$i" version >/dev/null 2>&1 && return 0
		rc_alive "$i" || {
			tail -n 20 "${CL_DIR[i]}/log/replagentd.out" >&2
			fail "replagentd on n$i exited during startup"
		}
		sleep 0.1
	done
	fail "replagentd on n$i: ${RC_CTL[i]} not answering after ${RA_START_TIMEOUT}s"
}

# rc_faultdisk I: node I's replagentd is started with tests/faultdisk.c
# from now on (faultdisk_init first; faultdisk_set drives it).
rc_faultdisk() { RC_ENV[$1]=$(faultdisk_env); }

# rc_stop I: SIGTERM node I's replagentd, wait up to RA_STOP_TIMEOUT s
# (fails the test if it does not exit).  Not our child: no exit status.
rc_stop() {
	local i=$1 k
	rc_alive "$i" || return 0
	kill -TERM "${RC_PID[i]}"
	for ((k = 0; k < RA_STOP_TIMEOUT * 10; k++)); do
		rc_alive "$i" || { log "replagentd on n$i stopped"; return 0; }
		sleep 0.1
	done
	kill -KILL "${RC_PID[i]}" 2>/dev/null
	fail "replagentd on n$i did not exit within ${RA_STOP_TIMEOUT}s of SIGTERM"
}

# rc_start_node I: corosync and replagentd on node I (after a crash: a new
# mount namespace, the same directories).
rc_start_node() {
	cluster_start_corosync "$1"
	cluster_wait_quorate "$1" 30 || fail "n$1: corosync not quorate within 30 s"
	rc_start "$1"
}

# rc_setup N [M]: the cluster, corosync quorate everywhere, replagentd on
# every node (on the first M only, if given).
rc_setup() {
	local n=$1 m=${2:-$1} i
	cluster_create "$n"
	RC_KEY=$TESTDIR/key
	(umask 077 && head -c 32 /dev/urandom >"$RC_KEY") || hard_error "cannot write the key"
	chmod 0600 "$RC_KEY"
	for ((i = 1; i <= n; i++)); do
		rc_write_conf "$i"
		cluster_start_corosync "$i"
	done
	for ((i = 1; i <= n; i++)); do
		cluster_wait_quorate "$i" 30 && cluster_wait_members "$i" "$n" 30 ||
			fail "n$i: no quorate membership of $n nodes within 30 s"
	done
	for ((i = 1; i <= m; i++)); do
		rc_start "$i"
	done
}

# The Python side of rc_value / rc_wait: JSON on stdin; argv: mode (test or
# value), EXPR, VOL.
RC_PY='
import json, sys
mode, expr, vol = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    s = json.load(sys.stdin)
    vols = [x.get("name") for x in s.get("volumes", [])]
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

# rc_status I: node I's "status --json" (all volumes).
rc_status() { rc_cli "$1" status --json; }

# rc_value I EXPR [VOL]: prints EXPR over node I's status.
rc_value() {
	rc_status "$1" 2>/dev/null | "$PYTHON" -c "$RC_PY" value "$2" "${3:-vol0}"
}

# rc_wait I T EXPR [VOL]: waits until EXPR holds on node I; on timeout shows
# the last answer and returns 1.
rc_wait() {
	local i=$1 t=$2 expr=$3 vol=${4:-vol0} js end
	end=$(($(date +%s) + t))
	while :; do
		js=$(rc_status "$i" 2>&1)
		printf '%s' "$js" | "$PYTHON" -c "$RC_PY" test "$expr" "$vol" 2>/dev/null &&
			return 0
		if [ "$(date +%s)" -ge "$end" ]; then
			echo "n$i: after ${t}s still not: $expr" >&2
			echo "  last status of n$i: $js" >&2
			return 1
		fi
		sleep 0.3
	done
}

# rc_wait_all T EXPR [VOL] [I...]: rc_wait on nodes I (default all), one
# deadline for all of them.
rc_wait_all() {
	local t=$1 expr=$2 vol=${3:-vol0} end i left
	shift 3 2>/dev/null || shift $#
	local nodes=("$@")
	[ ${#nodes[@]} -gt 0 ] || mapfile -t nodes < <(seq 1 "$CLUSTER_N")
	end=$(($(date +%s) + t))
	for i in "${nodes[@]}"; do
		left=$((end - $(date +%s)))
		[ "$left" -ge 1 ] || left=1
		rc_wait "$i" "$left" "$expr" "$vol" || return 1
	done
}

# Every peer of VOL connected, nothing out of sync, the peers' disks
# UpToDate, and this node's too.
RC_SYNCED='v.get("disk") == "UpToDate" and len(p) > 0 and all(x["link"] == "Connected" and x["out_of_sync_bytes"] == 0 and x["peer_disk"] == "UpToDate" for x in p.values())'

# rc_promote_retry I T VOL: "promote VOL" on node I every 0.5 s until it
# succeeds (true) or T seconds passed (false; the last refusal on stderr).
# RC_PROMOTE_OUT: the last answer.
RC_PROMOTE_OUT=
rc_promote_retry() {
	local i=$1 t=$2 vol=${3:-vol0} end
	end=$(($(date +%s) + t))
	while :; do
		RC_PROMOTE_OUT=$(rc_cli "$i" promote "$vol" 2>&1) && return 0
		if [ "$(date +%s)" -ge "$end" ]; then
			echo "promote $vol on n$i still refused after ${t}s: $RC_PROMOTE_OUT" >&2
			return 1
		fi
		sleep 0.5
	done
}

# rc_vol0_on_n1: vol0 (64 MiB) created with replicas on n1, n2 and n3, all
# Connected within 30 s, promoted on n1, and seen Primary there by n2 and
# n3.
rc_vol0_on_n1() {
	rc_cli 1 volume create vol0 --size 64M --nodes n1,n2,n3 || fail "volume create failed"
	rc_wait_all 30 "$RC_SYNCED" || fail "vol0: replicas not all Connected within 30 s"
	rc_promote_retry 1 10 || fail "promote vol0 on n1 refused"
	rc_wait_all 10 'p["n1"]["peer_role"] == "Primary"' vol0 2 3 ||
		fail "n2 and n3 do not see n1 as Primary"
}

# rc_acks LOG [FROM]: how many writes an ackcheck.py log shows
# acknowledged (at or after FROM, a now_s time); 0 without the log.
rc_acks() {
	awk -v from="${2:-0}" '$1 == "A" && $4 >= from { n++ } END { print n + 0 }' "$1" 2>/dev/null ||
		echo 0
}

# rc_backing I [VOL]: node I's backing file of VOL.
rc_backing() { echo "${RC_DATA[$1]}/${2:-vol0}.img"; }

# rc_cmp_backings VOL I J...: the backing files of node I and each J are
# identical (stop the daemons first).  Shows the first differing blocks.
rc_cmp_backings() {
	local vol=$1 a=$2 b ok=0
	shift 2
	for b in "$@"; do
		if cmp -s "$(rc_backing "$a" "$vol")" "$(rc_backing "$b" "$vol")"; then
			log "backing files of $vol on n$a and n$b are identical"
		else
			ok=1
			echo "backing files of $vol on n$a and n$b differ" >&2
			cmp -l "$(rc_backing "$a" "$vol")" "$(rc_backing "$b" "$vol")" 2>/dev/null |
				awk '{ print int(($1 - 1) / 4096) * 4096 }' | uniq | head -n 10 |
				sed 's/^/  differing 4 KiB block at offset /' >&2
		fi
	done
	return "$ok"
}

# rc_pair_primary VOL A B: VOL (64 MiB) created with replicas on nodes A
# and B, both Connected within 30 s, then promoted on A.
rc_pair_primary() {
	local vol=$1 a=$2 b=$3
	rc_cli "$a" volume create "$vol" --size 64M --nodes "n$a,n$b" ||
		fail "volume create $vol failed"
	rc_wait_all 30 "$RC_SYNCED" "$vol" "$a" "$b" ||
		fail "$vol: n$a and n$b not Connected within 30 s"
	rc_promote_retry "$a" 10 "$vol" || fail "promote $vol on n$a refused"
}

# rc_pair_faultdisk I...: the three nodes of the disk-fault tests, with
# the faultdisk shim (tests/faultdisk.c) under replagentd on each node I,
# all started, and vol0 (64 MiB) on n1, Primary, and n2 (n3 only votes).
rc_pair_faultdisk() {
	local i
	faultdisk_init
	rc_setup 3 0
	for i; do
		rc_faultdisk "$i"
	done
	for i in 1 2 3; do
		rc_start "$i"
	done
	rc_pair_primary vol0 1 2
}

# rc_end_checked VOL ACKLOG A B: stops every node's replagentd, then VOL's
# backings on nodes A and B must be identical and B's must hold every
# write of ACKLOG (ackcheck's log of what was acknowledged); rc_finish.
rc_end_checked() {
	local vol=$1 ack=$2 a=$3 b=$4 i
	for i in "${!RC_PID[@]}"; do
		rc_stop "$i"
	done
	rc_cmp_backings "$vol" "$a" "$b" || fail "n$a's and n$b's backings of $vol differ"
	ackcheck check --log "$ack" --file "$(rc_backing "$b" "$vol")" ||
		fail "n$b's backing of $vol lacks acknowledged writes"
	rc_finish
}

# rc_cut_writing_n1 LOG DURATION STALL: starts tests/ackcheck.py writing
# through n1's NBD socket (16 in flight, a FLUSH every 64 writes, the
# first 16 MiB; it runs DURATION s and gives up after STALL s without an
# answer), checks n1 acknowledged 100 writes in 3 s, then cuts n1 off and
# waits until it is inquorate and reports its I/O frozen.  Sets
# RC_T_CUT and RC_T_FROZEN (now_s times) and RC_N_FROZEN (the writes
# acknowledged then); WRITER_PID is the writer's.
RC_T_CUT='' RC_T_FROZEN='' RC_N_FROZEN=''
rc_cut_writing_n1() {
	start_writer "$1" --unix "${RC_NBD[1]}" --export vol0 --duration "$2" \
		--inflight 16 --flush-every 64 --span $((16 << 20)) --stall-timeout "$3"
	sleep 3
	[ "$(rc_acks "$1")" -ge 100 ] || fail "n1 acknowledged only $(rc_acks "$1") writes in 3 s"
	RC_T_CUT=$(now_s)
	cluster_partition 1
	cluster_wait_inquorate 1 20 || fail "n1 still quorate 20 s after the cut"
	rc_wait 1 15 'v["io_frozen"] and v["role"] == "Primary"' ||
		fail "n1 (Primary, no quorum) does not report its I/O frozen"
	RC_T_FROZEN=$(now_s)
	RC_N_FROZEN=$(rc_acks "$1")
	log "n1 frozen $(rc_elapsed "$RC_T_CUT") s after the cut;" \
		"$(rc_acks "$1" "$RC_T_CUT") write(s) acknowledged by n1 after the cut," \
		"$RC_N_FROZEN in all"
}

# rc_check_backings VOL REF LOG...: stops every node's replagentd; then
# each node's backing of VOL must be identical to node REF's and hold every
# write of each ackcheck.py LOG.  What does not hold is a problem (the
# test fails at rc_finish).
rc_check_backings() {
	local vol=$1 ref=$2 i f others=()
	shift 2
	for i in "${!RC_PID[@]}"; do
		rc_stop "$i"
	done
	for ((i = 1; i <= CLUSTER_N; i++)); do
		[ "$i" = "$ref" ] || others+=("$i")
	done
	rc_cmp_backings "$vol" "$ref" "${others[@]}" || problem "the replicas differ at the end"
	for ((i = 1; i <= CLUSTER_N; i++)); do
		for f in "$@"; do
			ackcheck check --log "$f" --file "$(rc_backing "$i" "$vol")" >/dev/null ||
				problem "n$i's backing file lacks acknowledged writes ($(basename "$f"))"
		done
	done
}

# problem MSG: a failed expectation after which the test can go on (its
# later checks still say something): shown now, and the test fails at
# rc_finish with the list.  For what makes the rest meaningless, use fail.
RC_PROBLEMS=()
problem() {
	printf '%s: PROBLEM: %s\n' "$TEST_NAME" "$*" >&2
	RC_PROBLEMS+=("$*")
}

# rc_finish: fail with the list of problems, if any.
rc_finish() {
	[ ${#RC_PROBLEMS[@]} = 0 ] && return 0
	printf '%s: %d problem(s):\n' "$TEST_NAME" ${#RC_PROBLEMS[@]} >&2
	printf '  - %s\n' "${RC_PROBLEMS[@]}" >&2
	fail "${#RC_PROBLEMS[@]} problem(s), listed above"
}

# rc_log I: node I's replagentd output.
rc_log() { echo "${CL_DIR[$1]}/log/replagentd.out"; }

# rc_log_has I TEXT T: node I's replagentd log has a line with TEXT within
# T s.
rc_log_has() {
	local end=$(($(date +%s) + $3))
	until grep -q -F -- "$2" "$(rc_log "$1")"; do
		[ "$(date +%s)" -ge "$end" ] && return 1
		sleep 0.2
	done
}

# rc_elapsed T0: seconds since T0 (now_s format), 2 decimals.
rc_elapsed() { awk -v a="$1" -v b="$(now_s)" 'BEGIN { printf "%.2f\n", b - a }'; }
