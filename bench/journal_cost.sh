#!/usr/bin/env bash
# What durability costs on writes: SET throughput with everything in RAM,
# strata-server and redis-server each with appendonly no, appendonly yes +
# everysec, and appendonly yes + always, the same redis-benchmark command
# against all six, runs alternating, medians. Both servers write their log to
# the same device (BENCH_DIR).
#   REQUESTS    -n per run (default 1000000; QUICK: 100000)
#   KEYSPACE    -r (default 100000)
#   VALUE_SIZE  -d (default 512)
#   PIPELINE    -P (default 16)
#   CLIENTS     -c (default 50)
#   RUNS        runs per server (default 3)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

REQUESTS=${REQUESTS:-$([ "$QUICK" = 1 ] && echo 100000 || echo 1000000)}
KEYSPACE=${KEYSPACE:-100000}
VALUE_SIZE=${VALUE_SIZE:-512}
PIPELINE=${PIPELINE:-16}
CLIENTS=${CLIENTS:-50}
RUNS=${RUNS:-3}

need_common
need redis-server redis-server
need_strata
OUT=$(result_file journal_cost)

CONFIGS="no everysec always"
declare -A PORT PID
for c in $CONFIGS; do
    if [ "$c" = no ]; then a=(--appendonly no); else a=(--appendonly yes --appendfsync "$c"); fi
    PORT[strata.$c]=$(free_port); start_strata "${PORT[strata.$c]}" "$(bench_tmpdir strata)" --maxmemory-ram 4gb "${a[@]}"; PID[strata.$c]=$LAST_PID
    PORT[redis.$c]=$(free_port); start_redis "${PORT[redis.$c]}" "$(bench_tmpdir redis)" "${a[@]}"; PID[redis.$c]=$LAST_PID
done
bout=$(bench_tmpdir rb)/out.csv
BENCH=(-t set -n "$REQUESTS" -r "$KEYSPACE" -d "$VALUE_SIZE" -P "$PIPELINE" -c "$CLIENTS" --threads 1 --csv)
record "redis-benchmark -h 127.0.0.1 -p PORT ${BENCH[*]}   # same for all six servers"

declare -A R
for run in $(seq "$RUNS"); do
    for c in $CONFIGS; do for srv in strata redis; do
        k=$srv.$c
        c0=$(cpu_s "${PID[$k]}")
        timed "$bout" redis-benchmark -h 127.0.0.1 -p "${PORT[$k]}" "${BENCH[@]}"
        alive "${PID[$k]}"
        c1=$(cpu_s "${PID[$k]}")
        R[$k.rps]+=" $(bench_csv "$bout" SET 2)"
        R[$k.p50]+=" $(bench_csv "$bout" SET 5)"
        R[$k.p99]+=" $(bench_csv "$bout" SET 7)"
        R[$k.scpu]+=" $(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }')"
        log "run $run $k: SET ${R[$k.rps]##* }/s, server CPU ${R[$k.scpu]##* }s"
    done; done
done
declare -A EXTRA
for c in $CONFIGS; do
    p=${PORT[strata.$c]}
    EXTRA[$c]="journal_bytes $(info "$p" journal_bytes persistence), journal_batches $(info "$p" journal_batches persistence), journal_fsyncs $(info "$p" journal_fsyncs persistence), journal_fsync_avg_us $(info "$p" journal_fsync_avg_us persistence), flash_write_amplification $(info "$p" flash_write_amplification tiered)"
done

# shellcheck disable=SC2086
m() { median ${R[$1]}; }
{
    header "The cost of durability on SET: appendonly no / everysec / always, strata-server and redis-server"
    cat <<EOF2

## Setup

- six servers started by the script, empty, loopback, logs on $BENCH_DIR: strata-server --maxmemory-ram 4gb and redis-server (--save ""), each with \`--appendonly no\`, \`--appendonly yes --appendfsync everysec\`, \`--appendonly yes --appendfsync always\`
- the same client command for all: \`redis-benchmark ${BENCH[*]}\`
- $RUNS runs per server, alternating; medians (per-run values below)
- client and server share $(nproc) cores; server CPU = Δ(utime + stime) per run

## Results (medians)

| appendonly / appendfsync | strata SET/s | redis SET/s | strata ÷ redis | strata p50 / p99 ms | redis p50 / p99 ms | strata ÷ its own appendonly no |
|---|---:|---:|---:|---:|---:|---:|
EOF2
    for c in $CONFIGS; do
        label=$([ "$c" = no ] && echo "no" || echo "yes / $c")
        echo "| $label | $(m strata.$c.rps) | $(m redis.$c.rps) | $(div "$(m strata.$c.rps)" "$(m redis.$c.rps)") | $(m strata.$c.p50) / $(m strata.$c.p99) | $(m redis.$c.p50) / $(m redis.$c.p99) | $(div "$(m strata.$c.rps)" "$(m strata.no.rps)") |"
    done
    printf '\n## Strata journal counters at the end\n\n'
    for c in $CONFIGS; do echo "- $c: ${EXTRA[$c]}"; done
    printf '\n## Every run\n\n| server | config | SET/s | p50 ms | p99 ms | server CPU s |\n|---|---|---|---|---|---|\n'
    for c in $CONFIGS; do for srv in strata redis; do
        k=$srv.$c
        echo "| $srv | $c | ${R[$k.rps]} | ${R[$k.p50]} | ${R[$k.p99]} | ${R[$k.scpu]} |"
    done; done
    commands_section
} >"$OUT"
log "wrote $OUT"
cat "$OUT"
