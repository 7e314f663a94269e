#!/bin/bash
# bench/dd-bench.sh: the iSCSI/NFS seed's measurement: a 1 GB write with
# dd (bs=1M, conv=fsync) and fio's sequential write (bs=1M, iodepth 8,
# ioengine=nbd, end_fsync) through NBD over TCP (127.0.0.1), against the
# same on a local file, in one run (MB/s from the wall clock, the final
# fsync or NBD flush included).  Variants:
#   local   dd to a plain file; fio with ioengine=psync on it
#   nbdkit  nbdkit's file plugin over TCP (a plain NBD server: the floor)
#   1r 2r 3r  replagentd with 1, 2 or 3 replicas (static mode, loopback),
#           its NBD over TCP (nbd-listen) on the first (Primary)
# dd reaches NBD through nbdfuse (the NBD client is libnbd over TCP); fio
# speaks NBD itself.  The data is random (made once in $TESTDIR), so no
# layer can skip zeroes.  Prints MB/s (10^6) and ratios against local and
# nbdkit.  Knobs: BYTES (1G), VARIANTS ("local nbdkit 1r 2r 3r").
# Run by hand, as root:  nice bench/dd-bench.sh   (about 3 minutes)
# shellcheck source=tests/functions.sh
. "$(dirname "$0")/../tests/functions.sh" || exit 99

requires_root
requires_replagentd
requires_replagent
requires nbdfuse nbdkit fio dd
BYTES=${BYTES:-1G}
VARIANTS=${VARIANTS:-local nbdkit 1r 2r 3r}
MIB=$(($(numfmt --from=iec "$BYTES") >> 20))
SIZE=$((MIB + 64))M

SRC=$TESTDIR/random.src
head -c "$BYTES" /dev/urandom >"$SRC" || hard_error "cannot write $SRC"

# mbps SECONDS: MB/s (10^6) for BYTES.
mbps() { awk -v s="$1" -v b="$((MIB << 20))" 'BEGIN { printf "%.0f", b / s / 1e6 }'; }
# dd_to FILE: seconds to write SRC to FILE (dd, 1 MiB blocks, fsync).
dd_to() {
	local t0
	t0=$(now_s)
	dd if="$SRC" of="$1" bs=1M count="$MIB" conv=fsync,notrunc status=none ||
		hard_error "dd to $1 failed"
	awk -v a="$t0" -v b="$(now_s)" 'BEGIN { printf "%.3f", b - a }'
}
# fio_write ARGS...: fio's sequential write MB/s (10^6), by the wall clock
# around fio (its own runtime leaves the final fsync out).
fio_write() {
	local t0
	t0=$(now_s)
	fio --name=seqw --rw=write --bs=1M --size="$BYTES" --iodepth=8 --end_fsync=1 \
		--output-format=json --output="$TESTDIR/fio.json" "$@" >"$TESTDIR/fio.err" 2>&1 ||
		hard_error "fio: $(tail -n 3 "$TESTDIR/fio.err")"
	mbps "$(awk -v a="$t0" -v b="$(now_s)" 'BEGIN { printf "%.3f", b - a }')"
}
# nbd_dd NAME URI: dd through nbdfuse on URI: seconds.  (nbdfuse mounts
# a directory, here $TESTDIR/NAME.mnt, holding the one file "nbd".)
nbd_dd() {
	local m=$TESTDIR/$1.mnt f=$TESTDIR/$1.mnt/nbd n=0 pid
	mkdir -p "$m" || hard_error "mkdir $m"
	nbdfuse "$f" "$2" >"$TESTDIR/$1.nbdfuse.log" 2>&1 &
	pid=$!
	track_pid "$pid"
	until [ -s "$f" ]; do
		[ "$n" -ge 100 ] && hard_error "nbdfuse did not attach $2"
		sleep 0.1
		n=$((n + 1))
	done
	on_cleanup umount -l "$m"
	dd_to "$f"
	umount "$m"
	stop_pid "$pid" >/dev/null
	untrack_pid "$pid"
}
declare -A R_DD=() R_FIO=()
for v in $VARIANTS; do
	log "variant $v"
	case $v in
	local)
		truncate -s "$SIZE" "$TESTDIR/local.img"
		R_DD[$v]=$(mbps "$(dd_to "$TESTDIR/local.img")")
		R_FIO[$v]=$(fio_write --ioengine=psync --filename="$TESTDIR/local.img")
		;;
	nbdkit)
		truncate -s "$SIZE" "$TESTDIR/nbdkit.img"
		port=$(free_port)
		nbdkit -f -i 127.0.0.1 -p "$port" file "$TESTDIR/nbdkit.img" &
		npid=$!
		track_pid "$npid"
		n=0
		until tcp_listening "$port"; do [ "$n" -ge 100 ] && hard_error "nbdkit"; sleep 0.1; n=$((n + 1)); done
		R_DD[$v]=$(mbps "$(nbd_dd nbdkit "nbd://127.0.0.1:$port/")")
		R_FIO[$v]=$(fio_write --ioengine=nbd --uri="nbd://127.0.0.1:$port/")
		stop_pid "$npid" >/dev/null
		;;
	1r)
		write_config -d "$TESTDIR/r1" -s "$SIZE"
		start_replagentd_tcp "$CONFIG"
		R_DD[$v]=$(mbps "$(nbd_dd r1 "$NBD_TCP_URI")")
		R_FIO[$v]=$(fio_write --ioengine=nbd --uri="$NBD_TCP_URI")
		stop_replagentd replagentd
		;;
	2r | 3r)
		nodes=("a$v" "b$v")
		[ "$v" = 3r ] && nodes+=("c$v")
		cluster_config -s "$SIZE" "${nodes[@]}"
		port=$(free_port)
		sed -i "/^\\[global\\]/a nbd-listen = 127.0.0.1:$port\nnbd-tls = off" "${NODE_CONF[a$v]}"
		start_in_sync "${nodes[@]}"
		uri="nbd://127.0.0.1:$port/$CLUSTER_VOL"
		R_DD[$v]=$(mbps "$(nbd_dd "$v" "$uri")")
		R_FIO[$v]=$(fio_write --ioengine=nbd --uri="$uri")
		stop_cluster
		;;
	*) hard_error "unknown variant $v" ;;
	esac
	[ -n "${R_DD[$v]}" ] && [ -n "${R_FIO[$v]}" ] || hard_error "variant $v failed (above)"
	log "$v: dd ${R_DD[$v]} MB/s, fio ${R_FIO[$v]} MB/s"
done

ratio() { awk -v a="$1" -v b="${2:-}" 'BEGIN { if (b) printf "%.2f", a / b; else print "-" }'; }
echo
echo "dd-bench: $BYTES sequential write (random data), NBD over TCP 127.0.0.1, $(nproc) CPUs," \
	"load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-8s %9s %8s %8s   %9s %8s %8s\n' variant "dd MB/s" /local /nbdkit "fio MB/s" /local /nbdkit
for v in $VARIANTS; do
	printf '%-8s %9s %8s %8s   %9s %8s %8s\n' "$v" "${R_DD[$v]}" "$(ratio "${R_DD[$v]}" "${R_DD[local]:-}")" \
		"$(ratio "${R_DD[$v]}" "${R_DD[nbdkit]:-}")" "${R_FIO[$v]}" \
		"$(ratio "${R_FIO[$v]}" "${R_FIO[local]:-}")" "$(ratio "${R_FIO[$v]}" "${R_FIO[nbdkit]:-}")"
done
