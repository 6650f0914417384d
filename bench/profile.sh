#!/usr/bin/env bash
# Where the server's CPU goes (issue #12, point 1): `perf record -g` of
# strata-server under a cold (flash-bound) GET load and a RAM GET/SET load,
# each beside the server's CPU time per request; writes a flame graph of
# each (inferno) and a table of the samples by where they were spent
# (bench/profile_buckets.py) to bench/results/profile.md and
# bench/results/profiles/*.svg.
#   KEYS       keys for the cold run (default 600000; QUICK: 100000)
#   MAXMEM_RAM the cold run's --maxmemory-ram (default 64mb; QUICK: 16mb)
#   N          GETs per run (default 300000; QUICK: 50000)
#   CLIENTS    redis-benchmark -c (default 32), pipeline 1
#   LABEL      a name for this build in the report (default: git describe)
#   TAG        suffix of the report's and the flame graphs' names (e.g.
#              ".before" for a profile of an older STRATA_BIN)
# Needs perf (Debian linux-perf) and inferno (`cargo install inferno`).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

if [ "$QUICK" = 1 ]; then d_keys=100000 d_ram=16mb d_n=50000; else d_keys=600000 d_ram=64mb d_n=300000; fi
KEYS=${KEYS:-$d_keys}
MAXMEM_RAM=${MAXMEM_RAM:-$d_ram}
N=${N:-$d_n}
CLIENTS=${CLIENTS:-32}
LABEL=${LABEL:-$(cd "$REPO_ROOT" && git describe --always --dirty)}
TAG=${TAG:-}

need perf linux-perf
need_common
need_strata
command -v inferno-flamegraph >/dev/null || cargo install inferno --locked
OUT=$(result_file "profile$TAG")
SVG_DIR="$RESULTS_DIR/profiles"
mkdir -p "$SVG_DIR"
tmp=$(bench_tmpdir prof)

# profile NAME PID CMD...: runs CMD under `perf record` of PID; prints
# "<server CPU s> <requests/s>"; leaves $tmp/NAME.folded and the SVG.
profile() {
    local name=$1 pid=$2; shift 2
    local c0 c1 rps
    c0=$(cpu_s "$pid")
    perf record -F 1999 -g --call-graph dwarf,16384 -p "$pid" -o "$tmp/$name.data" >/dev/null 2>&1 &
    local perf_pid=$!
    sleep 0.5
    rps=$("$@" 2>/dev/null | tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -1 | cut -d' ' -f1)
    c1=$(cpu_s "$pid")
    kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true
    perf script -i "$tmp/$name.data" 2>/dev/null | inferno-collapse-perf > "$tmp/$name.folded"
    inferno-flamegraph --title "strata-server: $name ($LABEL)" < "$tmp/$name.folded" > "$SVG_DIR/$name$TAG.svg"
    echo "$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }') $rps"
}

# ---- cold: every GET reads flash (promotion off, values 10x the budget)
port=$(free_port); dir=$(bench_tmpdir strata)
start_strata "$port" "$dir" --maxmemory-ram "$MAXMEM_RAM" --tiering-promote never --appendonly no; spid=$LAST_PID
log "filling $KEYS keys x 512 B"
fill_keys "$port" "$KEYS" 512
wait_settled "$port"
read -r cold_cpu cold_rps < <(profile cold_get "$spid" redis-benchmark -h 127.0.0.1 -p "$port" -c "$CLIENTS" -P 1 -n "$N" -r "$KEYS" --threads 1 -q GET 'key:__rand_int__')
record "redis-benchmark -p PORT -c $CLIENTS -P 1 -n $N -r $KEYS --threads 1 -q GET key:__rand_int__   # cold, under perf record -F 1999 -g --call-graph dwarf"
fetches=$(info "$port" tiered_total_fetches tiered)
stop_server "$spid"

# ---- RAM: the same GETs with every value in RAM
port=$(free_port); dir=$(bench_tmpdir strata2)
start_strata "$port" "$dir" --maxmemory-ram 4gb --appendonly no; spid=$LAST_PID
fill_keys "$port" "$KEYS" 512
read -r ram_cpu ram_rps < <(profile ram_get "$spid" redis-benchmark -h 127.0.0.1 -p "$port" -c "$CLIENTS" -P 1 -n "$N" -r "$KEYS" --threads 1 -q GET 'key:__rand_int__')
record "the same GETs against a server with --maxmemory-ram 4gb (every value in RAM)"
stop_server "$spid"

{
    header "Where the server's CPU goes (issue #12)"
    echo "Build: $LABEL. perf record -F 1999 -g (dwarf) of strata-server during each run;"
    echo "client and server share the machine's cores. Flame graphs: profiles/cold_get$TAG.svg,"
    echo "profiles/ram_get$TAG.svg (perf's own overhead is in the CPU figures)."
    echo
    echo "| run | requests/s | server CPU | µs of server CPU per GET | flash reads |"
    echo "|---|---:|---:|---:|---:|"
    echo "| cold GET (c=$CLIENTS, P1) | $cold_rps | ${cold_cpu} s | $(awk -v c="$cold_cpu" -v n="$N" 'BEGIN { printf "%.1f", c * 1e6 / n }') | $fetches |"
    echo "| RAM GET (c=$CLIENTS, P1) | $ram_rps | ${ram_cpu} s | $(awk -v c="$ram_cpu" -v n="$N" 'BEGIN { printf "%.1f", c * 1e6 / n }') | 0 |"
    echo
    echo "### Where each µs of a cold GET goes"
    echo
    python3 "$BENCH_ROOT/profile_buckets.py" "$tmp/cold_get.folded" "$cold_cpu" "$N"
    echo
    echo "### Where each µs of a RAM GET goes"
    echo
    python3 "$BENCH_ROOT/profile_buckets.py" "$tmp/ram_get.folded" "$ram_cpu" "$N"
    commands_section
} > "$OUT"
log "wrote $OUT"
