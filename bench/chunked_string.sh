#!/usr/bin/env bash
# One big string, chunked on flash (issue 11, point 5), beside
# redis-server holding it in RAM: SIZE_MB MiB of random bytes in string
# `b`, written 1 MiB at a time with SETRANGE into strata-server
# --maxmemory-ram MAXMEM_RAM (a fraction of its size) with the journal on
# (appendfsync everysec, both servers). Then, at random bits (cold on
# Strata; sent by bench/listload, in Go): GETBIT, SETBIT, BITFIELD GET u32
# and GETRANGE of 100 bytes; then one BITCOUNT of the whole string, timed.
# Reports ops/s of both servers, device reads per command, chunk loads,
# journal bytes per command, RAM, and fio's 4 KiB random-read IOPS at
# CLIENTS reads in flight for the device's ceiling.
#   SIZE_MB (default 512; QUICK: 64)  MAXMEM_RAM (64mb; QUICK: 16mb)
#   REQUESTS (100000; QUICK: 10000)  CLIENTS (32)  RESULT_NAME (chunked_string)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

SIZE_MB=${SIZE_MB:-$([ "$QUICK" = 1 ] && echo 64 || echo 512)}
MAXMEM_RAM=${MAXMEM_RAM:-$([ "$QUICK" = 1 ] && echo 16mb || echo 64mb)}
REQUESTS=${REQUESTS:-$([ "$QUICK" = 1 ] && echo 10000 || echo 100000)}
CLIENTS=${CLIENTS:-32}
ITEMS=$((SIZE_MB * 8 * 1048576))   # bits: listload draws offsets from [0, ITEMS)
VALUE=1

need_common
need_strata
need fio fio
need go golang-go
OUT=$(result_file "${RESULT_NAME:-chunked_string}")

fill() {  # fill PORT: SETRANGE b (i MiB) <1 MiB of random bytes (seeded)>, 4 per pipeline
    PYTHONPATH="$BENCH_ROOT" python3 - "$1" "$SIZE_MB" <<'PY'
import random, resp, sys
port, mb = (int(x) for x in sys.argv[1:])
rng = random.Random(7)
s = resp.connect(port)
def send(batch):
    s.sendall(b"".join(batch))
    got = b""
    while got.count(b"\r\n") < len(batch):
        got += s.recv(1 << 16)
    assert b"-" not in got[:1] and b"\r\n-" not in got, got[:200]
batch = []
for i in range(mb):
    batch.append(resp.cmd([b"SETRANGE", b"b", b"%d" % (i << 20), rng.randbytes(1 << 20)]))
    if len(batch) >= 4:
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

log "filling $SIZE_MB MiB into both servers"
t0=$(date +%s.%N); fill "$sport"; t1=$(date +%s.%N); fill "$rport"; t2=$(date +%s.%N)
fill_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
fill_r=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.1f", b - a }')
wait_settled "$sport" 2>/dev/null || sleep 5
want=$((SIZE_MB * 1048576))
[ "$(redis-cli -p "$sport" strlen b)" = "$want" ] || die "strata STRLEN is not $want"
[ "$(redis-cli -p "$rport" strlen b)" = "$want" ] || die "redis STRLEN is not $want"
tier_s=$(redis-cli -p "$sport" debug tier b)
mem_s=$(info "$sport" used_memory memory)
mem_r=$(info "$rport" used_memory memory)
listload_build

rows=()
row() {
    rows+=("| $1 | $s_rps | $RPS | $(div "$s_rps" "$RPS") | $s_p99 | $P99 | $s_cpu | $CPU_US | $s_reads | $s_loads | $s_j |")
}
for c in getbit bitfield getrange100 setbit; do
    run_go "strata $c" "$sport" "$spid" "$c"
    s_rps=$RPS; s_p99=$P99; s_cpu=$CPU_US; s_reads=$READS; s_loads=$LOADS; s_j=$JBYTES
    run_go "redis $c" "$rport" "$rpid" "$c"
    row "$(echo "$c" | sed 's/getbit/GETBIT b i/; s/setbit/SETBIT b i 1/; s/bitfield/BITFIELD b GET u32 i/; s/getrange100/GETRANGE b i\/8 i\/8+99/') (random bit i)"
done

# One BITCOUNT of the whole string: its time, and what it read.
bitcount() {  # bitcount PORT: "seconds result"
    local t0 t1 n
    t0=$(date +%s.%N); n=$(redis-cli -p "$1" bitcount b); t1=$(date +%s.%N)
    echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') $n"
}
record "redis-cli -p PORT bitcount b"
tier_mark "$sport"
c0=$(cpu_s "$spid")
read -r bc_s bc_n_s <<<"$(bitcount "$sport")"
c1=$(cpu_s "$spid")
bc_cpu_s=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }')
tier_since "$sport" 1
bc_reads=$READS; bc_loads=$LOADS
c0=$(cpu_s "$rpid")
read -r bc_r bc_n_r <<<"$(bitcount "$rport")"
c1=$(cpu_s "$rpid")
bc_cpu_r=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }')
[ "$bc_n_s" = "$bc_n_r" ] && same_bc="the same count ($bc_n_s)" || same_bc="DIFFERENT counts ($bc_n_s, $bc_n_r)"
[ "$(redis-cli -p "$sport" get b | md5sum)" = "$(redis-cli -p "$rport" get b | md5sum)" ] \
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
    header "A big string, chunked on flash, beside redis-server in RAM"
    echo
    echo "- $SIZE_MB MiB of random bytes in string \`b\`, written with SETRANGE 1 MiB at a time, 4 commands per pipeline"
    echo "- strata-server --maxmemory-ram $MAXMEM_RAM --appendonly yes (appendfsync everysec); redis-server --appendonly yes --appendfsync everysec, all in RAM"
    echo "- fill time: strata $fill_s s, redis $fill_r s"
    echo "- \`DEBUG TIER b\` after the fill: $tier_s"
    echo "- used_memory: strata $mem_s, redis $mem_r (after the fill)"
    echo "- after the run: chunks in RAM / on flash $chunks_ram / $chunks_flash; log allocated $alloc B, live $live B; GET b of both servers $same"
    echo "- fio 4 KiB random reads at depth $CLIENTS ($engine): $fio_iops IOPS, p50 $fio_p50 µs, p99 $fio_p99 µs"
    echo "- $REQUESTS requests per command from $CLIENTS connections (listload: one in flight each), one run each, in this order; client and server share $(nproc) cores"
    echo
    echo "| command | strata ops/s | redis ops/s | ratio | strata p99 ms | redis p99 ms | strata CPU µs/op | redis CPU µs/op | strata device reads/op | chunk loads | strata journal B/op |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    printf '%s\n' "${rows[@]}"
    echo
    echo "BITCOUNT b (the whole string, once, after the commands above): strata $bc_s s ($bc_cpu_s s of server CPU, $bc_reads device reads, $bc_loads chunk loads), redis $bc_r s ($bc_cpu_r s of CPU); $same_bc."
    commands_section
} >"$OUT"
log "wrote $OUT"
cat "$OUT"
