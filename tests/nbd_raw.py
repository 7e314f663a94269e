#!/usr/bin/python3
"""nbd_raw.py: a raw NBD client (Python standard library only) that drives a
server through malformed and hostile input, one connection per scenario.

    nbd_raw.py (--unix PATH | --tcp HOST:PORT) --export NAME [SCENARIO...]
    nbd_raw.py --list

Without SCENARIO it runs all of them.  Each prints "ok NAME" or
"FAIL NAME: why"; the exit status is 1 if any failed.  Every socket has a
timeout, so a server that hangs fails the scenario instead of the test.

It only reads from the export, except for writes that the server must
refuse; so the volume's content must be the same afterwards.
"""

import os
import socket
import struct
import sys
import time

NBDMAGIC = 0x4E42444D41474943
IHAVEOPT = 0x49484156454F5054
REP_MAGIC = 0x3E889045565A9
REQUEST_MAGIC = 0x25609513
SIMPLE_REPLY_MAGIC = 0x67446698
STRUCTURED_REPLY_MAGIC = 0x668E33EF

FLAG_FIXED_NEWSTYLE = 1 << 0
FLAG_NO_ZEROES = 1 << 1
FLAG_C_FIXED_NEWSTYLE = 1 << 0
FLAG_C_NO_ZEROES = 1 << 1

OPT_EXPORT_NAME = 1
OPT_ABORT = 2
OPT_LIST = 3
OPT_STARTTLS = 5
OPT_INFO = 6
OPT_GO = 7
OPT_STRUCTURED_REPLY = 8
OPT_LIST_META_CONTEXT = 9
OPT_SET_META_CONTEXT = 10

REP_ACK = 1
REP_SERVER = 2
REP_INFO = 3
REP_META_CONTEXT = 4
REP_FLAG_ERROR = 1 << 31
REP_ERR_UNSUP = REP_FLAG_ERROR | 1
REP_ERR_POLICY = REP_FLAG_ERROR | 2
REP_ERR_INVALID = REP_FLAG_ERROR | 3
REP_ERR_UNKNOWN = REP_FLAG_ERROR | 6
REP_ERR_TOO_BIG = REP_FLAG_ERROR | 9

INFO_EXPORT = 0

CMD_READ = 0
CMD_WRITE = 1
CMD_DISC = 2
CMD_FLUSH = 3
CMD_TRIM = 4
CMD_CACHE = 5
CMD_WRITE_ZEROES = 6
CMD_BLOCK_STATUS = 7

CMD_FLAG_FUA = 1 << 0
CMD_FLAG_NO_HOLE = 1 << 1
CMD_FLAG_REQ_ONE = 1 << 3
CMD_FLAG_FAST_ZERO = 1 << 4
TFLAG_SEND_CACHE = 1 << 10
TFLAG_SEND_FAST_ZERO = 1 << 11

REPLY_FLAG_DONE = 1 << 0
REPLY_TYPE_NONE = 0
REPLY_TYPE_OFFSET_DATA = 1
REPLY_TYPE_OFFSET_HOLE = 2
REPLY_TYPE_BLOCK_STATUS = 5
REPLY_TYPE_ERROR = 32769
REPLY_TYPE_ERROR_OFFSET = 32770

EPERM, EIO, ENOMEM, EINVAL, ENOSPC, EOVERFLOW, ENOTSUP, ESHUTDOWN = 1, 5, 12, 22, 28, 75, 95, 108

TIMEOUT = 5.0
MAX_PAYLOAD = 32 * 1024 * 1024


class Fail(Exception):
    pass


class Closed(Exception):
    """The server closed the connection (EOF or reset)."""


def errname(e):
    return {0: "OK", EPERM: "EPERM", EIO: "EIO", ENOMEM: "ENOMEM", EINVAL: "EINVAL",
            ENOSPC: "ENOSPC", EOVERFLOW: "EOVERFLOW", ENOTSUP: "ENOTSUP",
            ESHUTDOWN: "ESHUTDOWN"}.get(e, str(e))


class Conn:
    def __init__(self, target, timeout=TIMEOUT):
        kind, addr = target
        if kind == "unix":
            self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        else:
            self.s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        self.s.connect(addr)
        self.structured = False
        self.size = None
        self.tflags = None
        self.cookie = 0x1000

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass

    # -- bytes ------------------------------------------------------------
    def send(self, data):
        try:
            self.s.sendall(data)
        except (BrokenPipeError, ConnectionResetError) as e:
            raise Closed("send: %s" % e)

    def send_maybe(self, data):
        """send() where the server may already have closed (and may do so)."""
        try:
            self.send(data)
        except Closed:
            pass

    def recv_exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            try:
                chunk = self.s.recv(min(n - len(buf), 1 << 20))
            except socket.timeout:
                raise Fail("timed out waiting for %d bytes (got %d)" % (n, len(buf)))
            except ConnectionResetError:
                raise Closed("connection reset")
            if not chunk:
                raise Closed("EOF after %d of %d bytes" % (len(buf), n))
            buf += chunk
        return bytes(buf)

    def expect_close(self, timeout=TIMEOUT, what="close"):
        """Reads (and drops) whatever comes until EOF; Fail on timeout."""
        deadline = time.monotonic() + timeout
        got = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Fail("server did not %s the connection within %.0fs (%d bytes read)"
                           % (what, timeout, got))
            self.s.settimeout(left)
            try:
                chunk = self.s.recv(65536)
            except socket.timeout:
                continue
            except ConnectionResetError:
                return got
            if not chunk:
                return got
            got += len(chunk)

    # -- handshake --------------------------------------------------------
    def greeting(self):
        magic, opt, hflags = struct.unpack(">QQH", self.recv_exact(18))
        if magic != NBDMAGIC or opt != IHAVEOPT:
            raise Fail("bad greeting %x %x" % (magic, opt))
        if not hflags & FLAG_FIXED_NEWSTYLE:
            raise Fail("server does not offer fixed newstyle")
        self.hflags = hflags
        return hflags

    def client_flags(self, flags=None):
        if flags is None:
            flags = FLAG_C_FIXED_NEWSTYLE
            if self.hflags & FLAG_NO_ZEROES:
                flags |= FLAG_C_NO_ZEROES
        self.cflags = flags
        self.send(struct.pack(">I", flags))

    def option(self, opt, data=b"", magic=IHAVEOPT, length=None, maybe_closed=False):
        if length is None:
            length = len(data)
        msg = struct.pack(">QII", magic, opt, length) + data
        if maybe_closed:
            self.send_maybe(msg)
        else:
            self.send(msg)

    def opt_reply(self):
        magic, opt, rtype, length = struct.unpack(">QIII", self.recv_exact(20))
        if magic != REP_MAGIC:
            raise Fail("bad option reply magic %x" % magic)
        if length > 16 << 20:
            raise Fail("absurd option reply length %d" % length)
        return opt, rtype, self.recv_exact(length)

    def go(self, name, opt=OPT_GO):
        nm = name.encode()
        self.option(opt, struct.pack(">I", len(nm)) + nm + struct.pack(">H", 0))
        while True:
            ropt, rtype, data = self.opt_reply()
            if ropt != opt:
                raise Fail("reply for option %d, expected %d" % (ropt, opt))
            if rtype == REP_ACK:
                break
            if rtype == REP_INFO:
                if len(data) >= 2 and struct.unpack(">H", data[:2])[0] == INFO_EXPORT:
                    self.size, self.tflags = struct.unpack(">QH", data[2:12])
                continue
            if rtype & REP_FLAG_ERROR:
                return rtype, data
            raise Fail("unexpected reply type %x to GO" % rtype)
        if self.size is None:
            raise Fail("GO: no NBD_INFO_EXPORT")
        return REP_ACK, b""

    def structured_reply(self):
        self.option(OPT_STRUCTURED_REPLY)
        opt, rtype, _ = self.opt_reply()
        if opt != OPT_STRUCTURED_REPLY or rtype != REP_ACK:
            raise Fail("structured replies refused (%x)" % rtype)
        self.structured = True

    def handshake(self, export, structured=False):
        self.greeting()
        self.client_flags()
        if structured:
            self.structured_reply()
        rtype, data = self.go(export)
        if rtype != REP_ACK:
            raise Fail("GO %s refused: %x %r" % (export, rtype, data))

    # -- transmission ------------------------------------------------------
    def request(self, cmd, offset, length, flags=0, payload=b"", magic=REQUEST_MAGIC,
                cookie=None):
        if cookie is None:
            self.cookie += 1
            cookie = self.cookie
        self.send(struct.pack(">IHHQQI", magic, flags, cmd, cookie, offset, length) + payload)
        return cookie

    def reply(self, cookie, readlen=0):
        """One reply (all chunks of a structured one).  Returns (error, data);
        data only for a successful read."""
        magic = struct.unpack(">I", self.recv_exact(4))[0]
        if magic == SIMPLE_REPLY_MAGIC:
            err, ck = struct.unpack(">IQ", self.recv_exact(12))
            if ck != cookie:
                raise Fail("reply cookie %x, expected %x" % (ck, cookie))
            if err == 0 and readlen and self.structured:
                # (libnbd too treats this as a server bug)
                raise Fail("simple reply to a READ after structured replies were negotiated")
            data = self.recv_exact(readlen) if err == 0 and readlen else b""
            return err, data
        if magic != STRUCTURED_REPLY_MAGIC:
            raise Fail("bad reply magic %x" % magic)
        if not self.structured:
            raise Fail("structured reply without negotiation")
        err = 0
        self.block_status = []  # (context id, [(length, flags)...]) per chunk
        data = None  # allocated with the first data chunk
        covered = 0
        first = True
        while True:
            if not first:
                magic = struct.unpack(">I", self.recv_exact(4))[0]
                if magic != STRUCTURED_REPLY_MAGIC:
                    raise Fail("bad chunk magic %x" % magic)
            first = False
            flags, rtype, ck, length = struct.unpack(">HHQI", self.recv_exact(16))
            if ck != cookie:
                raise Fail("chunk cookie %x, expected %x" % (ck, cookie))
            payload = self.recv_exact(length)
            if rtype == REPLY_TYPE_OFFSET_DATA:
                off = struct.unpack(">Q", payload[:8])[0] - self.last_offset
                chunk = payload[8:]
                if off < 0 or off + len(chunk) > readlen:
                    raise Fail("data chunk outside the request")
                if data is None:
                    data = bytearray(readlen)
                data[off:off + len(chunk)] = chunk
                covered += len(chunk)
            elif rtype == REPLY_TYPE_OFFSET_HOLE:
                off, hl = struct.unpack(">QI", payload[:12])
                off -= self.last_offset
                if off < 0 or off + hl > readlen:
                    raise Fail("hole chunk outside the request")
                covered += hl
            elif rtype in (REPLY_TYPE_ERROR, REPLY_TYPE_ERROR_OFFSET):
                err = struct.unpack(">I", payload[:4])[0]
                if err == 0:
                    raise Fail("error chunk with error 0")
            elif rtype == REPLY_TYPE_BLOCK_STATUS:
                if length < 12 or (length - 4) % 8:
                    raise Fail("block status chunk of %d bytes" % length)
                ctx = struct.unpack(">I", payload[:4])[0]
                ext = [struct.unpack(">II", payload[i:i + 8]) for i in range(4, length, 8)]
                self.block_status.append((ctx, ext))
            elif rtype == REPLY_TYPE_NONE:
                if not flags & REPLY_FLAG_DONE:
                    raise Fail("NONE chunk without DONE")
            else:
                raise Fail("unknown chunk type %d" % rtype)
            if flags & REPLY_FLAG_DONE:
                break
        if err == 0 and readlen and covered != readlen:
            raise Fail("read reply covers %d of %d bytes" % (covered, readlen))
        if err or not readlen:
            return err, b""
        return err, bytes(data) if data is not None else bytes(readlen)

    def meta_context(self, opt, export, queries):
        """LIST or SET_META_CONTEXT: (error reply type or REP_ACK,
        [(id, name)...])."""
        nm = export.encode()
        data = struct.pack(">I", len(nm)) + nm + struct.pack(">I", len(queries))
        for q in queries:
            data += struct.pack(">I", len(q)) + q.encode()
        self.option(opt, data)
        got = []
        while True:
            ropt, rtype, d = self.opt_reply()
            if ropt != opt:
                raise Fail("reply for option %d, expected %d" % (ropt, opt))
            if rtype == REP_META_CONTEXT:
                got.append((struct.unpack(">I", d[:4])[0], d[4:].decode()))
                continue
            if rtype == REP_ACK or rtype & REP_FLAG_ERROR:
                return rtype, got
            raise Fail("unexpected reply type %x to option %d" % (rtype, opt))

    def cmd(self, cmd, offset, length, flags=0, payload=b""):
        self.last_offset = offset
        ck = self.request(cmd, offset, length, flags, payload)
        return self.reply(ck, length if cmd == CMD_READ else 0)

    def read(self, offset, length):
        err, data = self.cmd(CMD_READ, offset, length)
        if err:
            raise Fail("READ %d+%d failed: %s" % (offset, length, errname(err)))
        return data

    def check_usable(self):
        """A valid READ still works on this connection."""
        data = self.read(0, 4096)
        if len(data) != 4096:
            raise Fail("short read")
        return data


# ---------------------------------------------------------------------------
# Scenarios.  Each gets (target, export) and raises Fail; returning is ok.

SCENARIOS = []


def scenario(fn):
    SCENARIOS.append(fn)
    return fn


def connect(t):
    return Conn(t)


def expect_err(got, allowed, what):
    if got not in allowed:
        raise Fail("%s: error %s, expected %s" % (what, errname(got),
                                                  "/".join(errname(a) for a in allowed)))


# -- handshake phase --------------------------------------------------------

@scenario
def client_flags_unknown(t, export):
    """Unknown client flag bits: the server must end the handshake."""
    c = connect(t)
    c.greeting()
    c.client_flags(0xFFFFFFFC | FLAG_C_FIXED_NEWSTYLE)
    c.option(OPT_GO, struct.pack(">I", len(export)) + export.encode() + b"\0\0",
             maybe_closed=True)
    # It may not go on: either closed, or (tolerated) an error reply then closed.
    c.expect_close()
    c.close()


@scenario
def client_flags_zero(t, export):
    """Client without FIXED_NEWSTYLE: old newstyle or a refusal, no hang."""
    c = connect(t)
    c.greeting()
    c.client_flags(0)
    nm = export.encode()
    c.option(OPT_EXPORT_NAME, nm, maybe_closed=True)
    try:
        hdr = c.recv_exact(10)  # size + transmission flags, if it goes on
        size, _ = struct.unpack(">QH", hdr)
        if size == 0:
            raise Fail("EXPORT_NAME answered with size 0")
        c.recv_exact(124)  # no NO_ZEROES negotiated: 124 zero bytes
        c.size = size
        c.check_usable()
    except Closed:
        pass
    c.close()


@scenario
def option_bad_magic(t, export):
    """Option header with the wrong magic: the stream is lost, close."""
    c = connect(t)
    c.greeting()
    c.client_flags()
    c.option(OPT_GO, b"\0" * 6, magic=0x1122334455667788, maybe_closed=True)
    c.expect_close()
    c.close()


@scenario
def option_unknown(t, export):
    """Unknown option: NBD_REP_ERR_UNSUP, payload skipped, then GO works."""
    c = connect(t)
    c.greeting()
    c.client_flags()
    c.option(0x7ABC, b"some option payload")
    opt, rtype, _ = c.opt_reply()
    if opt != 0x7ABC or rtype != REP_ERR_UNSUP:
        raise Fail("unknown option: reply %x for option %x, expected ERR_UNSUP" % (rtype, opt))
    rtype, data = c.go(export)
    if rtype != REP_ACK:
        raise Fail("GO after an unknown option refused: %x" % rtype)
    c.check_usable()
    c.close()


@scenario
def option_absurd_length(t, export):
    """Option length 0xffffffff: an error reply or a close, promptly."""
    c = connect(t)
    c.greeting()
    c.client_flags()
    c.option(OPT_GO, b"\0" * 64, length=0xFFFFFFFF, maybe_closed=True)
    try:
        opt, rtype, _ = c.opt_reply()
        if not rtype & REP_FLAG_ERROR:
            raise Fail("absurd option length accepted (reply %x)" % rtype)
    except Closed:
        pass
    c.close()


@scenario
def option_length_short(t, export):
    """GO whose name length exceeds the option length: ERR_INVALID (or close)."""
    c = connect(t)
    c.greeting()
    c.client_flags()
    c.option(OPT_GO, struct.pack(">I", 1000) + b"vol0")
    try:
        opt, rtype, _ = c.opt_reply()
        if rtype != REP_ERR_INVALID:
            raise Fail("inconsistent GO: reply %x, expected ERR_INVALID" % rtype)
        rtype, _ = c.go(export)
        if rtype != REP_ACK:
            raise Fail("GO after an invalid GO refused: %x" % rtype)
        c.check_usable()
    except Closed:
        pass
    c.close()


@scenario
def option_unknown_export(t, export):
    """GO for a name that does not exist: ERR_UNKNOWN, then a valid GO."""
    c = connect(t)
    c.greeting()
    c.client_flags()
    rtype, _ = c.go("no-such-export-" + "x" * 200)
    if rtype not in (REP_ERR_UNKNOWN, REP_ERR_POLICY, REP_ERR_INVALID):
        raise Fail("GO unknown export: reply %x, expected ERR_UNKNOWN" % rtype)
    c.size = None
    rtype, _ = c.go(export)
    if rtype != REP_ACK:
        raise Fail("GO after a refused GO: %x" % rtype)
    c.check_usable()
    c.close()


@scenario
def option_list_with_data(t, export):
    """NBD_OPT_LIST with a payload: ERR_INVALID; a plain LIST names the export."""
    c = connect(t)
    c.greeting()
    c.client_flags()
    c.option(OPT_LIST, b"junk")
    _, rtype, _ = c.opt_reply()
    if rtype != REP_ERR_INVALID:
        raise Fail("LIST with data: reply %x, expected ERR_INVALID" % rtype)
    c.option(OPT_LIST)
    names = []
    while True:
        opt, rtype, data = c.opt_reply()
        if rtype == REP_ACK:
            break
        if rtype != REP_SERVER:
            raise Fail("LIST: reply %x" % rtype)
        n = struct.unpack(">I", data[:4])[0]
        names.append(data[4:4 + n].decode())
    if export not in names:
        raise Fail("LIST does not name %s: %r" % (export, names))
    c.option(OPT_ABORT)
    c.close()


@scenario
def option_starttls(t, export):
    """STARTTLS on a server without TLS: an error reply, connection usable."""
    c = connect(t)
    c.greeting()
    c.client_flags()
    c.option(OPT_STARTTLS)
    _, rtype, _ = c.opt_reply()
    if not rtype & REP_FLAG_ERROR:
        raise Fail("STARTTLS: reply %x, expected an error" % rtype)
    rtype, _ = c.go(export)
    if rtype != REP_ACK:
        raise Fail("GO after STARTTLS refused: %x" % rtype)
    c.check_usable()
    c.close()


@scenario
def df_only_with_structured(t, export):
    """NBD_FLAG_SEND_DF only to a client that negotiated structured replies."""
    for st in (False, True):
        c = session(t, export, st)
        df = bool(c.tflags & (1 << 7))
        c.close()
        if df != st:
            raise Fail("transmission flags %#x %s SEND_DF %s structured replies"
                       % (c.tflags, "have" if df else "lack",
                          "with" if st else "without"))


@scenario
def option_abort(t, export):
    """NBD_OPT_ABORT: NBD_REP_ACK, then the server closes."""
    c = connect(t)
    c.greeting()
    c.client_flags()
    c.option(OPT_ABORT)
    try:
        opt, rtype, _ = c.opt_reply()
    except Closed:
        raise Fail("ABORT: closed without NBD_REP_ACK")
    if opt != OPT_ABORT or rtype != REP_ACK:
        raise Fail("ABORT: reply %x, expected ACK" % rtype)
    c.expect_close()
    c.close()


@scenario
def export_name_option(t, export):
    """Old-style NBD_OPT_EXPORT_NAME goes straight to transmission."""
    c = connect(t)
    c.greeting()
    c.client_flags()
    c.option(OPT_EXPORT_NAME, export.encode())
    c.size, c.tflags = struct.unpack(">QH", c.recv_exact(10))
    if not c.cflags & FLAG_C_NO_ZEROES:
        c.recv_exact(124)
    c.check_usable()
    c.close()


@scenario
def garbage_after_greeting(t, export):
    """64 KiB of random bytes instead of the client flags: close, no hang."""
    c = connect(t)
    c.greeting()
    junk = bytearray(os.urandom(65536))
    junk[0:4] = b"\xff\xff\xff\xff"  # unknown client flags
    c.send_maybe(bytes(junk))
    c.expect_close()
    c.close()


@scenario
def garbage_as_options(t, export):
    """Valid flags, then 64 KiB of random bytes: close, no hang."""
    c = connect(t)
    c.greeting()
    c.client_flags()
    c.send_maybe(os.urandom(65536))
    c.expect_close()
    c.close()


@scenario
def truncated_handshake(t, export):
    """Half an option header, then the client goes away."""
    c = connect(t)
    c.greeting()
    c.client_flags()
    c.send(struct.pack(">QI", IHAVEOPT, OPT_GO)[:10])
    c.close()


# -- transmission phase ------------------------------------------------------

def session(t, export, structured):
    c = connect(t)
    c.handshake(export, structured)
    return c


def tx_scenario(fn):
    """Registers fn twice: with simple and with structured replies."""
    def simple(t, export):
        return fn(t, export, False)

    def structured(t, export):
        return fn(t, export, True)
    simple.__name__ = fn.__name__
    simple.__doc__ = fn.__doc__
    structured.__name__ = fn.__name__ + "_structured"
    structured.__doc__ = fn.__doc__ + " (structured replies)"
    SCENARIOS.append(simple)
    SCENARIOS.append(structured)
    return fn


@tx_scenario
def flags_advertised(t, export, st):
    """Transmission flags: flush, FUA, trim, write zeroes, multi-conn, writable."""
    c = session(t, export, st)
    want = {0: "HAS_FLAGS", 2: "SEND_FLUSH", 3: "SEND_FUA", 5: "SEND_TRIM",
            6: "SEND_WRITE_ZEROES", 8: "CAN_MULTI_CONN"}
    missing = [n for b, n in want.items() if not c.tflags & (1 << b)]
    if missing:
        raise Fail("transmission flags %#x lack %s" % (c.tflags, ", ".join(missing)))
    if c.tflags & 2:
        raise Fail("export is read-only")
    c.close()


@tx_scenario
def request_bad_magic(t, export, st):
    """Request with the wrong magic: close."""
    c = session(t, export, st)
    c.send_maybe(struct.pack(">IHHQQI", 0x12345678, 0, CMD_READ, 1, 0, 512))
    c.expect_close()
    c.close()


@tx_scenario
def request_unknown_type(t, export, st):
    """Unknown command type: EINVAL, and the connection goes on."""
    c = session(t, export, st)
    err, _ = c.cmd(0x55, 0, 512)
    expect_err(err, (EINVAL, ENOTSUP), "unknown command")
    c.check_usable()
    c.close()


@tx_scenario
def request_unknown_flag(t, export, st):
    """READ with an unknown command flag: EINVAL; FLUSH with a length: EINVAL."""
    c = session(t, export, st)
    err, _ = c.cmd(CMD_READ, 0, 512, flags=0x4000)
    expect_err(err, (EINVAL,), "READ with flag 0x4000")
    c.check_usable()
    c.close()


@tx_scenario
def read_past_end(t, export, st):
    """READ crossing or beyond the end, or with offset+length overflowing: EINVAL."""
    c = session(t, export, st)
    for off, ln in ((c.size - 512, 1024), (c.size, 512), (c.size + 4096, 512),
                    (0xFFFFFFFFFFFFFE00, 1024), (0xFFFFFFFFFFFFFFFF, 1)):
        err, _ = c.cmd(CMD_READ, off, ln)
        expect_err(err, (EINVAL,), "READ %#x+%d" % (off, ln))
    # The last byte is fine.
    c.read(c.size - 1, 1)
    c.check_usable()
    c.close()


@tx_scenario
def write_past_end(t, export, st):
    """WRITE beyond the end: ENOSPC/EINVAL, its payload skipped, nothing written."""
    c = session(t, export, st)
    tail_before = c.read(c.size - 4096, 4096)
    for off, ln in ((c.size - 512, 1024), (c.size, 4096), (c.size + 65536, 65536),
                    (0xFFFFFFFFFFFFF000, 8192)):
        err, _ = c.cmd(CMD_WRITE, off, ln, payload=b"\xa5" * ln)
        expect_err(err, (ENOSPC, EINVAL), "WRITE %#x+%d" % (off, ln))
        # Next request is parsed at the right place (payload consumed).
        c.check_usable()
    for cmd, name in ((CMD_TRIM, "TRIM"), (CMD_WRITE_ZEROES, "WRITE_ZEROES")):
        err, _ = c.cmd(cmd, c.size - 512, 1024)
        expect_err(err, (ENOSPC, EINVAL), "%s past the end" % name)
        c.check_usable()
    if c.read(c.size - 4096, 4096) != tail_before:
        raise Fail("a refused write changed the end of the volume")
    c.close()


@tx_scenario
def read_too_long(t, export, st):
    """READ of 64 MiB and of 0xffffffff bytes (over the 32 MiB maximum): an error."""
    c = session(t, export, st)
    for ln in (2 * MAX_PAYLOAD, 0xFFFFFFFF):
        err, _ = c.cmd(CMD_READ, 0, ln)
        expect_err(err, (EINVAL, EOVERFLOW, ENOMEM), "READ of %d bytes" % ln)
        c.check_usable()
    c.close()


@tx_scenario
def write_huge_length(t, export, st):
    """WRITE header with length 0xffffffff: the server closes (cannot skip it)."""
    c = session(t, export, st)
    c.request(CMD_WRITE, 0, 0xFFFFFFFF)
    c.send_maybe(b"\0" * 65536)
    c.expect_close()
    c.close()


@tx_scenario
def flush_with_length(t, export, st):
    """FLUSH with offset/length set: EINVAL (or done); connection goes on."""
    c = session(t, export, st)
    err, _ = c.cmd(CMD_FLUSH, 4096, 4096)
    expect_err(err, (EINVAL, 0), "FLUSH with a length")
    err, _ = c.cmd(CMD_FLUSH, 0, 0)
    expect_err(err, (0,), "FLUSH")
    c.check_usable()
    c.close()


@tx_scenario
def truncated_request(t, export, st):
    """Half a request header, then the client closes."""
    c = session(t, export, st)
    hdr = struct.pack(">IHHQQI", REQUEST_MAGIC, 0, CMD_READ, 1, 0, 512)
    c.send(hdr[:14])
    c.close()


@tx_scenario
def truncated_write_payload(t, export, st):
    """WRITE header and half its payload, then the client closes."""
    c = session(t, export, st)
    c.request(CMD_WRITE, c.size - 8192, 8192)
    c.send(b"\x5a" * 4096)
    c.close()


@tx_scenario
def garbage_after_go(t, export, st):
    """64 KiB of random bytes as requests: close, no hang."""
    c = session(t, export, st)
    junk = bytearray(os.urandom(65536))
    junk[0:4] = b"\x00\x00\x00\x00"  # not the request magic
    c.send_maybe(bytes(junk))
    c.expect_close()
    c.close()


@tx_scenario
def disconnect(t, export, st):
    """NBD_CMD_DISC: the server closes the connection."""
    c = session(t, export, st)
    c.check_usable()
    c.request(CMD_DISC, 0, 0)
    c.expect_close()
    c.close()


@tx_scenario
def pipelined_reads(t, export, st):
    """200 READs sent at once: 200 replies, each cookie once, right data."""
    c = session(t, export, st)
    ref = c.read(0, 1 << 20)
    n = 200
    reqs = {}
    out = bytearray()
    for i in range(n):
        off = (i * 4096 * 7) % ((1 << 20) - 65536)
        ln = 512 * (1 + i % 128)
        ck = 0x5000 + i
        reqs[ck] = (off, ln)
        out += struct.pack(">IHHQQI", REQUEST_MAGIC, 0, CMD_READ, ck, off, ln)
    c.send(bytes(out))
    seen = set()
    for _ in range(n):
        # Replies may come in any order: peek the cookie.
        err, ck, data = read_any_reply(c, reqs)
        if ck in seen:
            raise Fail("cookie %x answered twice" % ck)
        seen.add(ck)
        off, ln = reqs[ck]
        if err or data != ref[off:off + ln]:
            raise Fail("pipelined read %x: error %s or wrong data" % (ck, errname(err)))
    c.check_usable()
    c.close()


def read_any_reply(c, reqs):
    """Reads one complete reply to any of reqs (cookie -> (offset, length))."""
    magic = struct.unpack(">I", c.recv_exact(4))[0]
    if magic == SIMPLE_REPLY_MAGIC:
        err, ck = struct.unpack(">IQ", c.recv_exact(12))
        if ck not in reqs:
            raise Fail("reply with unknown cookie %x" % ck)
        return err, ck, (c.recv_exact(reqs[ck][1]) if err == 0 else b"")
    if magic != STRUCTURED_REPLY_MAGIC:
        raise Fail("bad reply magic %x" % magic)
    # Structured: chunks of different requests may interleave; collect
    # until one request is DONE.
    pending = getattr(c, "pending", None)
    if pending is None:
        pending = c.pending = {}
    first = True
    while True:
        if not first:
            magic = struct.unpack(">I", c.recv_exact(4))[0]
            if magic != STRUCTURED_REPLY_MAGIC:
                raise Fail("bad chunk magic %x" % magic)
        first = False
        flags, rtype, ck, length = struct.unpack(">HHQI", c.recv_exact(16))
        if ck not in reqs:
            raise Fail("chunk with unknown cookie %x" % ck)
        off0, ln = reqs[ck]
        st = pending.setdefault(ck, [bytearray(ln), 0])
        payload = c.recv_exact(length)
        if rtype == REPLY_TYPE_OFFSET_DATA:
            o = struct.unpack(">Q", payload[:8])[0] - off0
            st[0][o:o + length - 8] = payload[8:]
        elif rtype in (REPLY_TYPE_ERROR, REPLY_TYPE_ERROR_OFFSET):
            st[1] = struct.unpack(">I", payload[:4])[0]
        elif rtype == REPLY_TYPE_OFFSET_HOLE:
            pass  # already zeroes
        if flags & REPLY_FLAG_DONE:
            del pending[ck]
            return st[1], ck, bytes(st[0]) if st[1] == 0 else b""


@tx_scenario
def close_with_replies_pending(t, export, st):
    """64 READs of 1 MiB, then close without reading: server must survive."""
    c = session(t, export, st)
    out = bytearray()
    for i in range(64):
        out += struct.pack(">IHHQQI", REQUEST_MAGIC, 0, CMD_READ, 0x9000 + i,
                           (i % 8) << 20, 1 << 20)
    c.send(bytes(out))
    c.close()


@tx_scenario
def slow_reader(t, export, st):
    """256 READs of 1 MiB, replies unread for 2 s (back-pressure): all answered."""
    c = session(t, export, st)
    pipeline_reads(c, {0xA000 + i: ((i % 8) << 20, 1 << 20) for i in range(256)}, sleep=2)
    c.check_usable()
    c.close()


def pipeline_reads(c, reqs, sleep=0.0, timeout=4):
    """Sends READs for reqs (cookie -> (offset, length)) in one go, waits
    sleep seconds, then reads every reply."""
    out = bytearray()
    for ck, (off, ln) in reqs.items():
        out += struct.pack(">IHHQQI", REQUEST_MAGIC, 0, CMD_READ, ck, off, ln)
    c.s.settimeout(timeout)
    c.send(bytes(out))
    time.sleep(sleep)
    got = 0
    try:
        for _ in range(len(reqs)):
            err, ck, _ = read_any_reply(c, reqs)
            if err:
                raise Fail("READ %x: error %s" % (ck, errname(err)))
            got += 1
    except Fail as e:
        raise Fail("%d of %d replies, then: %s" % (got, len(reqs), e))
    c.s.settimeout(TIMEOUT)


@tx_scenario
def many_small_pipelined(t, export, st):
    """1000 READs of 512 bytes sent at once (over in-flight limits): all answered."""
    c = session(t, export, st)
    pipeline_reads(c, {0xB000 + i: ((i * 512) % (1 << 20), 512) for i in range(1000)})
    c.check_usable()
    c.close()


@tx_scenario
def max_size_reads_pipelined(t, export, st):
    """192 MiB in READs of the maximum size (32 MiB) sent at once: all answered."""
    c = session(t, export, st)
    ln = min(MAX_PAYLOAD, c.size)
    n = (192 << 20) // ln
    pipeline_reads(c, {0xC000 + i: (0, ln) for i in range(n)}, timeout=8)
    c.check_usable()
    c.close()


# ---------------------------------------------------------------------------

# -- metadata contexts, block status, cache, fast zero -------------------------

def meta_session(t, export, queries):
    """Structured replies, SET_META_CONTEXT(queries), GO: (conn, contexts)."""
    c = connect(t)
    c.greeting()
    c.client_flags()
    c.structured_reply()
    rtype, ctx = c.meta_context(OPT_SET_META_CONTEXT, export, queries)
    if rtype != REP_ACK:
        raise Fail("SET_META_CONTEXT %r refused: %x" % (queries, rtype))
    rtype, data = c.go(export)
    if rtype != REP_ACK:
        raise Fail("GO %s refused: %x %r" % (export, rtype, data))
    return c, ctx


def check_extents(c, ctx_id, off, length, req_one):
    """One BLOCK_STATUS; the reply must follow the protocol."""
    err, _ = c.cmd(CMD_BLOCK_STATUS, off, length, flags=CMD_FLAG_REQ_ONE if req_one else 0)
    if err:
        raise Fail("BLOCK_STATUS %d+%d: %s" % (off, length, errname(err)))
    if [b[0] for b in c.block_status] != [ctx_id]:
        raise Fail("block status for contexts %r, expected [%d]"
                   % ([b[0] for b in c.block_status], ctx_id))
    ext = c.block_status[0][1]
    if req_one and len(ext) != 1:
        raise Fail("REQ_ONE answered with %d extents" % len(ext))
    if any(ln == 0 for ln, _ in ext) or sum(ln for ln, _ in ext) > length:
        raise Fail("extents %r for a request of %d bytes" % (ext, length))
    if any(fl & ~3 for _, fl in ext):
        raise Fail("base:allocation flags outside HOLE|ZERO: %r" % ext)
    return ext


@scenario
def block_status(t, export):
    """base:allocation: extents from the offset, within the length, one with REQ_ONE."""
    c, ctx = meta_session(t, export, ["base:allocation"])
    if len(ctx) != 1 or ctx[0][1] != "base:allocation":
        raise Fail("SET_META_CONTEXT selected %r" % ctx)
    cid = ctx[0][0]
    check_extents(c, cid, 0, c.size, False)
    check_extents(c, cid, 0, c.size, True)
    check_extents(c, cid, 12345, 100000, False)
    check_extents(c, cid, c.size - 1, 1, True)
    err, _ = c.cmd(CMD_BLOCK_STATUS, c.size - 512, 1024)
    expect_err(err, (EINVAL,), "BLOCK_STATUS past the end")
    err, _ = c.cmd(CMD_BLOCK_STATUS, 0, 512, flags=CMD_FLAG_FUA)
    expect_err(err, (EINVAL,), "BLOCK_STATUS with FUA")
    c.check_usable()
    c.close()


@scenario
def block_status_without_context(t, export):
    """BLOCK_STATUS with no context (none asked, or an unknown one): EINVAL."""
    for queries in ([], ["x-nosuch:context"], ["base:"]):
        c, ctx = meta_session(t, export, queries)
        if ctx:
            raise Fail("SET_META_CONTEXT %r selected %r" % (queries, ctx))
        err, _ = c.cmd(CMD_BLOCK_STATUS, 0, 4096)
        expect_err(err, (EINVAL,), "BLOCK_STATUS without a context (%r)" % queries)
        c.check_usable()
        c.close()


@scenario
def meta_context_bad(t, export):
    """Meta context options: malformed, unknown export, before structured replies."""
    c = connect(t)
    c.greeting()
    c.client_flags()
    rtype, _ = c.meta_context(OPT_LIST_META_CONTEXT, export, [])
    expect_err(rtype, (REP_ERR_INVALID,), "LIST_META_CONTEXT before structured replies")
    c.structured_reply()
    rtype, ctx = c.meta_context(OPT_LIST_META_CONTEXT, export, [])
    if rtype != REP_ACK or [n for _, n in ctx] != ["base:allocation"]:
        raise Fail("LIST_META_CONTEXT: %x %r" % (rtype, ctx))
    rtype, _ = c.meta_context(OPT_SET_META_CONTEXT, export, ["nonamespace"])
    expect_err(rtype, (REP_ERR_INVALID,), "a query without a namespace")
    rtype, _ = c.meta_context(OPT_SET_META_CONTEXT, "no-such-export", ["base:allocation"])
    expect_err(rtype, (REP_ERR_UNKNOWN,), "SET_META_CONTEXT of an unknown export")
    c.option(OPT_SET_META_CONTEXT, struct.pack(">I", 1000) + b"x")
    _, rtype, _ = c.opt_reply()
    expect_err(rtype, (REP_ERR_INVALID,), "a truncated SET_META_CONTEXT")
    rtype, data = c.go(export)
    if rtype != REP_ACK:
        raise Fail("GO refused after bad meta context options: %x" % rtype)
    c.check_usable()
    c.close()


@scenario
def cache_and_fast_zero(t, export):
    """CACHE is served; FAST_ZERO with NO_HOLE is refused at once with ENOTSUP."""
    c = session(t, export, True)
    if not c.tflags & TFLAG_SEND_CACHE:
        raise Fail("NBD_FLAG_SEND_CACHE not advertised (%#x)" % c.tflags)
    err, _ = c.cmd(CMD_CACHE, 0, 1 << 20)
    if err:
        raise Fail("CACHE: %s" % errname(err))
    err, _ = c.cmd(CMD_CACHE, c.size, 512)
    expect_err(err, (EINVAL,), "CACHE past the end")
    err, _ = c.cmd(CMD_WRITE_ZEROES, 0, 4096, flags=CMD_FLAG_FAST_ZERO | CMD_FLAG_NO_HOLE)
    expect_err(err, (ENOTSUP,) if c.tflags & TFLAG_SEND_FAST_ZERO else (EINVAL,),
               "FAST_ZERO with NO_HOLE")
    c.check_usable()
    c.close()


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--unix")
    ap.add_argument("--tcp")
    ap.add_argument("--export", default="vol0")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("scenarios", nargs="*")
    a = ap.parse_args(argv)
    if a.list:
        for s in SCENARIOS:
            print("%-32s %s" % (s.__name__, (s.__doc__ or "").split("\n")[0]))
        return 0
    if a.unix:
        target = ("unix", a.unix)
    elif a.tcp:
        host, port = a.tcp.rsplit(":", 1)
        target = ("tcp", (host, int(port)))
    else:
        ap.error("--unix or --tcp required")
    byname = {s.__name__: s for s in SCENARIOS}
    todo = a.scenarios or [s.__name__ for s in SCENARIOS]
    failed = 0
    for name in todo:
        fn = byname.get(name)
        if fn is None:
            print("FAIL %s: no such scenario" % name)
            failed += 1
            continue
        t0 = time.monotonic()
        try:
            fn(target, a.export)
            print("ok   %-32s (%.2fs)" % (name, time.monotonic() - t0))
        except (Fail, Closed, OSError) as e:
            print("FAIL %-32s %s: %s" % (name, type(e).__name__, e))
            failed += 1
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
