#!/bin/bash
# tests/metrics-prometheus.sh: a real Prometheus server scrapes a pair.
# Two replicas a (Primary) and b, both with metrics-listen on loopback; a
# Prometheus server of the test's own (its temp dir, a loopback port, 1 s
# scrapes) scrapes both and loads templates/prometheus-alerts.yml (its
# "for" times set to 0 here).  Through its HTTP query API: a sees b
# Connected, then Disconnected after b is killed (and the degraded alert
# fires), then Connected again after b restarts, in that order in a's
# history; a's write counter rises after qemu-io writes.  Also: promtool
# accepts the alert rules, every replagent_ metric the templates use is in
# a real scrape, and every query of templates/grafana-dashboard.json (valid
# JSON) runs on the server without error.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires curl qemu-io
requires prometheus promtool
requires_replagentd
requires_replagent

RULES=$top_srcdir/templates/prometheus-alerts.yml
DASH=$top_srcdir/templates/grafana-dashboard.json

promtool check rules "$RULES" >"$TESTDIR/rules.out" 2>&1 ||
	{ cat "$TESTDIR/rules.out" >&2; fail "promtool check rules $RULES"; }
"$PYTHON" -m json.tool "$DASH" >/dev/null || fail "$DASH is not valid JSON"

cluster_config -t 3 a b
metrics_on a
metrics_on b
start_in_sync a b

# ---- the Prometheus server -------------------------------------------------
PROM=127.0.0.1:$(free_port)
sed -e 's/^\( *for:\).*/\1 0s/' "$RULES" >"$TESTDIR/alerts.yml"
cat >"$TESTDIR/prometheus.yml" <<EOT
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $TESTDIR/alerts.yml
scrape_configs:
  - job_name: replagent
    static_configs:
      - targets: ['${NODE_METRICS[a]}']
        labels: { node: a }
      - targets: ['${NODE_METRICS[b]}']
        labels: { node: b }
EOT
prometheus --config.file="$TESTDIR/prometheus.yml" --storage.tsdb.path="$TESTDIR/prom" \
	--web.listen-address="$PROM" --log.level=warn >"$TESTDIR/prometheus.log" 2>&1 &
track_pid $!
for ((i = 0; i < 300; i++)); do
	curl -sf "http://$PROM/-/ready" >/dev/null && break
	sleep 0.1
done
curl -sf "http://$PROM/-/ready" >/dev/null ||
	{ tail "$TESTDIR/prometheus.log" >&2; fail "Prometheus did not become ready"; }
log "Prometheus on $PROM"

_PROM_PY='
import json, sys
d = json.load(sys.stdin)
if d.get("status") != "success":
    print("error: %s" % d.get("error"), file=sys.stderr); sys.exit(2)
r = d["data"]["result"]
if sys.argv[1] == "value":
    print(r[0]["value"][1] if r else "none")
elif sys.argv[1] == "range":
    print(" ".join(v for _, v in (r[0]["values"] if r else [])))
else:
    print(len(r))
'
# prom_query MODE EXPR [ARGS...]: the query API's answer to EXPR: its first
# value (value), the values of a range query (range, ARGS: start end), or
# the number of results (count).
prom_query() {
	local mode=$1 expr=$2 api=query
	shift 2
	local -a extra=()
	if [ "$mode" = range ]; then
		api=query_range
		extra=(--data-urlencode "start=$1" --data-urlencode "end=$2" --data-urlencode step=1)
	fi
	curl -sf -G "http://$PROM/api/v1/$api" --data-urlencode "query=$expr" "${extra[@]}" |
		"$PYTHON" -c "$_PROM_PY" "$mode"
}

# wait_prom TIMEOUT EXPR WANT: until EXPR's value is WANT.
wait_prom() {
	local t=$1 expr=$2 want=$3 v end
	end=$(($(date +%s) + t))
	while :; do
		v=$(prom_query value "$expr")
		[ "$v" = "$want" ] && return 0
		if [ "$(date +%s)" -ge "$end" ]; then
			echo "Prometheus: after ${t}s $expr is $v, not $want" >&2
			return 1
		fi
		sleep 0.5
	done
}

CONN='replagent_peer_connected{node="a",volume="vol0",peer="b"}'
t0=$(date +%s)
wait_prom 30 "$CONN" 1 || fail "Prometheus does not see b Connected on a"
log "Prometheus: a sees b Connected"

# ---- the templates against a real scrape ---------------------------------------
metrics_get a >"$TESTDIR/a.txt" || fail "GET /metrics on a"
for name in $(grep -ho 'replagent_[a-z_]*' "$RULES" "$DASH" | sort -u); do
	base=${name%_bucket}
	grep -q "^# TYPE $base " "$TESTDIR/a.txt" ||
		fail "the templates use $name, which a's /metrics does not have"
done
n=0
while IFS= read -r expr; do
	expr=${expr//\$volume/.*}
	expr=${expr//\$__rate_interval/1m}
	prom_query count "$expr" >/dev/null || fail "dashboard query fails on Prometheus: $expr"
	n=$((n + 1))
done < <("$PYTHON" -c 'import json,sys
for p in json.load(open(sys.argv[1]))["panels"]:
    for t in p["targets"]: print(t["expr"])' "$DASH")
log "templates: rules load, $n dashboard queries run, every metric they name exists"
[ "$(curl -sf "http://$PROM/api/v1/rules" | "$PYTHON" -c 'import json,sys
print(sum(1 for g in json.load(sys.stdin)["data"]["groups"] for r in g["rules"] if r["health"] == "ok"))')" -ge 7 ] ||
	fail "Prometheus did not load the alert rules healthy"

# ---- the write counter ---------------------------------------------------------
WR='replagent_requests_total{node="a",volume="vol0",op="write"}'
WB='replagent_written_bytes_total{node="a",volume="vol0"}'
wait_prom 10 "$WR" "$(metric_value "$TESTDIR/a.txt" 'replagent_requests_total{volume="vol0",op="write"}')" ||
	fail "Prometheus has no write counter for a"
w0=$(prom_query value "$WR")
b0=$(prom_query value "$WB")
qio "${NODE_NBD_URI[a]}" "write -P 0x11 0 256k" "write -P 0x22 1M 256k" "write -P 0x33 4M 1M" \
	"flush" >/dev/null || fail "qemu-io on a failed"
wait_prom 10 "$WR > bool $w0" 1 || fail "the write counter did not rise in Prometheus ($w0)"
wait_prom 10 "$WB - $b0 >= bool 1572864" 1 || fail "written bytes did not rise by 1.5 MiB ($b0)"
log "Prometheus: writes $w0 -> $(prom_query value "$WR"), bytes $b0 -> $(prom_query value "$WB")"

# ---- b goes away and comes back ------------------------------------------------
kill_node b
wait_prom 30 "$CONN" 0 || fail "Prometheus does not see b Disconnected on a"
log "Prometheus: a sees b away ($(prom_query value 'replagent_peer_link_state{node="a",peer="b",state="Connecting"}' ) Connecting)"
wait_prom 15 'count(ALERTS{alertname="ReplagentVolumeDegraded",alertstate="firing",node="a",peer="b"})' 1 ||
	fail "the degraded alert does not fire while b is away"
start_node b
wait_prom 30 "$CONN" 1 || fail "Prometheus does not see b Connected again"
wait_prom 15 'count(ALERTS{alertname="ReplagentVolumeDegraded",alertstate="firing",node="a"}) or vector(0)' 0 ||
	fail "the degraded alert still fires after b came back"
# The sample that saw b back has a fractional time: end the range past it.
sleep 2
t1=$(( $(date +%s) + 1 ))

# a's history as Prometheus stored it: 1 ... 0 ... 1.
hist=$(prom_query range "$CONN" "$t0" "$t1")
log "history of b's link on a: $hist"
squeezed=$(echo "$hist" | tr ' ' '\n' | uniq | tr '\n' ' ')
[[ "$squeezed" == *"1 0 1 "* ]] || fail "history is not Connected -> Disconnected -> Connected: $squeezed"
log "ok"
