#!/usr/bin/env bash
# memtier-style hash workloads in RAM, strata-server vs redis-server 7.0:
# one field per hash key (`HSET h:<n> f <VALUE_SIZE B>`, then `HGET h:<n> f`,
# keys uniform over KEYS), redis-benchmark against each server in turn,
# RUNS alternating runs on fresh servers, medians. No persistence on either
# side (strata --appendonly no, redis --appendonly no).
#   REQUESTS (default 1000000; QUICK: 100000)  KEYS (default 100000)
#   VALUE_SIZE (default 100)  PIPELINE (16)  CLIENTS (50)  RUNS (3)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

REQUESTS=${REQUESTS:-$([ "$QUICK" = 1 ] && echo 100000 || echo 1000000)}
KEYS=${KEYS:-100000}
VALUE_SIZE=${VALUE_SIZE:-100}
PIPELINE=${PIPELINE:-16}
CLIENTS=${CLIENTS:-50}
RUNS=${RUNS:-3}

need_common
need redis-server redis-server
need_strata
OUT=$(result_file hash_kv)
value=$(head -c "$VALUE_SIZE" /dev/zero | tr '\0' v)
common=(-n "$REQUESTS" -r "$KEYS" -P "$PIPELINE" -c "$CLIENTS" --threads 1 --csv)
record "redis-benchmark -p PORT ${common[*]} HSET h:__rand_int__ f <${VALUE_SIZE} B>"
record "redis-benchmark -p PORT ${common[*]} HGET h:__rand_int__ f"
out=$(bench_tmpdir rb)/out.csv

declare -A R
for run in $(seq "$RUNS"); do
    for srv in strata redis; do
        port=$(free_port)
        if [ "$srv" = strata ]; then
            start_strata "$port" "$(bench_tmpdir strata)" --maxmemory-ram 4gb
        else
            start_redis "$port" "$(bench_tmpdir redis)"
        fi
        pid=$LAST_PID
        c0=$(cpu_s "$pid")
        for op in HSET HGET; do
            if [ "$op" = HSET ]; then args=(HSET "h:__rand_int__" f "$value"); else args=(HGET "h:__rand_int__" f); fi
            timed "$out" redis-benchmark -h 127.0.0.1 -p "$port" "${common[@]}" "${args[@]}"
            rps=$(tail -n +2 "$out" | head -1 | cut -d, -f2 | tr -d '"')
            p99=$(tail -n +2 "$out" | head -1 | cut -d, -f7 | tr -d '"')
            R[$srv.$op.rps]+=" $rps"
            R[$srv.$op.p99]+=" $p99"
        done
        alive "$pid"
        R[$srv.cpu]+=" $(awk -v a="$c0" -v b="$(cpu_s "$pid")" 'BEGIN { print b - a }')"
        stop_server "$pid"
    done
done

{
    header "memtier-style hash workloads in RAM: strata-server vs redis-server"
    cat <<EOF2

## Results

One field per hash (\`HSET h:<n> f <$VALUE_SIZE B>\`, then \`HGET h:<n> f\`),
$KEYS keys, $REQUESTS requests per test, $CLIENTS connections x pipeline
$PIPELINE, medians of $RUNS runs (fresh servers, alternating). Client and
server share the same cores.

| test | strata ops/s | redis ops/s | strata ÷ redis | strata p99 ms | redis p99 ms |
|---|---:|---:|---:|---:|---:|
EOF2
    for op in HSET HGET; do
        # shellcheck disable=SC2086
        s=$(median ${R[strata.$op.rps]}); r=$(median ${R[redis.$op.rps]})
        # shellcheck disable=SC2086
        echo "| $op | $s | $r | $(div "$s" "$r") | $(median ${R[strata.$op.p99]}) | $(median ${R[redis.$op.p99]}) |"
    done
    # shellcheck disable=SC2086
    printf '\nserver CPU s per run (both tests): strata %s, redis %s\n' "$(median ${R[strata.cpu]})" "$(median ${R[redis.cpu]})"
    commands_section
} >"$OUT"
log "wrote $OUT"
