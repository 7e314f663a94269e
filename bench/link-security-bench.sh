#!/bin/bash
# bench/link-security-bench.sh: the cost of sealing replica frames
# (link-security = aead, linkcrypt.c) against leaving them plain
# (link-security = none), in one run: two replicas on this machine over
# 127.0.0.1, n1 Primary, fio's nbd engine on n1's Unix socket.  Settings:
#   none          frames in clear with a CRC32C
#   aead          sealed, by the AES-GCM the daemon picks (intel-ipsec-mb
#                 on a CPU with VAES, else OpenSSL: linkcrypt.c)
#   aead-openssl  sealed by OpenSSL's AES-GCM (REPLAGENT_LINK_AEAD=openssl),
#                 what a CPU without VAES or a build without intel-ipsec-mb
#                 gets (skipped where aead is OpenSSL already)
# Rows:
#   1M sequential write QD8: MB/s   (goal: aead >= 0.9x none)
#   the same: both daemons' CPU seconds per GiB written (/proc/PID/stat)
#   4k random write QD1: mean latency in us   (goal: aead <= none + 10 us)
# Each setting runs ROUNDS times, alternating (none, aead, ..., none,
# aead, ...), and the median of its rounds is shown, so that a burst of
# load from elsewhere does not land on one setting only.  Also the
# AES-256-GCM speed of OpenSSL on this CPU (openssl speed, 16 KiB blocks),
# for scale.  The load average before and after is printed: on a shared
# machine the figures move with it.  It asserts nothing; CI does not run it.
#
#   bench/link-security-bench.sh            # about 3 min
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

# round SETTING: a fresh pair with SETTING (above), all rows.
round() {
	local set=$1 sec=aead n c0 c1 t0 t1 mbs aead_impl=
	[ "$set" = none ] && sec=none
	[ "$set" = aead-openssl ] && aead_impl=openssl
	rm -rf "$TESTDIR/n1" "$TESTDIR/n2"
	cluster_config -s "$VOLSIZE" n1 n2
	for n in n1 n2; do
		NODE_GLOBAL_EXTRA="link-security = $sec" write_node_config "$n" "${NODE_CONF[$n]}" \
			"$CLUSTER_KEY" "$CLUSTER_VOL" "$CLUSTER_SIZE" "${NODE_BACKING[$n]}"
	done
	if [ -n "$aead_impl" ]; then export REPLAGENT_LINK_AEAD=$aead_impl; else unset REPLAGENT_LINK_AEAD; fi
	start_in_sync n1 n2 >/dev/null
	unset REPLAGENT_LINK_AEAD
	c0=$(cpu_ticks "${_ra_pid[n1]}" "${_ra_pid[n2]}"); t0=$(date +%s%N)
	mbs=$(fio_value "${NODE_NBD_URI[n1]}" mbs --rw=write --bs=1M --iodepth=8)
	c1=$(cpu_ticks "${_ra_pid[n1]}" "${_ra_pid[n2]}"); t1=$(date +%s%N)
	R[$set|seq]+=" $mbs"
	# CPU s per GiB: ticks / CLK_TCK over (MB/s * s / 1073.741824 MB).
	R[$set|cpu]+=" $(awk -v c=$((c1 - c0)) -v h="$CLK_TCK" -v m="$mbs" -v ns=$((t1 - t0)) \
		'BEGIN { g = m * ns / 1e9 / 1073.741824; printf "%.2f", (g > 0) ? c / h / g : 0 }')"
	R[$set|qd1]+=" $(fio_value "${NODE_NBD_URI[n1]}" lat --rw=randwrite --bs=4k --iodepth=1)"
	if [ "$set" = aead ] && [ -z "$AEAD_BY" ]; then
		AEAD_BY=$(grep -h -o 'sealed with AES-256-GCM by [^ ]*' "$TESTDIR/n1.log" | head -n 1)
	fi
	stop_node n2 >/dev/null
	stop_node n1 >/dev/null
}

median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v n="$2" 'BEGIN { printf "%.2fx", n ? a / n : 0 }'; }

CLK_TCK=$(getconf CLK_TCK)
AEAD_BY=
SETTINGS="none aead"
grep -q -w vaes /proc/cpuinfo && SETTINGS="none aead aead-openssl"
log "load before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs;" \
	"AES-NI: $(grep -q -w aes /proc/cpuinfo && echo yes || echo no);" \
	"VAES: $(grep -q -w vaes /proc/cpuinfo && echo yes || echo no)"
log "OpenSSL's AES-256-GCM on this CPU: $(openssl speed -seconds 1 -bytes 16384 -evp aes-256-gcm 2>/dev/null |
	awk '/^AES-256-GCM/ { printf "%.0f MB/s", $2 / 1000 }')"
for ((i = 0; i < ROUNDS; i++)); do
	for set in $SETTINGS; do
		round "$set"
	done
done
log "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
log "aead: ${AEAD_BY:-(the daemon did not say which AES-GCM)}"
declare -A M=()
for set in $SETTINGS; do
	for row in seq cpu qd1; do
		M[$set|$row]=$(median "${R[$set|$row]}")
	done
done
{
	printf '%-30s' "2 replicas, $ROUNDS rounds"
	for set in $SETTINGS; do printf ' %12s' "$set"; done
	printf ' %13s' "aead vs none"
	[[ $SETTINGS == *openssl* ]] && printf ' %13s' "openssl/none"
	printf '\n'
	for row in seq cpu qd1; do
		case $row in
		seq) printf '%-30s' "1M seq write QD8 (MB/s)" ;;
		cpu) printf '%-30s' "  daemons' CPU (s per GiB)" ;;
		qd1) printf '%-30s' "4k rand write QD1 (us)" ;;
		esac
		for set in $SETTINGS; do printf ' %12s' "${M[$set|$row]}"; done
		for set in aead aead-openssl; do
			[[ " $SETTINGS " == *" $set "* ]] || continue
			if [ $row = qd1 ]; then
				printf ' %13s' "$(awk -v a="${M[$set|$row]}" -v n="${M[none|$row]}" \
					'BEGIN { printf "%+.1f us", a - n }')"
			else
				printf ' %13s' "$(ratio "${M[$set|$row]}" "${M[none|$row]}")"
			fi
		done
		printf '\n'
	done
}
for set in $SETTINGS; do
	log "rounds $set: seq [${R[$set|seq]} ] cpu [${R[$set|cpu]} ] qd1 [${R[$set|qd1]} ]"
done
log "goals: aead seq >= 0.9x none, QD1 <= +10 us"
