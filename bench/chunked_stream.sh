#!/usr/bin/env bash
# One big stream, chunked on flash (issue 11, point 4), beside redis-server
# holding it in RAM: ITEMS entries (entry i has id i-0 and one field of
# VALUE bytes), written with XADD (pipelined) into strata-server
# --maxmemory-ram MAXMEM_RAM (a fraction of its size) with the journal on
# (appendfsync everysec, both servers). Then, at random ids (cold on
# Strata): XRANGE i-0 + COUNT 10 and XREVRANGE i-0 - COUNT 10 (sent by
# bench/listload, in Go); and redis-benchmark XREADGROUP COUNT 10 NOACK of
# a group created at 0 (reads the stream from its cold start, in order;
# NOACK: a pending list of every entry read would sit in RAM, in the
# stream's head) and XADD of `*` ids (the hot end).
# Reports ops/s of both servers, device reads per command, chunk loads,
# journal bytes per command, RAM, and fio's 4 KiB random-read IOPS at
# CLIENTS reads in flight for the device's ceiling.
#   ITEMS (default 1000000; QUICK: 100000)  VALUE (100)  MAXMEM_RAM (64mb; QUICK: 8mb)
#   REQUESTS (200000; QUICK: 20000)  CLIENTS (32)  RESULT_NAME (chunked_stream)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

ITEMS=${ITEMS:-$([ "$QUICK" = 1 ] && echo 100000 || echo 1000000)}
VALUE=${VALUE:-100}
MAXMEM_RAM=${MAXMEM_RAM:-$([ "$QUICK" = 1 ] && echo 8mb || echo 64mb)}
REQUESTS=${REQUESTS:-$([ "$QUICK" = 1 ] && echo 20000 || echo 200000)}
CLIENTS=${CLIENTS:-32}

need_common
need_strata
need fio fio
need go golang-go
OUT=$(result_file "${RESULT_NAME:-chunked_stream}")

fill() {  # fill PORT: XADD s i-0 f VALUE, pipelined
    PYTHONPATH="$BENCH_ROOT" python3 - "$1" "$ITEMS" "$VALUE" <<'PY'
import resp, sys
port, n, v = (int(x) for x in sys.argv[1:])
s = resp.connect(port)
def send(batch):
    # Each reply is a bulk string: two lines.
    s.sendall(b"".join(batch))
    got = b""
    while got.count(b"\r\n") < 2 * len(batch):
        got += s.recv(1 << 20)
    assert b"\r\n-" not in b"\r\n" + got, got[:200]
batch = []
for i in range(1, n + 1):
    batch.append(resp.cmd([b"XADD", b"s", b"%d-0" % i, b"f", (b"%012d:" % i).ljust(v, b"v")]))
    if len(batch) >= 1000:
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

log "filling $ITEMS entries x $VALUE B into both servers"
t0=$(date +%s.%N); fill "$sport"; t1=$(date +%s.%N); fill "$rport"; t2=$(date +%s.%N)
fill_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
fill_r=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.1f", b - a }')
wait_settled "$sport" 2>/dev/null || sleep 5
[ "$(redis-cli -p "$sport" xlen s)" = "$ITEMS" ] || die "strata XLEN is not $ITEMS"
[ "$(redis-cli -p "$rport" xlen s)" = "$ITEMS" ] || die "redis XLEN is not $ITEMS"
tier_s=$(redis-cli -p "$sport" debug tier s)
mem_s=$(info "$sport" used_memory memory)
mem_r=$(info "$rport" used_memory memory)
listload_build

rows=()
row() {
    rows+=("| $1 | $s_rps | $RPS | $(div "$s_rps" "$RPS") | $s_p99 | $P99 | $s_cpu | $CPU_US | $s_reads | $s_loads | $s_j |")
}
for c in xrange10 xrevrange10; do
    run_go "strata $c" "$sport" "$spid" "$c"
    s_rps=$RPS; s_p99=$P99; s_cpu=$CPU_US; s_reads=$READS; s_loads=$LOADS; s_j=$JBYTES
    run_go "redis $c" "$rport" "$rpid" "$c"
    row "$(echo "$c" | sed 's/xrange10/XRANGE i-0 + COUNT 10/; s/xrevrange10/XREVRANGE i-0 - COUNT 10/') (random id)"
done
for p in "$sport" "$rport"; do redis-cli -p "$p" xgroup create s g 0 >/dev/null; done
val=$(printf 'w%.0s' $(seq "$VALUE"))
for t in "XREADGROUP GROUP g c COUNT 10 NOACK STREAMS s >" "XADD s * f $val"; do
    read -ra cmd <<<"$t"
    rb_run "strata ${cmd[0]}" "$sport" "$spid" "$REQUESTS" "${cmd[@]}"
    s_rps=$RPS; s_p99=$P99; s_cpu=$CPU_US; s_reads=$READS; s_loads=$LOADS; s_j=$JBYTES
    rb_run "redis ${cmd[0]}" "$rport" "$rpid" "$REQUESTS" "${cmd[@]}"
    row "$(echo "$t" | sed 's/ f w*$/ f VALUE/')"
done
# (The entries XADD added have ids of each server's clock.)
[ "$(redis-cli -p "$sport" xrange s - "$ITEMS-0" | md5sum)" = "$(redis-cli -p "$rport" xrange s - "$ITEMS-0" | md5sum)" ] \
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
    header "A big stream, chunked on flash, beside redis-server in RAM"
    echo
    echo "- $ITEMS entries in stream \`s\` (entry i: id i-0, field f of $VALUE B), written with XADD, 1,000 commands per pipeline"
    echo "- strata-server --maxmemory-ram $MAXMEM_RAM --appendonly yes (appendfsync everysec); redis-server --appendonly yes --appendfsync everysec, all in RAM"
    echo "- fill time: strata $fill_s s, redis $fill_r s"
    echo "- \`DEBUG TIER s\` after the fill: $tier_s"
    echo "- used_memory: strata $mem_s, redis $mem_r (after the fill)"
    echo "- after the run: chunks in RAM / on flash $chunks_ram / $chunks_flash; log allocated $alloc B, live $live B; XRANGE s - $ITEMS-0 of both servers $same"
    echo "- fio 4 KiB random reads at depth $CLIENTS ($engine): $fio_iops IOPS, p50 $fio_p50 µs, p99 $fio_p99 µs"
    echo "- $REQUESTS requests per command from $CLIENTS connections (listload: one in flight each; redis-benchmark: its defaults), one run each, in this order; client and server share $(nproc) cores"
    echo
    echo "| command | strata ops/s | redis ops/s | ratio | strata p99 ms | redis p99 ms | strata CPU µs/op | redis CPU µs/op | strata device reads/op | chunk loads | strata journal B/op |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    printf '%s\n' "${rows[@]}"
    commands_section
} >"$OUT"
log "wrote $OUT"
cat "$OUT"
