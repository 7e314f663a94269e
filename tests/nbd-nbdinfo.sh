#!/bin/bash
# tests/nbd-nbdinfo.sh: what the daemon advertises, as nbdinfo (libnbd) sees
# it: size and transmission flags of an export (over the Unix socket and
# TCP), NBD_OPT_LIST of a two-volume config, and a refused unknown export.
# shellcheck source=SCRIPTDIR/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires nbdinfo timeout
[ -x "$PYTHON" ] || skip "requires $PYTHON"

write_config -s 64M
add_volume "$CONFIG" data-1 3M
start_replagentd_tcp "$CONFIG"

ninfo() { timeout 30 nbdinfo "$@"; }

# check_export JSON NAME SIZE: the single export in nbdinfo --json output.
check_export() {
	"$PYTHON" - "$2" "$3" "$1" <<-'EOF'
		import json, sys
		name, size, text = sys.argv[1], int(sys.argv[2]), sys.argv[3]
		info = json.loads(text)
		bad = []
		if info.get("protocol") != "newstyle-fixed":
		    bad.append("protocol %r" % info.get("protocol"))
		if info.get("structured") is not True:
		    bad.append("no structured replies")
		exports = info.get("exports", [])
		if len(exports) != 1:
		    bad.append("%d exports" % len(exports))
		else:
		    e = exports[0]
		    if e.get("export-name") != name:
		        bad.append("export-name %r" % e.get("export-name"))
		    if e.get("export-size") != size:
		        bad.append("export-size %r, expected %d" % (e.get("export-size"), size))
		    want = {"can_flush": True, "can_fua": True, "can_trim": True,
		            "can_zero": True, "can_multi_conn": True,
		            "is_read_only": False}
		    for k, v in want.items():
		        if e.get(k) != v:
		            bad.append("%s is %r, expected %r" % (k, e.get(k), v))
		if bad:
		    print("nbdinfo --json: " + "; ".join(bad), file=sys.stderr)
		    print(text, file=sys.stderr)
		    sys.exit(1)
	EOF
}

json=$(ninfo --json "$NBD_URI") || fail "nbdinfo --json $NBD_URI failed"
check_export "$json" vol0 $((64 * 1024 * 1024)) || fail "vol0 over the Unix socket"
json=$(ninfo --json "$NBD_TCP_URI") || fail "nbdinfo --json $NBD_TCP_URI failed"
check_export "$json" vol0 $((64 * 1024 * 1024)) || fail "vol0 over TCP"
json=$(ninfo --json "nbd+unix:///data-1?socket=$NBD_SOCK") || fail "nbdinfo data-1 failed"
check_export "$json" data-1 $((3 * 1024 * 1024)) || fail "data-1"

size=$(ninfo --size "$NBD_URI") || fail "nbdinfo --size failed"
[ "$size" = $((64 * 1024 * 1024)) ] || fail "nbdinfo --size: $size"

# NBD_OPT_LIST: both volumes, nothing else.
list_check() {
	"$PYTHON" -c '
import json, sys
info = json.loads(sys.argv[1])
names = sorted(e.get("export-name") for e in info.get("exports", []))
sizes = {e.get("export-name"): e.get("export-size") for e in info.get("exports", [])}
ok = names == ["data-1", "vol0"] and sizes == {"vol0": 64 << 20, "data-1": 3 << 20}
if not ok:
    print("nbdinfo --list: exports %r sizes %r" % (names, sizes), file=sys.stderr)
sys.exit(0 if ok else 1)' "$1"
}
json=$(ninfo --list --json "nbd+unix://?socket=$NBD_SOCK") || fail "nbdinfo --list failed"
list_check "$json" || fail "nbdinfo --list over the Unix socket"
json=$(ninfo --list --json "nbd://127.0.0.1:$NBD_PORT") || fail "nbdinfo --list over TCP failed"
list_check "$json" || fail "nbdinfo --list over TCP"
# The plain-text listing too.
ninfo --list "nbd+unix://?socket=$NBD_SOCK" | grep -q 'export="data-1"' ||
	fail "nbdinfo --list (text) does not show data-1"

# An unknown export is refused, and the daemon carries on.
if ninfo "nbd+unix:///no-such-volume?socket=$NBD_SOCK" >"$TESTDIR/unknown.out" 2>&1; then
	cat "$TESTDIR/unknown.out" >&2
	fail "nbdinfo of an unknown export succeeded"
fi
ninfo --size "$NBD_URI" >/dev/null || fail "daemon unusable after an unknown export"

stop_replagentd || fail "replagentd exited with status $REPLAGENTD_STATUS"
log "PASS"
