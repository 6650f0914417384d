#!/usr/bin/env bash
# Corner cases (ScaleFlux "Redis on Flash" white paper, Table 1): GET, SET and
# 70/30 GET/SET with 512 B values, each at the maximum RAM hit ratio (a key
# range that fits in RAM, read once with --tiering-promote first before the
# runs) and at the minimum RAM hit ratio (uniform random keys over a dataset
# several times the RAM budget, --tiering-promote never). The same GET/SET/70-30
# runs of the max-hit key range go to redis-server (all in RAM) for a ratio.
# Client: strata-bench (memtier_benchmark options), on the same cores.
#   KEYS        keys in the dataset, values VALUE_SIZE B (default 2000000; QUICK: 300000)
#   VALUE_SIZE  value bytes (default 512)
#   MAXMEM_RAM  strata --maxmemory-ram (default 256mb; QUICK: 48mb)
#   HOT_KEYS    key range of the max-hit cases (default: values_in_ram after the
#               fill / HOT_DIV, i.e. ~1/4 of what the budget holds)
#   HOT_DIV     see HOT_KEYS (default 4)
#   TEST_TIME   seconds per measured run (default 30; QUICK: 5)
#   RUNS        runs per case, medians quoted (default 3; QUICK: 1)
#   WITH_REDIS  1 = also run the max-hit cases on redis-server (default 1)
#   SB_THREADS / SB_CLIENTS / PIPELINE  strata-bench -t / -c / --pipeline (1 / 8 / 8)
set -euo pipefail
source "$(dirname "$0")/common.sh"

if [ "$QUICK" = 1 ]; then
    d_keys=300000 d_ram=48mb d_time=5 d_runs=1
else
    d_keys=2000000 d_ram=256mb d_time=30 d_runs=3
fi
KEYS=${KEYS:-$d_keys}
VALUE_SIZE=${VALUE_SIZE:-512}
MAXMEM_RAM=${MAXMEM_RAM:-$d_ram}
HOT_KEYS=${HOT_KEYS:-auto}
HOT_DIV=${HOT_DIV:-4}
TEST_TIME=${TEST_TIME:-$d_time}
RUNS=${RUNS:-$d_runs}
WITH_REDIS=${WITH_REDIS:-1}

need_common
need_sb
[ "$WITH_REDIS" = 1 ] && need redis-server redis-server
OUT=$(result_file corners)
DEV=$(data_dev "$BENCH_DIR")
T0=$(date +%s)

# ---- strata, filled
port=$(free_port); dir=$(bench_tmpdir strata)
start_strata "$port" "$dir" --maxmemory-ram "$MAXMEM_RAM" --tiering-promote first; spid=$LAST_PID
log "filling $KEYS keys x $VALUE_SIZE B"
sb_fill "$port" STRATA_PORT "$KEYS" "$VALUE_SIZE"
fill_note=$FILL_NOTE
wait_settled "$port"
DIRECT=$(info "$port" flash_direct_io tiered)
BACKEND=$(info "$port" flash_io_backend tiered)
[ "$DIRECT" = 1 ] || log "WARNING: flash_direct_io is $DIRECT: flash reads may come from the page cache"
settled=$(strata_state "$port")
log "after fill: $settled"
ram_vals=$(info "$port" values_in_ram tiered)
[ "$HOT_KEYS" = auto ] && HOT_KEYS=$((ram_vals / HOT_DIV))
conns=$((SB_THREADS * SB_CLIENTS))
[ "$HOT_KEYS" -ge "$conns" ] || die "HOT_KEYS=$HOT_KEYS is below the number of connections ($conns): raise MAXMEM_RAM"
log "max-hit key range: 1..$HOT_KEYS ($ram_vals values in RAM after the fill)"

# ---- redis-server, filled with the max-hit key range
if [ "$WITH_REDIS" = 1 ]; then
    rport=$(free_port); rdir=$(bench_tmpdir redis)
    start_redis "$rport" "$rdir"; rpid=$LAST_PID
    sb_fill "$rport" REDIS_PORT "$HOT_KEYS" "$VALUE_SIZE"
    redis_mem=$(info "$rport" used_memory memory)
fi

# ---- warm-up: read the max-hit range twice (P:P: each connection its slice)
per_conn=$(((HOT_KEYS + conns - 1) / conns * 2))
log "warm-up: reading keys 1..$HOT_KEYS twice with --tiering-promote first"
sb_run "$spid" "$port" STRATA_PORT 1 -d "$VALUE_SIZE" --ratio 0:1 --key-pattern P:P \
    --key-minimum 1 --key-maximum "$HOT_KEYS" -n "$per_conn"
warm="$R_OPS GET/s, RAM hit ratio $R_HIT, strata flash reads/s $R_FRPS"
after_warm=$(strata_state "$port")
log "after warm-up: $after_warm"

declare -A RATIO=([GET]=0:1 [SET]=1:0 [MIX]=3:7)
declare -A NAME=([GET]=GET [SET]=SET [MIX]="70/30 GET/SET")
OPS_LIST="GET SET MIX"
declare -A OPS AVG P50 P99 HIT FRPS DEVR DEVK FW GC SCPU CCPU ERR MISS SEED
# save RESULT-KEY: append this run's figures (R_*) to the per-case lists
save() {
    OPS[$1]+=" $R_OPS"; AVG[$1]+=" $R_AVG"; P50[$1]+=" $R_P50"; P99[$1]+=" $R_P99"
    HIT[$1]+=" $R_HIT"; FRPS[$1]+=" $R_FRPS"; DEVR[$1]+=" $R_DEVRPS"; DEVK[$1]+=" $R_DEVKBPS"
    FW[$1]+=" $R_FWPS"; GC[$1]+=" $R_GCPS"; SCPU[$1]+=" $R_SCPU"; CCPU[$1]+=" $R_CCPU"; ERR[$1]+=" $R_ERR"; MISS[$1]+=" $R_MISS"; SEED[$1]+=" $R_SEED"
}
common=(-d "$VALUE_SIZE" --distinct-client-seed --randomize --test-time "$TEST_TIME")

# ---- maximum RAM hit ratio: keys 1..HOT_KEYS, strata and redis alternating
for run in $(seq "$RUNS"); do
    for op in $OPS_LIST; do
        args=("${common[@]}" --ratio "${RATIO[$op]}" --key-pattern R:R --key-minimum 1 --key-maximum "$HOT_KEYS")
        log "run $run: $op, max RAM hit"
        sb_run "$spid" "$port" STRATA_PORT 1 "${args[@]}"; save "max:$op"
        if [ "$WITH_REDIS" = 1 ]; then
            sb_run "$rpid" "$rport" REDIS_PORT 0 "${args[@]}"; save "redis:$op"
        fi
    done
done
after_max=$(strata_state "$port")
[ "$WITH_REDIS" = 1 ] && stop_server "$rpid"

# ---- minimum RAM hit ratio: uniform over 1..KEYS, no promotion
record "redis-cli -p STRATA_PORT config set tiering-promote never"
[ "$(redis-cli -p "$port" config set tiering-promote never)" = OK ] || die "CONFIG SET tiering-promote never failed"
for run in $(seq "$RUNS"); do
    for op in $OPS_LIST; do
        log "run $run: $op, min RAM hit"
        sb_run "$spid" "$port" STRATA_PORT 1 "${common[@]}" --ratio "${RATIO[$op]}" --key-pattern R:R \
            --key-minimum 1 --key-maximum "$KEYS"
        save "min:$op"
    done
done
alive "$spid"
after_min=$(strata_state "$port")
elapsed=$(($(date +%s) - T0))

# ---- report
row() {  # row KEY LABEL SERVER RANGE
    local k=$1
    echo "| $2 | $3 | $4 | $(m "${OPS[$k]}") | $(m "${AVG[$k]}") | $(m "${P50[$k]}") | $(m "${P99[$k]}") | $(m "${HIT[$k]}") | $(m "${FRPS[$k]}") | $(m "${DEVR[$k]}") | $(mbps "$(awk -v k="$(m "${DEVK[$k]}")" 'BEGIN { if (k == "-") print "-"; else print k * 1024 }')") | $(mbps "$(m "${FW[$k]}")") | $(mbps "$(m "${GC[$k]}")") | $(m "${SCPU[$k]}") | $(m "${CCPU[$k]}") |"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0 || a == "-" || b == "-") print "n/a"; else printf "%.2f", a / b }'; }
{
    scenario_header "Corner cases: GET, SET, 70/30 at maximum and minimum RAM hit ratio"
    cat <<EOF

After ScaleFlux, *Redis on Flash* (Table 1, corner case analysis): each workload
once on a key range that fits in RAM (maximum RAM hit ratio) and once uniformly
over a dataset several times the RAM budget (minimum RAM hit ratio).

## Setup

- strata-server --maxmemory-ram $MAXMEM_RAM --threads $STRATA_THREADS (0 = one per CPU), --tiering-promote first for the fill, the warm-up and the max-hit runs, then \`CONFIG SET tiering-promote never\` for the min-hit runs; flash_io_backend:$BACKEND, **flash_direct_io:$DIRECT**
- dataset: $KEYS keys \`memtier-<n>\` (n = 1..$KEYS) x $VALUE_SIZE B = $(awk -v k="$KEYS" -v s="$VALUE_SIZE" 'BEGIN { printf "%.0f MiB", k * s / 1048576 }') of values, filled by strata-bench \`-n allkeys --ratio 1:0 --key-pattern P:P\`$( [ -n "$fill_note" ] && printf '\n%s' "$fill_note")
- after the fill settled: $settled
- max-hit key range: 1..$HOT_KEYS (values_in_ram after the fill, $ram_vals, / $HOT_DIV); warm-up before the runs: every key of it read twice (\`--ratio 0:1 --key-pattern P:P -n $per_conn\`): $warm; then $after_warm
- min-hit key range: 1..$KEYS, uniform (R:R), promotion off
- client: strata-bench -t $SB_THREADS -c $SB_CLIENTS --pipeline $PIPELINE ($conns connections, up to $((conns * PIPELINE)) requests in flight), \`--key-pattern R:R --distinct-client-seed --randomize --test-time $TEST_TIME\` (\`--randomize\`: a new base seed per run, listed below, so no run repeats an earlier run's key sequence), \`--ratio\` 0:1 (GET), 1:0 (SET), 3:7 (70/30 GET/SET; memtier's ratio is SET:GET)
- $RUNS run(s) per case; figures are medians of the runs (every run listed below). Order: max-hit runs (per run: GET, SET, 70/30, strata then redis each), then min-hit runs (GET, SET, 70/30).
- before every measured run the page cache is dropped ($( [ "$DROP_CACHES" = 1 ] && echo "echo 3 > /proc/sys/vm/drop_caches" || echo "DROP_CACHES=0: not dropped")); device reads come from /sys/class/block/$DEV/stat over the run (every process's reads of that device count)
- flash GC MiB relocated/s = Δflash_gc_bytes_relocated over the run (INFO before and after): the GC reads segments in slices of up to 1 MiB (\`SLICE_BYTES\` in crates/strata-engine/src/gc.rs), so runs that overwrite flash values (min-hit SET and 70/30) show large device reads beside few strata fetches
- RAM hit ratio, strata flash reads/s (Δtiered_total_fetches) and flash bytes written/s (Δflash_bytes_written) are strata-bench's INFO-tiered deltas over the run; the RAM hit ratio counts GETs only (n/a for SET)
- **client and server share the $(nproc) cores**: server CPU = Δ(utime+stime) of the server process, client CPU = strata-bench's user+sys, both over the client's wall time, in % of one core (200% = both cores)
- redis-server $(redis-server --version 2>/dev/null | awk '{ print $3 }') \`--save "" --appendonly no\`, filled with keys 1..$HOT_KEYS only (the max-hit range; used_memory ${redis_mem:-n/a} B), the same strata-bench command lines; it cannot hold the min-hit dataset without its RAM, so it has no min-hit rows
- total time of the script: ${elapsed} s

## Results (medians)

| case | server | key range | ops/s | avg ms | p50 ms | p99 ms | RAM hit ratio | strata flash reads/s | device reads/s | device MiB read/s | flash MiB written/s | flash GC MiB relocated/s | server CPU % | client CPU % |
|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
EOF
    for op in $OPS_LIST; do
        row "max:$op" "${NAME[$op]}, max RAM hit" strata "1..$HOT_KEYS"
        row "min:$op" "${NAME[$op]}, min RAM hit" strata "1..$KEYS"
    done
    if [ "$WITH_REDIS" = 1 ]; then
        for op in $OPS_LIST; do row "redis:$op" "${NAME[$op]}" redis-server "1..$HOT_KEYS"; done
    fi
    printf '\n## Min-hit vs max-hit (the Table 1 deltas)\n\n| workload | ops/s min ÷ max | avg latency min ÷ max | p99 min ÷ max |\n|---|---:|---:|---:|\n'
    for op in $OPS_LIST; do
        echo "| ${NAME[$op]} | $(ratio "$(m "${OPS[min:$op]}")" "$(m "${OPS[max:$op]}")") | $(ratio "$(m "${AVG[min:$op]}")" "$(m "${AVG[max:$op]}")") | $(ratio "$(m "${P99[min:$op]}")" "$(m "${P99[max:$op]}")") |"
    done
    if [ "$WITH_REDIS" = 1 ]; then
        printf '\n## strata ÷ redis-server, max-hit key range (both in RAM)\n\n| workload | strata ops/s | redis ops/s | ops/s strata ÷ redis | avg ms strata / redis | p99 ms strata / redis | server CPU %% strata / redis | client CPU %% strata / redis |\n|---|---:|---:|---:|---:|---:|---:|---:|\n'
        for op in $OPS_LIST; do
            echo "| ${NAME[$op]} | $(m "${OPS[max:$op]}") | $(m "${OPS[redis:$op]}") | $(ratio "$(m "${OPS[max:$op]}")" "$(m "${OPS[redis:$op]}")") | $(m "${AVG[max:$op]}") / $(m "${AVG[redis:$op]}") | $(m "${P99[max:$op]}") / $(m "${P99[redis:$op]}") | $(m "${SCPU[max:$op]}") / $(m "${SCPU[redis:$op]}") | $(m "${CCPU[max:$op]}") / $(m "${CCPU[redis:$op]}") |"
        done
        echo
        echo "strata uses $( [ "$STRATA_THREADS" = 0 ] && nproc || echo "$STRATA_THREADS") worker threads, redis-server one; both share the cores with the client."
    fi
    printf '\n## Every run\n\n| case | ops/s | avg ms | p99 ms | RAM hit ratio | strata flash reads/s | device reads/s | flash B written/s | GC B relocated/s | server CPU %% | client CPU %% | errors | GET misses | seeds |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'
    for k in max:GET min:GET max:SET min:SET max:MIX min:MIX redis:GET redis:SET redis:MIX; do
        [ -n "${OPS[$k]:-}" ] || continue
        echo "| $k |${OPS[$k]} |${AVG[$k]} |${P99[$k]} |${HIT[$k]} |${FRPS[$k]} |${DEVR[$k]} |${FW[$k]} |${GC[$k]} |${SCPU[$k]} |${CCPU[$k]} |${ERR[$k]} |${MISS[$k]} |${SEED[$k]} |"
    done
    printf '\nErrors are error replies plus requests lost to broken connections; GET misses must be 0 (every key exists).\n'
    printf '\n## Server state\n\n- after the max-hit runs: %s\n- after the min-hit runs: %s\n' "$after_max" "$after_min"
    commands_section
} >"$OUT"
log "wrote $OUT"
cat "$OUT"
