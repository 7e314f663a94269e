#!/usr/bin/python3
"""replwire.py: hostile input for a replagentd replication port.

    replwire.py HOST:PORT SCENARIO...

Scenarios (one or more connections each; every socket has a timeout):

  random      64 KiB of random bytes, then waits for the daemon to close
  hugelen     a valid-looking frame header (magic, version, HELLO, header
              CRC right) announcing a 4 GiB - 16 payload
  maxwrite    a valid WRITE header announcing the largest payload the format
              allows, before any handshake, then 1 KiB of it and silence
  badcrc      a HELLO header whose header CRC is wrong
  badversion  a HELLO header of protocol version 99
  fakehello   a well-formed HELLO from node "intruder", then garbage
  idle        32 connections that send nothing
  halfheader  16 bytes of a header, then silence

Prints one line per scenario: "ok NAME: how the daemon ended the
connection" (closed, reset, or still open when we gave up: the daemon
must drop unauthenticated connections by itself within its handshake
timeout, so "still open" after --wait seconds fails).  Exit 1 if a
scenario failed.  Standard library only (CRC32C included).
"""

import argparse
import os
import socket
import struct
import sys
import time

WIRE_MAGIC = 0x52504C57
HELLO = 1
WRITE = 6
HDR_LEN = 32
HELLO_LEN = 144
DATA_MAX = 4 << 20


def _crc32c_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_T = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _T[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def header(ftype, length, payload=b"", version=1, seq=1, break_crc=False):
    h = struct.pack(">IHHIIQI", WIRE_MAGIC, version, ftype, length, 0, seq, crc32c(payload))
    hc = crc32c(h)
    if break_crc:
        hc ^= 1
    return h + struct.pack(">I", hc)


def hello_payload(node, resource):
    # proto_min, proto_max, features, initiator, node[64], resource[64]
    p = struct.pack(">HHIB", 1, 1, 0, 1) + b"\0" * 7
    p += node.encode().ljust(64, b"\0") + resource.encode().ljust(64, b"\0")
    return p.ljust(HELLO_LEN, b"\0")


def conn(addr, timeout):
    host, _, port = addr.rpartition(":")
    s = socket.create_connection((host, int(port)), timeout=timeout)
    return s


def outcome(s, wait):
    """Reads until the daemon closes; returns how it ended."""
    end = time.time() + wait
    s.settimeout(0.5)
    while time.time() < end:
        try:
            d = s.recv(65536)
        except socket.timeout:
            continue
        except ConnectionResetError:
            return "reset"
        except OSError as e:
            return "error %s" % e
        if not d:
            return "closed"
    return None


def send_quiet(s, data):
    try:
        s.sendall(data)
    except OSError:
        pass  # the daemon may close before reading it all


def run(name, addr, wait):
    if name == "idle":
        socks = [conn(addr, 5) for _ in range(32)]
        end = time.time() + wait
        how = [outcome(s, max(end - time.time(), 1.0)) for s in socks]
        for s in socks:
            s.close()
        if None in how:
            return None
        return "all %d %s" % (len(socks), "/".join(sorted(set(how))))
    s = conn(addr, 5)
    try:
        if name == "random":
            send_quiet(s, os.urandom(64 << 10))
        elif name == "hugelen":
            send_quiet(s, header(HELLO, 0xFFFFFFF0))
        elif name == "maxwrite":
            send_quiet(s, header(WRITE, DATA_MAX + 16) + os.urandom(1024))
        elif name == "badcrc":
            p = hello_payload("intruder", "vol0")
            send_quiet(s, header(HELLO, len(p), p, break_crc=True) + p)
        elif name == "badversion":
            p = hello_payload("intruder", "vol0")
            send_quiet(s, header(HELLO, len(p), p, version=99) + p)
        elif name == "fakehello":
            p = hello_payload("intruder", "vol0")
            send_quiet(s, header(HELLO, len(p), p) + p + os.urandom(4096))
        elif name == "halfheader":
            send_quiet(s, header(HELLO, HELLO_LEN)[:16])
        else:
            raise ValueError("unknown scenario " + name)
        return outcome(s, wait)
    finally:
        s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("addr")
    ap.add_argument("scenario", nargs="+")
    ap.add_argument("--wait", type=float, default=15.0,
                    help="seconds the daemon has to drop a connection")
    a = ap.parse_args()
    bad = 0
    for name in a.scenario:
        try:
            how = run(name, a.addr, a.wait)
        except (OSError, ValueError) as e:
            print("FAIL %s: %s" % (name, e))
            bad += 1
            continue
        if how is None:
            print("FAIL %s: connection still open after %.0f s" % (name, a.wait))
            bad += 1
        else:
            print("ok %s: %s" % (name, how))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
