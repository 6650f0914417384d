#!/usr/bin/env bash
# GET and SET with everything in RAM: strata-server vs redis-server, the same
# redis-benchmark command against both, runs alternating, medians.
#   REQUESTS    -n per run (default 2000000; QUICK: 200000)
#   KEYSPACE    -r (default 100000)
#   VALUE_SIZE  -d (default 512)
#   PIPELINE    -P (default 16)
#   CLIENTS     -c (default 50)
#   RUNS        runs per server (default 3)
#   MAXMEM_RAM  strata --maxmemory-ram (default 4gb)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

REQUESTS=${REQUESTS:-$([ "$QUICK" = 1 ] && echo 200000 || echo 2000000)}
KEYSPACE=${KEYSPACE:-100000}
VALUE_SIZE=${VALUE_SIZE:-512}
PIPELINE=${PIPELINE:-16}
CLIENTS=${CLIENTS:-50}
RUNS=${RUNS:-3}
MAXMEM_RAM=${MAXMEM_RAM:-4gb}

need_common
need redis-server redis-server
need_strata
OUT=$(result_file ram_get_set)

sport=$(free_port); start_strata "$sport" "$(bench_tmpdir strata)" --maxmemory-ram "$MAXMEM_RAM"; spid=$LAST_PID
rport=$(free_port); start_redis "$rport" "$(bench_tmpdir redis)"; rpid=$LAST_PID
bout=$(bench_tmpdir rb)/out.csv
BENCH=(-t get,set -n "$REQUESTS" -r "$KEYSPACE" -d "$VALUE_SIZE" -P "$PIPELINE" -c "$CLIENTS" --threads 1 --csv)
record "redis-benchmark -h 127.0.0.1 -p PORT ${BENCH[*]}   # same for both servers; --csv instead of -q for parsing"

declare -A R   # R[server.cmd.column] = space-separated values over runs
for run in $(seq "$RUNS"); do
    for srv in strata redis; do
        if [ "$srv" = strata ]; then port=$sport pid=$spid; else port=$rport pid=$rpid; fi
        c0=$(cpu_s "$pid")
        timed "$bout" redis-benchmark -h 127.0.0.1 -p "$port" "${BENCH[@]}"
        alive "$pid"
        c1=$(cpu_s "$pid")
        for cmd in SET GET; do
            R[$srv.$cmd.rps]+=" $(bench_csv "$bout" "$cmd" 2)"
            R[$srv.$cmd.p50]+=" $(bench_csv "$bout" "$cmd" 5)"
            R[$srv.$cmd.p99]+=" $(bench_csv "$bout" "$cmd" 7)"
        done
        R[$srv.scpu]+=" $(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }')"
        R[$srv.ccpu]+=" $(awk -v u="$CLIENT_USER" -v s="$CLIENT_SYS" 'BEGIN { printf "%.2f", u + s }')"
        R[$srv.wall]+=" $CLIENT_WALL"
        log "run $run $srv: SET ${R[$srv.SET.rps]##* }/s GET ${R[$srv.GET.rps]##* }/s," \
            "server CPU ${R[$srv.scpu]##* }s, client CPU ${R[$srv.ccpu]##* }s, wall ${CLIENT_WALL}s"
    done
done
declare -A KS
for srv in strata redis; do
    port=$([ "$srv" = strata ] && echo "$sport" || echo "$rport")
    KS[$srv]="DBSIZE $(redis-cli -p "$port" dbsize), keyspace_hits $(info "$port" keyspace_hits stats), keyspace_misses $(info "$port" keyspace_misses stats)"
done
s_flash=$(info "$sport" values_in_flash tiered)

# shellcheck disable=SC2086
m() { median ${R[$1]}; }
{
    header "GET/SET in RAM: strata-server vs redis-server"
    cat <<EOF

## Setup

- both servers started by the script, empty, loopback; redis-server with --save "" --appendonly no; strata-server --maxmemory-ram $MAXMEM_RAM --threads $STRATA_THREADS (values_in_flash at the end: $s_flash)
- the same client command for both: \`redis-benchmark ${BENCH[*]}\` (SET runs first, then GET, in each run)
- $RUNS runs per server, alternating strata, redis, strata, ...; figures are medians (per-run values below)
- server CPU = Δ(utime + stime) of the server process over the run (SET + GET together, $((2 * REQUESTS)) requests); client CPU = redis-benchmark's user + sys
- client and server share $(nproc) cores
- at the end (sanity: both servers saw the same workload): strata ${KS[strata]}; redis ${KS[redis]}

## Results (medians)

| command | strata ops/s | redis ops/s | strata ÷ redis | strata p50 / p99 ms | redis p50 / p99 ms |
|---|---:|---:|---:|---:|---:|
EOF
    for cmd in SET GET; do
        s=$(m strata.$cmd.rps) r=$(m redis.$cmd.rps)
        echo "| $cmd | $s | $r | $(div "$s" "$r") | $(m strata.$cmd.p50) / $(m strata.$cmd.p99) | $(m redis.$cmd.p50) / $(m redis.$cmd.p99) |"
    done
    cat <<EOF

| server | server CPU s per run | µs server CPU per request | client CPU s per run | wall s per run |
|---|---:|---:|---:|---:|
EOF
    for srv in strata redis; do
        echo "| $srv | $(m $srv.scpu) | $(awk -v c="$(m $srv.scpu)" -v n=$((2 * REQUESTS)) 'BEGIN { printf "%.2f", 1e6 * c / n }') | $(m $srv.ccpu) | $(m $srv.wall) |"
    done
    printf '\n## Every run\n\n| figure | strata | redis |\n|---|---|---|\n'
    for k in SET.rps GET.rps SET.p99 GET.p99 scpu ccpu wall; do
        echo "| $k |${R[strata.$k]} |${R[redis.$k]} |"
    done
    commands_section
} >"$OUT"
log "wrote $OUT"
cat "$OUT"
