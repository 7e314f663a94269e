#!/bin/bash
# cbt-bench.sh: an incremental backup after 1% of a volume changed, against
# a full one (issue 17).  Two replicas on 127.0.0.1 (replagentd, static
# mode); the volume (SIZE, default 1 GiB) is filled with random data
# through NBD, checkpoint c1 is made and a full backup taken
# (templates/replagent-backup full: nbdcopy); then PCT percent of the
# volume is rewritten as 64 KiB writes at random 64 KiB-aligned offsets,
# and an incremental backup since c1 is taken (replagent-backup
# incremental: the replagent:changed:c1 map, then only those regions).
# Prints the time and the space on disk of each, and the ratios; the
# restore (full + incremental) is checked against the volume with cmp.
# There is nothing to compare with in nbdkit or qemu-nbd: they keep no
# changed-block state, so the alternative is the full copy.
#
# Run by hand (CI does not):  bench/cbt-bench.sh   (about a minute)
# Knobs: SIZE [1G], PCT [1], REPS [3].
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires nbdcopy nbdinfo qemu-io du cmp
requires_replagentd
requires_replagent
/usr/bin/python3 -c 'import nbd' 2>/dev/null || skip "python3-libnbd is not installed"
SIZE=${SIZE:-1G}
PCT=${PCT:-1}
REPS=${REPS:-3}
BACKUP=$top_srcdir/templates/replagent-backup

cluster_config -s "$SIZE" a b
start_in_sync a b
uri=${NODE_NBD_URI[a]}
bytes=$(nbdinfo --size "$uri") || hard_error "nbdinfo --size"

median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# seconds CMD...: wall time of CMD, to the millisecond.
seconds() {
	local t0 t1
	t0=$(now_s)
	"$@" >/dev/null 2>"$TESTDIR/cmd.err" || { cat "$TESTDIR/cmd.err" >&2; return 1; }
	t1=$(now_s)
	echo "$t0 $t1" | awk '{ printf "%.3f\n", $2 - $1 }'
}

head -c "$bytes" /dev/urandom >"$TESTDIR/fill.raw" || hard_error "random data"
nice nbdcopy "$TESTDIR/fill.raw" "$uri" || hard_error "filling the volume"
rm -f "$TESTDIR/fill.raw"
ra_cli a checkpoint create "$CLUSTER_VOL" c1 || hard_error "checkpoint create"

t_full=()
for ((i = 0; i < REPS; i++)); do
	rm -f "$TESTDIR/full.raw"
	t_full+=("$(seconds "$BACKUP" full "$uri" "$TESTDIR/full.raw")") || hard_error "full backup"
done

# PCT% of the volume in 64 KiB writes at distinct random aligned offsets.
regions=$((bytes / 65536))
n=$((regions * PCT / 100))
shuf -i 0-$((regions - 1)) -n "$n" | awk '{ printf "write -P %d %d 65536\n", NR % 251, $1 * 65536 }' \
	>"$TESTDIR/writes"
echo flush >>"$TESTDIR/writes"
qio_batch "$uri" "$(cat "$TESTDIR/writes")" || hard_error "qemu-io writes"

t_inc=()
for ((i = 0; i < REPS; i++)); do
	rm -f "$TESTDIR/inc.raw" "$TESTDIR/inc.raw.json"
	t_inc+=("$(seconds "$BACKUP" incremental "$uri" c1 "$TESTDIR/inc.raw")") ||
		hard_error "incremental backup"
done

"$BACKUP" restore "$TESTDIR/restored.raw" "$TESTDIR/full.raw" "$TESTDIR/inc.raw" ||
	hard_error "restore"
nbdcopy "$uri" "$TESTDIR/now.raw" || hard_error "nbdcopy"
if cmp -s "$TESTDIR/restored.raw" "$TESTDIR/now.raw"; then same=yes; else same=NO; fi

kib_full=$(du -k "$TESTDIR/full.raw" | cut -f1)
kib_inc=$(($(du -k "$TESTDIR/inc.raw" | cut -f1) + $(du -k "$TESTDIR/inc.raw.json" | cut -f1)))
tf=$(median "${t_full[@]}")
ti=$(median "${t_inc[@]}")
echo "volume: $bytes bytes of random data on 2 replicas; changed: $n x 64 KiB ($PCT%)"
printf '%-28s %10s %12s\n' "" "seconds" "KiB on disk"
printf '%-28s %10s %12s\n' "full backup (nbdcopy)" "$tf" "$kib_full"
printf '%-28s %10s %12s\n' "incremental since c1" "$ti" "$kib_inc"
awk -v a="$ti" -v b="$tf" -v c="$kib_inc" -v d="$kib_full" \
	'BEGIN { printf "incremental / full: time %.3f, size %.4f\n", a / b, c / d }'
echo "full + incremental restored == volume: $same"
stop_cluster
[ "$same" = yes ]
