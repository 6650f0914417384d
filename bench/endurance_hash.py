"""Flash endurance with hashes (issue 46's benchmark row: the seeds' Table
2, "drive life vs write throughput", with hashes instead of strings):

    python3 bench/endurance_hash.py BIN HASHES FIELDS VALUE MAXMEM SECONDS

Fills HASHES hashes of FIELDS fields of VALUE bytes (pipelines of 1,000
single-field HSETs in a fixed random order) into strata-server with
`--maxmemory-ram MAXMEM`, `--flash-max-size` FLASH_FACTOR (environment,
default 2) times the fields' bytes (so the collector must work) and the
journal on (everysec); then overwrites random fields of random hashes
(pipelines of 1,000 HSETs) for WARMUP (environment, default 20) seconds
unmeasured, then SECONDS measured. Reports, over the measured run: HSETs
per second, the device bytes written per second (INFO
flash_bytes_written: every byte the journal, demotion, collector and
checkpoints wrote) and per HSET, write amplification (device bytes ÷ the
client's key, field and value bytes, INFO client_write_bytes), the
collector's relocated bytes, device reads per HSET, refusals, and the
life of a drive at that rate: DRIVE_TB (default 3.84) TB rated DWPD
(default 1) drive writes per day for WARRANTY_YEARS (default 5) years.
Client and server share the machine's 2 cores.
"""
import os
import random
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import resp  # noqa: E402
from write_amp import cpu_s, free_port, info, shuffled, start  # noqa: E402


def counters(s):
    t = info(s, "tiered")
    return {k: int(t.get(k, 0)) for k in (
        "flash_bytes_written", "client_write_bytes", "flash_gc_bytes_relocated",
        "tiered_total_fetches", "flash_journal_device_bytes", "flash_demotion_device_bytes",
        "flash_collector_device_bytes", "flash_checkpoint_device_bytes")}


def overwrite(s, hashes, fields, val, rng, until):
    """Pipelines of 1,000 HSETs of random (hash, field) until `until`;
    returns (commands, refused)."""
    n = refused = 0
    while time.time() < until:
        batch = [resp.cmd([b"HSET", b"h:%d" % rng.randrange(hashes),
                           b"f:%06d" % rng.randrange(fields), val]) for _ in range(1000)]
        refused += s.send(batch)
        n += len(batch)
    return n, refused


def main():
    binary, hashes, fields, v = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    maxmem, seconds = sys.argv[5], float(sys.argv[6])
    factor = float(os.environ.get("FLASH_FACTOR", "2"))
    warmup = float(os.environ.get("WARMUP", "20"))
    data = hashes * fields * v
    os.environ["STRATA_ARGS"] = (os.environ.get("STRATA_ARGS", "")
                                 + " --flash-max-size %dmb" % max(1, int(data * factor / 1e6)))
    d = tempfile.mkdtemp(prefix="endurance_hash.", dir=os.environ.get("BENCH_DIR", "/work/bench-data"))
    port = free_port()
    p, s = start(binary, port, d, maxmem)
    val = b"v" * v
    n = hashes * fields
    t0 = time.time()
    refused = 0
    for lo in range(0, n, 1000):
        batch = []
        for j in range(lo, min(n, lo + 1000)):
            i = shuffled(j, n)
            batch.append(resp.cmd([b"HSET", b"h:%d" % (i % hashes), b"f:%06d" % (i // hashes), val]))
        refused += s.send(batch)
    fill = time.time() - t0
    print("fill: %d hashes x %d fields x %d B (%.0f MB) into --maxmemory-ram %s, flash capped at %.0f MB: "
          "%.1f s, %.0f HSET/s, refused %d"
          % (hashes, fields, v, data / 1e6, maxmem, data * factor / 1e6, fill, n / fill, refused))
    rng = random.Random(46)
    overwrite(s, hashes, fields, val, rng, time.time() + warmup)
    c0, cpu0, t0 = counters(s), cpu_s(p.pid), time.time()
    cmds, refused = overwrite(s, hashes, fields, val, rng, time.time() + seconds)
    el = time.time() - t0
    c1, cpu = counters(s), cpu_s(p.pid) - cpu0
    dv = {k: c1[k] - c0[k] for k in c0}
    dev_rate = dv["flash_bytes_written"] / el
    tbw = float(os.environ.get("DRIVE_TB", "3.84")) * 1e12 * float(os.environ.get("DWPD", "1")) \
        * 365 * float(os.environ.get("WARRANTY_YEARS", "5"))
    life_days = tbw / (dev_rate * 86400) if dev_rate else float("inf")
    print("overwrites: %.0f s measured after %.0f s: %.0f HSET/s, %.1f us server CPU/HSET, refused %d"
          % (el, warmup, cmds / el, cpu * 1e6 / cmds, refused))
    print("  device %.1f MB/s, %.0f B per HSET; client %.0f B per HSET; write amplification %.2f"
          % (dev_rate / 1e6, dv["flash_bytes_written"] / cmds, dv["client_write_bytes"] / cmds,
             dv["flash_bytes_written"] / max(1, dv["client_write_bytes"])))
    print("  journal %.0f, demotion %.0f, collector %.0f, checkpoints %.0f B per HSET; GC relocated %.1f MB/s; "
          "device reads/HSET %.3f"
          % (dv["flash_journal_device_bytes"] / cmds, dv["flash_demotion_device_bytes"] / cmds,
             dv["flash_collector_device_bytes"] / cmds, dv["flash_checkpoint_device_bytes"] / cmds,
             dv["flash_gc_bytes_relocated"] / el / 1e6, dv["tiered_total_fetches"] / cmds))
    print("  life of a %s TB %s-DWPD drive at this rate: %.0f days (%.1f years)"
          % (os.environ.get("DRIVE_TB", "3.84"), os.environ.get("DWPD", "1"), life_days, life_days / 365))
    p.kill()
    p.wait()
    shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
