#!/usr/bin/env python3
"""Deterministic key/value generator for the Strata benchmarks.

  fill.py N SIZE         write a RESP stream of `SET key:%012d <value>` for
                         i in 0..N-1 to stdout (feed it to `redis-cli --pipe`)
  fill.py --repair PORT SIZE N
                         find keys of 0..N-1 that do not exist (EXISTS) and SET
                         them, up to 10 passes (fewer if a pass sets none); prints "<set> <still missing>"
  fill.py --check PORT SIZE N SAMPLES
                         GET SAMPLES random keys of 0..N-1 through redis-cli
                         and compare with the expected values; prints
                         "ok <right> of <asked> (<k> do not exist)", or the
                         first wrong value and exits 1

Keys use redis-benchmark's `-r` format (`key:__rand_int__` becomes
`key:%012d`), so `redis-benchmark -r N GET key:__rand_int__` hits every time.
The value of key i is its 12-digit index followed by a fixed pseudo-random
filler, cut to SIZE bytes: every value differs and can be verified.
"""
import random
import socket
import subprocess
import sys
import time

FILLER = bytes(random.Random(42).choice(b"abcdefghijklmnopqrstuvwxyz0123456789")
               for _ in range(1 << 16))


def key(i):
    return b"key:%012d" % i


def value(i, size):
    v = b"%012d" % i + FILLER
    while len(v) < size:
        v += FILLER
    return v[:size]


def fill(n, size):
    out = sys.stdout.buffer
    batch = []
    for i in range(n):
        k, v = key(i), value(i, size)
        batch.append(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
        if len(batch) == 4096:
            out.write(b"".join(batch))
            batch.clear()
    out.write(b"".join(batch))
    out.flush()


def check(port, size, n, samples):
    rng = random.Random(7)
    idx = [rng.randrange(n) for _ in range(samples)] + [0, n - 1]
    nil = 0
    for i in idx:
        got = subprocess.run(["redis-cli", "-p", str(port), "--no-raw", "GET", key(i)],
                             capture_output=True, check=True).stdout
        # redis-cli --no-raw quotes the bulk string; the values are plain ASCII
        got = got.strip()
        if got == b"(nil)":
            nil += 1
            continue
        want = b'"' + value(i, size) + b'"'
        if got != want:
            print("MISMATCH %s: got %r... want %r..." % (key(i).decode(), got[:40], want[:40]))
            return 1
    print("ok %d of %d" % (len(idx) - nil, len(idx)) + (" (%d do not exist)" % nil if nil else ""))
    return 0


def cmd(*args):
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def reply(f):
    """One reply of a simple type: an int, a status string, or an Exception."""
    line = f.readline().rstrip(b"\r\n")
    if line[:1] == b":":
        return int(line[1:])
    if line[:1] == b"-":
        return Exception(line[1:].decode())
    if line[:1] == b"+":
        return line[1:]
    raise RuntimeError("unexpected reply %r" % line)


def repair(port, size, n):
    s = socket.create_connection(("127.0.0.1", port))
    f = s.makefile("rb")
    done = missing = 0
    for _ in range(10):
        missing = progress = 0
        for start in range(0, n, 10000):
            ks = range(start, min(n, start + 10000))
            s.sendall(b"".join(cmd(b"EXISTS", key(i)) for i in ks))
            miss = [i for i in ks if reply(f) == 0]
            # batches small enough that unread replies never fill the socket
            for b in range(0, len(miss), 1000):
                part = miss[b:b + 1000]
                s.sendall(b"".join(cmd(b"SET", key(i), value(i, size)) for i in part))
                ok = sum(1 for _ in part if reply(f) == b"OK")
                done += ok
                progress += ok
                missing += len(part) - ok
        if missing == 0 or progress == 0:
            break
        time.sleep(2)
    print(done, missing)
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "--repair":
        sys.exit(repair(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))
    if sys.argv[1] == "--check":
        sys.exit(check(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])))
    fill(int(sys.argv[1]), int(sys.argv[2]))
