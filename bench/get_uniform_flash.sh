#!/usr/bin/env bash
# Uniform random GETs over a dataset ~10x the RAM budget, so nearly every GET
# reads flash (--tiering-promote never keeps the RAM hit ratio near 0). For
# each number of reads in flight, fio 4 KiB O_DIRECT random reads at the same
# depth run right before, on a file in the same partition; the table gives
# strata GET ops/s as a share of fio IOPS (goal: >= 90%).
#   KEYS        keys (default 5000000; QUICK: 400000)
#   VALUE_SIZE  value bytes (default 512)
#   MAXMEM_RAM  strata --maxmemory-ram (default 256mb; QUICK: 64mb)
#   DEPTHS      clients x pipeline per run (default "1x1 8x1 32x1 16x4")
#   DURATION    seconds per fio run; each GET run does fio-IOPS x DURATION
#               GETs (default 20; QUICK: 2)
#   RUNS        repetitions, medians quoted (default 3; QUICK: 1)
#   FIO_SIZE    fio file size (default 4g; QUICK: 1g)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

if [ "$QUICK" = 1 ]; then
    d_keys=400000 d_ram=64mb d_dur=2 d_runs=1 d_fio=1g
else
    d_keys=5000000 d_ram=256mb d_dur=20 d_runs=3 d_fio=4g
fi
KEYS=${KEYS:-$d_keys}
VALUE_SIZE=${VALUE_SIZE:-512}
MAXMEM_RAM=${MAXMEM_RAM:-$d_ram}
DEPTHS=${DEPTHS:-1x1 8x1 32x1 16x4}
DURATION=${DURATION:-$d_dur}
RUNS=${RUNS:-$d_runs}
FIO_SIZE=${FIO_SIZE:-$d_fio}

need fio fio
need_common
need_strata
OUT=$(result_file get_uniform_flash)
DEV=$(data_dev "$BENCH_DIR")

# ---- fio file in the same partition
fdir=$(bench_tmpdir fio); FILE=$fdir/fio.dat
ENGINE=$(fio_engine "$FILE")
log "laying out $FIO_SIZE fio file"
fio_seqwrite "$FILE" "$FIO_SIZE" >/dev/null

# ---- strata, filled
port=$(free_port); dir=$(bench_tmpdir strata)
start_strata "$port" "$dir" --maxmemory-ram "$MAXMEM_RAM" --tiering-promote never; spid=$LAST_PID
log "filling $KEYS keys x $VALUE_SIZE B"
fill_keys "$port" "$KEYS" "$VALUE_SIZE"
[ "$FILL_MISSING" = 0 ] || die "$FILL_MISSING keys could not be set ($FILL_FIRST_ERROR): the keys' index does not fit in --maxmemory-ram $MAXMEM_RAM (see ram_per_key.sh); raise MAXMEM_RAM"
fill_note=$(fill_note)
wait_settled "$port"
check=$(check_values "$port" "$VALUE_SIZE" "$KEYS")
DIRECT=$(info "$port" flash_direct_io tiered)
BACKEND=$(info "$port" flash_io_backend tiered)
[ "$DIRECT" = 1 ] || log "WARNING: flash_direct_io is $DIRECT: flash reads may come from the page cache"
settled="values_in_ram=$(info "$port" values_in_ram tiered), values_in_flash=$(info "$port" values_in_flash tiered), index_bytes=$(info "$port" index_bytes tiered), used_memory=$(info "$port" used_memory memory)"
log "settled: $settled"

# snapshot: device reads, sectors, ram hits, ram misses, fetches, keyspace hits, misses, server CPU
snap() {
    echo "$(dev_reads "$DEV") $(info "$port" tiered_ram_hits tiered) $(info "$port" tiered_ram_misses tiered)" \
        "$(info "$port" tiered_total_fetches tiered) $(info "$port" keyspace_hits stats)" \
        "$(info "$port" keyspace_misses stats) $(cpu_s "$spid")"
}

declare -A FCPU FIO GET P50 P99 FP50 FP99 RPG KPG HIT MISS CHK SCPU CCPU
bout=$(bench_tmpdir rb)/out.csv
for run in $(seq "$RUNS"); do
    for cp in $DEPTHS; do
        c=${cp%x*} p=${cp#*x} d=$((${cp%x*} * ${cp#*x}))
        drop_caches
        read -r fiops fp50 fp99 fcpu < <(fio_randread "$FILE" "$FIO_SIZE" "$ENGINE" "$d" "$DURATION")
        # a multiple of c x P: redis-benchmark completes the last pipeline
        n=$(awk -v i="$fiops" -v t="$DURATION" -v d="$d" 'BEGIN { n = int(i * t / d) * d; print (n < 1000 ? int((1000 + d - 1) / d) * d : n) }')
        drop_caches
        read -r r0 s0 h0 m0 f0 kh0 km0 cpu0 < <(snap)
        cmd=(redis-benchmark -h 127.0.0.1 -p "$port" -c "$c" -P "$p" -n "$n" -r "$KEYS" --csv GET 'key:__rand_int__')
        record "${cmd[*]//$port/PORT}   # -n = fio IOPS at depth $d x $DURATION s"
        timed "$bout" "${cmd[@]}"
        alive "$spid"
        read -r r1 s1 h1 m1 f1 kh1 km1 cpu1 < <(snap)
        ops=$(bench_csv "$bout" GET 2)
        hits=$((h1 - h0)) misses=$((m1 - m0))
        FIO[$cp]+=" $fiops"; FP50[$cp]+=" $fp50"; FP99[$cp]+=" $fp99"; FCPU[$cp]+=" $fcpu"
        GET[$cp]+=" $ops"; P50[$cp]+=" $(bench_csv "$bout" GET 5)"; P99[$cp]+=" $(bench_csv "$bout" GET 7)"
        RPG[$cp]+=" $(div $((r1 - r0)) "$n" %.3f)"
        KPG[$cp]+=" $(div $(((s1 - s0) / 2)) "$n" %.1f)"
        HIT[$cp]+=" $(div "$hits" $((hits + misses)) %.4f)"
        MISS[$cp]+=" $((km1 - km0))"
        CHK[$cp]+=" $([ $((kh1 - kh0)) = "$n" ] && [ $((hits + misses)) = "$n" ] && echo ok || echo "BAD(hits=$((kh1 - kh0)),tiered=$((hits + misses)),n=$n)")"
        SCPU[$cp]+=" $(awk -v a="$cpu0" -v b="$cpu1" -v n="$n" 'BEGIN { printf "%.1f", 1e6 * (b - a) / n }')"
        CCPU[$cp]+=" $(awk -v u="$CLIENT_USER" -v s="$CLIENT_SYS" -v n="$n" 'BEGIN { printf "%.1f", 1e6 * (u + s) / n }')"
        log "run $run c=$c P=$p: fio $fiops IOPS; strata $ops GET/s over $n GETs in ${CLIENT_WALL}s," \
            "device reads $((r1 - r0)) ($(((s1 - s0) / 8)) x 4 KiB), ram hits $hits misses $misses, fetches $((f1 - f0))," \
            "keyspace misses $((km1 - km0)), server CPU ${SCPU[$cp]##* } us/GET, client CPU ${CCPU[$cp]##* } us/GET"
    done
done
alive "$spid"

# median of a space-separated list
# shellcheck disable=SC2086
m() { median $1; }
{
    header "Uniform random GET from flash vs fio at the same depth"
    cat <<EOF

## Setup

- $KEYS keys \`key:%012d\` x $VALUE_SIZE B values (distinct, verified after fill: $check)$fill_note
- strata-server --maxmemory-ram $MAXMEM_RAM --tiering-promote never --threads $STRATA_THREADS; flash_io_backend:$BACKEND, flash_direct_io:$DIRECT
- after fill and settle: $settled
- fio: 4 KiB randread, O_DIRECT, ioengine=$ENGINE, numjobs=1, $DURATION s, $FIO_SIZE file in the same partition (device $DEV)
- per depth and run: drop caches, fio at depth c x P, drop caches, then \`redis-benchmark -c c -P P -n N -r $KEYS GET key:__rand_int__\` with N = fio IOPS x $DURATION (uniform random keys, all existing)
- $RUNS run(s); figures are medians over runs (per-run values in the second table)
- device reads from /sys/class/block/$DEV/stat over the GET run (include other processes' reads of the device); RAM hit ratio = Δtiered_ram_hits / (Δhits + Δmisses) over the GET run
- "check" is ok when Δkeyspace_hits = N and Δ(tiered hits + misses) = N (every GET found its key)
- client and server share $(nproc) cores; CPU = Δ(utime + stime) of the server process / redis-benchmark's user + sys, over the GET run, divided by N; fio's CPU per read = its user + system CPU over its run ÷ its reads (mostly the kernel's block path, which a cold GET pays too)

## Results (medians)

| c x P | fio IOPS | strata GET/s | GET/s ÷ IOPS | strata p50 / p99 ms | fio p50 / p99 µs | device reads per GET | KiB read per GET | RAM hit ratio | keyspace misses | check | server CPU µs/GET | fio CPU µs/read | client CPU µs/GET |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|
EOF
    for cp in $DEPTHS; do
        f=$(m "${FIO[$cp]}") g=$(m "${GET[$cp]}")
        echo "| $cp | $f | $g | $(awk -v a="$g" -v b="$f" 'BEGIN { r = 100 * a / b; printf "%.0f%%%s", r, (r >= 90 ? "" : " (< 90%)") }') | $(m "${P50[$cp]}") / $(m "${P99[$cp]}") | $(m "${FP50[$cp]}") / $(m "${FP99[$cp]}") | $(m "${RPG[$cp]}") | $(m "${KPG[$cp]}") | $(m "${HIT[$cp]}") | $(m "${MISS[$cp]}") |${CHK[$cp]} | $(m "${SCPU[$cp]}") | $(m "${FCPU[$cp]}") | $(m "${CCPU[$cp]}") |"
    done
    printf '\n## Every run\n\n| c x P | fio IOPS | strata GET/s | device reads per GET | RAM hit ratio | server CPU µs/GET | client CPU µs/GET |\n|---|---|---|---|---|---|---|\n'
    for cp in $DEPTHS; do
        echo "| $cp |${FIO[$cp]} |${GET[$cp]} |${RPG[$cp]} |${HIT[$cp]} |${SCPU[$cp]} |${CCPU[$cp]} |"
    done
    commands_section
} >"$OUT"
log "wrote $OUT"
cat "$OUT"
