#!/bin/bash
# bench/nbd-tls-bench.sh: what TLS costs NBD over TCP.  One replagentd on
# 127.0.0.1 serves a 1 GiB volume; libnbd (the client of nbdinfo and fio's
# nbd engine; qemu-img bench cannot take TLS credentials) runs 4k random
# writes and reads at QD1 (latency) and 1M
# sequential writes and reads at QD8 (throughput), over plain TCP
# (nbd-tls = off) and over TLS (certificates made with certtool, GnuTLS
# default priorities: TLS 1.3 with AES-GCM on this machine).  qemu-nbd
# serving a file the same two ways is the reference for what TLS costs a
# mature server.  Prints a table with the TLS/plain ratios.  By hand only;
# the machine should be otherwise idle.
#
#   bench/nbd-tls-bench.sh                 # about 3 minutes
#   RUNTIME=30 bench/nbd-tls-bench.sh      # seconds per workload (10)
# shellcheck source=SCRIPTDIR/../tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires qemu-nbd certtool
"$PYTHON" -c 'import nbd' 2>/dev/null || skip "requires python3-libnbd"
RUNTIME=${RUNTIME:-10}		# seconds per workload
PKI=$TESTDIR/pki
make_tls_certs "$PKI"

# The client: libnbd from Python (python3-libnbd), the library of nbdinfo
# and fio's nbd engine (which cannot name a certificate directory).  4k
# random offsets at QD1 for RUNTIME s (mean latency), 1M sequential at QD8
# (aio, 8 in flight) for RUNTIME s.  It also reads the server's CPU time
# (/proc/PID/stat) around each phase: the cost per request or per GiB does
# not depend on how busy the machine is.  Argv: URI CERTDIR(or -) RUNTIME
# SERVER-PID.  Prints 4 figures, then 4 CPU costs.
BENCH_PY='
import nbd, os, random, sys, time
uri, certs, runtime, pid = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
def cpu():
    f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
cost = []
h = nbd.NBD()
if certs != "-":
    h.set_tls(nbd.TLS_REQUIRE)
    h.set_tls_certificates(certs)
h.connect_uri(uri)
size = h.get_size()
out = []
for write in (True, False):
    buf = bytearray(random.randbytes(4096))
    n, t0, c0 = 0, time.monotonic(), cpu()
    while time.monotonic() - t0 < runtime:
        off = random.randrange(size // 4096) * 4096
        h.pwrite(buf, off) if write else h.pread(4096, off)
        n += 1
    out.append("%.1f" % ((time.monotonic() - t0) * 1e6 / n))
    cost.append("%.1f" % ((cpu() - c0) * 1e6 / n))
for write in (True, False):
    bufs = [nbd.Buffer.from_bytearray(bytearray(random.randbytes(1 << 20))) for _ in range(8)]
    n, off, t0, c0 = 0, 0, time.monotonic(), cpu()
    pending = {}
    while time.monotonic() - t0 < runtime or pending:
        while len(pending) < 8 and time.monotonic() - t0 < runtime:
            b = bufs[len(pending)] if write else nbd.Buffer(1 << 20)
            c = h.aio_pwrite(b, off) if write else h.aio_pread(b, off)
            pending[c] = b
            off = (off + (1 << 20)) % size
        h.poll(-1)
        for c in list(pending):
            if h.aio_command_completed(c):
                del pending[c]
                n += 1
    out.append("%.0f" % (n * 1.048576 / (time.monotonic() - t0)))
    cost.append("%.2f" % ((cpu() - c0) * 1024 / n))
h.shutdown()
print(" ".join(out + cost))
'

# bench_one NAME PORT TLS(0/1) EXPORT SERVER-PID: a line in $TESTDIR/table
# (4k QD1 write and read latency in us, 1M QD8 sequential write and read in
# MB/s) and one in $TESTDIR/cpu (server CPU us per 4k request, CPU s per
# GiB of 1M requests).
bench_one() {
	local name=$1 port=$2 tls=$3 exp=$4 spid=$5 certs=- r
	[ "$tls" = 1 ] && certs=$PKI
	r=$(nice "$PYTHON" -c "$BENCH_PY" "nbd://127.0.0.1:$port/$exp" "$certs" "$RUNTIME" \
		"$spid" 2>&1 | tail -n 1)
	# shellcheck disable=SC2086 # eight numbers
	set -- $r
	[ $# = 8 ] || { printf '%-22s failed: %s\n' "$name" "$r" | tee -a "$TESTDIR/cpu" \
		>>"$TESTDIR/table"; return; }
	printf '%-22s %9s us %9s us %7s MB/s %7s MB/s\n' "$name" "$1" "$2" "$3" "$4" \
		>>"$TESTDIR/table"
	printf '%-22s %9s us %9s us %7s s/GiB %6s s/GiB\n' "$name" "$5" "$6" "$7" "$8" \
		>>"$TESTDIR/cpu"
}

write_config -s 1G
for mode in off require; do
	sed -i '/^nbd-tls/d' "$CONFIG"
	sed -i "/^\[global\]/a nbd-tls = $mode\nnbd-tls-cert-dir = $PKI" "$CONFIG"
	start_replagentd_tcp "$CONFIG"
	bench_one "replagentd $([ $mode = off ] && echo plain || echo TLS)" "$NBD_PORT" \
		"$([ $mode = off ] && echo 0 || echo 1)" "$VOL" "$REPLAGENTD_PID"
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
	bench_one "qemu-nbd $([ "$tls" = 0 ] && echo plain || echo TLS)" "$port" "$tls" q "$pid"
	stop_pid "$pid"
	untrack_pid "$pid"
done

# ratios FILE UNIT...: TLS/plain per column of the pairs of lines in FILE.
ratios() {
	awk '{ k = 0; for (i = 2; i <= NF; i++) if ($i ~ /^[0-9.]+$/) v[NR, ++k] = $i; name[NR] = $1 }
		END { for (r = 1; r < NR; r += 2) {
			printf "%-22s", name[r] " TLS/plain"
			for (c = 1; c <= 4; c++)
				printf " %11.2fx", (v[r, c] > 0 ? v[r + 1, c] / v[r, c] : 0)
			printf "\n" } }' "$1"
}
echo "NBD over TCP on 127.0.0.1, libnbd (Python) ${RUNTIME}s each, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(gnutls-cli --version 2>/dev/null | head -n 1)"
printf '%-22s %12s %12s %12s %12s\n' server "4k wr QD1" "4k rd QD1" "1M wr QD8" "1M rd QD8"
cat "$TESTDIR/table"
ratios "$TESTDIR/table"
echo "Server CPU time: per 4k request, per GiB of 1M requests (lower is better)"
cat "$TESTDIR/cpu"
ratios "$TESTDIR/cpu"
