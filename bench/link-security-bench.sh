#!/bin/bash
# bench/link-security-bench.sh: the cost of sealing replica frames
# (link-security = aead, linkcrypt.c) against leaving them plain
# (link-security = none), in one run: two replicas on this machine over
# 127.0.0.1, n1 Primary, fio's nbd engine on n1's Unix socket.  Rows:
#   1M sequential write QD8: MB/s   (goal: aead >= 0.9x none)
#   4k random write QD1: mean latency in us   (goal: aead <= none + 10 us)
# Each setting runs ROUNDS times, alternating (none, aead, none, aead...),
# and the median of its rounds is shown, so that a burst of load from
# elsewhere does not land on one setting only.  Also the AES-256-GCM
# speed of this CPU (openssl speed, 16 KiB blocks), for scale.  The load
# average before and after is printed: on a shared machine the figures
# move with it.  It asserts nothing; CI does not run it.
#
#   bench/link-security-bench.sh            # about 2 min
#   RUNTIME=10 ROUNDS=3 bench/link-security-bench.sh
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires fio timeout
fio --enghelp=nbd >/dev/null 2>&1 || skip "fio has no nbd engine"
requires_replagentd
requires_replagent

RUNTIME=${RUNTIME:-5}
ROUNDS=${ROUNDS:-2}
VOLSIZE=${VOLSIZE:-512M}
declare -A R=()	# "SETTING|seq" or "SETTING|qd1" -> space-separated round results

# fio_value URI ARGS...: MB/s (with --bs=1M) or the mean latency in us.
fio_value() {
	local uri=$1 what=$2 out
	shift 2
	out=$(fio --name=b --ioengine=nbd --uri="$uri" "$@" --numjobs=1 --time_based \
		--runtime="$RUNTIME" --randrepeat=1 --output-format=json 2>"$TESTDIR/fio.err") ||
		{ log "fio failed: $(tail -n 3 "$TESTDIR/fio.err")"; echo 0; return; }
	"$PYTHON" -c '
import json, sys
s = sys.stdin.read()
w = json.loads(s[s.index("{"):])["jobs"][0]["write"]
print("%.1f" % (w["bw_bytes"] / 1e6 if sys.argv[1] == "mbs" else w["lat_ns"]["mean"] / 1e3))
' "$what" <<<"$out"
}

# round SETTING: a fresh pair with link-security = SETTING, both rows.
round() {
	local sec=$1 n
	rm -rf "$TESTDIR/n1" "$TESTDIR/n2"
	cluster_config -s "$VOLSIZE" n1 n2
	for n in n1 n2; do
		NODE_GLOBAL_EXTRA="link-security = $sec" write_node_config "$n" "${NODE_CONF[$n]}" \
			"$CLUSTER_KEY" "$CLUSTER_VOL" "$CLUSTER_SIZE" "${NODE_BACKING[$n]}"
	done
	start_in_sync n1 n2 >/dev/null
	R[$sec|seq]+=" $(fio_value "${NODE_NBD_URI[n1]}" mbs --rw=write --bs=1M --iodepth=8)"
	R[$sec|qd1]+=" $(fio_value "${NODE_NBD_URI[n1]}" lat --rw=randwrite --bs=4k --iodepth=1)"
	stop_node n2 >/dev/null
	stop_node n1 >/dev/null
}

median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

log "load before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs;" \
	"AES-NI: $(grep -q -w aes /proc/cpuinfo && echo yes || echo no)"
log "AES-256-GCM on this CPU: $(openssl speed -seconds 1 -bytes 16384 -evp aes-256-gcm 2>/dev/null |
	awk '/^AES-256-GCM/ { printf "%.0f MB/s", $2 / 1000 }')"
for ((i = 0; i < ROUNDS; i++)); do
	round none
	round aead
done
log "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
sn=$(median "${R[none|seq]}"); sa=$(median "${R[aead|seq]}")
ln=$(median "${R[none|qd1]}"); la=$(median "${R[aead|qd1]}")
printf '%-28s %10s %10s %12s\n' "2 replicas, $ROUNDS rounds" none aead "aead vs none"
printf '%-28s %10s %10s %12s\n' "1M seq write QD8 (MB/s)" "$sn" "$sa" \
	"$(awk -v a="$sa" -v n="$sn" 'BEGIN { printf "%.2fx", n ? a / n : 0 }')"
printf '%-28s %10s %10s %12s\n' "4k rand write QD1 (us)" "$ln" "$la" \
	"$(awk -v a="$la" -v n="$ln" 'BEGIN { printf "%+.1f us", a - n }')"
log "rounds: seq none [${R[none|seq]} ] aead [${R[aead|seq]} ];" \
	"qd1 none [${R[none|qd1]} ] aead [${R[aead|qd1]} ]"
log "goals: seq >= 0.9x, QD1 <= +10 us"
