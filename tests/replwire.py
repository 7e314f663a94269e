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
  fakehello   a well-formed HELLO (initiator), then garbage
  v2hello     the HELLO of wire version 2 (node and volume names in clear),
              as a node of the previous release sends it
  idle        32 connections that send nothing
  halfheader  16 bytes of a header, then silence

With --key FILE --node NAME --peer DAEMON --volume VOL the script also
speaks for a replica (the daemon, node DAEMON, must list NAME as a replica
that connects to it): it authenticates (HMAC-SHA256 over the key, the
names masked in AUTH, as wire.h says), answers the
daemon's VOLUME with a Secondary in sync (the daemon's own generations),
then:

  secwrite    sends a 4 KiB WRITE at --offset (bytes "REPLWIRE-SECWRITE"
              repeated) while it says it is Secondary: ok if the daemon
              drops the link without acknowledging it
  primwrite   the same, but says it is Primary: ok if acknowledged
  confirm     answers PINGs; on a STATE with an outdate notice it prints
              "notice", 1.5 s later sends an unrelated STATE (no notice, no
              confirmation) and prints "unrelated-sent", --hold seconds
              later confirms the notice (echoing its token) and prints
              "confirmed": ok if the link is still up then

Speaks wire version 7 (the names only inside AUTH, 8 history generations
in VOLUME; a resync's target confirms its end with a STATE).

Prints one line per scenario: "ok NAME: how the daemon ended the
connection" (closed, reset, or still open when we gave up: the daemon
must drop unauthenticated connections by itself within its handshake
timeout, so "still open" after --wait seconds fails).  Exit 1 if a
scenario failed.  Standard library only (CRC32C included).
"""

import argparse
import hashlib
import hmac
import os
import socket
import struct
import sys
import time

WIRE_MAGIC = 0x52504C57
WIRE_VERSION = 7
HELLO = 1
WRITE = 6
HDR_LEN = 32
HELLO_LEN = 16
NAME_MAX = 64
DATA_MAX = 4 << 20


CHALLENGE, AUTH, AUTH_OK, VOLUME = 2, 3, 4, 5
WRITE_ACK, STATE, PING, PING_ACK, BYE = 7, 15, 16, 17, 18
VOLUME_LEN = 192


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


def header(ftype, length, payload=b"", version=WIRE_VERSION, seq=1, break_crc=False):
    h = struct.pack(">IHHIIQI", WIRE_MAGIC, version, ftype, length, 0, seq, crc32c(payload))
    hc = crc32c(h)
    if break_crc:
        hc ^= 1
    return h + struct.pack(">I", hc)


def hello_payload(version=WIRE_VERSION):
    # proto_min, proto_max, features, initiator (no names: wire.h)
    p = struct.pack(">HHIB", version, version, 0, 1) + b"\0" * 7
    return p.ljust(HELLO_LEN, b"\0")


def names_block(initiator, acceptor, resource):
    return b"".join(n.encode().ljust(NAME_MAX, b"\0")
                    for n in (initiator, acceptor, resource))


def names_mask(key, role, nonce_i, nonce_a, block):
    """XORs block with the sender's mask (wire.h)."""
    out = bytearray(block)
    for j in range(len(block) // 32):
        m = hmac.new(key, b"replagent-v3 names\0" + bytes([role, j]) + nonce_i + nonce_a,
                     hashlib.sha256).digest()
        for i in range(32):
            out[32 * j + i] ^= m[i]
    return bytes(out)


class Peer:
    """One authenticated replica link (the initiator side)."""

    def __init__(self, addr, key, node, peer, volume, timeout=10):
        self.s = conn(addr, timeout)
        self.key, self.node, self.peer, self.volume = key, node, peer, volume
        self.version = None
        self.buf = b""

    def send(self, ftype, payload=b"", seq=0):
        self.s.sendall(header(ftype, len(payload), payload,
                              version=self.version or WIRE_VERSION,
                              seq=seq) + payload)

    def recv(self, timeout=10):
        """(type, seq, payload) of the next frame; None when closed."""
        self.s.settimeout(timeout)
        while True:
            if len(self.buf) >= HDR_LEN:
                _, ver, ftype, length, _, seq, _ = struct.unpack(">IHHIIQI",
                                                                 self.buf[:28])
                if self.version is None:
                    self.version = ver
                if len(self.buf) >= HDR_LEN + length:
                    p = self.buf[HDR_LEN:HDR_LEN + length]
                    self.buf = self.buf[HDR_LEN + length:]
                    return ftype, seq, p
            try:
                d = self.s.recv(65536)
            except (ConnectionResetError, BrokenPipeError):
                return None
            if not d:
                return None
            self.buf += d

    def handshake(self):
        """Authenticates; returns the daemon's VOLUME payload."""
        nonce = os.urandom(32)
        t, _, their_hello = self.recv()       # the acceptor's HELLO: its version
        if t != HELLO:
            raise OSError("expected HELLO, got type %d" % t)
        if self.version != WIRE_VERSION:
            raise OSError("the daemon speaks wire version %d" % self.version)
        my_hello = hello_payload()
        self.send(HELLO, my_hello, seq=0)
        self.send(CHALLENGE, nonce, seq=1)
        t, _, their_nonce = self.recv()
        if t != CHALLENGE:
            raise OSError("expected CHALLENGE, got type %d" % t)
        names = names_block(self.node, self.peer, self.volume)
        msg = (b"replagent-v3 auth\0" + b"\1" + nonce + their_nonce + my_hello +
               their_hello + names)
        self.send(AUTH, hmac.new(self.key, msg, hashlib.sha256).digest() +
                  names_mask(self.key, 1, nonce, their_nonce, names), seq=2)
        t, _, theirs = self.recv()
        if t != AUTH:
            raise OSError("expected AUTH, got type %d (wrong key?)" % t)
        their_names = names_mask(self.key, 0, nonce, their_nonce, theirs[32:])
        msg = (b"replagent-v3 auth\0" + b"\0" + nonce + their_nonce + my_hello +
               their_hello + their_names)
        if not hmac.compare_digest(hmac.new(self.key, msg, hashlib.sha256).digest(),
                                   theirs[:32]):
            raise OSError("the daemon's proof does not fit")
        if their_names != names:
            raise OSError("the daemon refused our names")
        self.send(AUTH_OK, b"", seq=3)
        t, _, _ = self.recv()
        if t != AUTH_OK:
            raise OSError("expected AUTH_OK, got type %d" % t)
        t, _, vol = self.recv()
        if t != VOLUME:
            raise OSError("expected VOLUME, got type %d" % t)
        return vol

    def volume_reply(self, theirs, primary):
        """Our VOLUME: the daemon's generations, UpToDate, no bitmap."""
        v = bytearray(theirs)
        v[96:104] = bytes(8)                  # bitmap
        v[120:128] = bytes(8)                 # dirty
        v[128:132] = struct.pack(">I", 1)     # node id (the lowest name)
        v[136] = 4                            # UpToDate
        v[137] = 1 if primary else 0
        v[138] = 0
        v[139] = 5                            # its disk: unknown to us
        self.send(VOLUME, bytes(v))

    def state(self, current, token=0, confirm=False):
        """A STATE: Secondary, UpToDate; v2 carries the token."""
        p = struct.pack(">BBBBIQ", 0, 4, 2 if confirm else 0, 0, 0, current)
        if self.version >= 2:
            p += struct.pack(">Q", token)
        self.send(STATE, p)


SECWRITE_DATA = (b"REPLWIRE-SECWRITE" * 256)[:4096]


def peer_write(a, primary):
    pr = Peer(a.addr, a.key_bytes, a.node, a.peer, a.volume)
    try:
        theirs = pr.handshake()
        pr.volume_reply(theirs, primary)
        time.sleep(0.5)
        p = struct.pack(">QII", a.offset, len(SECWRITE_DATA), 0) + SECWRITE_DATA
        pr.send(WRITE, p, seq=1)
        end = time.time() + a.wait
        while time.time() < end:
            f = pr.recv(timeout=max(end - time.time(), 0.1))
            if f is None:
                return "dropped" if not primary else None
            t, _, payload = f
            if t == PING:
                pr.send(PING_ACK)
            elif t == WRITE_ACK:
                seq, err = struct.unpack(">QI", payload[:12])
                if primary and seq == 1 and err == 0:
                    return "acknowledged"
                raise ValueError("the daemon acknowledged the write (seq %d, error %d)"
                                 % (seq, err))
        return None
    except socket.timeout:
        return None
    finally:
        pr.s.close()


def peer_confirm(a):
    pr = Peer(a.addr, a.key_bytes, a.node, a.peer, a.volume)
    try:
        theirs = pr.handshake()
        pr.volume_reply(theirs, False)
        deadline = time.time() + a.wait
        unrelated_at = confirm_at = token = current = None
        while time.time() < deadline:
            if unrelated_at is not None and time.time() >= unrelated_at:
                pr.state(current)
                print("unrelated-sent", flush=True)
                unrelated_at = None
                confirm_at = time.time() + a.hold
            if confirm_at is not None and time.time() >= confirm_at:
                pr.state(current, token, confirm=True)
                print("confirmed", flush=True)
                time.sleep(1)
                return "notice confirmed after %.1f s" % a.hold
            try:
                f = pr.recv(timeout=0.2)
            except socket.timeout:
                continue
            if f is None:
                return None
            t, seq, payload = f
            if t == PING:
                pr.send(PING_ACK)
            elif t == STATE and payload[2] & 1 and current is None:
                (current,) = struct.unpack(">Q", payload[8:16])
                token = struct.unpack(">Q", payload[16:24])[0] if len(payload) >= 24 else 0
                print("notice", flush=True)
                unrelated_at = time.time() + 1.5
        return None
    finally:
        pr.s.close()


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


PEER_ARGS = None


def run(name, addr, wait):
    if name in ("secwrite", "primwrite", "confirm"):
        a = PEER_ARGS
        if a.key_bytes is None:
            raise ValueError("%s needs --key, --node and --volume" % name)
        if name == "confirm":
            return peer_confirm(a)
        return peer_write(a, name == "primwrite")
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
            p = hello_payload()
            send_quiet(s, header(HELLO, len(p), p, break_crc=True) + p)
        elif name == "badversion":
            p = hello_payload()
            send_quiet(s, header(HELLO, len(p), p, version=99) + p)
        elif name == "fakehello":
            p = hello_payload()
            send_quiet(s, header(HELLO, len(p), p) + p + os.urandom(4096))
        elif name == "v2hello":
            p = (struct.pack(">HHIB", 2, 2, 4, 1) + b"\0" * 7 +
                 names_block("oldnode", "vol0", "")[:2 * NAME_MAX])
            send_quiet(s, header(HELLO, len(p), p, version=2, seq=0) + p)
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
    ap.add_argument("--key", help="key file (replica scenarios)")
    ap.add_argument("--node", default="intruder")
    ap.add_argument("--peer", default="", help="the daemon's node name")
    ap.add_argument("--volume", default="vol0")
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--hold", type=float, default=3.0)
    a = ap.parse_args()
    a.key_bytes = open(a.key, "rb").read() if a.key else None
    global PEER_ARGS
    PEER_ARGS = a
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
