#!/usr/bin/env bash
# Server CPU per request of several strata-server builds, side by side,
# runs alternating (for the A/B of a change on this noisy shared machine:
# CPU per request moves less from run to run than ops/s). Prints one line
# per run: the build, redis-benchmark's ops/s and p99, and the server's
# user+system CPU over the run divided by its requests. Client and server
# share the machine's cores.
#   BINS     strata-server binaries to compare (default: $STRATA_BIN)
#   MODE     ram  (default): a fresh server per run, 200,000 SETs of the
#                 keys first, then `-t TEST` over KEYS keys;
#            cold: one server per build, filled once with KEYS keys under
#                 --maxmemory-ram MAXMEM_RAM (--tiering-promote never), then
#                 GETs of random keys, almost all read from flash
#   TEST (get)  CLIENTS (8)  PIPELINE (8)  N (1000000)  RUNS (3)
#   KEYS (ram: 100000, cold: 600000)  VALUE_SIZE (512)  MAXMEM_RAM (64mb)
# Example (this session's A/B of a connection change):
#   BINS="/tmp/old/strata-server target/release/strata-server" MODE=cold \
#     CLIENTS=32 PIPELINE=1 N=300000 RUNS=4 bash bench/cpu_ab.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"

BINS=${BINS:-$STRATA_BIN}
MODE=${MODE:-ram}
TEST=${TEST:-get}
CLIENTS=${CLIENTS:-8}
PIPELINE=${PIPELINE:-8}
N=${N:-1000000}
RUNS=${RUNS:-3}
VALUE_SIZE=${VALUE_SIZE:-512}
MAXMEM_RAM=${MAXMEM_RAM:-64mb}
case "$MODE" in
    ram) KEYS=${KEYS:-100000} ;;
    cold) KEYS=${KEYS:-600000} ;;
    *) die "MODE must be ram or cold" ;;
esac
need_common
for b in $BINS; do [ -x "$b" ] || die "not an executable: $b"; done

# run BIN PORT PID: one measured run against a running server
run() {
    local c0 c1 out
    c0=$(cpu_s "$3")
    if [ "$MODE" = cold ]; then
        out=$(redis-benchmark -p "$2" -c "$CLIENTS" -P "$PIPELINE" -n "$N" -r "$KEYS" --csv GET 'key:__rand_int__' | tail -1)
    else
        out=$(redis-benchmark -p "$2" -t "$TEST" -c "$CLIENTS" -P "$PIPELINE" -n "$N" -r "$KEYS" -d "$VALUE_SIZE" --csv | tail -1)
    fi
    alive "$3"
    c1=$(cpu_s "$3")
    echo "$1: $(echo "$out" | cut -d, -f2 | tr -d '"') ops/s, p99 $(echo "$out" | cut -d, -f7 | tr -d '"') ms," \
        "server $(awk -v a="$c0" -v b="$c1" -v n="$N" 'BEGIN { printf "%.2f", (b - a) * 1e6 / n }') µs CPU per request"
}

declare -A PORT PID
if [ "$MODE" = cold ]; then
    for b in $BINS; do
        STRATA_BIN=$b
        STRATA_ID=""
        PORT[$b]=$(free_port)
        start_strata "${PORT[$b]}" "$(bench_tmpdir strata)" --maxmemory-ram "$MAXMEM_RAM" --tiering-promote never
        PID[$b]=$LAST_PID
        fill_keys "${PORT[$b]}" "$KEYS" "$VALUE_SIZE"
    done
    sleep 15  # demotion settles
fi
for r in $(seq "$RUNS"); do
    for b in $BINS; do
        if [ "$MODE" = cold ]; then
            run "$b" "${PORT[$b]}" "${PID[$b]}"
        else
            STRATA_BIN=$b
            STRATA_ID=""
            port=$(free_port)
            start_strata "$port" "$(bench_tmpdir strata)"
            redis-benchmark -p "$port" -t set -n 200000 -r "$KEYS" -d "$VALUE_SIZE" -P 16 -c 50 -q >/dev/null
            run "$b" "$port" "$LAST_PID"
            stop_server "$LAST_PID"
        fi
    done
done
