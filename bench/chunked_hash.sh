#!/usr/bin/env bash
# One big hash and one big set, chunked on flash (issue 10, point 2), beside
# redis-server holding them in RAM: FIELDS fields of VALUE bytes and FIELDS
# members, written into strata-server --maxmemory-ram MAXMEM_RAM (a
# fraction of their size) with the journal on (appendfsync everysec, both
# servers). Then redis-benchmark HGET / SISMEMBER of random elements (cold
# on Strata) and HSET of random fields (a write of one chunk, journaled).
# Reports ops/s of both servers, device reads per command, chunk loads,
# journal bytes per HSET, RAM, and fio's 4 KiB random-read IOPS at CLIENTS
# reads in flight for the device's ceiling.
#   FIELDS (default 1000000; QUICK: 100000)  VALUE (100)  MAXMEM_RAM (64mb)
#   REQUESTS (200000; QUICK: 20000)  CLIENTS (32)  RESULT_NAME (chunked_hash)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

FIELDS=${FIELDS:-$([ "$QUICK" = 1 ] && echo 100000 || echo 1000000)}
VALUE=${VALUE:-100}
MAXMEM_RAM=${MAXMEM_RAM:-64mb}
REQUESTS=${REQUESTS:-$([ "$QUICK" = 1 ] && echo 20000 || echo 200000)}
CLIENTS=${CLIENTS:-32}

need_common
need_strata
need fio fio
OUT=$(result_file "${RESULT_NAME:-chunked_hash}")

fill() {  # fill PORT: HSET h and SADD s, 1000 elements per command
    PYTHONPATH="$BENCH_ROOT" python3 - "$1" "$FIELDS" "$VALUE" <<'PY'
import resp, sys
port, n, v = (int(x) for x in sys.argv[1:])
s = resp.connect(port)
val = b"v" * v
def send(batch):
    resp.send(s, batch)
batch = []
for lo in range(0, n, 1000):
    # redis-benchmark's __rand_int__ is 12 digits
    h = [b"HSET", b"h"]
    m = [b"SADD", b"s"]
    for i in range(lo, min(n, lo + 1000)):
        h += [b"f:%012d" % i, val]
        m.append(b"m:%012d" % i)
    batch += [resp.cmd(h), resp.cmd(m)]
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

log "filling $FIELDS fields x $VALUE B and $FIELDS members into both servers"
t0=$(date +%s.%N); fill "$sport"; t1=$(date +%s.%N); fill "$rport"; t2=$(date +%s.%N)
fill_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
fill_r=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.1f", b - a }')
wait_settled "$sport" 2>/dev/null || sleep 5
[ "$(redis-cli -p "$sport" hlen h)" = "$FIELDS" ] || die "strata HLEN is not $FIELDS"
[ "$(redis-cli -p "$rport" scard s)" = "$FIELDS" ] || die "redis SCARD is not $FIELDS"
tier_h=$(redis-cli -p "$sport" debug tier h)
tier_s=$(redis-cli -p "$sport" debug tier s)
mem_s=$(info "$sport" used_memory memory)
mem_r=$(info "$rport" used_memory memory)

rows=()
for t in "HGET h f:__rand_int__" "SISMEMBER s m:__rand_int__" "HSET h f:__rand_int__ $(printf 'w%.0s' $(seq "$VALUE"))"; do
    read -ra cmd <<<"$t"
    rb_run "strata ${cmd[0]}" "$sport" "$spid" "$FIELDS" "${cmd[@]}"
    s_rps=$RPS; s_p99=$P99; s_cpu=$CPU_US; s_reads=$READS; s_loads=$LOADS; s_j=$JBYTES
    rb_run "redis ${cmd[0]}" "$rport" "$rpid" "$FIELDS" "${cmd[@]}"
    rows+=("| ${cmd[0]} | $s_rps | $RPS | $(div "$s_rps" "$RPS") | $s_p99 | $P99 | $s_cpu | $CPU_US | $s_reads | $s_loads | $s_j |")
done
chunks_ram=$(info "$sport" chunks_in_ram tiered)
chunks_flash=$(info "$sport" chunks_in_flash tiered)

fiofile="$RUN_DIR/fio.dat"
fio_seqwrite "$fiofile" 2g >/dev/null
engine=$(fio_engine "$fiofile")
read -r fio_iops fio_p50 fio_p99 _fio_cpu <<<"$(fio_randread "$fiofile" 2g "$engine" "$CLIENTS" 10)"

{
    header "A big hash and a big set, chunked on flash, beside redis-server in RAM"
    echo
    echo "- $FIELDS fields x $VALUE B in hash \`h\` and $FIELDS members in set \`s\`, written with HSET / SADD of 1,000 elements per command"
    echo "- strata-server --maxmemory-ram $MAXMEM_RAM --appendonly yes (appendfsync everysec); redis-server --appendonly yes --appendfsync everysec, all in RAM"
    echo "- fill time: strata $fill_s s, redis $fill_r s"
    echo "- \`DEBUG TIER h\`: $tier_h; \`DEBUG TIER s\`: $tier_s"
    echo "- used_memory: strata $mem_s, redis $mem_r (after the fill)"
    echo "- chunks in RAM / on flash after the run: $chunks_ram / $chunks_flash"
    echo "- fio 4 KiB random reads at depth $CLIENTS ($engine): $fio_iops IOPS, p50 $fio_p50 µs, p99 $fio_p99 µs"
    echo "- redis-benchmark -n $REQUESTS -r $FIELDS -c $CLIENTS, one run each, client and server share $(nproc) cores"
    echo
    echo "| command | strata ops/s | redis ops/s | ratio | strata p99 ms | redis p99 ms | strata CPU µs/op | redis CPU µs/op | strata device reads/op | chunk loads | strata journal B/op |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    printf '%s\n' "${rows[@]}"
    commands_section
} >"$OUT"
log "wrote $OUT"
cat "$OUT"
