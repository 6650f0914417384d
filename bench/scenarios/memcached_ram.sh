#!/usr/bin/env bash
# The Memcached protocol in RAM: strata-server's memcached port vs memcached
# 1.6 (Debian package), the same strata-bench -P memcache_text command
# against both, runs alternating, medians. Everything fits in RAM on both
# (strata --appendonly no, a RAM budget above the data: a cache, as memcached).
#   KEYS        (default 1000000; QUICK: 100000)
#   VALUE_SIZE  (default 512)
#   RUNS        runs per server and workload (default 3; QUICK: 1)
#   TEST_TIME   seconds per run (default 15; QUICK: 3)
#   CONFIGS     client shapes "clients:pipeline" (default "8:8 32:1")
#   MIXES       --ratio SET:GET values (default "0:1 1:9 1:0")
set -euo pipefail
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/extra.sh"

if [ "$QUICK" = 1 ]; then d_keys=100000 d_runs=1 d_time=3; else d_keys=1000000 d_runs=3 d_time=15; fi
KEYS=${KEYS:-$d_keys}
VALUE_SIZE=${VALUE_SIZE:-512}
RUNS=${RUNS:-$d_runs}
TEST_TIME=${TEST_TIME:-$d_time}
CONFIGS=${CONFIGS:-8:8 32:1}
MIXES=${MIXES:-0:1 1:9 1:0}

need_common
need_sb
need memcached memcached
OUT=$(result_file memcached_ram)
DEV=$(data_dev "$BENCH_DIR")
T0=$(date +%s)
MB=$((KEYS * (VALUE_SIZE + 200) / 1048576 + 256))

sport=$(free_port); smc=$(free_port); sdir=$(bench_tmpdir strata)
start_strata "$sport" "$sdir" --memcached-port "$smc" --maxmemory-ram "${MB}mb"; spid=$LAST_PID
mport=$(free_port); mdir=$(bench_tmpdir memcached)
start_memcached "$mport" "$mdir" "$MB" "$(nproc)" ""; mpid=$LAST_PID
for s in strata memcached; do
    p=$([ "$s" = strata ] && echo "$smc" || echo "$mport")
    xfill "$p" "${s^^}_PORT" "$KEYS" "$VALUE_SIZE" 1 -P memcache_text
done
S_FLASH=$(info "$sport" values_in_flash tiered)

declare -A R
for cfg in $CONFIGS; do
    c=${cfg%:*} p=${cfg#*:}
    for mix in $MIXES; do
        for run in $(seq "$RUNS"); do
            for s in strata memcached; do
                if [ "$s" = strata ]; then pid=$spid port=$smc si=1; else pid=$mpid port=$mport si=0; fi
                SB_CLIENTS=$c PIPELINE=$p STRATA_INFO_PORT=$sport sb_run "$pid" "$port" "${s^^}_PORT" "$si" \
                    -P memcache_text -d "$VALUE_SIZE" --ratio "$mix" --key-pattern R:R --key-minimum 1 \
                    --key-maximum "$KEYS" --distinct-client-seed --randomize --test-time "$TEST_TIME" \
                    $([ "$s" = strata ] && echo "--info-port $sport")
                k="$cfg/$mix/$s"
                R[$k.ops]+=" $R_OPS"; R[$k.p50]+=" $R_P50"; R[$k.p99]+=" $R_P99"
                R[$k.scpu]+=" $R_SCPU"; R[$k.ccpu]+=" $R_CCPU"; R[$k.err]+=" $R_ERR"
            done
        done
    done
done
alive "$spid"; alive "$mpid"
elapsed=$(($(date +%s) - T0))

# shellcheck disable=SC2086
md() { median ${R[$1]}; }
{
    scenario_header "The Memcached protocol in RAM: strata-server vs memcached"
    cat <<EOF2

## Setup

- strata-server --memcached-port (text protocol) --appendonly no --maxmemory-ram ${MB}mb (values_in_flash after the runs: $S_FLASH); memcached -m $MB -t $(nproc)
- $KEYS keys × $VALUE_SIZE B filled over the memcached protocol into each; reads and writes uniform over all keys
- client: \`strata-bench -P memcache_text -t 1 -c C --pipeline P -d $VALUE_SIZE --ratio SET:GET --key-pattern R:R --distinct-client-seed --randomize --test-time $TEST_TIME\`, the same for both; $RUNS runs per server alternating, medians
- $(client_note)
- total time of the script: ${elapsed} s

## Results (medians)

| clients × pipeline | SET:GET | strata ops/s | memcached ops/s | strata ÷ memcached | strata p50 / p99 ms | memcached p50 / p99 ms | server CPU % strata / memcached | client CPU % |
|---|---|---:|---:|---:|---:|---:|---:|---:|
EOF2
    for cfg in $CONFIGS; do for mix in $MIXES; do
        a="$cfg/$mix/strata" b="$cfg/$mix/memcached"
        echo "| ${cfg/:/ × } | $mix | $(md $a.ops) | $(md $b.ops) | $(div "$(md $a.ops)" "$(md $b.ops)") | $(md $a.p50) / $(md $a.p99) | $(md $b.p50) / $(md $b.p99) | $(md $a.scpu) / $(md $b.scpu) | $(md $a.ccpu) |"
    done; done
    printf '\n## Every run\n\n| key | ops/s | p50 | p99 | server CPU %% | client CPU %% | errors |\n|---|---|---|---|---|---|---|\n'
    for k in $(printf '%s\n' "${!R[@]}" | sed 's/\.[a-z0-9]*$//' | sort -u); do
        echo "| $k | ${R[$k.ops]} | ${R[$k.p50]} | ${R[$k.p99]} | ${R[$k.scpu]} | ${R[$k.ccpu]} | ${R[$k.err]} |"
    done
    commands_section
} >"$OUT"
log "wrote $OUT"
cat "$OUT"
