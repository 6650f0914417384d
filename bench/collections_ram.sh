#!/usr/bin/env bash
# Collection commands with everything in RAM: strata-server vs redis-server,
# the same redis-benchmark command against both, runs alternating, medians.
# Two pairs of servers: without persistence (strata --appendonly no, redis
# --appendonly no) and with a journal fsynced every second on both
# (strata's default; redis --appendonly yes --appendfsync everysec).
#   REQUESTS    -n per run (default 1000000; QUICK: 100000)
#   PIPELINE    -P (default 16)
#   CLIENTS     -c (default 50)
#   RUNS        runs per server (default 3)
#   TESTS       -t (default: the issue's list)
#   MODES       "cache aof" (default both)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

REQUESTS=${REQUESTS:-$([ "$QUICK" = 1 ] && echo 100000 || echo 1000000)}
PIPELINE=${PIPELINE:-16}
CLIENTS=${CLIENTS:-50}
RUNS=${RUNS:-3}
TESTS=${TESTS:-lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange_100}
MODES=${MODES:-cache aof}

need_common
need redis-server redis-server
need_strata
OUT=$(result_file collections_ram)
BENCH=(-t "$TESTS" -n "$REQUESTS" -P "$PIPELINE" -c "$CLIENTS" --threads 1 --csv)
record "redis-benchmark -h 127.0.0.1 -p PORT ${BENCH[*]}   # same for both servers"
bout=$(bench_tmpdir rb)/out.csv

declare -A R      # R[mode.server.test.col] = values over runs
for mode in $MODES; do
    if [ "$mode" = aof ]; then
        sargs=(--appendonly yes --appendfsync everysec) rargs=(--appendonly yes --appendfsync everysec)
    else
        sargs=(--appendonly no) rargs=(--appendonly no)
    fi
    for run in $(seq "$RUNS"); do
        for srv in strata redis; do
            # Fresh servers each run: LPUSH and friends grow one key.
            port=$(free_port)
            if [ "$srv" = strata ]; then
                start_strata "$port" "$(bench_tmpdir strata)" --maxmemory-ram 4gb "${sargs[@]}"
            else
                start_redis "$port" "$(bench_tmpdir redis)" "${rargs[@]}"
            fi
            pid=$LAST_PID
            c0=$(cpu_s "$pid")
            timed "$bout" redis-benchmark -h 127.0.0.1 -p "$port" "${BENCH[@]}"
            alive "$pid"
            c1=$(cpu_s "$pid")
            # One line per test: "name",rps,avg,min,p50,p95,p99,max (names
            # may hold spaces: keys use their first word, and the LPUSH that
            # fills the list for LRANGE is LPUSH_for_LRANGE).
            while IFS=, read -r name rps _ _ _ _ p99 _; do
                name=${name//\"/}
                case "$name" in "LPUSH (needed"*) name=LPUSH_for_LRANGE ;; *) name=${name%% *} ;; esac
                R[$mode.$srv.$name.rps]+=" ${rps//\"/}"
                R[$mode.$srv.$name.p99]+=" ${p99//\"/}"
            done < <(tail -n +2 "$bout")
            R[$mode.$srv.scpu]+=" $(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }')"
            R[$mode.$srv.ccpu]+=" $(awk -v u="$CLIENT_USER" -v s="$CLIENT_SYS" 'BEGIN { printf "%.2f", u + s }')"
            if [ "$srv" = strata ]; then
                R[$mode.strata.flash]+=" $(info "$port" flash_bytes_written tiered)"
            fi
            log "$mode run $run $srv: server CPU ${R[$mode.$srv.scpu]##* }s, client CPU ${R[$mode.$srv.ccpu]##* }s"
            stop_server "$pid"
        done
    done
done
ORDER=$(tail -n +2 "$bout" | cut -d, -f1 | tr -d '"' | sed 's/^LPUSH (needed.*/LPUSH_for_LRANGE/; s/ .*//')

# shellcheck disable=SC2086
m() { median ${R[$1]}; }
{
    header "Collection commands in RAM: strata-server vs redis-server"
    echo
    echo "## Setup"
    echo
    echo "- a fresh pair of servers for every run (LPUSH and friends grow a single key, as redis-benchmark does), loopback"
    echo "- cache: strata --appendonly no vs redis --appendonly no; aof: strata --appendonly yes --appendfsync everysec (its default) vs redis --appendonly yes --appendfsync everysec"
    echo "- the same client command for both: \`redis-benchmark ${BENCH[*]}\`"
    echo "- $RUNS runs per server per mode, alternating strata, redis; figures are medians"
    echo "- client and server share $(nproc) cores"
    echo
    for mode in $MODES; do
        echo "## $mode (medians)"
        echo
        echo "| test | strata ops/s | redis ops/s | strata ÷ redis | strata p99 ms | redis p99 ms |"
        echo "|---|---:|---:|---:|---:|---:|"
        for name in $ORDER; do
            s=$(m $mode.strata.$name.rps) r=$(m $mode.redis.$name.rps)
            echo "| $name | $s | $r | $(div "$s" "$r") | $(m $mode.strata.$name.p99) | $(m $mode.redis.$name.p99) |"
        done
        echo
        echo "server CPU s per run: strata $(m $mode.strata.scpu), redis $(m $mode.redis.scpu); client CPU s per run: strata runs $(m $mode.strata.ccpu), redis runs $(m $mode.redis.ccpu); strata flash bytes written per run: $(m $mode.strata.flash)"
        echo
    done
    commands_section
} >"$OUT"
log "wrote $OUT"
cat "$OUT"
