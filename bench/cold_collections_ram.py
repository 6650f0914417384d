"""RAM per cold collection (issue 46, point 6): against a running
strata-server (PORT, a --maxmemory-ram far below the data, e.g. 24mb, and
--tiering-min-value-size 16), loads N hashes of 10 fields x 10 B (~200 B
packed: each one record), waits until demotion moved them to flash, and
prints INFO's index bytes per key (the index's buckets, table and boxes:
what every key costs in RAM) and used_memory per key.

    python3 bench/cold_collections_ram.py PORT N"""
import sys
import time

import redis


def main():
    port, n = int(sys.argv[1]), int(sys.argv[2])
    r = redis.Redis(port=port)
    base = int(r.info("memory")["used_memory"])
    p = r.pipeline(transaction=False)
    for i in range(n):
        p.hset(f"hash:{i:08d}", mapping={f"f{j}": "x" * 10 for j in range(10)})
        if i % 1000 == 999:
            p.execute()
    p.execute()
    for _ in range(120):
        if int(r.info("tiered").get("collections_in_flash", 0)) >= n * 0.98:
            break
        time.sleep(0.5)
    time.sleep(2)
    m, t = r.info("memory"), r.info("tiered")
    print("%d hashes, %s on flash: index_bytes_per_key %s (index_bytes %s, index_boxed_bytes %s), "
          "used_memory per key %.1f"
          % (n, t.get("collections_in_flash"), t.get("index_bytes_per_key"), t.get("index_bytes"),
             t.get("index_boxed_bytes"), (int(m["used_memory"]) - base) / n))


if __name__ == "__main__":
    main()
