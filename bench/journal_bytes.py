"""Journal bytes per write command, Strata vs redis-server's AOF (issue 46).

For each command, on a small value and on a big one: the bytes Strata's
journal writes per command (INFO flash_journal_bytes: record bytes, and
flash_journal_device_bytes: device bytes with headers and page padding)
and the bytes redis-server's AOF grows by (appendonlydir's incr file), the
same commands sent to both. Small values: one key per command (no two
commands of a run name the same key, so no batch merges two of them).
Big values: one key, the commands sent one at a time with a pause longer
than the journal's batch delay, so each is its own batch.

Run by bench/journal_bytes.sh (which starts the servers); prints a
markdown table."""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import resp  # noqa: E402

SMALL_N = int(os.environ.get("SMALL_N", "2000"))
BIG_N = int(os.environ.get("BIG_N", "300"))
BIG = int(os.environ.get("BIG", "50000"))


def call(s, *args):
    s.sendall(resp.cmd([a if isinstance(a, bytes) else str(a).encode() for a in args]))
    return read_reply(s)


BUF = {}


def read_line(s):
    b = BUF.setdefault(s, bytearray())
    while b"\r\n" not in b:
        b.extend(s.recv(1 << 20))
    i = b.index(b"\r\n")
    line = bytes(b[:i])
    del b[: i + 2]
    return line


def read_exact(s, n):
    b = BUF.setdefault(s, bytearray())
    while len(b) < n + 2:
        b.extend(s.recv(1 << 20))
    out = bytes(b[:n])
    del b[: n + 2]
    return out


def read_reply(s):
    line = read_line(s)
    t, rest = line[:1], line[1:]
    if t == b"-":
        raise RuntimeError(line.decode())
    if t in (b"+", b":"):
        return rest
    if t == b"$":
        n = int(rest)
        return None if n < 0 else read_exact(s, n)
    if t == b"*":
        n = int(rest)
        return None if n < 0 else [read_reply(s) for _ in range(n)]
    raise RuntimeError(line)


def pipeline(s, cmds):
    for i in range(0, len(cmds), 500):
        part = cmds[i : i + 500]
        s.sendall(b"".join(resp.cmd([a if isinstance(a, bytes) else str(a).encode() for a in c]) for c in part))
        for _ in part:
            read_reply(s)


def info(s, field):
    text = call(s, "INFO", "everything").decode()
    for line in text.split("\r\n"):
        if line.startswith(field + ":"):
            return int(line.split(":")[1])
    raise KeyError(field)


def aof_bytes(d):
    ad = os.path.join(d, "appendonlydir")
    return sum(os.path.getsize(os.path.join(ad, f)) for f in os.listdir(ad) if ".incr." in f)


def settle(s):
    """Until Strata's journal wrote what it was given."""
    last = None
    while True:
        now = info(s, "flash_journal_device_bytes")
        if now == last:
            return
        last = now
        time.sleep(1.2)


V50 = b"v" * 50


def scenarios():
    """(name, setup(i) -> commands, run(i) -> command, n, per-command key)."""
    small, big = [], []
    small.append(("HSET (update a 50 B field of a 20-field hash)",
                  lambda i: [["HSET", f"h{i}"] + sum(([f"f{j}", V50] for j in range(20)), [])],
                  lambda i: ["HSET", f"h{i}", f"f{i % 20}", b"w" * 50]))
    small.append(("HINCRBY (a 20-field hash)",
                  lambda i: [["HSET", f"hi{i}"] + sum(([f"f{j}", "100"] for j in range(20)), [])],
                  lambda i: ["HINCRBY", f"hi{i}", f"f{i % 20}", "7"]))
    small.append(("RPUSH (50 B onto a 200-element list)",
                  lambda i: [["RPUSH", f"l{i}"] + [V50] * 200],
                  lambda i: ["RPUSH", f"l{i}", V50]))
    small.append(("LPOP (a 200-element list)",
                  lambda i: [["RPUSH", f"lp{i}"] + [V50] * 200],
                  lambda i: ["LPOP", f"lp{i}"]))
    small.append(("LSET (a 200-element list)",
                  lambda i: [["RPUSH", f"ls{i}"] + [V50] * 200],
                  lambda i: ["LSET", f"ls{i}", "100", b"w" * 50]))
    small.append(("SADD (a 200-member set)",
                  lambda i: [["SADD", f"s{i}"] + [f"m{j:048}" for j in range(200)]],
                  lambda i: ["SADD", f"s{i}", f"n{i:048}"]))
    small.append(("SREM (a 200-member set)",
                  lambda i: [["SADD", f"sr{i}"] + [f"m{j:048}" for j in range(200)]],
                  lambda i: ["SREM", f"sr{i}", f"m{i % 200:048}"]))
    small.append(("ZADD (a 200-member sorted set)",
                  lambda i: [["ZADD", f"z{i}"] + sum(([str(j), f"m{j:048}"] for j in range(200)), [])],
                  lambda i: ["ZADD", f"z{i}", "1000", f"n{i:048}"]))
    small.append(("ZINCRBY (a 200-member sorted set)",
                  lambda i: [["ZADD", f"zi{i}"] + sum(([str(j), f"m{j:048}"] for j in range(200)), [])],
                  lambda i: ["ZINCRBY", f"zi{i}", "2", f"m{i % 200:048}"]))
    small.append(("XADD (a 200-entry stream)",
                  lambda i: [["XADD", f"x{i}", "*", "f", V50] for _ in range(200)],
                  lambda i: ["XADD", f"x{i}", "*", "f", V50]))
    small.append(("SETBIT (a 1 KB string)",
                  lambda i: [["SET", f"b{i}", b"\0" * 1024]],
                  lambda i: ["SETBIT", f"b{i}", str(i % 8192), "1"]))
    small.append(("SETRANGE (10 B into a 1 KB string)",
                  lambda i: [["SET", f"r{i}", b"x" * 1024]],
                  lambda i: ["SETRANGE", f"r{i}", "500", b"y" * 10]))
    small.append(("APPEND (10 B to a 1 KB string)",
                  lambda i: [["SET", f"a{i}", b"x" * 1024]],
                  lambda i: ["APPEND", f"a{i}", b"y" * 10]))
    small.append(("INCR (a counter)",
                  lambda i: [["SET", f"c{i}", "1000"]],
                  lambda i: ["INCR", f"c{i}"]))
    vb = b"v" * 100
    big.append(("HSET (update a 100 B field of a %d-field hash)" % BIG,
                lambda: [["HSET", "H"] + sum(([f"f{j}", vb] for j in range(k, min(k + 1000, BIG))), []) for k in range(0, BIG, 1000)],
                lambda i: ["HSET", "H", f"f{(i * 7919) % BIG}", b"w" * 100]))
    big.append(("HINCRBY (a %d-field hash)" % BIG,
                lambda: [["HSET", "HI"] + sum(([f"f{j}", "100"] for j in range(k, min(k + 1000, BIG))), []) for k in range(0, BIG, 1000)],
                lambda i: ["HINCRBY", "HI", f"f{(i * 7919) % BIG}", "7"]))
    big.append(("RPUSH (100 B onto a %d-element list)" % BIG,
                lambda: [["RPUSH", "L"] + [vb] * 1000 for _ in range(BIG // 1000)],
                lambda i: ["RPUSH", "L", vb]))
    big.append(("LPOP (a %d-element list)" % BIG,
                lambda: [["RPUSH", "LP"] + [vb] * 1000 for _ in range(BIG // 1000)],
                lambda i: ["LPOP", "LP"]))
    big.append(("LSET (a %d-element list)" % BIG,
                lambda: [["RPUSH", "LS"] + [vb] * 1000 for _ in range(BIG // 1000)],
                lambda i: ["LSET", "LS", str((i * 7919) % BIG), b"w" * 100]))
    big.append(("SADD (a %d-member set)" % BIG,
                lambda: [["SADD", "S"] + [f"m{j:098}" for j in range(k, min(k + 1000, BIG))] for k in range(0, BIG, 1000)],
                lambda i: ["SADD", "S", f"n{i:098}"]))
    big.append(("SREM (a %d-member set)" % BIG,
                lambda: [["SADD", "SR"] + [f"m{j:098}" for j in range(k, min(k + 1000, BIG))] for k in range(0, BIG, 1000)],
                lambda i: ["SREM", "SR", f"m{(i * 7919) % BIG:098}"]))
    big.append(("ZADD (a %d-member sorted set)" % BIG,
                lambda: [["ZADD", "Z"] + sum(([str(j), f"m{j:098}"] for j in range(k, min(k + 1000, BIG))), []) for k in range(0, BIG, 1000)],
                lambda i: ["ZADD", "Z", str(i * 3.5), f"n{i:098}"]))
    big.append(("ZINCRBY (a %d-member sorted set)" % BIG,
                lambda: [["ZADD", "ZI"] + sum(([str(j), f"m{j:098}"] for j in range(k, min(k + 1000, BIG))), []) for k in range(0, BIG, 1000)],
                lambda i: ["ZINCRBY", "ZI", "2", f"m{(i * 7919) % BIG:098}"]))
    big.append(("XADD (a %d-entry stream)" % BIG,
                lambda: [["XADD", "X", "*", "f", vb] for _ in range(BIG)],
                lambda i: ["XADD", "X", "*", "f", vb]))
    big.append(("XACK (a %d-entry stream, its entries pending)" % BIG,
                lambda: [["XADD", "XA", f"{j + 1}-0", "f", vb] for j in range(BIG)] + [["XGROUP", "CREATE", "XA", "g", "0"], ["XREADGROUP", "GROUP", "g", "c", "COUNT", str(BIG), "STREAMS", "XA", ">"]],
                lambda i: ["XACK", "XA", "g", f"{(i * 7919) % BIG + 1}-0"]))
    big.append(("SETBIT (a 1 MB bitmap)",
                lambda: [["SETRANGE", "B", str(k), b"\0" * 65536] for k in range(0, 1 << 20, 65536)],
                lambda i: ["SETBIT", "B", str((i * 7919 * 8) % (8 << 20)), "1"]))
    big.append(("SETRANGE (10 B into a 1 MB string)",
                lambda: [["SETRANGE", "R", str(k), b"x" * 65536] for k in range(0, 1 << 20, 65536)],
                lambda i: ["SETRANGE", "R", str((i * 7919) % (1 << 20)), b"y" * 10]))
    big.append(("APPEND (10 B to a 1 MB string)",
                lambda: [["SETRANGE", "A", str(k), b"x" * 65536] for k in range(0, 1 << 20, 65536)],
                lambda i: ["APPEND", "A", b"y" * 10]))
    return small, big


def measure(strata, redis, redis_dir, setup_all, run, n, paced):
    pipeline(strata, setup_all)
    pipeline(redis, setup_all)
    settle(strata)
    s0, d0, r0 = info(strata, "flash_journal_bytes"), info(strata, "flash_journal_device_bytes"), aof_bytes(redis_dir)
    cmds = [run(i) for i in range(n)]
    if paced:
        for c in cmds:
            call(strata, *c)
            call(redis, *c)
            time.sleep(0.012)
    else:
        pipeline(strata, cmds)
        pipeline(redis, cmds)
    settle(strata)
    time.sleep(1.2)
    s1, d1, r1 = info(strata, "flash_journal_bytes"), info(strata, "flash_journal_device_bytes"), aof_bytes(redis_dir)
    return (s1 - s0) / n, (d1 - d0) / n, (r1 - r0) / n


def main():
    sport, rport, rdir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    strata, redis = resp.connect(sport), resp.connect(rport)
    small, big = scenarios()
    print("| command | value | Strata journal record B/cmd | Strata journal device B/cmd | redis AOF B/cmd | record ÷ AOF |")
    print("|---|---|---:|---:|---:|---:|")
    for name, setup, run in small:
        setup_all = [c for i in range(SMALL_N) for c in setup(i)]
        rec, dev, aof = measure(strata, redis, rdir, setup_all, run, SMALL_N, False)
        print(f"| {name} | small, {SMALL_N} keys | {rec:.0f} | {dev:.0f} | {aof:.0f} | {rec / aof:.1f}× |", flush=True)
    for name, setup, run in big:
        rec, dev, aof = measure(strata, redis, rdir, setup(), run, BIG_N, True)
        print(f"| {name} | big, one key | {rec:.0f} | {dev:.0f} | {aof:.0f} | {rec / aof:.1f}× |", flush=True)


if __name__ == "__main__":
    main()
