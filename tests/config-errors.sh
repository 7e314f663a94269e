#!/bin/sh
# config-errors.sh: the real replagentd refuses broken configuration files.
#
# Each broken file must make "replagentd -f -c FILE" exit promptly with
# EX_CONFIG (78), name "FILE:LINE:" of the bad line on stderr, and leave no
# pidfile or socket behind.  Also checks that an unknown option gives
# EX_USAGE (64) and a usage message, and that the shipped template passes
# --check-config.  What the parser accepts line by line is tested by
# tests/unit/test-config; this only checks that the daemon wires it up.
# Exit 77 (skip) when the daemon has not been built.

here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$here/..}"
: "${top_builddir:=$here/../build}"
daemon=$top_builddir/agent/replagentd

if [ ! -x "$daemon" ]; then
	echo "SKIP: $daemon not built"
	exit 77
fi
if ! command -v timeout >/dev/null 2>&1; then
	echo "SKIP: timeout(1) not found"
	exit 77
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/config-errors.XXXXXX") || exit 99
trap 'rm -rf "$dir"' EXIT
trap 'exit 1' HUP INT TERM

failures=0
fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

# The [global] section every broken file starts with (7 lines), so that a
# daemon that wrongly starts stays inside $dir.
header() {
	cat <<EOF
[global]
node = n1
nbd-socket = $dir/nbd.sock
control-socket = $dir/control.sock
state-dir = $dir
pidfile = $dir/replagentd.pid
key-file = $dir/cluster.key
EOF
}

# run OUTPREFIX ARGS...: runs the daemon (at most 10 s), stdout and stderr
# to OUTPREFIX.out and OUTPREFIX.err; sets rc.
run() {
	out=$1
	shift
	timeout 10 "$daemon" "$@" >"$out.out" 2>"$out.err" </dev/null
	rc=$?
}

# expect_error NAME LINE [ARGS...]: $dir/NAME.conf must be refused, blaming LINE.
expect_error() {
	name=$1 line=$2
	shift 2
	conf=$dir/$name.conf
	before=$failures
	run "$dir/$name" -f -c "$conf" "$@"
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		fail "$name: daemon did not exit within 10 s (it started?)"
	elif [ "$rc" -ne 78 ]; then
		fail "$name: exit status $rc, expected 78 (EX_CONFIG)"
	fi
	if ! grep -F -q -- "$conf:$line:" "$dir/$name.err"; then
		fail "$name: stderr does not name $conf:$line:"
		sed 's/^/	stderr: /' "$dir/$name.err"
	fi
	for f in "$dir/replagentd.pid" "$dir/nbd.sock" "$dir/control.sock"; do
		if [ -e "$f" ]; then
			fail "$name: $f exists: the daemon started"
			rm -f "$f"
		fi
	done
	if [ "$failures" -eq "$before" ]; then
		echo "ok: $name refused at line $line"
	fi
}

# ---- broken files -------------------------------------------------------------

{ header; printf '[volume vm1]\nbacking = %s/vm1.img\nfoo = bar\n' "$dir"; } >"$dir/unknown-key.conf"
expect_error unknown-key 10

{ header; printf 'log-level chatty\n'; } >"$dir/missing-equals.conf"
expect_error missing-equals 8

{ header; printf '\n[volumes vm1]\n'; } >"$dir/unknown-section.conf"
expect_error unknown-section 9

{ printf 'node = n1\n'; } >"$dir/outside-section.conf"
expect_error outside-section 1

{ header; printf '[volume vm1]\nbacking = %s/vm1.img\nsize = 1000\n' "$dir"; } >"$dir/bad-size.conf"
expect_error bad-size 10

{ header; printf '[volume vm1]\nbacking = %s/vm1.img\nsize = 10Q\n' "$dir"; } >"$dir/bad-suffix.conf"
expect_error bad-suffix 10

{ header; printf '[volume vm1]\nbacking = %s/vm1.img\nsize = 1M\nreplica = n1 127.0.0.1:7789\n' "$dir"; } >"$dir/one-replica.conf"
expect_error one-replica 11

{ header; printf '[volume vm1]\nbacking = %s/vm1.img\nreplica = n1 127.0.0.1:7789\nreplica = n1 127.0.0.1:7790\n' "$dir"; } >"$dir/dup-replica.conf"
expect_error dup-replica 11

{ header; printf '[volume vm1]\nsize = 1M\n\n[volume vm2]\nbacking = %s/vm2.img\n' "$dir"; } >"$dir/no-backing.conf"
expect_error no-backing 8

{ header; printf '[volume vm1]\nbacking = %s/a.img\n[volume vm1]\nbacking = %s/b.img\n' "$dir" "$dir"; } >"$dir/dup-volume.conf"
expect_error dup-volume 10

{ header; printf '[volume vm/1]\nbacking = %s/vm1.img\n' "$dir"; } >"$dir/bad-name.conf"
expect_error bad-name 8

{ header; printf 'nbd-listen = ::1:10809\n'; } >"$dir/bad-listen.conf"
expect_error bad-listen 8

{ header; printf 'outdate-timeout = 0\n'; } >"$dir/bad-timeout.conf"
expect_error bad-timeout 8

{ header; printf 'node = n2\n'; } >"$dir/dup-key.conf"
expect_error dup-key 8

{ header; printf '# binary\000garbage\n'; } >"$dir/nul-byte.conf"
expect_error nul-byte 8

{ header; printf '#'; i=0; while [ $i -lt 64 ]; do
	printf '%s' 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'
	i=$((i + 1)); done; printf '\n'; } >"$dir/long-line.conf"
expect_error long-line 8

# --check-config must refuse the same way.
expect_error unknown-key 10 --check-config

# A missing file: not a line error, but still refused promptly, naming it.
run "$dir/missing" -f -c "$dir/does-not-exist.conf"
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	fail "missing file: exit status $rc"
fi
grep -F -q -- "$dir/does-not-exist.conf" "$dir/missing.err" ||
	fail "missing file: stderr does not name the file"

# ---- usage -----------------------------------------------------------------------

run "$dir/usage" --bogus-flag
[ "$rc" -eq 64 ] || fail "--bogus-flag: exit status $rc, expected 64 (EX_USAGE)"
grep -i -q usage "$dir/usage.err" || fail "--bogus-flag: no usage message on stderr"

# ---- the shipped template ----------------------------------------------------------

template=$top_srcdir/templates/replagent.conf
run "$dir/template" -c "$template" --check-config
[ "$rc" -eq 0 ] || fail "$template: --check-config exit status $rc"
cat "$dir/template.out" "$dir/template.err" | grep -q "configuration OK" ||
	fail "$template: --check-config did not print \"configuration OK\""
if [ "$rc" -ne 0 ]; then
	sed 's/^/	/' "$dir/template.err"
fi

if [ "$failures" -ne 0 ]; then
	echo "$failures failure(s)"
	exit 1
fi
echo "all ok"
exit 0
