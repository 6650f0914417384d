#!/usr/bin/env bash
# Side-by-side redis-benchmark runs of several servers, alternating, each
# run on a fresh server: strata-server binaries (paths) and `redis`
# (redis-server 7.0). For A/B timing of a change: build the old binary in
# a git worktree, then
#   SERVERS="/tmp/old/strata-server target/release/strata-server redis" bash bench/ab_servers.sh
# Prints one line per run: the server, then ops/s per test (redis-benchmark
# --csv order). Client and server share the machine's cores.
#   SERVERS   what to run (default: target/release/strata-server redis)
#   TESTS     redis-benchmark -t (default lpush,sadd,hset,zadd)
#   CMD       a command instead of TESTS (e.g. "SETBIT bm __rand_int__ 1";
#             __rand_int__ ranges over RANGE, default 100000)
#   KEYSPACE  with TESTS: -r KEYSPACE (default none: redis-benchmark's
#             tests then use one key)
#   VALUE_SIZE  with TESTS: -d VALUE_SIZE (default: redis-benchmark's 3)
#   N (400000)  PIPELINE (16)  CLIENTS (50)  RUNS (3)
#   STRATA_ARGS  extra strata-server options (default --appendonly no)
#   REDIS_ARGS   extra redis-server options (after --appendonly no)
#   SETUP     a redis-cli command run on each fresh server before the
#             benchmark (e.g. SETUP="SCRIPT LOAD 'return 1'" for
#             CMD="EVALSHA e0e1f9fabfc9d4800c877a703b823ac0578ff8db 0")
set -euo pipefail
source "$(dirname "$0")/lib.sh"

SERVERS=${SERVERS:-"$STRATA_BIN redis"}
TESTS=${TESTS:-lpush,sadd,hset,zadd}
N=${N:-400000}
PIPELINE=${PIPELINE:-16}
CLIENTS=${CLIENTS:-50}
RUNS=${RUNS:-3}
STRATA_ARGS=${STRATA_ARGS:---appendonly no}

need_common
need redis-server redis-server
need_strata
CMD=${CMD:-}
RANGE=${RANGE:-100000}
KEYSPACE=${KEYSPACE:-}
REDIS_ARGS=${REDIS_ARGS:-}
VALUE_SIZE=${VALUE_SIZE:-}
R_ARGS=()
[ -n "$KEYSPACE" ] && R_ARGS=(-r "$KEYSPACE")
[ -n "$VALUE_SIZE" ] && R_ARGS+=(-d "$VALUE_SIZE")
if [ -n "$CMD" ]; then
    echo "# redis-benchmark -n $N -P $PIPELINE -c $CLIENTS -r $RANGE --threads 1 --csv $CMD"
else
    echo "# redis-benchmark -t $TESTS -n $N -P $PIPELINE -c $CLIENTS ${R_ARGS[*]} --threads 1 --csv"
fi
for run in $(seq "$RUNS"); do
    for srv in $SERVERS; do
        port=$(free_port)
        if [ "$srv" = redis ]; then
            # shellcheck disable=SC2086
            start_redis "$port" "$(bench_tmpdir redis)" --appendonly no $REDIS_ARGS
        else
            # shellcheck disable=SC2086
            STRATA_BIN=$srv start_strata "$port" "$(bench_tmpdir strata)" --maxmemory-ram 4gb $STRATA_ARGS
        fi
        pid=$LAST_PID
        if [ -n "${SETUP:-}" ]; then
            eval "redis-cli -h 127.0.0.1 -p $port $SETUP" >/dev/null
        fi
        if [ -n "$CMD" ]; then
            # No globbing of CMD's words (XADD's `*` id).
            set -f
            # shellcheck disable=SC2086
            rps=$(redis-benchmark -h 127.0.0.1 -p "$port" -n "$N" -P "$PIPELINE" -c "$CLIENTS" -r "$RANGE" \
                --threads 1 --csv $CMD 2>/dev/null | tail -n +2 | cut -d, -f2 | tr -d '"' | tr '\n' ' ')
            set +f
        else
            rps=$(redis-benchmark -h 127.0.0.1 -p "$port" -t "$TESTS" -n "$N" -P "$PIPELINE" -c "$CLIENTS" \
                "${R_ARGS[@]}" --threads 1 --csv 2>/dev/null | tail -n +2 | cut -d, -f2 | tr -d '"' | tr '\n' ' ')
        fi
        echo "run $run $srv: $rps"
        stop_server "$pid"
    done
done
