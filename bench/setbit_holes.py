"""SETBIT into a chunked string's holes vs into its written parts (issue 46).

Against a running strata-server (PORT, appendonly yes): SET a 1 MiB
string of zeros (a chunked string keeps all-zero parts as holes, nothing
written), then 100 SETBITs at spread offsets, one per journal batch (a
pause past the batch delay), then 100 more at the next bit of each: the
journal's record bytes (INFO flash_journal_bytes) per command of each
round. The first bit set in a hole writes its 16 KiB part whole; a part
written before logs its change.

    python3 bench/setbit_holes.py PORT"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import resp  # noqa: E402
from journal_bytes import call, info  # noqa: E402


def main():
    s = resp.connect(int(sys.argv[1]))
    call(s, "SET", "B", b"\0" * (1 << 20))
    time.sleep(1.5)
    for name, bit in (("into holes", 0), ("into written parts", 3)):
        j0 = info(s, "flash_journal_bytes")
        for i in range(100):
            call(s, "SETBIT", "B", str((i * 7919 * 8 + bit) % (8 << 20)), "1")
            time.sleep(0.012)
        time.sleep(1.5)
        per = (info(s, "flash_journal_bytes") - j0) / 100
        print(f"SETBIT {name}: {per:.0f} journal record bytes per command")


if __name__ == "__main__":
    main()
