#!/bin/bash
# tests/ocf-lint.sh: the OCF agent ocf-resources/volume checked as
# resource-agents checks its own, then run for real.
#   - its meta-data validates against the OCF schemas of resource-agents
#     (metadata.rng with xmllint --relaxng, ra-api-1.dtd with --valid as
#     ocf-tester does), is OCF 1.1 and declares what a promotable clone
#     needs; the defaults it shows are the ones the agent uses;
#   - shellcheck passes on it as POSIX sh and as dash, and on
#     templates/pcs-volume.sh;
#   - ocf-tester passes against two replagentd in static mode on
#     127.0.0.1 holding replicas of vol0 (so demote and promote mean
#     something), with crm_attribute replaced to record the promotion
#     scores the agent sets; afterwards the daemons agree with the agent;
#   - promote is refused (within its timeout) while the other replica is
#     Primary, and start/stop/monitor behave when that daemon is gone;
#   - ocft runs a case file for the agent (as root, in a private mount
#     namespace whose /var/lib and /run/resource-agents are throwaway, since
#     ocft keeps its cases there).
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires xmllint shellcheck dash ocf-tester timeout
[ -r /usr/lib/ocf/lib/heartbeat/ocf-shellfuncs ] ||
	skip "requires ocf-shellfuncs (resource-agents)"
RA_SHARE=/usr/share/resource-agents
[ -r "$RA_SHARE/metadata.rng" ] && [ -r "$RA_SHARE/ra-api-1.dtd" ] ||
	skip "requires the OCF schemas of resource-agents ($RA_SHARE)"
requires_replagentd
requires_replagent

# A copy with mode 0755 (ocf-tester checks that "nobody" can run it).
AGENT=$TESTDIR/volume
cp "$top_srcdir/ocf-resources/volume" "$AGENT" && chmod 0755 "$AGENT" ||
	hard_error "cannot copy the agent"

# ---- meta-data ----------------------------------------------------------------
MD=$TESTDIR/meta-data.xml
OCF_ROOT=/usr/lib/ocf dash "$AGENT" meta-data >"$MD" || fail "meta-data failed"
xmllint --noout --relaxng "$RA_SHARE/metadata.rng" "$MD" 2>"$TESTDIR/xmllint.out" ||
	fail "meta-data does not validate against metadata.rng: $(cat "$TESTDIR/xmllint.out")"
(cd "$RA_SHARE" && xmllint --noout --valid - <"$MD") 2>"$TESTDIR/xmllint.out" ||
	fail "meta-data does not validate against ra-api-1.dtd: $(cat "$TESTDIR/xmllint.out")"
xq() { xmllint --xpath "$1" "$MD" 2>/dev/null; }
[ "$(xq 'string(/resource-agent/version)')" = 1.1 ] || fail "meta-data: not OCF 1.1"
for a in start stop promote demote notify monitor meta-data validate-all; do
	[ -n "$(xq "string(//action[@name='$a']/@timeout)")" ] || fail "meta-data: no $a action with a timeout"
done
[ "$(xq "count(//action[@name='monitor'][@role='Promoted'])")" = 1 ] &&
	[ "$(xq "count(//action[@name='monitor'][@role='Unpromoted'])")" = 1 ] ||
	fail "meta-data: no monitor per role"
[ "$(xq "string(//action[@name='monitor'][@role='Promoted']/@interval)")" != \
	"$(xq "string(//action[@name='monitor'][@role='Unpromoted']/@interval)")" ] ||
	fail "meta-data: the two monitors have the same interval (Pacemaker refuses that)"
[ "$(xq "string(//parameter[@name='volume']/@required)")" = 1 ] &&
	[ "$(xq "string(//parameter[@name='volume']/@unique)")" = 1 ] ||
	fail "meta-data: volume is not required and unique"
for p in socket replagent; do
	shown=$(xq "string(//parameter[@name='$p']/content/@default)")
	used=$(sed -n "s/^OCF_RESKEY_${p}_default=//p" "$AGENT")
	[ -n "$shown" ] && [ "$shown" = "$used" ] ||
		fail "meta-data: the default of $p is '$shown', the agent uses '$used'"
done
log "meta-data validates (metadata.rng, ra-api-1.dtd), OCF 1.1, promotable"

# ---- shellcheck ---------------------------------------------------------------
for s in sh dash; do
	shellcheck -s "$s" "$AGENT" >"$TESTDIR/sc.out" 2>&1 ||
		fail "shellcheck -s $s of the agent: $(cat "$TESTDIR/sc.out")"
done
shellcheck -s sh "$top_srcdir/templates/pcs-volume.sh" >"$TESTDIR/sc.out" 2>&1 ||
	fail "shellcheck of templates/pcs-volume.sh: $(cat "$TESTDIR/sc.out")"
log "shellcheck: the agent (sh, dash) and templates/pcs-volume.sh are clean"

# ---- ocf-tester against two daemons -----------------------------------------
cluster_config a b
start_node a
start_node b
wait_status a 30 'v.get("disk") == "UpToDate" and p["b"]["link"] == "Connected"' ||
	fail "the replicas did not connect"
mkdir -p "$TESTDIR/sbin" || hard_error mkdir
cat >"$TESTDIR/sbin/crm_attribute" <<EOF
#!/bin/sh
echo "\$*" >>"$TESTDIR/scores"
EOF
chmod 0755 "$TESTDIR/sbin/crm_attribute"
# ocf_agent NODE ACTION [VAR=VALUE...]: the agent against NODE's daemon.
ocf_agent() {
	local n=$1 action=$2
	shift 2
	env OCF_ROOT=/usr/lib/ocf OCF_RESOURCE_INSTANCE=vol0 OCF_RESKEY_volume=vol0 \
		OCF_RESKEY_socket="${NODE_CTL[$n]}" OCF_RESKEY_replagent="$REPLAGENT" \
		OCF_RESKEY_crm_feature_set=3.16.2 HA_SBIN_DIR="$TESTDIR/sbin" \
		OCF_RESKEY_CRM_meta_timeout=20000 OCF_RESKEY_CRM_meta_interval=10000 \
		"$@" "$AGENT" "$action" >>"$TESTDIR/agent.log" 2>&1
}

OCF_RESKEY_crm_feature_set=3.16.2 HA_SBIN_DIR="$TESTDIR/sbin" \
	ocf-tester -n vol0 -o volume=vol0 -o socket="${NODE_CTL[a]}" -o replagent="$REPLAGENT" \
	"$AGENT" >"$TESTDIR/ocf-tester.out" 2>&1 ||
	fail "ocf-tester: $(cat "$TESTDIR/ocf-tester.out")"
grep -q 'passed all tests' "$TESTDIR/ocf-tester.out" || fail "ocf-tester: $(cat "$TESTDIR/ocf-tester.out")"
# The scores it set: 1001 as Primary (one UpToDate peer), 101 as a connected
# Secondary, deleted on stop (ocf-tester ends stopped).
grep -qx -- '-p -q -v 1001' "$TESTDIR/scores" && grep -qx -- '-p -q -v 101' "$TESTDIR/scores" &&
	[ "$(tail -n 1 "$TESTDIR/scores")" = "-p -q -D" ] ||
	fail "unexpected promotion scores: $(sort "$TESTDIR/scores" | uniq -c | xargs)"
wait_status a 5 'v["role"] == "Secondary" and v["up"] is False' || fail "vol0 on a is not down after ocf-tester"
wait_status b 5 'v["role"] == "Secondary" and v["up"] is True' || fail "vol0 on b changed"
log "ocf-tester passed against replagentd (scores set: $(sort -u "$TESTDIR/scores" | sed 's/-p -q //' | xargs))"

# ---- refusals and a missing daemon --------------------------------------------
ocf_agent a start || fail "start on a failed"
wait_status a 30 'p["b"]["link"] == "Connected"' || fail "a did not reconnect after start"
ra_cli b promote vol0 >/dev/null || fail "promote on b failed"
t0=$(now_s)
ocf_agent a promote OCF_RESKEY_CRM_meta_timeout=6000 && fail "promote on a succeeded while b is Primary"
dt=$(awk -v a="$t0" -v b="$(now_s)" 'BEGIN { printf "%.1f", b - a }')
awk -v d="$dt" 'BEGIN { exit !(d < 6) }' || fail "the refused promote took $dt s (timeout 6 s)"
grep -q "b is Primary" "$TESTDIR/agent.log" || fail "the refusal's reason was not reported"
ocf_agent a monitor
rc=$?
[ "$rc" = 0 ] || fail "monitor of a (Secondary) after the refused promote: $rc"
log "promote refused while b is Primary (failed after $dt s of a 6 s timeout), a still Secondary"
ocf_agent b demote || fail "demote on b failed"
ocf_agent a promote || fail "promote on a failed once b was demoted"
ocf_agent a monitor
rc=$?
[ "$rc" = 8 ] || fail "monitor of a (Primary): $rc"
ocf_agent a stop || fail "stop of a (Primary) failed"
wait_status a 5 'v["role"] == "Secondary" and v["up"] is False' || fail "stop did not demote and down a"

stop_node b
for probe in 0 10000; do
	ocf_agent b monitor OCF_RESKEY_CRM_meta_interval=$probe
	rc=$?
	[ "$rc" = 7 ] || fail "monitor (interval $probe) with b's replagentd stopped: $rc"
done
ocf_agent b stop || fail "stop with b's replagentd stopped failed"
ocf_agent b start OCF_RESKEY_CRM_meta_timeout=5000 && fail "start with b's replagentd stopped succeeded"
ocf_agent a monitor OCF_RESKEY_volume=nosuch
rc=$?
[ "$rc" = 7 ] || fail "monitor of a volume replagentd does not have: $rc"
ocf_agent a start OCF_RESKEY_volume=nosuch OCF_RESKEY_CRM_meta_timeout=5000
rc=$?
[ "$rc" = 5 ] || fail "start of a volume replagentd does not have: $rc, expected 5"
log "a stopped replagentd: monitor 7 (also as a probe), stop 0, start fails; unknown volume: 7, start 5"

# ---- ocft --------------------------------------------------------------------------
if [ "$(id -u)" != 0 ] || ! command -v ocft >/dev/null || ! command -v unshare >/dev/null; then
	log "ocft: skipped (needs root, ocft and unshare)"
	log PASS
	exit 0
fi
start_node b
mkdir -p "$TESTDIR/ocft/configs" "$TESTDIR/ocft/varlib" "$TESTDIR/ocft/upper" \
	"$TESTDIR/ocft/work" "$TESTDIR/ocft/rsctmp" || hard_error mkdir
cat >"$TESTDIR/ocft/configs/volume" <<EOF
# ocft cases for ocf:replagent:volume (written by $TEST_NAME)
CONFIG
	Agent volume
	AgentRoot $TESTDIR
	HangTimeout 30

CASE-BLOCK required_args
	Env OCF_RESKEY_volume=vol0
	Env OCF_RESKEY_socket=${NODE_CTL[a]}
	Env OCF_RESKEY_replagent=$REPLAGENT
	Env OCF_RESKEY_crm_feature_set=3.16.2
	Env HA_SBIN_DIR=$TESTDIR/sbin

CASE-BLOCK default_status
	AgentRun stop

CASE-BLOCK prepare
	Include required_args
	Include default_status

CASE "check base env"
	Include prepare
	AgentRun start OCF_SUCCESS

CASE "check base env: unset 'OCF_RESKEY_volume'"
	Include prepare
	Unenv OCF_RESKEY_volume
	AgentRun start OCF_ERR_CONFIGURED

CASE "check base env: invalid 'OCF_RESKEY_volume'"
	Include prepare
	Env OCF_RESKEY_volume=../etc
	AgentRun start OCF_ERR_CONFIGURED

CASE "check base env: missing replagent program"
	Include prepare
	Env OCF_RESKEY_replagent=/nonexistent/replagent
	AgentRun start OCF_ERR_INSTALLED

CASE "normal start"
	Include prepare
	AgentRun start OCF_SUCCESS

CASE "normal stop"
	Include prepare
	AgentRun start
	AgentRun stop OCF_SUCCESS

CASE "double start"
	Include prepare
	AgentRun start
	AgentRun start OCF_SUCCESS

CASE "double stop"
	Include prepare
	AgentRun stop OCF_SUCCESS

CASE "monitor with running"
	Include prepare
	AgentRun start
	AgentRun monitor OCF_SUCCESS

CASE "monitor with not running"
	Include prepare
	AgentRun monitor OCF_NOT_RUNNING

CASE "promote, monitor promoted, demote"
	Include prepare
	AgentRun start
	AgentRun promote OCF_SUCCESS
	AgentRun monitor OCF_RUNNING_MASTER
	AgentRun demote OCF_SUCCESS
	AgentRun monitor OCF_SUCCESS

CASE "stop a promoted volume"
	Include prepare
	AgentRun start
	AgentRun promote
	AgentRun stop OCF_SUCCESS
	AgentRun monitor OCF_NOT_RUNNING

CASE "promote a stopped volume"
	Include prepare
	AgentRun promote OCF_NOT_RUNNING

CASE "probe without replagentd"
	Include prepare
	Env OCF_RESKEY_socket=$TESTDIR/none.sock
	Env OCF_RESKEY_CRM_meta_interval=0
	AgentRun monitor OCF_NOT_RUNNING

CASE "unimplemented command"
	Include prepare
	AgentRun no_cmd OCF_ERR_UNIMPLEMENTED
EOF
# ocft keeps its generated cases in /var/lib/resource-agents/ocft and its
# run logs in /run/resource-agents: both throwaway here (an overlay on
# /var/lib, a tmpfs on /run; the daemons' sockets are under $TESTDIR).
unshare -m --propagation private bash -c '
	set -e
	t=$1
	mount -t overlay overlay -o "lowerdir=/var/lib,upperdir=$t/upper,workdir=$t/work" /var/lib
	mount -t tmpfs tmpfs /run
	mkdir -p /run/resource-agents
	ocft make -d "$t/configs" volume && ocft test volume
' ocft "$TESTDIR/ocft" >"$TESTDIR/ocft.out" 2>&1
st=$?
grep -q -i -E 'error|fail' "$TESTDIR/ocft.out" && st=1
[ "$st" = 0 ] || fail "ocft (status $st): $(cat "$TESTDIR/ocft.out")"
n=$(grep -c '^volume: .* - .*OK' "$TESTDIR/ocft.out")
[ "$n" = "$(grep -c '^CASE ' "$TESTDIR/ocft/configs/volume")" ] ||
	fail "ocft: $n cases passed of $(grep -c '^CASE ' "$TESTDIR/ocft/configs/volume"): $(cat "$TESTDIR/ocft.out")"
log "ocft: $n cases passed"
log PASS
