#!/usr/bin/env bash
# SET when every SET pushes a value to flash, beside the same SETs with
# everything in RAM (issue #12, point 6): KEYS keys are set once, then N
# uniform SETs over them (redis-benchmark, 8 connections x pipeline 8,
# 512 B) against a server whose RAM budget holds the index and few values,
# and against one with 4 GB. Prints per run: SET/s, the server's CPU per SET,
# the background thread's (strata-tiering) CPU per SET, flash written; then
# the ratio of the two rates.
#   KEYS        keys (default 1000000)
#   N           SETs measured (default 2000000)
#   MAXMEM_RAM  the demoting server's budget (default 128mb: the index of
#               1M keys takes ~90 MB of it)
#   RUNS        alternating runs (default 2)
# Client and server share the machine's cores.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

KEYS=${KEYS:-1000000}
N=${N:-2000000}
MAXMEM_RAM=${MAXMEM_RAM:-128mb}
RUNS=${RUNS:-2}
need_common
need_strata

# thread_cpu PID COMM: CPU seconds of the process's threads named COMM
thread_cpu() {
    local t sum=0
    for t in /proc/"$1"/task/*; do
        [ "$(cat "$t/comm")" = "$2" ] || continue
        sum=$(sed 's/.*) //' "$t/stat" | awk -v s="$sum" -v c="$CLK_TCK" '{ printf "%.2f", s + ($12 + $13) / c }')
    done
    echo "$sum"
}

one() {
    local mem=$1 port dir pid c0 c1 t0 t1 w0 w1 rps
    port=$(free_port); dir=$(bench_tmpdir strata)
    start_strata "$port" "$dir" --maxmemory-ram "$mem" --tiering-promote never; pid=$LAST_PID
    redis-benchmark -p "$port" -t set -n "$KEYS" -r "$KEYS" -d 512 -P 16 -c 50 --threads 1 -q >/dev/null 2>&1
    sleep 3
    c0=$(cpu_s "$pid"); t0=$(thread_cpu "$pid" strata-tiering); w0=$(info "$port" flash_bytes_written)
    rps=$(redis-benchmark -p "$port" -t set -n "$N" -r "$KEYS" -d 512 -P 8 -c 8 --threads 1 -q 2>/dev/null \
        | tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -1 | cut -d' ' -f1)
    c1=$(cpu_s "$pid"); t1=$(thread_cpu "$pid" strata-tiering); w1=$(info "$port" flash_bytes_written)
    LAST_RPS=$rps
    printf '%-6s SET/s %s  server µs/SET %s  strata-tiering µs/SET %s  flash MB %s  values in RAM %s  backpressure waits %s\n' \
        "$mem" "$rps" \
        "$(awk -v a="$c0" -v b="$c1" -v n="$N" 'BEGIN { printf "%.2f", (b - a) * 1e6 / n }')" \
        "$(awk -v a="$t0" -v b="$t1" -v n="$N" 'BEGIN { printf "%.2f", (b - a) * 1e6 / n }')" \
        $(((w1 - w0) / 1000000)) "$(info "$port" values_in_ram)" "$(info "$port" write_backpressure_waits)"
    stop_server "$pid"
}

record "redis-benchmark -t set -n $KEYS -r $KEYS -d 512 -P 16 -c 50   # fill"
record "redis-benchmark -t set -n $N -r $KEYS -d 512 -P 8 -c 8 --threads 1   # measured"
for run in $(seq "$RUNS"); do
    log "run $run"
    one 4gb; ram=$LAST_RPS
    one "$MAXMEM_RAM"
    echo "run $run: SET that demotes / SET in RAM = $(awk -v a="$LAST_RPS" -v b="$ram" 'BEGIN { printf "%.2f", a / b }') (bar: 0.80)"
done
