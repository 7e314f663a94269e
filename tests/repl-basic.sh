#!/bin/bash
# tests/repl-basic.sh: replication end to end, with 2 and then 3 replicas on
# 127.0.0.1.  For each cluster: start every node, wait until all links are
# Connected, promote one node; a second promotion while it is Primary and
# connected must be refused (non-zero exit, a message) and a Secondary must
# refuse NBD clients; fio (nbd engine) writes ~32 MiB, random and
# sequential, 4k and 64k blocks mixed, queue depth 16, with crc32c
# verification, and flushes; then the roles switch (demote, promote
# another node) and fio verifies the same data through the new Primary;
# finally every daemon stops (SIGTERM, exit 0) and all backing files must be
# identical byte for byte.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires fio timeout cmp
fio --enghelp=nbd >/dev/null 2>&1 || skip "fio has no nbd engine"
requires_replagentd
requires_replagent

# all_connected NODE...: every node sees every other one Connected with
# nothing out of sync.
all_connected() {
	local n m expr
	for n in "$@"; do
		expr='v.get("disk") == "UpToDate"'
		for m in "$@"; do
			[ "$m" = "$n" ] && continue
			expr+=" and p[\"$m\"][\"link\"] == \"Connected\""
			expr+=" and p[\"$m\"][\"out_of_sync_bytes\"] == 0"
		done
		wait_status "$n" 30 "$expr" || fail "node $n: peers not all Connected"
	done
}

fio_job() {	# FILE URI
	cat >"$1" <<-EOF
		[global]
		ioengine=nbd
		uri=$2
		iodepth=16
		bssplit=4k/50:64k/50
		verify=crc32c
		verify_fatal=1
		verify_dump=1
		do_verify=1
		randrepeat=1
		end_fsync=1
		group_reporting=1

		[randwrite]
		rw=randwrite
		offset=0
		size=16M

		[seqwrite]
		rw=write
		offset=32M
		size=16M
	EOF
}

run_fio() {	# NODE WHAT [FIO ARGS...]
	local n=$1 what=$2 st out
	shift 2
	out=$TESTDIR/fio-$what.out
	fio_job "$TESTDIR/$what.fio" "${NODE_NBD_URI[$n]}"
	(cd "$TESTDIR" && timeout 90 fio "$@" --output="$out" "$what.fio")
	st=$?
	if [ "$st" != 0 ] || grep -q -E 'verify:|bad (magic|header)|err= *[1-9]' "$out"; then
		grep -i -E 'verify|bad|err|fio:' "$out" | head -n 40 >&2
		fail "fio $what on $n failed (status $st)"
	fi
	grep -E '^ *(READ|WRITE):' "$out"
}

# run_cluster NODE...: the whole scenario; the first node is Primary first,
# the last one takes over.
run_cluster() {
	local nodes=("$@") n first=$1 last=${*: -1} out st
	log "==== cluster of ${#nodes[@]}: ${nodes[*]}"
	cluster_config -t 5 "${nodes[@]}"
	for n in "${nodes[@]}"; do
		start_node "$n"
	done
	all_connected "${nodes[@]}"
	for n in "${nodes[@]}"; do
		node_status "$n" >/dev/null ||
			fail "status on $n: exit $? for a healthy cluster (expected 0)"
	done

	promote "$first"
	wait_status "$first" 10 'v["role"] == "Primary"' || fail "$first not Primary"
	for n in "${nodes[@]:1}"; do
		wait_status "$n" 10 "v[\"role\"] == \"Secondary\" and p[\"$first\"][\"peer_role\"] == \"Primary\"" ||
			fail "$n does not see $first as Primary"
	done

	# A second Primary while the first is connected: refused.
	out=$(ra_cli "$last" promote "$CLUSTER_VOL" 2>&1)
	st=$?
	[ "$st" != 0 ] || fail "promote on $last succeeded while $first is Primary"
	[ -n "$out" ] || fail "promote on $last refused (exit $st) without a message"
	log "second promote refused as expected (exit $st): $out"
	wait_status "$last" 5 'v["role"] == "Secondary"' || fail "$last changed role after a refused promote"

	# A Secondary refuses NBD clients.
	if command -v nbdinfo >/dev/null 2>&1; then
		timeout 10 nbdinfo --size "${NODE_NBD_URI[$last]}" >/dev/null 2>&1 &&
			fail "Secondary $last accepted an NBD client"
	fi

	run_fio "$first" "write-${#nodes[@]}"
	# Everything acknowledged is on every replica: nothing out of sync.
	all_connected "${nodes[@]}"

	# Switch roles and read the data back through the other replica.
	ra_cli "$first" demote "$CLUSTER_VOL" || fail "demote on $first refused"
	wait_status "$last" 10 "p[\"$first\"][\"peer_role\"] == \"Secondary\"" ||
		fail "$last does not see $first demoted"
	promote "$last"
	run_fio "$last" "verify-${#nodes[@]}" --verify_only

	ra_cli "$last" demote "$CLUSTER_VOL" || fail "demote on $last refused"
	for n in "${nodes[@]}"; do
		replagentd_alive "$n" || fail "node $n died"
	done
	stop_cluster
	cmp_backings "${nodes[@]}" || fail "replicas differ (${#nodes[@]} nodes)"
	# The fio data really is there (not two identical empty files).
	cmp -s -n 65536 -i $((32 << 20)):0 "${NODE_BACKING[$first]}" /dev/zero &&
		fail "backing file of $first has no data at 32M"
}

run_cluster a b
run_cluster p q r
log "PASS"
