#!/usr/bin/env bash
# Streams side by side (issue 11's benchmark list): redis-benchmark against
# strata-server and redis-server 7.0, alternating, each run on a fresh
# server. Client and server share the machine's cores.
#   1. XADD of `*` ids with MAXLEN ~ 1000 (one stream, as a capped log);
#   2. XADD of `*` ids without trimming (the stream grows to N entries);
#   3. XREADGROUP ... COUNT 1 STREAMS s > over that stream, one group, 50
#      consumers (each redis-benchmark client reads as the same consumer);
#   4. XRANGE s - + COUNT 10 over it.
# Prints ops/s per test per run.
#   N (200000)  PIPELINE (16)  CLIENTS (50)  RUNS (3)
#   STRATA_ARGS  extra strata-server options (default --appendonly no)
#   SERVERS   what to run, alternating (default "strata redis"; a path is a
#             strata-server binary: A/B of a change, old binary first)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

N=${N:-200000}
PIPELINE=${PIPELINE:-16}
CLIENTS=${CLIENTS:-50}
RUNS=${RUNS:-3}
STRATA_ARGS=${STRATA_ARGS:---appendonly no}

need_common
need redis-server redis-server
need_strata

bench() {  # bench PORT N COMMAND... -> ops/s
    local port=$1 n=$2; shift 2
    redis-benchmark -h 127.0.0.1 -p "$port" -n "$n" -P "$PIPELINE" -c "$CLIENTS" \
        --threads 1 --csv "$@" 2>/dev/null | tail -n +2 | cut -d, -f2 | tr -d '"'
}

set -f
echo "# redis-benchmark -n $N -P $PIPELINE -c $CLIENTS --threads 1: XADD capped | XADD growing | XREADGROUP COUNT 1 | XRANGE COUNT 10"
SERVERS=${SERVERS:-strata redis}
for run in $(seq "$RUNS"); do
    for srv in $SERVERS; do
        port=$(free_port)
        if [ "$srv" = redis ]; then
            start_redis "$port" "$(bench_tmpdir redis)" --appendonly no
        else
            [ "$srv" = strata ] || STRATA_BIN=$srv STRATA_ID=
            # shellcheck disable=SC2086
            start_strata "$port" "$(bench_tmpdir strata)" --maxmemory-ram 4gb $STRATA_ARGS
        fi
        pid=$LAST_PID
        capped=$(bench "$port" "$N" XADD capped MAXLEN '~' 1000 '*' f v)
        growing=$(bench "$port" "$N" XADD s '*' f v)
        redis-cli -p "$port" XGROUP CREATE s g 0 >/dev/null
        readgroup=$(bench "$port" "$N" XREADGROUP GROUP g c COUNT 1 STREAMS s '>')
        left=$(redis-cli -p "$port" XINFO GROUPS s | sed -n 12p)
        range=$(bench "$port" "$N" XRANGE s - + COUNT 10)
        alive "$pid"
        echo "run $run $srv: $capped $growing $readgroup $range (lag after: $left)"
        stop_server "$pid"
    done
done
