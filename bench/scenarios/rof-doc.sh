#!/usr/bin/env bash
# The Redis docs procedure for benchmarking Redis on Flash (seed 001):
# populate N items of 500 B (-n allkeys --key-pattern P:P --ratio 1:0),
# "centralize the keyspace" (read the middle 27.3% of the key range once,
# P:P --ratio 0:1, as the doc's 41M of 150M, so those values are promoted to
# RAM; then a Gaussian GET pass at the run's sigma), a dry run to check the
# RAM hit ratio (the doc's advice), then the doc's test run:
# --ratio 1:1 -d 500 --key-pattern G:G --key-stddev σ --distinct-client-seed
# --randomize -t 1 -c 20 --pipeline 24, aiming at an 85% RAM hit ratio. The
# RAM budget is the doc's "RAM limit 0.3": 30% of the values plus the keys.
# The report gives the *measured* RAM hit ratio, ops/s and latency.
#   KEYS          items (default 2000000; QUICK: 200000)
#   VALUE_SIZE    bytes (default 500)
#   RAM_FRACTION  share of the values' bytes the RAM budget holds (default 0.3)
#   KEY_OVERHEAD  RAM bytes per key counted on top of that (index etc., default 160)
#   MAXMEM_RAM    strata --maxmemory-ram (default: KEYS*(VALUE_SIZE*RAM_FRACTION+KEY_OVERHEAD))
#   PROMOTE       strata --tiering-promote (default first: RoF promotes on a read)
#   CENTER_FRACTION  share of the key range read by the centralize step (default 0.273)
#   SIGMA         --key-stddev (default KEYS*0.06833, the doc's 10.25M of 150M)
#   TARGET_HIT    RAM hit ratio aimed at (default 0.85)
#   CALIBRATE     1 = adjust σ by bisection until the dry run's measured hit
#                 ratio is within CAL_TOL of TARGET_HIT (default 1)
#   CAL_STEPS / CAL_TIME / CAL_TOL  (default 5 / 10 s / 0.02; QUICK: 3 / 2 s)
#   CENTRALIZE_TIME  seconds of the Gaussian GET pass (default 30; QUICK: 3)
#   TEST_TIME     seconds per measured run (default 60; QUICK: 5; the doc: 600)
#   RUNS          measured runs, medians quoted (default 3; QUICK: 1)
#   SB_THREADS / SB_CLIENTS / PIPELINE  (default 1 / 20 / 24, the doc's)
set -euo pipefail
SB_CLIENTS=${SB_CLIENTS:-20}
PIPELINE=${PIPELINE:-24}
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/extra.sh"

if [ "$QUICK" = 1 ]; then
    d_keys=200000 d_cal=3 d_calt=2 d_cent=3 d_time=5 d_runs=1
else
    d_keys=2000000 d_cal=5 d_calt=10 d_cent=30 d_time=60 d_runs=3
fi
KEYS=${KEYS:-$d_keys}
VALUE_SIZE=${VALUE_SIZE:-500}
RAM_FRACTION=${RAM_FRACTION:-0.3}
KEY_OVERHEAD=${KEY_OVERHEAD:-160}
MAXMEM_RAM=${MAXMEM_RAM:-$(awk -v k="$KEYS" -v v="$VALUE_SIZE" -v f="$RAM_FRACTION" -v o="$KEY_OVERHEAD" 'BEGIN { printf "%dmb", (k * (v * f + o)) / 1048576 + 1 }')}
PROMOTE=${PROMOTE:-first}
CENTER_FRACTION=${CENTER_FRACTION:-0.273}
SIGMA=${SIGMA:-$(awk -v k="$KEYS" 'BEGIN { printf "%.0f", k * 10250000 / 150000000 }')}
TARGET_HIT=${TARGET_HIT:-0.85}
CALIBRATE=${CALIBRATE:-1}
CAL_STEPS=${CAL_STEPS:-$d_cal}
CAL_TIME=${CAL_TIME:-$d_calt}
CAL_TOL=${CAL_TOL:-0.02}
CENTRALIZE_TIME=${CENTRALIZE_TIME:-$d_cent}
TEST_TIME=${TEST_TIME:-$d_time}
RUNS=${RUNS:-$d_runs}

need_common
need_sb
OUT=$(result_file rof-doc)
DEV=$(data_dev "$BENCH_DIR")
T0=$(date +%s)
MEDIAN_KEY=$(((1 + KEYS) / 2))

# ---- populate
port=$(free_port); dir=$(bench_tmpdir strata)
start_strata "$port" "$dir" --maxmemory-ram "$MAXMEM_RAM" --tiering-promote "$PROMOTE"; spid=$LAST_PID
log "populating $KEYS x $VALUE_SIZE B, --maxmemory-ram $MAXMEM_RAM"
sb_fill "$port" STRATA_PORT "$KEYS" "$VALUE_SIZE"
fill_note=$FILL_NOTE
wait_settled "$port"
DIRECT=$(info "$port" flash_direct_io tiered)
BACKEND=$(info "$port" flash_io_backend tiered)
[ "$DIRECT" = 1 ] || log "WARNING: flash_direct_io is $DIRECT"
after_fill=$(strata_state "$port")
log "after fill: $after_fill"

# ---- centralize the keyspace: the doc's P:P read of the middle of the range
width=$(awk -v k="$KEYS" -v f="$CENTER_FRACTION" 'BEGIN { printf "%.0f", k * f }')
cmin=$((MEDIAN_KEY - width / 2)); cmax=$((cmin + width - 1))
conns=$((SB_THREADS * SB_CLIENTS))
log "centralize: reading keys $cmin..$cmax once (P:P)"
sb_run "$spid" "$port" STRATA_PORT 1 -d "$VALUE_SIZE" --ratio 0:1 --key-pattern P:P \
    --key-minimum "$cmin" --key-maximum "$cmax" -n $(((width + conns - 1) / conns))
cent1="$R_OPS GET/s, RAM hit ratio $R_HIT, GET misses $R_MISS"
after_cent1=$(strata_state "$port")
GARGS=(-d "$VALUE_SIZE" --key-minimum 1 --key-maximum "$KEYS" --key-pattern G:G --key-median "$MEDIAN_KEY"
    --distinct-client-seed --randomize)
log "centralize: Gaussian GET pass, sigma $SIGMA, ${CENTRALIZE_TIME}s"
sb_run "$spid" "$port" STRATA_PORT 1 "${GARGS[@]}" --ratio 0:1 --key-stddev "$SIGMA" --test-time "$CENTRALIZE_TIME"
cent2="$R_OPS GET/s, RAM hit ratio $R_HIT"
after_cent=$(strata_state "$port")

# ---- dry run(s): check (and if asked, adjust) σ for the target hit ratio
CAL_ROWS=""
if [ "$CALIBRATE" = 1 ]; then
    calibrate_sigma "$spid" "$port" "$TARGET_HIT" "$SIGMA" $((SIGMA / 2 + 1)) $((SIGMA * 2)) "$CAL_STEPS" "$CAL_TIME" \
        "${GARGS[@]}" --ratio 1:1
    RUN_SIGMA=$CAL_SIGMA
else
    RUN_SIGMA=$SIGMA
fi
log "sigma for the runs: $RUN_SIGMA"

# ---- measured runs: the doc's command
declare -a OPS AVG P50 P99 HIT FRPS DEVR FW SCPU CCPU ERR MISS SOPS GOPS GP99 SP99
for run in $(seq "$RUNS"); do
    sb_run "$spid" "$port" STRATA_PORT 1 "${GARGS[@]}" --ratio 1:1 --key-stddev "$RUN_SIGMA" --test-time "$TEST_TIME" --run-count 1
    OPS+=("$R_OPS"); AVG+=("$R_AVG"); P50+=("$R_P50"); P99+=("$R_P99"); HIT+=("$R_HIT"); FRPS+=("$R_FRPS")
    DEVR+=("$R_DEVRPS"); FW+=("$R_FWPS"); SCPU+=("$R_SCPU"); CCPU+=("$R_CCPU"); ERR+=("$R_ERR"); MISS+=("$R_MISS")
    SOPS+=("$(printf '%.0f' "$(sb_get "$SB_JSON" aggregate.sets.ops_per_sec)")"); GOPS+=("$(printf '%.0f' "$(sb_get "$SB_JSON" aggregate.gets.ops_per_sec)")")
    SP99+=("$(sb_get "$SB_JSON" aggregate.sets.p99_latency_ms)"); GP99+=("$(sb_get "$SB_JSON" aggregate.gets.p99_latency_ms)")
done
alive "$spid"
after=$(strata_state "$port")
elapsed=$(($(date +%s) - T0))
mh=$(median "${HIT[@]}")
verdict=$(awk -v h="$mh" -v g="$TARGET_HIT" 'BEGIN { d = h - g; if (d < 0) d = -d; print (d <= 0.03 ? "within 3 points of" : "**not** within 3 points of") }')

{
    scenario_header "Redis on Flash docs procedure: 1:1 SET:GET, 500 B, aiming at 85% RAM hit"
    cat <<EOF

After the Redis docs, *Benchmarking Redis on Flash with memtier_benchmark*
(seed 001): populate, centralize the keyspace, dry run, then the 85% RAM-hit
run \`--ratio=1:1 -d 500 --key-pattern=G:G --key-stddev=σ --distinct-client-seed
--randomize\`. The doc expects ~160,000 ops/s without replication on 4 shards
of a cluster, average latency sub-millisecond; here one strata process on a
2-core VM, client included.

## Setup

- strata-server --maxmemory-ram $MAXMEM_RAM (= $KEYS × ($VALUE_SIZE B × $RAM_FRACTION + $KEY_OVERHEAD B), the doc's "RAM limit 0.3" plus the keys, unless MAXMEM_RAM was given) --tiering-promote $PROMOTE --threads $STRATA_THREADS; flash_io_backend:$BACKEND, **flash_direct_io:$DIRECT**
- populate: $KEYS keys \`memtier-1..$KEYS\` × $VALUE_SIZE B ($(awk -v k="$KEYS" -v s="$VALUE_SIZE" 'BEGIN { printf "%.0f MiB", k * s / 1048576 }') of values) with \`-n allkeys --key-pattern P:P --ratio 1:0\`$( [ -n "$fill_note" ] && printf '\n%s' "$fill_note")
- after the fill: $after_fill
- centralize, step 1 (the doc's): GET keys $cmin..$cmax once (the middle $CENTER_FRACTION of the range, \`P:P --ratio 0:1\`): $cent1
- after step 1: $after_cent1
- centralize, step 2: Gaussian GETs around key $MEDIAN_KEY, σ = $SIGMA, ${CENTRALIZE_TIME} s: $cent2
- after step 2: $after_cent
- dry runs (the doc: "do a dry run and double check the RAM Hit Ratio"): $([ "$CALIBRATE" = 1 ] && echo "σ adjusted by bisection on log σ within [σ/2, 2σ] until the measured hit ratio is within $CAL_TOL of $TARGET_HIT (at most $CAL_STEPS probes; each a settle run and a measured run of $CAL_TIME s, 1:1 SET:GET)" || echo "not run (CALIBRATE=0)"); σ of the measured runs: **$RUN_SIGMA** (the doc's proportion would be $SIGMA = $KEYS × 10.25M / 150M)
- measured: $RUNS run(s) of ${TEST_TIME} s (the doc: 600 s), \`-t $SB_THREADS -c $SB_CLIENTS --pipeline $PIPELINE\` ($((SB_THREADS * SB_CLIENTS)) connections, up to $((SB_THREADS * SB_CLIENTS * PIPELINE)) requests in flight), page cache dropped before every run, device reads from /sys/class/block/$DEV/stat
- RAM hit ratio = Δtiered_ram_hits / Δ(hits + misses) over the run (GETs and the reads SET does not make: SETs go to RAM)
- $(client_note)
- total time of the script: ${elapsed} s

EOF
    if [ "$CALIBRATE" = 1 ]; then
        printf '## Dry runs (σ search)\n\n| probe | σ | settle-run hit ratio | measured hit ratio | ops/s | p99 ms |\n|---|---:|---:|---:|---:|---:|\n%s\n' "$CAL_ROWS"
    fi
    cat <<EOF
## Result (medians of $RUNS run(s))

| measured RAM hit ratio | ops/s (SET+GET) | SET/s | GET/s | avg ms | p50 ms | p99 ms | SET p99 ms | GET p99 ms | strata flash reads/s | device reads/s | flash MiB written/s | server CPU % | client CPU % |
|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
| **$mh** | **$(median "${OPS[@]}")** | $(median "${SOPS[@]}") | $(median "${GOPS[@]}") | **$(median "${AVG[@]}")** | $(median "${P50[@]}") | **$(median "${P99[@]}")** | $(median "${SP99[@]}") | $(median "${GP99[@]}") | $(median "${FRPS[@]}") | $(median "${DEVR[@]}") | $(mbps "$(median "${FW[@]}")") | $(median "${SCPU[@]}") | $(median "${CCPU[@]}") |

The measured RAM hit ratio is $verdict the $TARGET_HIT aimed at.

## Every measured run

| run | RAM hit ratio | ops/s | avg ms | p50 ms | p99 ms | flash reads/s | device reads/s | flash B written/s | server CPU % | client CPU % | errors | GET misses |
|---|---|---|---|---|---|---|---|---|---|---|---|---|
EOF
    for i in "${!OPS[@]}"; do
        echo "| $((i + 1)) | ${HIT[$i]} | ${OPS[$i]} | ${AVG[$i]} | ${P50[$i]} | ${P99[$i]} | ${FRPS[$i]} | ${DEVR[$i]} | ${FW[$i]} | ${SCPU[$i]} | ${CCPU[$i]} | ${ERR[$i]} | ${MISS[$i]} |"
    done
    printf '\nGET misses must be 0 (every key exists).\n\n## Server state at the end\n\n- %s\n' "$after"
    commands_section
} >"$OUT"
log "wrote $OUT"
cat "$OUT"
