"""Write amplification of filling one hash larger than the RAM budget
(issue 46, points 2 and 4), one server binary at a time:

    python3 bench/write_amp.py BIN FIELDS VALUE MAXMEM MODE [RESTART]

MODE `hset100`: HSET of 100 new fields per command, 10 commands in flight
(bench/big_hash.sh's load); MODE `pipe5000`: pipelines of 5,000
single-field HSETs, each pipeline's replies read before the next (the
issue's backpressure load); MODE `rand1000`: pipelines of 1,000
single-field HSETs in a random order of the fields (a fixed permutation),
spread over HASHES hashes (environment, default 1: field i goes to hash
i mod HASHES), then GETS (default 100,000) HGETs of random fields, with
the device reads per HGET. With BIN = a redis-server binary, the same
load into redis-server (appendonly yes, everysec; everything in RAM): the
fill time to compare. STRATA_ARGS (environment): more options for
strata-server. The server runs with --appendonly yes
(everysec) and --maxmemory-ram MAXMEM. Reports the fill's time and rate,
the server's CPU per field, INFO's device bytes (flash_bytes_written: every
byte the log, demotion, collector and checkpoints wrote), the client's key
and value bytes (client_write_bytes), their ratio, the part counters,
refusals, backpressure waits, device reads per HSET (INFO
tiered_total_fetches) and, with RESTART=1, the time from a kill -9 to the
first HGET answered (recovery included). Client and server share the
machine's 2 cores.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from math import gcd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import resp  # noqa: E402


class Conn:
    """One connection: batches of encoded commands and their replies."""

    def __init__(self, port):
        self.s = resp.connect(port)
        self.f = self.s.makefile("rb")

    def reply(self):
        line = self.f.readline()
        if line[:1] == b"$":
            n = int(line[1:])
            if n < 0:
                return None
            data = self.f.read(n + 2)
            return data[:-2]
        if line[:1] == b"-":
            return Error(line[1:].strip())
        return line[1:].strip()

    def send(self, batch):
        """Sends the encoded commands; returns how many replies are errors."""
        self.s.sendall(b"".join(batch))
        return sum(1 for _ in batch if isinstance(self.reply(), Error))

    def call(self, *args):
        self.s.sendall(resp.cmd([a if isinstance(a, bytes) else str(a).encode() for a in args]))
        return self.reply()


class Error(bytes):
    pass


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def info(s, section):
    r = s.call(b"INFO", section.encode())
    out = {}
    for line in r.decode().splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            out[k] = v
    return out


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def is_redis(binary):
    return os.path.basename(binary).startswith("redis-server")


def start(binary, port, d, maxmem):
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", d, "--appendonly", "yes",
            "--save", "", "--loglevel", "warning"]
    if not is_redis(binary):
        args += ["--maxmemory-ram", maxmem, "--memcached-port", "0"]
        args += os.environ.get("STRATA_ARGS", "").split()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL)
    for _ in range(400):
        try:
            return p, Conn(port)
        except OSError:
            time.sleep(0.025)
    raise SystemExit("server did not start")


HASHES = int(os.environ.get("HASHES", "1"))


def hash_key(i):
    return b"h" if HASHES == 1 else b"h:%d" % (i % HASHES)


def shuffled(j, n):
    """The j-th of a fixed permutation of 0..n (j taken mod n): an affine
    map with a multiplier coprime to n."""
    a = 2654435761
    while gcd(a, n) != 1:
        a += 2
    return (a * j + 12345) % n


def main():
    binary, n, v, maxmem, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
    restart = len(sys.argv) > 6 and sys.argv[6] == "1"
    d = tempfile.mkdtemp(prefix="write_amp.", dir=os.environ.get("BENCH_DIR", "/work/bench-data"))
    port = free_port()
    p, s = start(binary, port, d, maxmem)
    val = b"v" * v
    c0 = cpu_s(p.pid)
    t0 = time.time()
    refused = 0
    if mode == "hset100":
        for _, batch in resp.hset100(n, val):
            refused += s.send(batch)
    elif mode == "rand1000":
        for lo in range(0, n, 1000):
            batch = []
            for j in range(lo, min(n, lo + 1000)):
                i = shuffled(j, n)
                batch.append(resp.cmd([b"HSET", hash_key(i), b"f:%012d" % i, val]))
            refused += s.send(batch)
    else:
        for lo in range(0, n, 5000):
            batch = [resp.cmd([b"HSET", b"h", b"f:%012d" % i, val]) for i in range(lo, min(n, lo + 5000))]
            refused += s.send(batch)
    el = time.time() - t0
    cpu = cpu_s(p.pid) - c0
    if is_redis(binary):
        print("%s %d x %d B (%s, %d hashes): %.1f s, %.0f fields/s, %.1f us server CPU/field, refused %d"
              % (os.path.basename(binary), n, v, mode, HASHES, el, n / el, cpu * 1e6 / n, refused))
        p.kill()
        p.wait()
        shutil.rmtree(d, ignore_errors=True)
        return
    t = info(s, "tiered")
    st = info(s, "stats")
    written = int(t["flash_bytes_written"])
    client = int(t.get("client_write_bytes", 0)) or n * (14 + v)
    print("%s %d x %d B into %s (%s): %.1f s, %.0f fields/s, %.1f us server CPU/field, refused %d"
          % (os.path.basename(binary), n, v, maxmem, mode, el, n / el, cpu * 1e6 / n, refused))
    print("  device bytes %d, client key+value bytes %d: %.2fx; device reads/HSET %.3f"
          % (written, client, written / client, int(t.get("tiered_total_fetches", 0)) / n))
    keys = ["flash_journal_device_bytes", "flash_demotion_device_bytes", "flash_collector_device_bytes",
            "chunks_written", "part_changes_written", "part_chain_loads", "part_chain_reclaims",
            "chunks_in_ram", "chunks_in_flash", "flash_write_amplification"]
    print("  " + " ".join("%s=%s" % (k, t.get(k, "-")) for k in keys))
    print("  write_backpressure_waits_ram=%s wait_ms=%s used_memory=%s" % (
        st.get("write_backpressure_waits_ram", t.get("write_backpressure_waits_ram", "-")),
        st.get("write_backpressure_wait_ms", t.get("write_backpressure_wait_ms", "-")),
        info(s, "memory").get("used_memory")))
    if HASHES == 1 and not is_redis(binary):
        # What the hash costs in RAM (MEMORY USAGE: its key, directory, parts'
        # entries, parts in RAM, chains and filters), per part.
        mu = int(s.call(b"MEMORY", b"USAGE", hash_key(0)))
        parts = int(t["chunks_in_ram"]) + int(t["chunks_in_flash"])
        print("  MEMORY USAGE of the hash %d B for %d parts: %.1f B per part"
              % (mu, parts, mu / parts))
    print("  log size %s B, live %s B: log / client bytes %.2f"
          % (t["tiered_allocated_bytes"], t["flash_live_bytes"], int(t["tiered_allocated_bytes"]) / client))
    if mode == "rand1000":
        gets = int(os.environ.get("GETS", "100000"))
        f0 = int(t.get("tiered_total_fetches", 0))
        t1 = time.time()
        misses = 0
        for lo in range(0, gets, 1000):
            batch = []
            for j in range(lo, min(gets, lo + 1000)):
                i = shuffled(j * 7919 + 13, n)
                batch.append(resp.cmd([b"HGET", hash_key(i), b"f:%012d" % i]))
            s.s.sendall(b"".join(batch))
            misses += sum(1 for _ in batch if s.reply() != val)
        el = time.time() - t1
        t2 = info(s, "tiered")
        f1 = int(t2.get("tiered_total_fetches", 0))
        print("  %d random HGETs: %.1f s, device reads/HGET %.3f, wrong or missing %d"
              % (gets, el, (f1 - f0) / gets, misses))
        print("  during them: " + " ".join(
            "%s=%d" % (k, int(t2.get(k, 0)) - int(t.get(k, 0)))
            for k in ("chunk_loads", "part_peeks", "part_chain_loads", "part_chain_spilled_reads")))
    if restart:
        time.sleep(1.5)  # everysec: the last second synced
        p.send_signal(signal.SIGKILL)
        p.wait()
        t1 = time.time()
        p, s = start(binary, port, d, maxmem)
        while isinstance(s.call(b"HGET", b"h", b"f:%012d" % (n // 2)), Error):
            time.sleep(0.005)
        el = time.time() - t1
        pers = info(s, "persistence")
        hlen = s.call(b"HLEN", b"h")
        print("  restart after kill -9: first HGET answered after %.2f s (recovery %s ms); HLEN %s"
              % (el, pers.get("recovery_duration_ms"), hlen))
    p.kill()
    p.wait()
    shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
