#!/usr/bin/env python3
"""Writes the RESP commands that build KEYS collections of TYPE with
ELEMENTS elements each to stdout (for `redis-cli --pipe`), deterministic:
  collections_memory.py TYPE KEYS ELEMENTS VALUE_SIZE
TYPE: hash (fields f0.. with VALUE_SIZE-byte values), set and zset (members
m0..; zset scores = the element's index), list (VALUE_SIZE-byte elements).
One command per collection, all its elements at once."""
import sys

def resp(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)

def main():
    kind, keys, elements, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    w = sys.stdout.buffer
    for k in range(keys):
        key = b"%s:%08d" % (kind.encode(), k)
        fill = bytes([97 + k % 26]) * size
        if kind == "hash":
            args = [b"HSET", key]
            for i in range(elements):
                args += [b"f%d" % i, fill]
        elif kind == "set":
            args = [b"SADD", key] + [b"m%d-%d" % (i, k) for i in range(elements)]
        elif kind == "zset":
            args = [b"ZADD", key]
            for i in range(elements):
                args += [b"%d" % i, b"m%d-%d" % (i, k)]
        elif kind == "list":
            args = [b"RPUSH", key] + [fill] * elements
        else:
            sys.exit("unknown type " + kind)
        w.write(resp(args))

main()
