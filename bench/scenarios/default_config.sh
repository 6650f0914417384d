#!/usr/bin/env bash
# SET as a new user first measures it: each server with its own defaults
# (strata-server: the journal on, appendfsync everysec, checkpoints;
# redis-server 7.0: RDB snapshots by its default `save`, no AOF), the same
# strata-bench command against both (memtier's shape: 2 threads x 25
# connections, pipeline 8, 512 B, uniform keys), runs alternating, medians
# (issue #12's "SET pipeline 8, each server with its default config" row).
#   KEYS        key range (default 1000000; QUICK: 100000)
#   VALUE_SIZE  (default 512)
#   RUNS        runs per server (default 3; QUICK: 1)
#   TEST_TIME   seconds per run (default 15; QUICK: 3)
set -euo pipefail
source "$(dirname "$0")/common.sh"

if [ "$QUICK" = 1 ]; then d_keys=100000 d_runs=1 d_time=3; else d_keys=1000000 d_runs=3 d_time=15; fi
KEYS=${KEYS:-$d_keys}
VALUE_SIZE=${VALUE_SIZE:-512}
RUNS=${RUNS:-$d_runs}
TEST_TIME=${TEST_TIME:-$d_time}

need_common
need_sb
need redis-server redis-server
OUT=$(result_file default_config)
DEV=$(data_dev "$BENCH_DIR")
T0=$(date +%s)

# Each run on a fresh server with only its address and directory given.
declare -A R
for run in $(seq "$RUNS"); do
    for s in strata redis; do
        port=$(free_port) dir=$(bench_tmpdir "$s")
        if [ "$s" = strata ]; then
            args=(--port "$port" --bind 127.0.0.1 --dir "$dir" --memcached-port 0)
            : "${STRATA_ID:=$(strata_identity)}"
            record "$(printf '%q ' "$STRATA_BIN" "${args[@]}")"
            "$STRATA_BIN" "${args[@]}" >"$dir/server.log" 2>&1 &
        else
            args=(--port "$port" --bind 127.0.0.1 --dir "$dir" --daemonize no)
            record "$(printf '%q ' redis-server "${args[@]}")"
            redis-server "${args[@]}" >"$dir/server.log" 2>&1 &
        fi
        pid=$!
        SERVER_PIDS+=("$pid")
        wait_ping "$port" "$pid" "$dir/server.log"
        SB_THREADS=2 SB_CLIENTS=25 PIPELINE=8 DROP_CACHES=0 sb_run "$pid" "$port" "${s^^}_PORT" 0 \
            -d "$VALUE_SIZE" --ratio 1:0 --key-pattern R:R --key-minimum 1 --key-maximum "$KEYS" \
            --distinct-client-seed --randomize --test-time "$TEST_TIME"
        R[$s.ops]+=" $R_OPS"; R[$s.p50]+=" $R_P50"; R[$s.p99]+=" $R_P99"
        R[$s.scpu]+=" $R_SCPU"; R[$s.ccpu]+=" $R_CCPU"; R[$s.err]+=" $R_ERR"
        stop_server "$pid"
    done
done
elapsed=$(($(date +%s) - T0))

# shellcheck disable=SC2086
md() { median ${R[$1]}; }
{
    scenario_header "SET with each server's default config: strata-server vs redis-server"
    cat <<EOF2

## Setup

- strata-server with no options but its address and directory (journal on, \`appendfsync everysec\`); redis-server 7.0 likewise (RDB \`save\` defaults, no AOF)
- client: \`strata-bench -t 2 -c 25 --pipeline 8 -d $VALUE_SIZE --ratio 1:0 --key-pattern R:R --key-maximum $KEYS --distinct-client-seed --randomize --test-time $TEST_TIME\`, the same for both; $RUNS runs per server alternating, each on a fresh server; medians
- client and server share the machine's 2 cores
- total time of the script: ${elapsed} s

## Results (medians)

| server | SET/s | p50 ms | p99 ms | server CPU % | client CPU % | server CPU µs per SET | errors |
|---|---:|---:|---:|---:|---:|---:|---|
EOF2
    for s in strata redis; do
        echo "| $s | $(md $s.ops) | $(md $s.p50) | $(md $s.p99) | $(md $s.scpu) | $(md $s.ccpu) | $(awk -v c="$(md $s.scpu)" -v o="$(md $s.ops)" 'BEGIN { printf "%.2f", c * 1e4 / o }') | ${R[$s.err]} |"
    done
    echo
    echo "strata ÷ redis: **$(div "$(md strata.ops)" "$(md redis.ops)")**"
    printf '\n## Every run\n\n| server | SET/s | p99 ms |\n|---|---|---|\n'
    for s in strata redis; do echo "| $s | ${R[$s.ops]} | ${R[$s.p99]} |"; done
    commands_section
} >"$OUT"
log "wrote $OUT"
cat "$OUT"
