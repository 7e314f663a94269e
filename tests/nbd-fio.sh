#!/bin/bash
# tests/nbd-fio.sh: fio's nbd engine (libnbd) writes random blocks with crc32c
# verification headers, 4 KiB and 64 KiB blocks, queue depth 16, two
# connections per block size at once (multi-conn), then verifies them; a
# second fio run then verifies everything again on new connections.
# shellcheck source=SCRIPTDIR/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires fio timeout
fio --enghelp=nbd >/dev/null 2>&1 || skip "fio has no nbd engine"

write_config -s 64M
start_replagentd "$CONFIG"

# Jobs: 4k blocks over [0, 32M), 64k blocks over [32M, 64M); each block
# size split between two jobs (connections) with 16 MiB each.
cat >"$TESTDIR/verify.fio" <<EOF
[global]
ioengine=nbd
uri=$NBD_URI
iodepth=16
rw=randwrite
size=16M
numjobs=2
offset_increment=16M
verify=crc32c
verify_fatal=1
verify_dump=1
do_verify=1
randrepeat=1
group_reporting=1

[bs4k]
bs=4k
offset=0

[bs64k]
bs=64k
offset=32M
EOF

run_fio() {	# WHAT ARGS...
	local what=$1 st
	shift
	(cd "$TESTDIR" && timeout 90 fio "$@" --output="$TESTDIR/fio-$what.out" verify.fio)
	st=$?
	if [ "$st" != 0 ] || grep -q -E 'verify:|bad (magic|header)|err= *[1-9]' "$TESTDIR/fio-$what.out"; then
		grep -i -E 'verify|bad|err|fio:' "$TESTDIR/fio-$what.out" | head -n 40 >&2
		fail "fio $what failed (status $st)"
	fi
	grep -E '^ *(READ|WRITE):' "$TESTDIR/fio-$what.out"
}

run_fio write-verify
run_fio verify-only --verify_only

replagentd_alive || fail "replagentd died"
stop_replagentd || fail "replagentd exited with status $REPLAGENTD_STATUS"
log "PASS"
