#!/usr/bin/env python3
"""Samples a server's INFO every 100 ms and prints, per sample, the request
rate since the last one beside what the background work was doing: the
journal's queue, whether a checkpoint runs, the checkpoints so far, the
active loops and the journal's fsyncs. It shows dips a benchmark's totals
hide (a checkpoint's, the collector's).

usage: bench/rate_series.py PORT SECONDS [INTERVAL_S]
"""
import socket
import sys
import time


def info(s):
    s.sendall(b"INFO\r\n")
    buf = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            raise SystemExit("connection closed")
        buf += chunk
        if buf.startswith(b"$") and b"\r\n" in buf:
            head = buf.index(b"\r\n")
            if len(buf) >= head + 2 + int(buf[1:head]) + 2:
                break
    fields = {}
    for line in buf.decode(errors="replace").split("\r\n"):
        if ":" in line:
            k, v = line.split(":", 1)
            fields[k] = v
    return fields


def main():
    port, seconds = int(sys.argv[1]), float(sys.argv[2])
    interval = float(sys.argv[3]) if len(sys.argv) > 3 else 0.1
    s = socket.create_connection(("127.0.0.1", port))
    t0 = time.time()
    prev = None
    print("t_s rate_k journal_pending checkpoint_in_progress checkpoints loops_active journal_fsyncs")
    while time.time() - t0 < seconds:
        f = info(s)
        now = time.time()
        count = int(f.get("total_commands_processed", 0))
        if prev:
            rate = (count - prev[1]) / (now - prev[0])
            print(f"{now - t0:.1f} {rate / 1000:.0f} {f.get('journal_pending', '-')} "
                  f"{f.get('checkpoint_in_progress', '-')} {f.get('checkpoints', '-')} "
                  f"{f.get('loops_active', '-')} {f.get('journal_fsyncs', '-')}", flush=True)
        prev = (now, count)
        time.sleep(interval)


if __name__ == "__main__":
    main()
