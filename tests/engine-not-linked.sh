#!/bin/sh
# The engine library must not depend on corosync or libqb (DESIGN.md: it is
# driven by small programs and tests without a cluster).  Checks the
# library's undefined symbols and what a program linked only with it needs.
top_builddir=${top_builddir:-$(cd "$(dirname "$0")/../build" && pwd)}
lib="$top_builddir/replication/.libs/libreplication.a"
[ -f "$lib" ] || { echo "SKIP: $lib not built"; exit 77; }
command -v nm >/dev/null || { echo "SKIP: nm missing"; exit 77; }

bad=$(nm -u "$lib" 2>/dev/null | awk '{print $2}' | grep -E '^(cpg_|quorum_|cmap_|corosync_|qb_|votequorum_|virConnect|xml)' | sort -u)
if [ -n "$bad" ]; then
	echo "FAIL: libreplication.a refers to cluster symbols:"
	echo "$bad"
	exit 1
fi
# Sanity: the check looks at a real archive that does use libc and pthread.
nm -u "$lib" | grep -q pthread_create || { echo "FAIL: nm output not understood"; exit 1; }
nm "$lib" | grep -q ' T repl_engine_new' || { echo "FAIL: engine API not in archive"; exit 1; }
echo "PASS: libreplication has no corosync/libqb/libvirt symbols"
# A program linked with the engine alone loads no cluster library.
prog="$top_builddir/tests/unit/test-meta"
if [ -x "$prog" ] && command -v ldd >/dev/null; then
	if ldd "$prog" | grep -E 'libqb|libcpg|libquorum|libcmap|libcorosync|libvirt'; then
		echo "FAIL: a program linked with libreplication loads cluster libraries"
		exit 1
	fi
	echo "PASS: test-meta (engine only) loads no cluster library"
fi
