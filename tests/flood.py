#!/usr/bin/python3
"""flood.py: many connections at once to a replagentd port, none with the key.

    flood.py repl HOST:PORT [--conns N] [--payload BYTES] --duration S
    flood.py nbd (--unix PATH | --tcp HOST:PORT) [--idle N] [--list N]
                 --duration S
    (both: [--procs N] shares the connections among N processes)

repl: keeps N connections open to a replication port; each sends the header
of a WRITE frame announcing the largest payload the format allows (4 MiB +
16, header CRC right; see tests/replwire.py) and then up to --payload bytes
of that payload, before any handshake.  A connection the daemon closes is
opened again, until the time is up.

nbd: --idle connections that send nothing at all, and --list connections
that send the client flags and then NBD_OPT_LIST again and again without
ever reading a reply.  A connection the daemon closes is opened again.

One process, non-blocking sockets and epoll, so the caller must allow it
enough descriptors (ulimit -n).  Prints one summary line: connections
opened, closed by the daemon, bytes sent.  Exit 0 unless it could not
start.  Standard library only.
"""

import argparse
import errno
import os
import selectors
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import replwire  # noqa: E402  (frame format and CRC32C)

NBD_IHAVEOPT = 0x49484156454F5054
NBD_OPT_LIST = 3
NBD_FLAG_C_FIXED_NEWSTYLE = 1


class Flood:
    def __init__(self, family, addr, duration):
        self.family, self.addr = family, addr
        self.end = time.monotonic() + duration
        self.sel = selectors.DefaultSelector()
        self.opened = self.closed = self.failed = self.sent = 0
        self.want = []          # (kind) to open
        self.chunk = os.urandom(64 << 10)

    def open(self, kind):
        s = socket.socket(self.family, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(self.addr)
        except BlockingIOError as e:
            if self.family == socket.AF_UNIX:
                # EAGAIN: the listener's backlog is full; try again later.
                s.close()
                self.failed += 1
                self.want.append(kind)
                return
        except OSError as e:
            s.close()
            self.failed += 1
            if e.errno in (errno.EMFILE, errno.ENFILE):
                raise
            self.want.append(kind)
            return
        st = {"kind": kind, "out": self.first_bytes(kind), "left": 0}
        if kind == "write":
            st["left"] = self.payload
        # A list connection never reads: it waits only for room to send
        # (a closed socket says so too, and the send then fails).
        ev = selectors.EVENT_WRITE
        if kind != "list":
            ev |= selectors.EVENT_READ
        self.sel.register(s, ev, st)
        self.opened += 1

    def first_bytes(self, kind):
        if kind == "write":
            return replwire.header(replwire.WRITE, replwire.DATA_MAX + 16)
        if kind == "list":
            return struct.pack(">I", NBD_FLAG_C_FIXED_NEWSTYLE)
        return b""

    def more_bytes(self, st):
        if st["kind"] == "write" and st["left"] > 0:
            n = min(st["left"], len(self.chunk))
            st["left"] -= n
            return self.chunk[:n]
        if st["kind"] == "list":
            return struct.pack(">QII", NBD_IHAVEOPT, NBD_OPT_LIST, 0) * 256
        return b""

    def drop(self, s, st):
        self.sel.unregister(s)
        s.close()
        self.closed += 1
        self.want.append(st["kind"])

    def event(self, s, st, mask):
        if mask & selectors.EVENT_READ and st["kind"] != "list":
            # Idle and write connections read (and drop) what comes: the
            # daemon's greeting or HELLO, and its EOF.
            try:
                if not s.recv(65536):
                    return self.drop(s, st)
            except BlockingIOError:
                pass
            except OSError:
                return self.drop(s, st)
        if mask & selectors.EVENT_WRITE:
            if not st["out"]:
                st["out"] = self.more_bytes(st)
            if not st["out"]:
                # Nothing more to send: wait for the daemon to close.
                self.sel.modify(s, selectors.EVENT_READ, st)
                return
            try:
                n = s.send(st["out"])
                self.sent += n
                st["out"] = st["out"][n:]
            except BlockingIOError:
                pass
            except OSError:
                return self.drop(s, st)

    def run(self, kinds, payload=0):
        self.payload = payload
        self.want = list(kinds)
        while time.monotonic() < self.end:
            # Open (again) a bounded number per turn: a daemon that closes
            # at once must not turn this into a busy loop.
            todo, self.want = self.want[:200], self.want[200:]
            for k in todo:
                self.open(k)
            for key, mask in self.sel.select(0.05):
                if key.fileobj.fileno() < 0:
                    continue
                self.event(key.fileobj, key.data, mask)
        n = len(self.sel.get_map())
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()
        print("flood: %d connections opened, %d closed by the daemon, %d refused, "
              "%d still open at the end, %d bytes sent"
              % (self.opened, self.closed, self.failed, n, self.sent))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("repl", "nbd"))
    ap.add_argument("addr", nargs="?")
    ap.add_argument("--unix")
    ap.add_argument("--tcp")
    ap.add_argument("--conns", type=int, default=2000)
    ap.add_argument("--payload", type=int, default=0)
    ap.add_argument("--idle", type=int, default=0)
    ap.add_argument("--list", type=int, default=0)
    ap.add_argument("--duration", type=float, required=True)
    ap.add_argument("--procs", type=int, default=1)
    a = ap.parse_args()
    n = max(a.procs, 1)
    children = []
    for i in range(n):
        # Process i takes every n-th connection; the last one is us.
        if i < n - 1:
            pid = os.fork()
            if pid:
                children.append(pid)
                continue
        try:
            if a.mode == "repl":
                host, _, port = a.addr.rpartition(":")
                f = Flood(socket.AF_INET, (host, int(port)), a.duration)
                f.run(["write"] * len(range(i, a.conns, n)), a.payload)
            else:
                if a.unix:
                    f = Flood(socket.AF_UNIX, a.unix, a.duration)
                else:
                    host, _, port = a.tcp.rpartition(":")
                    f = Flood(socket.AF_INET, (host, int(port)), a.duration)
                f.run(["idle"] * len(range(i, a.idle, n)) +
                      ["list"] * len(range(i, a.list, n)))
        finally:
            sys.stdout.flush()
            if i < n - 1:
                os._exit(0)
    for pid in children:
        os.waitpid(pid, 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
