#!/usr/bin/env python3
# A model, not a measurement of strata: greedy log-structured garbage
# collection (the victim is the segment with the fewest live records) under
# uniform random overwrites, at the utilizations given (live records ÷
# log capacity). Prints the write amplification (device writes ÷ client
# writes) after a warm-up. Used for the WA row of issue #12 (BENCHMARKS.md):
#   python3 bench/gc_greedy_model.py 0.4 0.5 0.6 0.7 0.8
import random, sys
def run(util, nseg=400, per=256, warm=20, meas=20, seed=1):
    rnd = random.Random(seed)
    nkeys = int(util * nseg * per)
    loc = [None] * nkeys            # key -> segment
    live = [0] * nseg
    members = [set() for _ in range(nseg)]
    free = list(range(nseg))
    cur = free.pop(); fill = 0
    writes = gc = 0
    def place(k):
        nonlocal cur, fill
        if fill == per:
            while not free:
                collect()
            cur = free.pop(); fill = 0
        if loc[k] is not None:
            s = loc[k]; live[s] -= 1; members[s].discard(k)
        loc[k] = cur; live[cur] += 1; members[cur].add(k); fill += 1
    def collect():
        nonlocal gc
        cands = [s for s in range(nseg) if s != cur and s not in free]
        v = min(cands, key=lambda s: live[s])
        moved = list(members[v])
        for k in moved:
            members[v].discard(k); live[v] -= 1; loc[k] = None
        free.append(v)
        for k in moved:
            gc += 1; place(k)
    for k in range(nkeys):
        place(k)
    for phase, n in (("warm", warm), ("meas", meas)):
        if phase == "meas":
            writes = gc = 0
        for _ in range(n * nkeys // 1):
            place(rnd.randrange(nkeys)); writes += 1
    return (writes + gc) / writes
for u in [float(x) for x in sys.argv[1:]]:
    print(f"utilization {u:.2f}: greedy WA {run(u, warm=8, meas=4):.2f}", flush=True)
