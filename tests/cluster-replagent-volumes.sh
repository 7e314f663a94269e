#!/bin/bash
# tests/cluster-replagent-volumes.sh: replagentd in cluster mode (cluster =
# corosync) on three nodes of tests/cluster.sh, no volume in the configs.
# A volume created on n1 reaches n2 and n3 (volume list, status) and its
# replicas connect everywhere; a volume created while n2's daemon is down
# reaches n2 when it starts again and is attached there; six volumes
# created at once get six ports and all attach; a deleted volume
# goes from every node; a Primary volume cannot be deleted; disk-xml names
# the node's NBD socket and the export.  Hostile input: random bytes on the
# control socket leave the daemon answering; an unknown CLI command exits
# 64; "cluster = bogus" makes replagentd exit 78 naming FILE:LINE.
# Skipped (77) without root, network namespaces or corosync.
# shellcheck source=SCRIPTDIR/cluster-replagent-lib.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/cluster-replagent-lib.sh" || exit 99

rc_requires
requires qemu-io
t0=$(now_s)

# rc_list_has I VOL: VOL is in node I's "volume list --json".
rc_list_has() {
	rc_cli "$1" volume list --json 2>/dev/null | "$PYTHON" -c '
import json, sys
s = json.load(sys.stdin)
sys.exit(0 if s.get("ok") and any(v.get("name") == sys.argv[1] for v in s["volumes"]) else 1)
' "$2"
}

# wait_listed I T VOL yes|no: VOL is (or is not) listed by node I, and in
# its status, within T seconds.
wait_listed() {
	local i=$1 t=$2 vol=$3 want=$4 end
	end=$(($(date +%s) + t))
	while :; do
		if [ "$want" = yes ]; then
			rc_list_has "$i" "$vol" && rc_value "$i" "'$vol' in vols" "$vol" | grep -q True &&
				return 0
		else
			! rc_list_has "$i" "$vol" && rc_value "$i" "'$vol' not in vols" "$vol" | grep -q True &&
				return 0
		fi
		if [ "$(date +%s)" -ge "$end" ]; then
			echo "n$i: after ${t}s $vol is still $([ "$want" = yes ] && echo not) there" >&2
			rc_cli "$i" volume list >&2
			rc_cli "$i" status >&2
			return 1
		fi
		sleep 0.2
	done
}

rc_setup 3
log "3 nodes quorate, replagentd answering on each after $(rc_elapsed "$t0") s"
for i in 1 2 3; do
	[ "$(rc_value "$i" 's["node"]')" = "n$i" ] || fail "replagentd on n$i does not call itself n$i"
done

# ---- create: the definition spreads, the replicas connect ------------------
t1=$(now_s)
rc_cli 1 volume create vol0 --size 64M --nodes n1,n2,n3 || fail "volume create vol0 on n1 failed"
for i in 1 2 3; do
	wait_listed "$i" 10 vol0 yes || fail "vol0 not listed by n$i within 10 s of its creation"
done
log "vol0 listed on every node after $(rc_elapsed "$t1") s"
[ "$(rc_cli 3 volume list --json | "$PYTHON" -c '
import json, sys
v = [x for x in json.load(sys.stdin)["volumes"] if x["name"] == "vol0"][0]
print(v["size"], ",".join(v["nodes"]))')" = "67108864 n1,n2,n3" ] ||
	fail "n3 lists vol0 with the wrong size or nodes: $(rc_cli 3 volume list --json)"
rc_wait_all 30 "$RC_SYNCED" vol0 ||
	fail "vol0: not every replica Connected and UpToDate on every node within 30 s"
log "vol0: every peer link Connected on every node after $(rc_elapsed "$t1") s"
for i in 1 2 3; do
	[ -e "$(rc_backing "$i" vol0)" ] || fail "n$i has no backing file $(rc_backing "$i" vol0)"
done

# ---- creations in a burst ------------------------------------------------------
# Six "volume create" at once on n1, each answered before the group brings
# its definition back: each gets its own port, none is refused on delivery,
# all are attached and connect.  (A script creating volumes in a loop does
# the same: likely why CI's cluster-replagent-many.sh once found two
# volumes never attached on n1.)
pids=()
for k in 1 2 3 4 5 6; do
	rc_cli 1 volume create "burst$k" --size 16M --nodes n1,n2 >/dev/null &
	pids+=($!)
done
for p in "${pids[@]}"; do
	wait "$p" || fail "a volume create of the burst failed"
done
ports=$(rc_cli 1 volume list --json | "$PYTHON" -c '
import json, sys
print(" ".join(str(v["port"]) for v in json.load(sys.stdin)["volumes"]))')
[ "$(tr ' ' '\n' <<<"$ports" | sort | uniq -d)" = "" ] ||
	fail "volumes created in a burst share a port: $ports"
for k in 1 2 3 4 5 6; do
	rc_wait_all 30 "$RC_SYNCED" "burst$k" 1 2 || fail "burst$k: not attached and Connected on n1 and n2"
done
log "6 volumes created at once: ports $ports, all attached and Connected"
for k in 1 2 3 4 5 6; do
	rc_cli 1 volume delete "burst$k" >/dev/null || fail "volume delete burst$k failed"
done
for k in 1 2 3 4 5 6; do
	wait_listed 1 10 "burst$k" no || fail "burst$k still on n1 10 s after its deletion"
done

# ---- a node that was down learns what it missed ----------------------------
rc_stop 2
cluster_node_alive 2 || fail "n2's corosync went with its replagentd"
rc_cli 1 volume create vol1 --size 16M --nodes n1,n2,n3 || fail "volume create vol1 on n1 failed"
for i in 1 3; do
	wait_listed "$i" 10 vol1 yes || fail "vol1 not listed by n$i within 10 s"
done
rc_wait 1 20 'p["n3"]["link"] == "Connected"' vol1 || fail "vol1: n1 and n3 did not connect"
t1=$(now_s)
rc_start 2
wait_listed 2 15 vol1 yes || fail "n2 did not learn vol1 (created while it was down) within 15 s"
log "n2 learned vol1 after $(rc_elapsed "$t1") s of its restart"
[ -e "$(rc_backing 2 vol1)" ] || fail "n2 did not attach vol1: no $(rc_backing 2 vol1)"
rc_wait_all 30 "$RC_SYNCED" vol1 || fail "vol1: replicas not all Connected after n2 came back"
rc_wait_all 30 "$RC_SYNCED" vol0 || fail "vol0: replicas not all Connected after n2 came back"
log "vol1 attached on n2 and Connected everywhere after $(rc_elapsed "$t1") s"

# ---- delete -----------------------------------------------------------------
rc_cli 3 volume delete vol1 || fail "volume delete vol1 on n3 failed"
for i in 1 2 3; do
	wait_listed "$i" 10 vol1 no || fail "vol1 still on n$i 10 s after its deletion"
done
rc_list_has 1 vol0 || fail "deleting vol1 took vol0 with it"
log "vol1 deleted everywhere"

# A Primary volume cannot be deleted, neither on the Primary nor elsewhere.
rc_promote_retry 1 10 vol0 || fail "promote vol0 on n1 refused"
rc_wait 2 10 'p["n1"]["peer_role"] == "Primary"' ||
	fail "n2 does not see n1 as Primary of vol0"
for i in 1 2; do
	out=$(rc_cli "$i" volume delete vol0 2>&1) &&
		fail "volume delete of the Primary vol0 accepted on n$i"
	log "delete of Primary vol0 on n$i refused: $out"
done
sleep 1
for i in 1 2 3; do
	rc_list_has "$i" vol0 || fail "vol0 gone from n$i after a refused delete"
done
rc_wait 1 5 'v["role"] == "Primary"' || fail "vol0 is no longer Primary on n1"

# ---- disk-xml ---------------------------------------------------------------
xml=$(rc_cli 1 disk-xml vol0) || fail "disk-xml vol0 failed"
"$PYTHON" -c '
import sys, xml.etree.ElementTree as ET
d = ET.fromstring(sys.argv[1])
assert d.tag == "disk", "root element is %s" % d.tag
s = d.find("source")
assert s is not None and s.get("protocol") == "nbd" and s.get("name") == "vol0", "bad <source>"
h = s.find("host")
assert h is not None and h.get("transport") == "unix" and h.get("socket") == sys.argv[2], \
    "bad <host>: %r" % (h.attrib if h is not None else None)
' "$xml" "${RC_NBD[1]}" || fail "disk-xml vol0 is not the expected <disk>: $xml"
log "disk-xml names ${RC_NBD[1]} and export vol0"

# ---- hostile input ------------------------------------------------------------
# Bad volume definitions, straight on the socket (past the CLI's checks):
# each refused with an answer, nothing defined.
"$PYTHON" - "${RC_CTL[2]}" <<-'EOF' || fail "a bad volume-create was not refused (see above)"
	import json, socket, sys
	bad = [
	    "volume-create", "volume-create x", "volume-create x 64M",
	    "volume-create x 64M n1,n2 extra",
	    "volume-create ../x 64M n1,n2", "volume-create .x 64M n1,n2",
	    "volume-create -x 64M n1,n2", "volume-create " + "a" * 65 + " 64M n1,n2",
	    "volume-create x 0 n1,n2", "volume-create x 1000 n1,n2",
	    "volume-create x -1 n1,n2", "volume-create x 64Q n1,n2",
	    "volume-create x 99999999999T n1,n2", "volume-create x 129T n1,n2",
	    "volume-create x 64M n1", "volume-create x 64M n1,n1",
	    "volume-create x 64M n1,n2,n3,n1", "volume-create x 64M ,",
	    "volume-create x 64M n1,../n2", "volume-create vol0 64M n1,n2",
	    "volume-delete", "volume-delete nosuch", "volume-delete ../vol0",
	    "volume-list extra words here",
	]
	rc = 0
	for req in bad:
	    s = socket.socket(socket.AF_UNIX)
	    s.settimeout(10)
	    s.connect(sys.argv[1])
	    s.sendall(req.encode() + b"\n")
	    buf = b""
	    while not buf.endswith(b"\n"):
	        d = s.recv(4096)
	        if not d:
	            break
	        buf += d
	    s.close()
	    try:
	        a = json.loads(buf)
	    except ValueError:
	        print("%r: no JSON answer: %r" % (req, buf))
	        rc = 1
	        continue
	    if a.get("ok") and not req.startswith("volume-list"):
	        print("%r: accepted: %s" % (req, buf.decode().strip()))
	        rc = 1
	sys.exit(rc)
EOF
sleep 1
for i in 1 2 3; do
	rc_alive "$i" || fail "replagentd on n$i died after bad volume requests"
	names=$(rc_cli "$i" volume list --json | "$PYTHON" -c '
import json, sys
print(" ".join(sorted(v["name"] for v in json.load(sys.stdin)["volumes"])))')
	[ "$names" = vol0 ] || fail "n$i lists '$names' after bad volume requests, expected only vol0"
done
log "bad volume-create/delete requests refused"

"$PYTHON" - "${RC_CTL[1]}" "${RC_CTL[2]}" <<-'EOF' || fail "garbage sender failed"
	import os, random, socket, sys
	random.seed()
	for path in sys.argv[1:]:
	    for i in range(60):
	        s = socket.socket(socket.AF_UNIX)
	        s.settimeout(2)
	        try:
	            s.connect(path)
	            n = random.choice((1, 7, 100, 4000, 5000, 70000))
	            data = os.urandom(n)
	            if i % 3 == 0:
	                data += b"\n"
	            s.sendall(data)
	            # Wait for the answer (or EOF) where one is due at once: a
	            # whole line, or more than a request may hold.
	            if i % 2 == 0 and (data.endswith(b"\n") or n > 4096):
	                s.recv(4096)
	        except OSError:
	            pass  # the daemon may close on us: fine
	        finally:
	            s.close()
EOF
for i in 1 2; do
	rc_cli "$i" version >/dev/null || fail "n$i does not answer after garbage on its control socket"
	rc_alive "$i" || fail "replagentd on n$i died after garbage on its control socket"
done
rc_wait 1 5 'v["role"] == "Primary"' || fail "n1 lost vol0's Primary role after the garbage"
log "control sockets still answer after random bytes"

rc_cli 1 frobnicate >/dev/null 2>&1
st=$?
[ "$st" = 64 ] || fail "unknown CLI command: exit $st, expected 64"
rc_cli 1 volume frobnicate >/dev/null 2>&1
st=$?
[ "$st" = 64 ] || fail "unknown volume subcommand: exit $st, expected 64"

bad=$TESTDIR/nodes/n3/bad.conf
sed 's/^cluster = corosync$/cluster = bogus/' "${RC_CONF[3]}" >"$bad"
line=$(grep -n '^cluster = bogus$' "$bad" | cut -d: -f1)
[ -n "$line" ] || hard_error "could not write $bad"
err=$(CLUSTER_EXEC_TIMEOUT=15 cluster_exec 3 "$REPLAGENTD" -f -c "$bad" 2>&1)
st=$?
[ "$st" = 78 ] || fail "replagentd with cluster = bogus: exit $st, expected 78 ($err)"
grep -q -F "$bad:$line:" <<<"$err" || fail "replagentd does not name $bad:$line: $err"
err=$("$REPLAGENTD" -c "$bad" --check-config 2>&1)
st=$?
[ "$st" = 78 ] || fail "--check-config with cluster = bogus: exit $st, expected 78 ($err)"
rc_alive 3 || fail "the refused daemon took n3's running replagentd with it"
log "cluster = bogus: exit 78, $err"

# ---- demote, then delete works -----------------------------------------------
rc_cli 1 demote vol0 || fail "demote vol0 on n1 failed"
for i in 2 3; do
	rc_wait "$i" 10 'not any(x["peer_role"] == "Primary" for x in p.values())' ||
		fail "n$i still sees a Primary of vol0 after the demotion"
done
end=$(($(date +%s) + 10))
until rc_cli 2 volume delete vol0; do
	[ "$(date +%s)" -ge "$end" ] && fail "volume delete of the demoted vol0 refused for 10 s"
	sleep 0.5
done
for i in 1 2 3; do
	wait_listed "$i" 10 vol0 no || fail "vol0 still on n$i 10 s after its deletion"
	rc_alive "$i" || fail "replagentd on n$i died"
done

# ---- a name used again: a new, blank volume ----------------------------------
# The deleted volume's files stay on disk; a volume created later under the
# same name must not inherit them: either the create is refused, or the new
# volume is attached on its nodes with its own size and reads as zeroes.
rc_cli 1 volume create vol2 --size 16M --nodes n1,n2,n3 || fail "volume create vol2 failed"
rc_wait_all 20 "$RC_SYNCED" vol2 || fail "vol2: replicas not Connected"
rc_promote_retry 1 10 vol2 || fail "promote vol2 on n1 refused"
qio_batch "$(rc_uri 1 vol2)" "write -P 0xab 0 1M" || fail "cannot write to vol2"
rc_cli 1 demote vol2 || fail "demote vol2 failed"
rc_wait_all 10 'not any(x["peer_role"] == "Primary" for x in p.values())' vol2 ||
	fail "vol2 still Primary somewhere after its demotion"
rc_cli 1 volume delete vol2 || fail "volume delete vol2 failed"
for i in 1 2 3; do
	wait_listed "$i" 10 vol2 no || fail "vol2 still on n$i 10 s after its deletion"
done
if out=$(rc_cli 2 volume create vol2 --size 32M --nodes n1,n2 2>&1); then
	for i in 1 2; do
		rc_wait "$i" 15 'v.get("size") == 32 << 20' vol2 ||
			fail "vol2 (created again, 32M, after a 16M vol2 was deleted) is listed but not attached on n$i: $(grep -a 'vol2' "$(rc_log "$i")" | tail -n 3)"
	done
	rc_wait_all 20 "$RC_SYNCED" vol2 1 2 || fail "the new vol2: replicas not Connected"
	rc_promote_retry 2 10 vol2 || fail "promote of the new vol2 refused"
	qio_batch "$(rc_uri 2 vol2)" "read -P 0 0 1M" ||
		fail "the new vol2 shows the data of the deleted vol2"
	log "vol2 created again after its deletion: a new, blank volume"
else
	rc_list_has 1 vol2 && fail "volume create vol2 refused ($out) but vol2 is listed"
	log "creating vol2 again after its deletion refused: $out"
fi
log "PASS ($(rc_elapsed "$t0") s)"
