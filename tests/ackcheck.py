#!/usr/bin/python3
"""ackcheck.py: prove that every write an NBD server acknowledged survives.

    ackcheck.py write (--unix PATH | --tcp HOST:PORT) [--export NAME]
                --log FILE [--duration S] [--inflight N] [--flush-every N]
                [--span BYTES] [--base BYTES] [--rate N] [--structured]
                [--stall-timeout S] [--max-gap S] [--sequential] [--fua]
                (SIGTERM or SIGINT: stop writing, wait for what is in
                flight, end as after --duration)
    ackcheck.py check --log FILE (--file PATH | --unix PATH | --tcp H:P)
                [--export NAME]
    ackcheck.py regions --log FILE [--from T] [--to T] [--region BYTES]
    ackcheck.py stats --log FILE [--from T] [--to T]

write: speaks NBD itself (fixed newstyle, OPT_GO, optionally structured
replies), keeps up to --inflight writes in flight on one connection, and
sends a FLUSH after every --flush-every writes.  Each write is one 4 KiB
record:

    0  8  magic "ACKCHK01"
    8  8  run id (random per writer run)
   16  8  sequence number
   24  8  offset of the record in the export
   32  .. filler derived from (run, seq)
 4092  4  CRC32 of bytes 0..4091

With --fua every write carries NBD_CMD_FLAG_FUA (durable before the
reply, as a guest with a write-through cache sends them).
With --sequential, one pass writes every block of the span in order, then
the writer stops (to fill an area); otherwise offsets are random-ish.
The offset of sequence number s is a function of (run, s), so the checker
can tell a record belongs where it is.  Two writes to one offset are never
in flight at once (a sequence number whose offset is busy is skipped), so
the order in which they were acknowledged is the order on disk.  Every
acknowledgement is appended to the log as it arrives, as "A SEQ OFFSET T"
(T: wall-clock time, seconds since the epoch); flush acknowledgements are
"F SEQ T".  The first line is "RUN ID BASE SPAN MODE", the last, on a clean end,
"END MAXSEQ ACKS ERRORS MAXGAP".  Summary on stdout; exit status 0 when no
request failed, 1 when one failed or the connection broke, 2 on usage
errors.  --max-gap S fails the run (status 3) when acknowledgements stopped
for more than S seconds while writes were in flight.

check: for every offset with an acknowledged write, the record there must be
valid (magic, run, CRC, its offset, the offset its sequence number maps to)
and carry the last acknowledged sequence number for that offset or a later
one.  Exit 0 if so, 1 with the first problems listed otherwise.

regions: the number of distinct REGION-sized regions (default 64 KiB) that
writes acknowledged between --from and --to touched, times REGION: the
bytes a bitmap-based resync must send for them.  stats: acknowledgements
in [--from, --to] and the longest gap between two of them.

Standard library only.
"""

import argparse
import hashlib
import random
import select
import signal
import socket
import struct
import sys
import time
import zlib

NBDMAGIC = 0x4E42444D41474943
IHAVEOPT = 0x49484156454F5054
REP_MAGIC = 0x3E889045565A9
REQUEST_MAGIC = 0x25609513
SIMPLE_REPLY_MAGIC = 0x67446698
STRUCTURED_REPLY_MAGIC = 0x668E33EF

FLAG_FIXED_NEWSTYLE = 1
FLAG_NO_ZEROES = 2
OPT_GO = 7
OPT_STRUCTURED_REPLY = 8
REP_ACK = 1
REP_INFO = 3
REP_FLAG_ERROR = 1 << 31
INFO_EXPORT = 0
TFLAG_READ_ONLY = 1 << 1

CMD_READ = 0
CMD_WRITE = 1
CMD_DISC = 2
CMD_FLUSH = 3
CMD_FLAG_FUA = 1

REPLY_FLAG_DONE = 1
REPLY_TYPE_NONE = 0
REPLY_TYPE_OFFSET_DATA = 1
REPLY_TYPE_ERROR = 32769
REPLY_TYPE_ERROR_OFFSET = 32770

BLOCK = 4096
MAGIC = b"ACKCHK01"
M64 = (1 << 64) - 1


class ProtocolError(Exception):
    pass


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def seq_offset(run, seq, base, span, sequential=False):
    if sequential:
        return base + ((seq - 1) % (span // BLOCK)) * BLOCK
    return base + (splitmix64(run ^ (seq * 0x100000001B3)) % (span // BLOCK)) * BLOCK


def make_record(run, seq, offset):
    head = MAGIC + struct.pack(">QQQ", run, seq, offset)
    seed = hashlib.sha256(head).digest()
    body = (seed * ((BLOCK - 4 - len(head)) // len(seed) + 1))[: BLOCK - 4 - len(head)]
    blk = head + body
    return blk + struct.pack(">I", zlib.crc32(blk) & 0xFFFFFFFF)


def parse_record(blk):
    """(run, seq, offset) of a valid record, or None with a reason."""
    if len(blk) != BLOCK:
        return None, "short block"
    if blk[:8] != MAGIC:
        if blk == bytes(BLOCK):
            return None, "zeroes"
        return None, "no record magic"
    (crc,) = struct.unpack(">I", blk[BLOCK - 4:])
    if zlib.crc32(blk[: BLOCK - 4]) & 0xFFFFFFFF != crc:
        return None, "bad CRC"
    run, seq, off = struct.unpack(">QQQ", blk[8:32])
    return (run, seq, off), None


# ---- NBD client ---------------------------------------------------------------


def clock(t):
    """Time of day as the daemons' logs print it (local time)."""
    return time.strftime("%H:%M:%S", time.localtime(t)) + ".%03d" % (int(t * 1000) % 1000)


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ProtocolError("server closed the connection")
        buf += chunk
    return bytes(buf)


def connect(args):
    if args.unix:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        addr = args.unix
    else:
        host, _, port = args.tcp.rpartition(":")
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        addr = (host.strip("[]"), int(port))
    s.settimeout(args.io_timeout)
    s.connect(addr)
    return s


def send_opt(sock, opt, data=b""):
    sock.sendall(struct.pack(">QII", IHAVEOPT, opt, len(data)) + data)


def recv_opt_reply(sock):
    magic, opt, rtype, length = struct.unpack(">QIII", recv_exact(sock, 20))
    if magic != REP_MAGIC:
        raise ProtocolError("bad option reply magic %#x" % magic)
    return opt, rtype, recv_exact(sock, length) if length else b""


def handshake(args):
    """Connects and negotiates; returns (sock, size, structured)."""
    sock = connect(args)
    magic, ihave, hflags = struct.unpack(">QQH", recv_exact(sock, 18))
    if magic != NBDMAGIC or ihave != IHAVEOPT:
        raise ProtocolError("not a newstyle NBD server")
    if not hflags & FLAG_FIXED_NEWSTYLE:
        raise ProtocolError("server is not fixed newstyle")
    cflags = FLAG_FIXED_NEWSTYLE | (hflags & FLAG_NO_ZEROES)
    sock.sendall(struct.pack(">I", cflags))
    structured = False
    if args.structured:
        send_opt(sock, OPT_STRUCTURED_REPLY)
        _, rtype, _ = recv_opt_reply(sock)
        structured = rtype == REP_ACK
    name = args.export.encode()
    send_opt(sock, OPT_GO, struct.pack(">I", len(name)) + name + struct.pack(">H", 0))
    size = None
    while True:
        _, rtype, data = recv_opt_reply(sock)
        if rtype & REP_FLAG_ERROR:
            raise ProtocolError("OPT_GO refused (%#x): %s" % (rtype, data.decode(errors="replace")))
        if rtype == REP_INFO and len(data) >= 12:
            (itype,) = struct.unpack(">H", data[:2])
            if itype == INFO_EXPORT:
                size, tflags = struct.unpack(">QH", data[2:12])
                if tflags & TFLAG_READ_ONLY and args.mode == "write":
                    raise ProtocolError("export is read-only")
        elif rtype == REP_ACK:
            break
    if size is None:
        raise ProtocolError("server sent no export size")
    return sock, size, structured


def request(cmd, handle, offset, length, flags=0):
    return struct.pack(">IHHQQI", REQUEST_MAGIC, flags, cmd, handle, offset, length)


class ReplyReader:
    """Parses simple and structured replies out of a byte stream."""

    def __init__(self, read_len):
        self.buf = bytearray()
        self.read_len = read_len  # handle -> bytes of data a READ returns

    def feed(self, data):
        self.buf += data

    def replies(self):
        """Yields (handle, error, data, done) for every complete reply."""
        while len(self.buf) >= 4:
            (magic,) = struct.unpack(">I", self.buf[:4])
            if magic == SIMPLE_REPLY_MAGIC:
                if len(self.buf) < 16:
                    return
                _, err, handle = struct.unpack(">IIQ", self.buf[:16])
                dlen = self.read_len.get(handle, 0) if err == 0 else 0
                if len(self.buf) < 16 + dlen:
                    return
                data = bytes(self.buf[16:16 + dlen])
                del self.buf[:16 + dlen]
                yield handle, err, data, True
            elif magic == STRUCTURED_REPLY_MAGIC:
                if len(self.buf) < 20:
                    return
                _, flags, rtype, handle, length = struct.unpack(">IHHQI", self.buf[:20])
                if len(self.buf) < 20 + length:
                    return
                payload = bytes(self.buf[20:20 + length])
                del self.buf[:20 + length]
                err, data = 0, b""
                if rtype in (REPLY_TYPE_ERROR, REPLY_TYPE_ERROR_OFFSET):
                    (err,) = struct.unpack(">I", payload[:4])
                    err = err or 5
                elif rtype == REPLY_TYPE_OFFSET_DATA:
                    data = payload[8:]
                elif rtype != REPLY_TYPE_NONE:
                    raise ProtocolError("unexpected structured reply type %d" % rtype)
                yield handle, err, data, bool(flags & REPLY_FLAG_DONE)
            else:
                raise ProtocolError("bad reply magic %#x" % magic)


# ---- write ---------------------------------------------------------------------


def cmd_write(args):
    sock, size, _ = handshake(args)
    span = args.span or size - args.base
    if args.base % BLOCK or span % BLOCK or span < BLOCK or args.base + span > size:
        print("ackcheck: --base/--span outside the %d-byte export" % size, file=sys.stderr)
        return 2
    sock.setblocking(False)
    wflags = CMD_FLAG_FUA if args.fua else 0
    run = random.getrandbits(63) | 1
    log = open(args.log, "w", buffering=1)
    log.write("RUN %d %d %d %s\n" % (run, args.base, span, "seq" if args.sequential else "random"))
    if args.sequential:  # one pass over the span, then stop
        nblocks = span // BLOCK
    rd = ReplyReader({})
    inflight = {}  # handle -> ("W", seq, offset, t_sent) or ("F", seq, None, t)
    busy = set()  # offsets with a write in flight
    outbuf = bytearray()
    seq = 0
    writes = acks = errors = flushes = since_flush = 0
    start = time.time()
    deadline = [start + args.duration]

    def stop_soon(signo, frame):  # SIGTERM/SIGINT: drain, then end cleanly
        deadline[0] = 0

    signal.signal(signal.SIGTERM, stop_soon)
    signal.signal(signal.SIGINT, stop_soon)
    last_progress = start  # last ack, or when the queue was last empty
    max_gap = 0.0
    gap_what = ""  # the reply that ended the longest gap, for the report
    tokens, t_tok = float(args.inflight), start
    status = 0
    try:
        while True:
            now = time.time()
            if args.rate:
                tokens = min(float(args.inflight), tokens + (now - t_tok) * args.rate)
                t_tok = now
            # Queue new requests.
            while now < deadline[0] and len(inflight) < args.inflight:
                if args.flush_every and since_flush >= args.flush_every:
                    h = (1 << 62) | seq
                    inflight[h] = ("F", seq, None, now)
                    outbuf += request(CMD_FLUSH, h, 0, 0)
                    since_flush = 0
                    continue
                if args.rate and tokens < 1.0:
                    break
                if args.sequential and seq >= nblocks:
                    deadline[0] = 0
                    break
                seq += 1
                off = seq_offset(run, seq, args.base, span, args.sequential)
                if off in busy:
                    continue  # never two writes to one offset in flight
                busy.add(off)
                inflight[seq] = ("W", seq, off, now)
                outbuf += request(CMD_WRITE, seq, off, BLOCK, wflags) + make_record(run, seq, off)
                writes += 1
                since_flush += 1
                tokens -= 1.0
            if not inflight and not outbuf:
                if now >= deadline[0]:
                    break
                last_progress = now
            want_w = [sock] if outbuf else []
            timeout = 0.05
            r, w, _ = select.select([sock], want_w, [], timeout)
            if w:
                try:
                    n = sock.send(outbuf)
                    del outbuf[:n]
                except BlockingIOError:
                    pass
            if r:
                data = sock.recv(1 << 20)
                if not data:
                    raise ProtocolError("server closed the connection")
                rd.feed(data)
                for handle, err, _, done in rd.replies():
                    ent = inflight.get(handle)
                    if ent is None:
                        raise ProtocolError("reply for unknown handle %#x" % handle)
                    t = time.time()
                    if err:
                        errors += 1
                        log.write("E %d %s %d %.6f\n" % (ent[1], ent[0], err, t))
                    if not done:
                        continue
                    del inflight[handle]
                    gap = t - last_progress
                    if gap > max_gap:
                        max_gap = gap
                        gap_what = " (from %s to %s, ended by the reply to a %s sent at %s)" % (
                            clock(last_progress), clock(t),
                            "write" if ent[0] == "W" else "flush", clock(ent[3]))
                    last_progress = t
                    if err:
                        if ent[0] == "W":
                            busy.discard(ent[2])
                        continue
                    if ent[0] == "W":
                        busy.discard(ent[2])
                        acks += 1
                        log.write("A %d %d %.6f\n" % (ent[1], ent[2], t))
                    else:
                        flushes += 1
                        log.write("F %d %.6f\n" % (ent[1], t))
            now = time.time()
            if inflight and now - last_progress > args.stall_timeout:
                raise ProtocolError("no acknowledgement for %.1f s with %d requests in flight"
                                    % (now - last_progress, len(inflight)))
    except (ProtocolError, OSError) as e:
        print("ackcheck: write: %s" % e, file=sys.stderr)
        status = 1
    if status == 0:
        try:
            sock.setblocking(True)
            sock.settimeout(args.io_timeout)
            sock.sendall(request(CMD_DISC, 0, 0, 0))
        except OSError:
            pass
    sock.close()
    log.write("END %d %d %d %.3f\n" % (seq, acks, errors, max_gap))
    log.close()
    el = time.time() - start
    print("ackcheck: %d writes, %d acknowledged, %d flushes, %d errors in %.1f s; "
          "longest wait for an acknowledgement %.2f s%s"
          % (writes, acks, flushes, errors, el, max_gap, gap_what))
    if errors:
        status = status or 1
    if status == 0 and args.max_gap and max_gap > args.max_gap:
        print("ackcheck: acknowledgements stopped for %.2f s (limit %.2f s)"
              % (max_gap, args.max_gap), file=sys.stderr)
        status = 3
    return status


# ---- check ---------------------------------------------------------------------


def read_log(path):
    run = base = span = None
    sequential = False
    last = {}  # offset -> highest acknowledged seq
    acks = []  # (t, seq, offset)
    with open(path) as f:
        for line in f:
            p = line.split()
            if not p:
                continue
            if p[0] == "RUN":
                run, base, span = int(p[1]), int(p[2]), int(p[3])
                sequential = len(p) > 4 and p[4] == "seq"
            elif p[0] == "A" and len(p) == 4:
                seq, off, t = int(p[1]), int(p[2]), float(p[3])
                acks.append((t, seq, off))
                if seq > last.get(off, 0):
                    last[off] = seq
    if run is None:
        raise ValueError("%s: no RUN line" % path)
    return run, base, span, sequential, last, acks


class FileReader:
    def __init__(self, path):
        self.f = open(path, "rb")

    def read(self, offsets):
        for off in offsets:
            self.f.seek(off)
            yield off, self.f.read(BLOCK)


class NbdReader:
    def __init__(self, args):
        self.sock, self.size, _ = handshake(args)

    def read(self, offsets):
        offsets = list(offsets)
        rd = ReplyReader({})
        for i in range(0, len(offsets), 64):
            batch = offsets[i:i + 64]
            out = bytearray()
            for j, off in enumerate(batch):
                rd.read_len[j] = BLOCK
                out += request(CMD_READ, j, off, BLOCK)
            self.sock.sendall(out)
            got = {}
            while len(got) < len(batch):
                rd.feed(self.sock.recv(1 << 20) or b"")
                for handle, err, data, done in rd.replies():
                    if err:
                        raise ProtocolError("READ at %d failed: error %d" % (batch[handle], err))
                    got.setdefault(handle, bytearray()).extend(data)
            for j, off in enumerate(batch):
                yield off, bytes(got[j])


def cmd_check(args):
    run, base, span, sequential, last, _ = read_log(args.log)
    src = FileReader(args.file) if args.file else NbdReader(args)
    bad = []
    newer = 0
    for off, blk in src.read(sorted(last)):
        rec, why = parse_record(blk)
        want = last[off]
        if rec is None:
            bad.append("offset %d: %s, want seq >= %d" % (off, why, want))
            continue
        r_run, r_seq, r_off = rec
        if r_run != run:
            bad.append("offset %d: record of another run" % off)
        elif r_off != off:
            bad.append("offset %d: record says offset %d (seq %d)" % (off, r_off, r_seq))
        elif seq_offset(run, r_seq, base, span, sequential) != off:
            bad.append("offset %d: seq %d was never written here" % (off, r_seq))
        elif r_seq < want:
            bad.append("offset %d: seq %d, but seq %d was acknowledged" % (off, r_seq, want))
        elif r_seq > want:
            newer += 1
    where = args.file or "the export"
    if bad:
        print("ackcheck: %s: %d of %d acknowledged offsets LOST or wrong:"
              % (where, len(bad), len(last)), file=sys.stderr)
        for b in bad[:20]:
            print("  " + b, file=sys.stderr)
        return 1
    print("ackcheck: %s: all %d acknowledged offsets hold their last acknowledged "
          "write (%d hold a later, unacknowledged one)" % (where, len(last), newer))
    return 0


def in_window(args, t):
    return (args.t_from is None or t >= args.t_from) and (args.t_to is None or t <= args.t_to)


def cmd_regions(args):
    _, _, _, _, _, acks = read_log(args.log)
    regions = {off // args.region for t, _, off in acks if in_window(args, t)}
    print(len(regions) * args.region)
    return 0


def cmd_stats(args):
    _, _, _, _, _, acks = read_log(args.log)
    ts = sorted(t for t, _, _ in acks if in_window(args, t))
    gap = max((b - a for a, b in zip(ts, ts[1:])), default=0.0)
    print("%d %.3f" % (len(ts), gap))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=("write", "check", "regions", "stats"))
    ap.add_argument("--unix")
    ap.add_argument("--tcp")
    ap.add_argument("--export", default="vol0")
    ap.add_argument("--file")
    ap.add_argument("--log", required=True)
    ap.add_argument("--duration", type=float, default=15.0)
    ap.add_argument("--inflight", type=int, default=16)
    ap.add_argument("--flush-every", type=int, default=64)
    ap.add_argument("--base", type=int, default=0)
    ap.add_argument("--span", type=int, default=0)
    ap.add_argument("--rate", type=float, default=0.0, help="writes per second, 0: unlimited")
    ap.add_argument("--structured", action="store_true")
    ap.add_argument("--sequential", action="store_true")
    ap.add_argument("--fua", action="store_true")
    ap.add_argument("--io-timeout", type=float, default=30.0)
    ap.add_argument("--stall-timeout", type=float, default=30.0)
    ap.add_argument("--max-gap", type=float, default=0.0)
    ap.add_argument("--region", type=int, default=65536)
    ap.add_argument("--from", dest="t_from", type=float)
    ap.add_argument("--to", dest="t_to", type=float)
    args = ap.parse_args()
    needs_nbd = args.mode == "write" or (args.mode == "check" and not args.file)
    if needs_nbd and bool(args.unix) == bool(args.tcp):
        ap.error("give exactly one of --unix and --tcp")
    try:
        return {"write": cmd_write, "check": cmd_check, "regions": cmd_regions,
                "stats": cmd_stats}[args.mode](args)
    except (ProtocolError, OSError, ValueError) as e:
        print("ackcheck: %s: %s" % (args.mode, e), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
