#!/usr/bin/python3
"""nbdclient.py: an NBD client that a shell test drives line by line, to play
a QEMU that attaches, waits, writes, reads and goes away when the test says.

    nbdclient.py (--unix PATH | --tcp HOST:PORT) --export NAME
                 [--timeout S] < COMMANDS > ANSWERS

Commands, one per line on standard input (a FIFO the test keeps open):

    connect                  the handshake (fixed newstyle, OPT_GO)
    write OFFSET LENGTH BYTE every byte of the range set to BYTE (0..255)
    read OFFSET LENGTH BYTE  the range must hold BYTE everywhere
    flush
    quit                     NBD_CMD_DISC, close, exit 0

For each command one line is printed (and flushed) on standard output:
"ok COMMAND", or "err COMMAND: why" (a refused handshake, an NBD error, a
closed connection, a read that found other bytes, a timeout).  After a
connection is lost, every command answers "err".  Standard library only;
the protocol code is nbd_raw.py's.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nbd_raw  # noqa: E402


def run(args):
    target = ("unix", args.unix) if args.unix else \
        ("tcp", (args.tcp.rsplit(":", 1)[0], int(args.tcp.rsplit(":", 1)[1])))
    conn = None
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        what = " ".join(words)
        try:
            if words[0] == "quit":
                if conn:
                    try:
                        conn.request(nbd_raw.CMD_DISC, 0, 0)
                    except nbd_raw.Closed:
                        pass
                    conn.close()
                print("ok " + what, flush=True)
                return 0
            if words[0] == "connect":
                conn = nbd_raw.Conn(target, timeout=args.timeout)
                conn.handshake(args.export)
            elif conn is None:
                raise nbd_raw.Fail("not connected")
            elif words[0] == "write":
                off, length, byte = int(words[1]), int(words[2]), int(words[3])
                err, _ = conn.cmd(nbd_raw.CMD_WRITE, off, length,
                                  payload=bytes([byte]) * length)
                if err:
                    raise nbd_raw.Fail("NBD error %s" % nbd_raw.errname(err))
            elif words[0] == "read":
                off, length, byte = int(words[1]), int(words[2]), int(words[3])
                data = conn.read(off, length)
                bad = [i for i in range(0, length, 512) if data[i] != byte]
                if bad or data != bytes([byte]) * length:
                    first = bad[0] if bad else 0
                    raise nbd_raw.Fail("byte %d at offset %d, expected %d"
                                       % (data[first], off + first, byte))
            elif words[0] == "flush":
                err, _ = conn.cmd(nbd_raw.CMD_FLUSH, 0, 0)
                if err:
                    raise nbd_raw.Fail("NBD error %s" % nbd_raw.errname(err))
            else:
                raise nbd_raw.Fail("unknown command")
            print("ok " + what, flush=True)
        except (nbd_raw.Fail, nbd_raw.Closed, OSError, ValueError, IndexError) as e:
            print("err %s: %s" % (what, e), flush=True)
            if isinstance(e, (nbd_raw.Closed, OSError)) and conn:
                conn.close()
                conn = None
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--unix")
    g.add_argument("--tcp")
    ap.add_argument("--export", required=True)
    ap.add_argument("--timeout", type=float, default=30.0)
    return run(ap.parse_args())


if __name__ == "__main__":
    sys.exit(main())
