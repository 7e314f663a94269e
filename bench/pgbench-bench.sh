#!/bin/bash
# bench/pgbench-bench.sh: PostgreSQL 15's pgbench on ext4 on a replicated
# volume, side by side in one run with the same on a local file (the DRBD
# seed's measurement; issue 16's goal: at most 10% fewer TPS than local).
# Variants, one after the other on this machine:
#   local   ext4 on a loop device over a plain file
#   nbdkit  ext4 on a loop device over nbdfuse over nbdkit's file plugin
#           (the same FUSE + NBD path as below, without replication: its
#           floor)
#   1r 2r 3r  the same over replagentd with 1, 2 or 3 replicas (static
#           mode, loopback, tests/functions.sh's cluster_config), Primary
#           on the first
# Each: mkfs.ext4, initdb, pgbench -i -s SCALE, then pgbench -c CLIENTS
# -j 2 -T RUNTIME (TPC-B like, synchronous_commit on: every commit is a
# flush through the whole stack).  Prints TPS, average latency, and TPS
# ratios against local and nbdkit.  Knobs: SIZE (1G), SCALE (10),
# CLIENTS (4), RUNTIME (30), VARIANTS ("local nbdkit 1r 2r 3r").
# Run by hand, as root:  nice bench/pgbench-bench.sh   (about 6 minutes)
# Needs postgresql-15, nbdfuse (libnbd-bin), nbdkit; not run by CI.
# shellcheck source=tests/functions.sh
. "$(dirname "$0")/../tests/functions.sh" || exit 99

requires_root
requires_replagentd
requires_replagent
requires nbdfuse nbdkit losetup mkfs.ext4 runuser
PG=${PG:-/usr/lib/postgresql/15/bin}
[ -x "$PG/pgbench" ] && [ -x "$PG/pg_ctl" ] || skip "requires PostgreSQL 15 ($PG)"
SIZE=${SIZE:-1G}
SCALE=${SCALE:-10}
CLIENTS=${CLIENTS:-4}
RUNTIME=${RUNTIME:-30}
VARIANTS=${VARIANTS:-local nbdkit 1r 2r 3r}

# fuse_loop NAME URI: nbdfuse exposes URI as $TESTDIR/NAME.fuse/nbd (it
# mounts the directory), a loop device over that file; sets DEV.
fuse_loop() {
	local m=$TESTDIR/$1.fuse f=$TESTDIR/$1.fuse/nbd n=0
	mkdir -p "$m" || hard_error "mkdir $m"
	nbdfuse "$f" "$2" >"$TESTDIR/$1.nbdfuse.log" 2>&1 &
	track_pid $!
	on_cleanup umount -l "$m"
	until [ -s "$f" ]; do
		[ "$n" -ge 100 ] && hard_error "nbdfuse did not attach $2"
		sleep 0.1
		n=$((n + 1))
	done
	loop_dev "$f"
}
# loop_dev FILE: a loop device over FILE; sets DEV.
loop_dev() {
	DEV=$(losetup -f --show "$1") || hard_error "losetup $1"
	on_cleanup losetup -d "$DEV"
}

# pg_run NAME: ext4 on $DEV, PostgreSQL on it, pgbench; sets TPS and LAT.
pg_run() {
	local m=$TESTDIR/$1.mnt s=$TESTDIR/$1.pgsock out=$TESTDIR/$1.pgbench
	mkfs.ext4 -q -F "$DEV" || hard_error "mkfs.ext4 $DEV"
	mkdir -p "$m" "$s" && mount "$DEV" "$m" || hard_error "mount $DEV"
	on_cleanup umount "$m"
	chown postgres "$m" "$s"
	runuser -u postgres -- "$PG/initdb" -D "$m/data" -A trust >/dev/null || hard_error "initdb"
	runuser -u postgres -- "$PG/pg_ctl" -D "$m/data" -l "$s/pg.log" -w \
		-o "-k $s -c listen_addresses='' -c shared_buffers=128MB" start >/dev/null ||
		hard_error "postgres did not start"
	on_cleanup runuser -u postgres -- "$PG/pg_ctl" -D "$m/data" -m immediate stop
	runuser -u postgres -- "$PG/pgbench" -h "$s" -i -q -s "$SCALE" postgres >/dev/null 2>&1 ||
		hard_error "pgbench -i"
	runuser -u postgres -- "$PG/pgbench" -h "$s" -c "$CLIENTS" -j 2 -T "$RUNTIME" postgres \
		>"$out" 2>&1 || hard_error "pgbench: $(tail -n 3 "$out")"
	TPS=$(sed -n 's/^tps = \([0-9]*\)[0-9.]* (without.*/\1/p' "$out")
	LAT=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' "$out")
	runuser -u postgres -- "$PG/pg_ctl" -D "$m/data" -m fast -w stop >/dev/null
	_cleanup_remove runuser -u postgres -- "$PG/pg_ctl" -D "$m/data" -m immediate stop
	umount "$m"
	_cleanup_remove umount "$m"
}

# loop_free: detach $DEV now (and forget it: the number may be reused).
loop_free() {
	losetup -d "$DEV"
	_cleanup_remove losetup -d "$DEV"
}

declare -A R_TPS=() R_LAT=()
for v in $VARIANTS; do
	log "variant $v"
	case $v in
	local)
		truncate -s "$SIZE" "$TESTDIR/local.img"
		loop_dev "$TESTDIR/local.img"
		;;
	nbdkit)
		truncate -s "$SIZE" "$TESTDIR/nbdkit.img"
		nbdkit -f -U "$TESTDIR/nbdkit.sock" file "$TESTDIR/nbdkit.img" &
		track_pid $!
		sleep 1
		fuse_loop nbdkit "nbd+unix:///?socket=$TESTDIR/nbdkit.sock"
		;;
	1r)
		write_config -d "$TESTDIR/r1" -s "$SIZE"
		start_replagentd "$CONFIG"
		fuse_loop r1 "$NBD_URI"
		;;
	2r | 3r)
		nodes=("a$v" "b$v")
		[ "$v" = 3r ] && nodes+=("c$v")
		cluster_config -s "$SIZE" "${nodes[@]}"
		start_in_sync "${nodes[@]}"
		fuse_loop "$v" "${NODE_NBD_URI[a$v]}"
		;;
	*) hard_error "unknown variant $v" ;;
	esac
	pg_run "$v"
	R_TPS[$v]=$TPS R_LAT[$v]=$LAT
	log "$v: $TPS tps, $LAT ms"
	loop_free
	case $v in 1r) stop_replagentd replagentd ;; 2r | 3r) stop_cluster ;; esac
done

echo
echo "pgbench-bench: pgbench -s $SCALE -c $CLIENTS -j 2 -T $RUNTIME on ext4 ($SIZE), $(nproc) CPUs," \
	"load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-8s %10s %12s %10s %10s\n' variant TPS "latency ms" "/local" "/nbdkit"
for v in $VARIANTS; do
	printf '%-8s %10s %12s %10s %10s\n' "$v" "${R_TPS[$v]}" "${R_LAT[$v]}" \
		"$(awk -v a="${R_TPS[$v]}" -v b="${R_TPS[local]:-}" 'BEGIN { if (b) printf "%.2f", a / b; else print "-" }')" \
		"$(awk -v a="${R_TPS[$v]}" -v b="${R_TPS[nbdkit]:-}" 'BEGIN { if (b) printf "%.2f", a / b; else print "-" }')"
done
echo "goal: replicated TPS >= 0.90 x local (DRBD's seed: >= 0.80)"
