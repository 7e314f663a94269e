#!/bin/bash
# tests/metrics.sh: replagentd's /metrics endpoint (metrics-listen).
# Two replicas a (Primary, metrics on) and b (metrics off).  a's /metrics
# must pass "promtool check metrics" (the exposition format and the naming
# conventions), say a is Primary and UpToDate with b Connected, and count
# what qemu-io wrote, read and flushed (requests, bytes, a latency
# histogram per operation, b's acknowledgements); other paths are 404,
# other methods 405.  b, with metrics-listen off, listens on nothing but
# its replication port.  A bad metrics-listen is a configuration error
# naming the line; a port already taken stops the daemon with EX_CANTCREAT;
# a, which served the scrapes, stops cleanly (exit 0, also under ASan).
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires curl qemu-io
requires promtool
requires_replagentd
requires_replagent

cluster_config a b
metrics_on a
start_in_sync a b

M=$TESTDIR/metrics.txt
metrics_get a >"$M" || fail "GET /metrics on a failed"
promtool check metrics <"$M" >"$TESTDIR/promtool.out" 2>&1 ||
	{ cat "$TESTDIR/promtool.out" >&2; fail "promtool check metrics: the output is not clean"; }
log "promtool check metrics: clean ($(grep -vc '^#' "$M") series)"

want() {	# want SERIES VALUE
	local v
	v=$(metric_value "$M" "$1") || fail "no series $1 in /metrics"
	[ "$v" = "$2" ] || fail "$1 is $v, expected $2"
}
want 'replagent_volume_role{volume="vol0",role="Primary"}' 1
want 'replagent_volume_disk_state{volume="vol0",state="UpToDate"}' 1
want 'replagent_peer_link_state{volume="vol0",peer="b",state="Connected"}' 1
want 'replagent_peer_connected{volume="vol0",peer="b"}' 1
want 'replagent_volume_io_frozen{volume="vol0"}' 0
want 'replagent_volume_quorate{volume="vol0"}' 1
w0=$(metric_value "$M" 'replagent_requests_total{volume="vol0",op="write"}') ||
	fail "no write counter"

# 1 MiB in 16 writes of 64 KiB, read back, one flush.
qio "${NODE_NBD_URI[a]}" "write -P 0x5a 0 1M" "read -P 0x5a 0 1M" "flush" >/dev/null ||
	fail "qemu-io on a failed"
metrics_get a >"$M" || fail "GET /metrics on a failed"
promtool check metrics <"$M" >/dev/null 2>&1 || fail "promtool: output not clean after I/O"
w1=$(metric_value "$M" 'replagent_requests_total{volume="vol0",op="write"}')
wb=$(metric_value "$M" 'replagent_written_bytes_total{volume="vol0"}')
rb=$(metric_value "$M" 'replagent_read_bytes_total{volume="vol0"}')
fl=$(metric_value "$M" 'replagent_requests_total{volume="vol0",op="flush"}')
wc=$(metric_value "$M" 'replagent_request_duration_seconds_count{volume="vol0",op="write"}')
winf=$(metric_value "$M" 'replagent_request_duration_seconds_bucket{volume="vol0",op="write",le="+Inf"}')
ack=$(metric_value "$M" 'replagent_peer_ack_duration_seconds_count{volume="vol0",peer="b"}')
log "writes $w0 -> $w1, written $wb bytes, read $rb bytes, flushes $fl, acks from b $ack"
[ "$w1" -gt "$w0" ] || fail "the write counter did not rise ($w0 -> $w1)"
[ "$wb" -ge $((1 << 20)) ] || fail "written bytes $wb < 1 MiB"
[ "$rb" -ge $((1 << 20)) ] || fail "read bytes $rb < 1 MiB"
[ "$fl" -ge 1 ] || fail "no flush counted"
[ "$wc" = "$w1" ] && [ "$winf" = "$w1" ] || fail "write histogram count $wc/+Inf $winf, requests $w1"
[ "$ack" -ge "$w1" ] || fail "b acknowledged $ack writes, a wrote $w1"

code=$(curl -s -o /dev/null -w '%{http_code}' "http://${NODE_METRICS[a]}/nothing")
[ "$code" = 404 ] || fail "GET /nothing: HTTP $code, expected 404"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://${NODE_METRICS[a]}/metrics")
[ "$code" = 405 ] || fail "POST /metrics: HTTP $code, expected 405"

# b has metrics-listen off: its only listening TCP socket is replication's.
ports=$(pid_tcp_listen_ports "$(replagentd_pid b)" | tr '\n' ' ')
[ "$ports" = "${NODE_ADDR[b]##*:} " ] ||
	fail "b (metrics off) listens on TCP ports '$ports', expected only ${NODE_ADDR[b]##*:}"
a_ports=$(pid_tcp_listen_ports "$(replagentd_pid a)" | tr '\n' ' ')
[[ " $a_ports" == *" ${NODE_METRICS[a]##*:} "* ]] || fail "a does not listen on its metrics port"

# A bad value: a configuration error (78) that names the line.
bad=$TESTDIR/bad.conf
sed "s/^metrics-listen = .*/metrics-listen = 127.0.0.1/" "${NODE_CONF[a]}" >"$bad"
out=$("$REPLAGENTD" -c "$bad" --check-config 2>&1)
st=$?
[ "$st" = 78 ] || fail "metrics-listen without a port: exit $st, expected 78 ($out)"
[[ $out == *"$bad:3: invalid metrics-listen \"127.0.0.1\": missing port"* ]] ||
	fail "unclear message for a bad metrics-listen: $out"
log "bad value: $out"

# A port that is taken: the daemon does not start (73) and says why.
stop_node b
sed -i "s/^metrics-listen = .*/metrics-listen = ${NODE_METRICS[a]}/" "${NODE_CONF[b]}"
grep -q '^metrics-listen' "${NODE_CONF[b]}" ||
	sed -i "/^\[global\]/a metrics-listen = ${NODE_METRICS[a]}" "${NODE_CONF[b]}"
try_start_replagentd_as b "${NODE_CONF[b]}" -n b 2>/dev/null && fail "b started on a's metrics port"
[ "$REPLAGENTD_STATUS" = 73 ] || fail "b on a taken port: exit $REPLAGENTD_STATUS, expected 73"
grep -q "metrics-listen: cannot listen on 127.0.0.1:${NODE_METRICS[a]##*:}" "$(daemon_log b)" ||
	fail "b's log does not say why it did not start"
# a served every scrape and stops cleanly (under ASan: nothing leaked).
stop_node a
log "ok"
