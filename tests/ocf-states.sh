#!/bin/bash
# tests/ocf-states.sh: the decisions of the OCF agent ocf-resources/volume,
# as tables, without a daemon or a cluster: a stand-in for the replagent
# CLI (a small script keeping the replica's state in a file and answering
# "show", "up", "down", "promote", "demote" as replagentd would, or failing
# as a stopped, hung or confused daemon would) and one for crm_attribute
# (it records the promotion score the agent sets).  Checked: the monitor
# result and the promotion score for each state of a replica (an Outdated
# or Inconsistent replica never has a score, but a partial one with no
# UpToDate peer connected has the lowest), probes and stops when
# replagentd is not running, start, stop, promote and demote doing what
# they should and nothing else, a hung CLI cut short within Pacemaker's
# timeout, and the parameters validate-all refuses.  Run with dash (the
# agent is POSIX sh).
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires dash timeout "$PYTHON"
[ -r /usr/lib/ocf/lib/heartbeat/ocf-shellfuncs ] ||
	skip "requires ocf-shellfuncs (resource-agents)"
AGENT=$top_srcdir/ocf-resources/volume
[ -r "$AGENT" ] || hard_error "$AGENT not found"

STUB=$TESTDIR/stub
mkdir -p "$STUB/sbin" || hard_error "mkdir"
SOCK=$TESTDIR/control.sock
"$PYTHON" -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$SOCK" ||
	hard_error "cannot make a socket file"

# The CLI stand-in.  $STUB/state: the "show" line; $STUB/mode: ok,
# nodaemon, absent, hang or garbage; every call is logged to $STUB/calls.
cat >"$STUB/replagent" <<'EOF'
#!/bin/sh
d=$(dirname "$0")
[ "$1" = -s ] && shift 2
echo "$*" >>"$d/calls"
case $(cat "$d/mode") in
nodaemon) echo "replagent: cannot connect to x: Connection refused (is replagentd running?)" >&2; exit 1 ;;
absent) echo "replagent: $1: no volume \"$2\" on node n1" >&2; exit 1 ;;
hang) exec sleep 60 ;;
garbage) echo "hello"; exit 0 ;;
esac
s=$(cat "$d/state")
case $1 in
show) echo "$s"; exit 0 ;;
up) s=$(echo "$s" | sed 's/up=no/up=yes/') ;;
down)
	case $s in *role=Primary*) echo "replagent: down $2: demote it first" >&2; exit 1 ;; esac
	s=$(echo "$s" | sed 's/up=yes/up=no/')
	;;
promote)
	case $s in
	*disk=UpToDate*) s=$(echo "$s" | sed 's/role=Secondary/role=Primary/') ;;
	*) echo "replagent: promote $2: the local disk is not UpToDate" >&2; exit 1 ;;
	esac
	;;
demote)
	case $s in *clients=0*) ;; *) echo "replagent: demote $2: NBD clients attached" >&2; exit 1 ;; esac
	s=$(echo "$s" | sed 's/role=Primary/role=Secondary/')
	;;
*) exit 64 ;;
esac
echo "$s" >"$d/state"
EOF
# crm_attribute's stand-in: the last score set ("-v N") or "deleted".
cat >"$STUB/sbin/crm_attribute" <<'EOF'
#!/bin/sh
d=$(dirname "$0")/..
case "$*" in
*-D*) echo deleted >"$d/score" ;;
*-v*) for a; do [ "$prev" = -v ] && echo "$a" >"$d/score"; prev=$a; done ;;
esac
exit 0
EOF
chmod 0755 "$STUB/replagent" "$STUB/sbin/crm_attribute"

# agent ACTION [VAR=VALUE...]: runs the agent with dash as Pacemaker would
# (recurring monitor, 20 s timeout unless overridden); its exit status.
agent() {
	local action=$1
	shift
	env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin OCF_ROOT=/usr/lib/ocf \
		OCF_RA_VERSION_MAJOR=1 OCF_RA_VERSION_MINOR=1 OCF_RESOURCE_INSTANCE=vol0 \
		OCF_RESKEY_crm_feature_set=3.16.2 HA_SBIN_DIR="$STUB/sbin" \
		OCF_RESKEY_volume=vol0 OCF_RESKEY_socket="$SOCK" OCF_RESKEY_replagent="$STUB/replagent" \
		OCF_RESKEY_CRM_meta_timeout=20000 OCF_RESKEY_CRM_meta_interval=10000 \
		"$@" dash "$AGENT" "$action" >>"$TESTDIR/agent.log" 2>&1
}

# given MODE [SHOW-LINE]: the stand-in's next answers.
given() {
	echo "$1" >"$STUB/mode"
	[ -n "${2:-}" ] && echo "$2" >"$STUB/state"
	echo unset >"$STUB/score"
	: >"$STUB/calls"
}
line() { # ROLE DISK[/partial] UP FROZEN CLIENTS PEERS CONNECTED UPTODATE_PEERS
	local disk=${2%/partial} partial=no
	[ "$disk" = "$2" ] || partial=yes
	echo "role=$1 disk=$disk up=$3 frozen=$4 clients=$5 peers=$6 connected=$7" \
		"uptodate_peers=$8 partial=$partial"
}
score() { cat "$STUB/score"; }
calls() { tr '\n' ';' <"$STUB/calls"; }

# ---- monitor: result and promotion score per state ----------------------------
n=0
while read -r role disk up frozen clients peers conn utd want_rc want_score; do
	[ -z "$role" ] || [ "${role:0:1}" = '#' ] && continue
	given ok "$(line "$role" "$disk" "$up" "$frozen" "$clients" "$peers" "$conn" "$utd")"
	agent monitor
	rc=$?
	[ "$rc" = "$want_rc" ] && [ "$(score)" = "$want_score" ] ||
		fail "monitor of $(line "$role" "$disk" "$up" "$frozen" "$clients" "$peers" "$conn" "$utd"):" \
			"rc $rc score $(score), expected rc $want_rc score $want_score"
	n=$((n + 1))
done <<'EOF'
# role     disk          up  frozen clients peers conn uptodate  rc score
Secondary  UpToDate      yes no     0       2     2    2         0  102
Secondary  UpToDate      yes no     0       2     1    1         0  101
Secondary  UpToDate      yes no     0       2     1    0         0  100
Secondary  UpToDate      yes no     0       2     0    0         0  10
Secondary  UpToDate      yes no     0       0     0    0         0  10
Secondary  UpToDate      yes yes    0       2     2    2         0  deleted
Secondary  Outdated      yes no     0       2     2    2         0  deleted
Secondary  Outdated      yes no     0       2     0    0         0  deleted
Secondary  Inconsistent  yes no     0       2     2    1         0  deleted
Secondary  Inconsistent  yes no     0       2     0    0         0  deleted
Secondary  Inconsistent/partial yes no 0    2     1    0         0  1
Secondary  Inconsistent/partial yes no 0    2     0    0         0  1
Secondary  Inconsistent/partial yes no 0    2     2    1         0  deleted
Secondary  Inconsistent/partial yes yes 0   2     0    0         0  deleted
Secondary  Consistent    yes no     0       2     0    0         0  deleted
Secondary  Unknown       yes no     0       2     0    0         0  deleted
Secondary  Failed        yes no     0       2     2    2         0  deleted
Primary    UpToDate      yes no     1       2     2    2         8  1002
Primary    UpToDate      yes no     1       2     0    0         8  1000
Primary    UpToDate      yes yes    1       2     1    1         8  1001
Primary    Outdated      yes no     1       2     2    2         9  deleted
Primary    Inconsistent  yes no     0       2     0    0         9  deleted
Secondary  UpToDate      no  no     0       2     0    0         7  unset
Secondary  Outdated      no  no     0       2     0    0         7  unset
EOF
log "monitor: $n states give the expected result and promotion score"

# Daemon not running, volume unknown, hung, garbage: recurring and probe.
for probe in 10000 0; do
	given ok "$(line Secondary UpToDate yes no 0 2 2 2)"
	rm -f "$SOCK.none"
	agent monitor OCF_RESKEY_socket="$SOCK.none" OCF_RESKEY_CRM_meta_interval=$probe
	rc=$?
	[ "$rc" = 7 ] && [ -z "$(calls)" ] ||
		fail "monitor (interval $probe) without a control socket: rc $rc, calls '$(calls)'"
	for m in nodaemon:7 absent:7 garbage:1; do
		given "${m%:*}"
		agent monitor OCF_RESKEY_CRM_meta_interval=$probe
		rc=$?
		[ "$rc" = "${m#*:}" ] || fail "monitor (interval $probe), CLI ${m%:*}: rc $rc, expected ${m#*:}"
		[ "$(score)" = unset ] || fail "monitor, CLI ${m%:*}: the score was changed ($(score))"
	done
done
given ok "$(line Secondary UpToDate yes no 0 2 2 2)"
agent monitor OCF_RESKEY_CRM_meta_interval=0 OCF_RESKEY_replagent=/nonexistent/replagent
rc=$?
[ "$rc" = 7 ] || fail "a probe without the replagent program: rc $rc, expected 7"
log "monitor: 7 without replagentd or the volume (also as a probe), 1 on garbage"

# A hung daemon: the agent answers within Pacemaker's timeout (4 s here).
given hang "$(line Secondary UpToDate yes no 0 2 2 2)"
t0=$(now_s)
agent monitor OCF_RESKEY_CRM_meta_timeout=4000
rc=$?
dt=$(awk -v a="$t0" -v b="$(now_s)" 'BEGIN { printf "%.1f", b - a }')
[ "$rc" = 1 ] || fail "monitor with a hung CLI: rc $rc, expected 1"
awk -v d="$dt" 'BEGIN { exit !(d < 4.0) }' ||
	fail "monitor with a hung CLI took $dt s (Pacemaker's timeout: 4 s)"
grep -q "no answer within" "$TESTDIR/agent.log" || fail "the timeout was not logged"
log "monitor: a hung CLI is cut short after $dt s of a 4 s timeout"

# ---- start, stop, promote, demote ---------------------------------------------
given ok "$(line Secondary UpToDate no no 0 2 0 0)"
agent start OCF_RESKEY_CRM_meta_timeout=8000
rc=$?
[ "$rc" = 0 ] || fail "start: rc $rc"
grep -qx "up vol0" "$STUB/calls" || fail "start did not bring the volume up: $(calls)"
grep -q "promote" "$STUB/calls" && fail "start promoted: $(calls)"
[ "$(score)" = 10 ] || fail "start: score $(score), expected 10 (UpToDate, no peer connected)"

given ok "$(line Secondary UpToDate yes no 0 2 2 2)"
agent start && [ "$(calls)" = "show vol0;show vol0;" ] || fail "start of a started volume: $(calls)"
given absent
agent start OCF_RESKEY_CRM_meta_timeout=4000
rc=$?
[ "$rc" = 5 ] || fail "start of a volume replagentd does not have: rc $rc, expected 5"
given nodaemon
agent start OCF_RESKEY_CRM_meta_timeout=4000
rc=$?
[ "$rc" = 1 ] || fail "start without replagentd: rc $rc, expected 1"

given ok "$(line Primary UpToDate yes no 0 2 2 2)"
agent stop || fail "stop of a Primary failed"
[ "$(calls)" = "show vol0;demote vol0;down vol0;" ] || fail "stop of a Primary: $(calls)"
[ "$(score)" = deleted ] || fail "stop did not delete the score"
for m in nodaemon absent; do
	given "$m"
	agent stop || fail "stop with the CLI saying $m failed"
done
rm -f "$SOCK.none"
agent stop OCF_RESKEY_socket="$SOCK.none" || fail "stop without a control socket failed"
agent stop OCF_RESKEY_replagent=/nonexistent/replagent || fail "stop without the program failed"
given ok "$(line Secondary UpToDate no no 0 2 0 0)"
agent stop && [ "$(calls)" = "show vol0;" ] || fail "stop of a stopped volume: $(calls)"
given hang
agent stop OCF_RESKEY_CRM_meta_timeout=4000 && fail "stop with a hung daemon succeeded"

given ok "$(line Secondary UpToDate yes no 0 2 2 2)"
agent promote || fail "promote failed"
grep -qx "promote vol0" "$STUB/calls" || fail "promote: $(calls)"
[ "$(score)" = 1002 ] || fail "promote: score $(score), expected 1002"
given ok "$(line Secondary Outdated yes no 0 2 2 1)"
agent promote && fail "promote of an Outdated replica succeeded"
grep -qx "promote vol0" "$STUB/calls" && fail "the agent asked to promote an Outdated replica"
[ "$(score)" = deleted ] || fail "promote of an Outdated replica: score $(score)"
given ok "$(line Secondary UpToDate no no 0 2 0 0)"
agent promote
rc=$?
[ "$rc" = 7 ] || fail "promote of a stopped volume: rc $rc, expected 7"

given ok "$(line Primary UpToDate yes no 0 2 2 2)"
agent demote || fail "demote failed"
[ "$(calls)" = "show vol0;demote vol0;show vol0;" ] || fail "demote: $(calls)"
[ "$(score)" = 102 ] || fail "demote: score $(score), expected 102"
given ok "$(line Secondary UpToDate yes no 0 2 2 2)"
agent demote || fail "demote of a Secondary failed"
# NBD clients that do not leave: demote retries, then fails within the time.
given ok "$(line Primary UpToDate yes no 1 2 2 2)"
t0=$(now_s)
agent demote OCF_RESKEY_CRM_meta_timeout=6000 && fail "demote with clients attached succeeded"
[ "$(grep -c '^demote' "$STUB/calls")" -ge 2 ] || fail "demote was not retried: $(calls)"
awk -v a="$t0" -v b="$(now_s)" 'BEGIN { exit !(b - a < 6) }' ||
	fail "demote with clients attached overran its 6 s timeout"

given ok "$(line Secondary UpToDate yes no 0 2 2 2)"
for when in post-start post-promote pre-demote; do
	echo unset >"$STUB/score"
	agent notify OCF_RESKEY_CRM_meta_notify_type="${when%-*}" \
		OCF_RESKEY_CRM_meta_notify_operation="${when#*-}" || fail "notify $when failed"
	case $when in
	post-*) [ "$(score)" = 102 ] || fail "notify $when: score $(score), expected 102" ;;
	*) [ "$(score)" = unset ] || fail "notify $when changed the score" ;;
	esac
done
given nodaemon
agent notify OCF_RESKEY_CRM_meta_notify_type=post OCF_RESKEY_CRM_meta_notify_operation=stop ||
	fail "notify without replagentd failed"
log "start, stop, promote, demote and notify call what they should"

# ---- validate-all ----------------------------------------------------------------
given ok "$(line Secondary UpToDate yes no 0 2 2 2)"
agent validate-all || fail "validate-all refused good parameters"
for bad in "OCF_RESKEY_volume=" "OCF_RESKEY_volume=-x" "OCF_RESKEY_volume=.x" \
	"OCF_RESKEY_volume=a/b" "OCF_RESKEY_volume=a b" \
	"OCF_RESKEY_volume=$(printf 'v%.0s' $(seq 65))" "OCF_RESKEY_socket=relative.sock"; do
	agent validate-all "$bad"
	rc=$?
	[ "$rc" = 6 ] || fail "validate-all with $bad: rc $rc, expected 6 (OCF_ERR_CONFIGURED)"
done
agent validate-all OCF_RESKEY_replagent=/nonexistent/replagent
rc=$?
[ "$rc" = 5 ] || fail "validate-all without the program: rc $rc, expected 5"
[ -z "$(calls)" ] || fail "validate-all called the CLI: $(calls)"
log "validate-all refuses bad names, a relative socket, a missing program"
log PASS
