#!/bin/bash
# tests/layers.sh: the engine's lower layers never call up.  From the
# objects of the engine library (nm: which file defines a symbol, which
# file uses it) it draws the call graph between replication/'s files and
# checks that nothing below the modules reaches them: loop.c (fds,
# timers, the change notice), iopool.c (the workers; cbt.c's mark before
# a write is a hook), link.c (sockets, frames, sealing), the peer module (peer.c,
# peer_state.c, peer_send.c, peer_unflushed.c) and what they stand on
# reach none of the engine's upper files (replicate, apply, outdate,
# resync, resync_target, recent, verify, pread, window, resize, cbt, role, volume, engine, the
# NBD server), not even through another file.  The peer module reports
# up through struct peer_hooks (peer.h), which volume.c fills.  And no
# files of the engine call each other in a circle, except the files of one
# module (the peer module, link): a file low in the engine that needs one
# above it calls through a table engine.c fills (struct repl_upcalls and
# struct repl_write_observers in repl_int.h).  Not an engine test: runs
# once.
# shellcheck source=tests/functions.sh
. "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh" || exit 99

requires nm
objdir=$top_builddir/replication
compgen -G "$objdir/libreplication_la-*.o" >/dev/null ||
	skip "no engine objects in $objdir: build first"

"$PYTHON" - "$objdir" <<'PY'
import collections, glob, os, re, subprocess, sys

objdir = sys.argv[1]
LOWER = ["loop", "iopool", "link", "link_accept", "peer", "peer_state", "peer_send", "peer_unflushed"]
UPPER = ["replicate", "apply", "outdate", "resync", "resync_target", "recent", "verify", "pread", "window",
         "resize", "cbt", "role", "volume", "gate", "engine", "nbd_server", "nbd_conn",
         "nbd_cmd", "nbd_opt", "nbd_meta", "al_vol"]

objs = sorted(glob.glob(os.path.join(objdir, "libreplication_la-*.o")))
name = lambda o: re.sub(r"^libreplication_la-|\.o$", "", os.path.basename(o))
defs, uses = {}, collections.defaultdict(set)
for o in objs:
    out = subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "TDBR":
            defs[f[2]] = name(o)
        elif len(f) == 2 and f[0] == "U":
            uses[name(o)].add(f[1])
files = sorted(set(map(name, objs)))
missing = [f for f in LOWER + UPPER if f not in files]
if missing:
    print("layers: no object for", " ".join(missing), "(renamed? update the lists)")
    sys.exit(1)
graph = {f: {} for f in files}
for f in files:
    for s in sorted(uses[f]):
        d = defs.get(s)
        if d and d != f:
            graph[f].setdefault(d, s)

bad = 0
for low in LOWER:
    # Breadth first, remembering the first symbol of each arrow: the path
    # to an upper file is what the message shows.
    seen, queue = {low: [low]}, [low]
    while queue:
        f = queue.pop(0)
        for d, sym in graph[f].items():
            if d in seen:
                continue
            seen[d] = seen[f] + ["%s (%s)" % (d, sym)]
            if d in UPPER:
                print("layers: FAIL: %s reaches %s: %s" % (low, d, " -> ".join(seen[d])))
                bad += 1
                continue
            queue.append(d)
    if not any(u in seen for u in UPPER):
        print("layers: ok %-15s reaches %d files, none above it" % (low, len(seen) - 1))

# The cycles (Tarjan's strongly connected components).
index, low_, stack, on, comps, n = {}, {}, [], set(), [], [0]
sys.setrecursionlimit(10000)
def visit(v):
    index[v] = low_[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
    for w in graph[v]:
        if w not in index:
            visit(w); low_[v] = min(low_[v], low_[w])
        elif w in on:
            low_[v] = min(low_[v], index[w])
    if low_[v] == index[v]:
        c = []
        while True:
            w = stack.pop(); on.discard(w); c.append(w)
            if w == v:
                break
        comps.append(sorted(c))
for v in files:
    if v not in index:
        visit(v)
# A module split over several files may call itself in a circle; the
# engine's files may not.
MODULES = [["peer", "peer_send", "peer_state"], ["link", "link_accept"]]
for c in sorted(comps, key=len, reverse=True):
    if len(c) < 2:
        continue
    if c in MODULES:
        print("layers: ok the %s module's files call each other: %s" % (c[0], " ".join(c)))
        continue
    arrows = ["%s -> %s (%s)" % (f, d, graph[f][d]) for f in c for d in sorted(graph[f]) if d in c]
    print("layers: FAIL: a cycle of %d files: %s" % (len(c), "; ".join(arrows)))
    bad += 1
sys.exit(1 if bad else 0)
PY
st=$?
[ "$st" = 0 ] || fail "the engine's layers call up or in a circle (see above)"
