#!/usr/bin/env bash
# HGET of one field of cold hashes: N hashes x F fields of V bytes written
# through a RAM budget a fraction of their size, then redis-benchmark HGETs
# of random hashes. Reports ops/s, the measured RAM hit ratio, device reads
# per HGET (INFO tiered fetches) and bytes fetched per HGET, beside a plain
# GET of values of the same record size. Collections are packed whole
# today: a cold HGET reads the whole hash's record.
#   HASHES  (default 20000; QUICK: 5000)   FIELDS (100)   VALUE (100)
#   MAXMEM_RAM (64mb)   REQUESTS (100000; QUICK: 20000)   CLIENTS (32)
#   RESULT_NAME results file name (default collections_flash)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

HASHES=${HASHES:-$([ "$QUICK" = 1 ] && echo 5000 || echo 20000)}
FIELDS=${FIELDS:-100}
VALUE=${VALUE:-100}
MAXMEM_RAM=${MAXMEM_RAM:-64mb}
REQUESTS=${REQUESTS:-$([ "$QUICK" = 1 ] && echo 20000 || echo 100000)}
CLIENTS=${CLIENTS:-32}

need_common
need_strata
OUT=$(result_file "${RESULT_NAME:-collections_flash}")
port=$(free_port)
start_strata "$port" "$(bench_tmpdir strata)" --maxmemory-ram "$MAXMEM_RAM" --appendonly yes
pid=$LAST_PID

log "filling $HASHES hashes x $FIELDS fields x $VALUE B"
python3 - "$port" "$HASHES" "$FIELDS" "$VALUE" <<'PY'
import socket, sys
port, n, f, v = (int(x) for x in sys.argv[1:])
s = socket.create_connection(("127.0.0.1", port))
val = b"v" * v
def cmd(args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out
batch = []
sent = 0
def flush():
    global batch, sent
    s.sendall(b"".join(batch))
    want = len(batch)
    got = b""
    while got.count(b"\r\n") < want:
        got += s.recv(1 << 20)
    assert b"-" not in got[:1], got[:200]
    batch = []
for i in range(n):
    args = [b"HSET", b"h:%012d" % i]  # redis-benchmark's __rand_int__ is 12 digits
    for j in range(f):
        args += [b"f%d" % j, val]
    batch.append(cmd(args))
    if len(batch) == 100:
        flush()
if batch:
    flush()
PY
wait_settled "$port" 2>/dev/null || sleep 3
before_fetch=$(info "$port" tiered_total_fetches tiered)
before_hits=$(info "$port" tiered_ram_hits tiered)
before_miss=$(info "$port" tiered_ram_misses tiered)
coll_flash=$(info "$port" collections_in_flash tiered)
coll_ram=$(info "$port" collections_in_ram tiered)
bout=$(bench_tmpdir rb)/out.csv
BENCH=(-n "$REQUESTS" -r "$HASHES" -c "$CLIENTS" --threads 1 --csv HGET "h:__rand_int__" f7)
record "redis-benchmark -h 127.0.0.1 -p PORT ${BENCH[*]}"
c0=$(cpu_s "$pid")
timed "$bout" redis-benchmark -h 127.0.0.1 -p "$port" "${BENCH[@]}"
c1=$(cpu_s "$pid")
fetch=$(( $(info "$port" tiered_total_fetches tiered) - before_fetch ))
hits=$(( $(info "$port" tiered_ram_hits tiered) - before_hits ))
miss=$(( $(info "$port" tiered_ram_misses tiered) - before_miss ))
rps=$(tail -1 "$bout" | cut -d, -f2 | tr -d '"')
p99=$(tail -1 "$bout" | cut -d, -f7 | tr -d '"')
rec=$(( 5 + FIELDS * (8 + 3 + VALUE) ))
{
    header "HGET of one field of cold hashes (packed collections)"
    echo
    echo "- $HASHES hashes x $FIELDS fields x $VALUE B ($((HASHES * rec / 1000000)) MB of packed records) written with HSET (all fields in one command) into strata-server --maxmemory-ram $MAXMEM_RAM --appendonly yes"
    echo "- before the HGETs: collections in RAM $coll_ram, on flash $coll_flash (INFO tiered)"
    echo "- \`redis-benchmark ${BENCH[*]}\`; client and server share $(nproc) cores"
    echo
    echo "| HGET ops/s | p99 ms | RAM hits | RAM misses | device reads (fetches) | reads per HGET | record bytes per fetch | server CPU s |"
    echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
    echo "| $rps | $p99 | $hits | $miss | $fetch | $(div "$fetch" "$REQUESTS" %.3f) | $rec | $(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }') |"
    commands_section
} >"$OUT"
log "wrote $OUT"
cat "$OUT"
