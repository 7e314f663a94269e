#!/bin/bash
# bench/nbd-tls-bench.sh: what TLS costs NBD over TCP.  One replagentd on
# 127.0.0.1 serves a 1 GiB volume; QEMU's NBD client (qemu-img bench, the
# client a VM uses) runs 4k writes and reads at QD1 (latency) and 1M
# sequential writes and reads at QD8 (throughput), over plain TCP
# (nbd-tls = off) and over TLS (certificates made with certtool, GnuTLS
# default priorities: TLS 1.3 with AES-GCM on this machine).  qemu-nbd
# serving a file the same two ways is the reference for what TLS costs a
# mature server.  Prints a table with the TLS/plain ratios.  By hand only;
# the machine should be otherwise idle.
#
#   bench/nbd-tls-bench.sh                 # about 2 minutes on 2 CPUs
#   N4K=20000 N1M=2000 bench/nbd-tls-bench.sh
# shellcheck source=SCRIPTDIR/../tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires qemu-img qemu-nbd certtool
N4K=${N4K:-10000}		# 4k requests per QD1 run
N1M=${N1M:-1000}		# 1M requests per QD8 run (1 GiB)
PKI=$TESTDIR/pki
make_tls_certs "$PKI"

# bench_one NAME PORT TLS(0/1) EXPORT: one line of figures on stdout.
bench_one() {
	local name=$1 port=$2 tls=$3 exp=$4 wl secs
	local -a obj=() img
	img=(--image-opts "driver=nbd,server.type=inet,server.host=127.0.0.1,server.port=$port,export=$exp")
	if [ "$tls" = 1 ]; then
		obj=(--object "tls-creds-x509,id=tls0,dir=$PKI,endpoint=client")
		img[1]="${img[1]},tls-creds=tls0"
	fi
	printf '%-22s' "$name"
	for wl in "-w -d 1 -s 4k -c $N4K" "-d 1 -s 4k -c $N4K" \
		"-w -d 8 -s 1M -c $N1M" "-d 8 -s 1M -c $N1M"; do
		# shellcheck disable=SC2086 # wl is a list of options
		secs=$(nice qemu-img bench $wl "${obj[@]}" "${img[@]}" 2>&1 |
			sed -n 's/^Run completed in \([0-9.]*\) seconds.*/\1/p')
		[ -n "$secs" ] || { printf ' %12s' failed; continue; }
		case $wl in
		*4k*) awk -v s="$secs" -v n="$N4K" 'BEGIN { printf " %9.1f us", s * 1e6 / n }' ;;
		*) awk -v s="$secs" -v n="$N1M" 'BEGIN { printf " %7.0f MB/s", n * 1.048576 / s }' ;;
		esac
	done
	echo
}

write_config -s 1G
for mode in off require; do
	sed -i '/^nbd-tls/d' "$CONFIG"
	sed -i "/^\[global\]/a nbd-tls = $mode\nnbd-tls-cert-dir = $PKI" "$CONFIG"
	start_replagentd_tcp "$CONFIG"
	bench_one "replagentd $([ $mode = off ] && echo plain || echo TLS)" "$NBD_PORT" \
		"$([ $mode = off ] && echo 0 || echo 1)" "$VOL" >>"$TESTDIR/table"
	stop_replagentd >/dev/null
done
truncate -s 1G "$TESTDIR/qnbd.img"
for tls in 0 1; do
	port=$(free_port)
	args=()
	[ "$tls" = 1 ] && args=(--object "tls-creds-x509,id=tls0,dir=$PKI,endpoint=server"
				 --tls-creds tls0)
	qemu-nbd -f raw -t -x q -b 127.0.0.1 -p "$port" -e 8 --cache=none --aio=threads \
		"${args[@]}" "$TESTDIR/qnbd.img" &
	pid=$!
	track_pid "$pid"
	for _ in $(seq 1 50); do tcp_listening "$port" && break; sleep 0.1; done
	bench_one "qemu-nbd $([ "$tls" = 0 ] && echo plain || echo TLS)" "$port" "$tls" q \
		>>"$TESTDIR/table"
	stop_pid "$pid"
	untrack_pid "$pid"
done

echo "NBD over TCP on 127.0.0.1, qemu-img bench, $(nproc) CPUs, $(gnutls-cli --version 2>/dev/null | head -n 1)"
printf '%-22s %12s %12s %12s %12s\n' server "4k wr QD1" "4k rd QD1" "1M wr QD8" "1M rd QD8"
cat "$TESTDIR/table"
# Ratios TLS/plain: latency (lower is better) and throughput (higher is better).
awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9.]+$/) v[NR, ++k[NR]] = $i; name[NR] = $1 }
	END { for (r = 1; r < NR; r += 2)
		printf "%-22s %9.2fx lat %9.2fx lat %9.2fx thr %9.2fx thr\n", name[r] " TLS/plain",
			v[r+1,1] / v[r,1], v[r+1,2] / v[r,2], v[r+1,3] / v[r,3], v[r+1,4] / v[r,4] }' \
	"$TESTDIR/table"
