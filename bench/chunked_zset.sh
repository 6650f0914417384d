#!/usr/bin/env bash
# One big sorted set, chunked on flash (issue 10, point 2), beside
# redis-server holding it in RAM: ITEMS members of VALUE bytes (member i
# has score i), written with ZADD of 1,000 members per command into
# strata-server --maxmemory-ram MAXMEM_RAM (a fraction of its size) with
# the journal on (appendfsync everysec, both servers). Then, at random
# members (cold on Strata): ZSCORE (one member part), ZRANK (a member part
# and an order part), ZRANGE of 10 by rank, ZRANGEBYSCORE of 10 (the order
# parts holding them) and ZADD of an existing member (sent by
# bench/listload, in Go).
# Reports ops/s of both servers, device reads per command, chunk loads,
# journal bytes per command, RAM, and fio's 4 KiB random-read IOPS at
# CLIENTS reads in flight for the device's ceiling.
#   ITEMS (default 1000000; QUICK: 100000)  VALUE (100)  MAXMEM_RAM (64mb)
#   REQUESTS (200000; QUICK: 20000)  CLIENTS (32)  RESULT_NAME (chunked_zset)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

ITEMS=${ITEMS:-$([ "$QUICK" = 1 ] && echo 100000 || echo 1000000)}
VALUE=${VALUE:-100}
MAXMEM_RAM=${MAXMEM_RAM:-64mb}
REQUESTS=${REQUESTS:-$([ "$QUICK" = 1 ] && echo 20000 || echo 200000)}
CLIENTS=${CLIENTS:-32}

need_common
need_strata
need fio fio
need go golang-go
OUT=$(result_file "${RESULT_NAME:-chunked_zset}")

fill() {  # fill PORT: ZADD z, 1000 members per command
    PYTHONPATH="$BENCH_ROOT" python3 - "$1" "$ITEMS" "$VALUE" <<'PY'
import resp, sys
port, n, v = (int(x) for x in sys.argv[1:])
s = resp.connect(port)
def send(batch):
    resp.send(s, batch)
batch = []
for lo in range(0, n, 1000):
    args = [b"ZADD", b"z"]
    for i in range(lo, min(n, lo + 1000)):
        args += [b"%d" % i, (b"%012d:" % i).ljust(v, b"v")]
    batch.append(resp.cmd(args))
    if len(batch) >= 20:
        send(batch)
        batch = []
if batch:
    send(batch)
PY
}

sport=$(free_port)
start_strata "$sport" "$(bench_tmpdir strata)" --maxmemory-ram "$MAXMEM_RAM" --appendonly yes
spid=$LAST_PID
rport=$(free_port)
start_redis "$rport" "$(bench_tmpdir redis)" --appendonly yes --appendfsync everysec
rpid=$LAST_PID

log "filling $ITEMS members x $VALUE B into both servers"
t0=$(date +%s.%N); fill "$sport"; t1=$(date +%s.%N); fill "$rport"; t2=$(date +%s.%N)
fill_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
fill_r=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.1f", b - a }')
wait_settled "$sport" 2>/dev/null || sleep 5
[ "$(redis-cli -p "$sport" zcard z)" = "$ITEMS" ] || die "strata ZCARD is not $ITEMS"
[ "$(redis-cli -p "$rport" zcard z)" = "$ITEMS" ] || die "redis ZCARD is not $ITEMS"
tier_z=$(redis-cli -p "$sport" debug tier z)
mem_s=$(info "$sport" used_memory memory)
mem_r=$(info "$rport" used_memory memory)
listload_build

rows=()
for c in zscore zrank zrange10 zrangebyscore10 zadd; do
    run_go "strata $c" "$sport" "$spid" "$c"
    s_rps=$RPS; s_p99=$P99; s_cpu=$CPU_US; s_reads=$READS; s_loads=$LOADS; s_j=$JBYTES
    run_go "redis $c" "$rport" "$rpid" "$c"
    name=$(echo "$c" | tr a-z A-Z | sed 's/ZRANGE10/ZRANGE i i+9/; s/ZRANGEBYSCORE10/ZRANGEBYSCORE i i+9/')
    rows+=("| $name (random member) | $s_rps | $RPS | $(div "$s_rps" "$RPS") | $s_p99 | $P99 | $s_cpu | $CPU_US | $s_reads | $s_loads | $s_j |")
done
[ "$(redis-cli -p "$sport" zrange z 0 -1 withscores | md5sum)" = "$(redis-cli -p "$rport" zrange z 0 -1 withscores | md5sum)" ] \
    && same="identical" || same="DIFFERENT"
chunks_ram=$(info "$sport" chunks_in_ram tiered)
chunks_flash=$(info "$sport" chunks_in_flash tiered)
alloc=$(info "$sport" tiered_allocated_bytes tiered)
live=$(info "$sport" flash_live_bytes tiered)

fiofile="$RUN_DIR/fio.dat"
fio_seqwrite "$fiofile" 2g >/dev/null
engine=$(fio_engine "$fiofile")
read -r fio_iops fio_p50 fio_p99 _fio_cpu <<<"$(fio_randread "$fiofile" 2g "$engine" "$CLIENTS" 10)"

{
    header "A big sorted set, chunked on flash, beside redis-server in RAM"
    echo
    echo "- $ITEMS members x $VALUE B in sorted set \`z\` (member i has score i), written with ZADD of 1,000 members per command"
    echo "- strata-server --maxmemory-ram $MAXMEM_RAM --appendonly yes (appendfsync everysec); redis-server --appendonly yes --appendfsync everysec, all in RAM"
    echo "- fill time: strata $fill_s s, redis $fill_r s"
    echo "- \`DEBUG TIER z\` after the fill: $tier_z"
    echo "- used_memory: strata $mem_s, redis $mem_r (after the fill)"
    echo "- after the run: chunks in RAM / on flash $chunks_ram / $chunks_flash; log allocated $alloc B, live $live B; ZRANGE z 0 -1 WITHSCORES of both servers $same"
    echo "- fio 4 KiB random reads at depth $CLIENTS ($engine): $fio_iops IOPS, p50 $fio_p50 µs, p99 $fio_p99 µs"
    echo "- $REQUESTS requests per command from $CLIENTS connections (one in flight each), one run each, in this order; client and server share $(nproc) cores"
    echo
    echo "| command | strata ops/s | redis ops/s | ratio | strata p99 ms | redis p99 ms | strata CPU µs/op | redis CPU µs/op | strata device reads/op | chunk loads | strata journal B/op |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    printf '%s\n' "${rows[@]}"
    commands_section
} >"$OUT"
log "wrote $OUT"
cat "$OUT"
