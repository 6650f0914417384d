#!/usr/bin/env bash
# One hash larger than the whole RAM budget (issue 10, point 2: "a 2 GB
# hash under maxmemory-ram 256mb"): FIELDS fields of VALUE bytes written
# with HSET of 100 fields per command (10 commands in flight) into
# strata-server --maxmemory-ram MAXMEM_RAM --appendonly yes (appendfsync
# everysec). Reports the fill's rate, the log's size against its live
# bytes and the device bytes written per byte of data, RAM, then HGET of
# random fields (redis-benchmark): ops/s and device reads per HGET.
#   FIELDS (default 2000000; QUICK: 200000)  VALUE (1000)  MAXMEM_RAM (256mb)
#   REQUESTS (200000; QUICK: 20000)  CLIENTS (32)  RESULT_NAME (big_hash)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

FIELDS=${FIELDS:-$([ "$QUICK" = 1 ] && echo 200000 || echo 2000000)}
VALUE=${VALUE:-1000}
MAXMEM_RAM=${MAXMEM_RAM:-256mb}
REQUESTS=${REQUESTS:-$([ "$QUICK" = 1 ] && echo 20000 || echo 200000)}
CLIENTS=${CLIENTS:-32}

need_common
need_strata
OUT=$(result_file "${RESULT_NAME:-big_hash}")

sport=$(free_port)
start_strata "$sport" "$(bench_tmpdir strata)" --maxmemory-ram "$MAXMEM_RAM" --appendonly yes
spid=$LAST_PID

log "filling $FIELDS fields x $VALUE B into hash h"
record "python3 (bench/big_hash.sh): HSET h f:%012d <VALUE B>, 100 fields per command, 10 commands in flight"
c0=$(cpu_s "$spid")
t0=$(date +%s.%N)
PYTHONPATH="$BENCH_ROOT" python3 - "$sport" "$FIELDS" "$VALUE" <<'PY'
import resp, sys, time
port, n, v = (int(x) for x in sys.argv[1:])
s = resp.connect(port)
val = b"v" * v
t = time.time()
shown = 0
for lo, batch in resp.hset100(n, val):
    resp.send(s, batch)
    if lo >= shown + 200000:
        shown = lo - lo % 200000
        print("%d fields, %.0f fields/s" % (lo, lo / (time.time() - t)), file=sys.stderr, flush=True)
PY
t1=$(date +%s.%N)
c1=$(cpu_s "$spid")
fill_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
fill_rate=$(awk -v a="$t0" -v b="$t1" -v n="$FIELDS" 'BEGIN { printf "%.0f", n / (b - a) }')
fill_cpu=$(awk -v a="$c0" -v b="$c1" -v n="$FIELDS" 'BEGIN { printf "%.1f", (b - a) * 1e6 / n }')
[ "$(redis-cli -p "$sport" hlen h)" = "$FIELDS" ] || die "HLEN is not $FIELDS"
alloc_fill=$(info "$sport" tiered_allocated_bytes tiered)
live_fill=$(info "$sport" flash_live_bytes tiered)
written=$(info "$sport" flash_bytes_written tiered)
wait_settled "$sport" 2>/dev/null || sleep 10
alloc=$(info "$sport" tiered_allocated_bytes tiered)
live=$(info "$sport" flash_live_bytes tiered)
tier_h=$(redis-cli -p "$sport" debug tier h)
mem=$(info "$sport" used_memory memory)
rss=$(info "$sport" used_memory_rss memory)
rb_run "strata HGET" "$sport" "$spid" "$FIELDS" HGET h "f:__rand_int__"
hget_rps=$RPS; hget_p99=$P99; hget_cpu=$CPU_US; hget_reads=$READS
v=$(redis-cli -p "$sport" hget h "f:$(printf '%012d' $((FIELDS / 2)))" | wc -c)
[ "$v" -eq $((VALUE + 1)) ] || die "HGET of a field gave $v bytes"
# DEL of the whole hash: the time the client waits, then how long until
# the log's live bytes are released (on the background thread).
record "python3 (bench/big_hash.sh): DEL h, timed by the client"
del_ms=$(python3 - "$sport" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
t = time.perf_counter()
s.sendall(b"*2\r\n$3\r\nDEL\r\n$1\r\nh\r\n")
r = s.recv(100)
assert r == b":1\r\n", r
print("%.2f" % ((time.perf_counter() - t) * 1000))
PY
)
t0=$(date +%s.%N)
while [ "$(info "$sport" flash_live_bytes tiered)" -gt $((1 << 20)) ]; do sleep 0.05; done
t1=$(date +%s.%N)
released_ms=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", (b - a) * 1000 }')

{
    header "A hash larger than RAM: $FIELDS fields x $VALUE B under --maxmemory-ram $MAXMEM_RAM"
    echo
    echo "- strata-server --maxmemory-ram $MAXMEM_RAM --appendonly yes (appendfsync everysec)"
    echo "- fill: $FIELDS fields in $fill_s s ($fill_rate fields/s, $fill_cpu µs of server CPU per field), HSET of 100 fields per command, 10 in flight"
    echo "- after the fill: log allocated $alloc_fill B, live $live_fill B; device bytes written $written (data: $((FIELDS * VALUE)) B of values)"
    echo "- settled: log allocated $alloc B, live $live B"
    echo "- \`DEBUG TIER h\`: $tier_h"
    echo "- used_memory $mem B, used_memory_rss $rss B"
    echo "- HGET of random fields ($REQUESTS requests, $CLIENTS connections, one in flight each): $hget_rps ops/s, p99 $hget_p99 ms, $hget_cpu µs server CPU/op, $hget_reads device reads/op; client and server share $(nproc) cores"
    echo "- DEL h: $del_ms ms until the reply; the log's live bytes fell under 1 MiB $released_ms ms after it"
    commands_section
} >"$OUT"
log "wrote $OUT"
cat "$OUT"
