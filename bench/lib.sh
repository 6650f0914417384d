# shellcheck shell=bash
# Shared helpers for the Strata benchmarks. Source it from a bench script:
#   source "$(dirname "$0")/lib.sh"
# Common parameters (environment variables):
#   QUICK=1        smoke-run sizes (each script picks its own)
#   BENCH_DIR      data directory; fio files and server dirs go here, so the
#                  device under test is the one holding it (default /work/bench-data)
#   STRATA_BIN     strata-server binary (default target/release/strata-server,
#                  built with cargo if missing)
#   STRATA_THREADS --threads for strata-server (default 0 = one per CPU)
#   RESULTS_DIR    where <name>.md / <name>.quick.md go (default bench/results)

BENCH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(dirname "$BENCH_ROOT")
QUICK=${QUICK:-0}
BENCH_DIR=${BENCH_DIR:-/work/bench-data}
STRATA_BIN=${STRATA_BIN:-$REPO_ROOT/target/release/strata-server}
STRATA_THREADS=${STRATA_THREADS:-0}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_ROOT/results}
CLK_TCK=$(getconf CLK_TCK)

SERVER_PIDS=()
CMDLOG=$(mktemp)
mkdir -p "$BENCH_DIR"
# everything a run creates under BENCH_DIR goes in RUN_DIR, removed on exit
RUN_DIR=$(mktemp -d -p "$BENCH_DIR" "run.XXXXXX")
CLEANUP_PATHS=("$CMDLOG" "$RUN_DIR")

log() { echo "[$(date +%T)] $*" >&2; }
die() { log "FATAL: $*"; exit 1; }

# results file name: <name>.md, or <name>.quick.md with QUICK=1
result_file() {
    mkdir -p "$RESULTS_DIR"
    if [ "$QUICK" = 1 ]; then echo "$RESULTS_DIR/$1.quick.md"; else echo "$RESULTS_DIR/$1.md"; fi
}

# ---------------------------------------------------------------- tools
APT_UPDATED=0
need() {  # need COMMAND DEBIAN-PACKAGE
    command -v "$1" >/dev/null 2>&1 && return 0
    log "installing $2 (for $1)"
    if [ "$APT_UPDATED" = 0 ]; then apt-get update; APT_UPDATED=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y "$2"
}

need_common() {
    need redis-cli redis-tools
    need redis-benchmark redis-tools
    need python3 python3
    need lsblk util-linux
    need findmnt util-linux
}

need_strata() {
    if [ ! -x "$STRATA_BIN" ]; then
        command -v cargo >/dev/null || die "$STRATA_BIN missing and no cargo to build it"
        log "building strata-server (release)"
        (cd "$REPO_ROOT" && cargo build --release -p strata-server)
    fi
}

# record a command line for the results file (and run nothing)
record() { echo "$*" >>"$CMDLOG"; }

# ------------------------------------------------------------- cleanup
cleanup() {
    local pid
    for pid in "${SERVER_PIDS[@]}"; do stop_server "$pid"; done
    SERVER_PIDS=()
    rm -rf "${CLEANUP_PATHS[@]}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# a fresh directory under BENCH_DIR, removed on exit
bench_tmpdir() { mktemp -d -p "$RUN_DIR" "$1.XXXXXX"; }

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# ------------------------------------------------------------- servers
# start_strata PORT DIR [--option value ...]; sets LAST_PID
start_strata() {
    local port=$1 dir=$2; shift 2
    local args=(--port "$port" --bind 127.0.0.1 --dir "$dir" --threads "$STRATA_THREADS"
        --save "" --appendonly no --memcached-port 0 --loglevel warning
        --enable-debug-command yes "$@")
    : "${STRATA_ID:=$(strata_identity)}"
    record "$(printf '%q ' "$STRATA_BIN" "${args[@]}")"
    "$STRATA_BIN" "${args[@]}" >"$dir/server.log" 2>&1 &
    LAST_PID=$!
    SERVER_PIDS+=("$LAST_PID")
    wait_ping "$port" "$LAST_PID" "$dir/server.log"
}

# start_redis PORT DIR [--option value ...]; sets LAST_PID
start_redis() {
    local port=$1 dir=$2; shift 2
    need redis-server redis-server
    local args=(--port "$port" --bind 127.0.0.1 --dir "$dir" --save "" --appendonly no
        --daemonize no --loglevel warning "$@")
    record "$(printf '%q ' redis-server "${args[@]}")"
    redis-server "${args[@]}" >"$dir/server.log" 2>&1 &
    LAST_PID=$!
    SERVER_PIDS+=("$LAST_PID")
    wait_ping "$port" "$LAST_PID" "$dir/server.log"
}

wait_ping() {  # wait_ping PORT PID LOGFILE
    local i
    for i in $(seq 100); do
        [ "$(redis-cli -p "$1" ping 2>/dev/null)" = PONG ] && return 0
        kill -0 "$2" 2>/dev/null || { tail -20 "$3" >&2; die "server on port $1 exited"; }
        sleep 0.1
    done
    die "server on port $1 does not answer PING"
}

stop_server() {
    local pid=$1 i
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        log "WARNING: pid $pid ignored SIGTERM for 10 s; killing it"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

# the server must still be running (a crash mid-benchmark must not go unseen)
alive() { kill -0 "$1" 2>/dev/null || die "server pid $1 died (see its server.log)"; }

# info PORT FIELD [SECTION]: one INFO field
info() {
    # (awk reads to the end: exiting early would SIGPIPE redis-cli, which
    # pipefail turns into a failure)
    redis-cli -p "$1" info "${3:-everything}" | tr -d '\r' | awk -F: -v f="$2" '$1 == f && !done { print $2; done = 1 }'
}

# cpu_s PID: user+system CPU seconds the process used so far
cpu_s() {
    sed 's/.*) //' "/proc/$1/stat" | awk -v t="$CLK_TCK" '{ printf "%.2f", ($12 + $13) / t }'
}

# ---------------------------------------------------------------- fill
# fill_keys PORT N SIZE: SET key:%012d (0..N-1) to a deterministic SIZE-byte
# value; sets FILL_ERRORS (error replies, e.g. OOM) and FILL_FIRST_ERROR.
# Keys whose SET failed are set again by `fill.py --repair` (after demotion
# settled); FILL_REPAIRED and FILL_MISSING tell how that went.
fill_keys() {
    local port=$1 n=$2 size=$3 out sum
    record "python3 bench/fill.py $n $size | redis-cli -p PORT --pipe --pipe-timeout 300"
    out=$(python3 "$BENCH_ROOT/fill.py" "$n" "$size" | redis-cli -p "$port" --pipe --pipe-timeout 300 2>&1) || true
    sum=$(echo "$out" | grep -E '^errors: [0-9]+, replies: [0-9]+$' | tail -1) || true
    log "fill: ${sum:-$(echo "$out" | tail -2)}"
    [[ "$sum" == *"replies: $n" ]] || die "fill: redis-cli --pipe did not get $n replies: $(echo "$out" | tail -3)"
    FILL_ERRORS=$(echo "$sum" | sed 's/errors: \([0-9]*\),.*/\1/')
    FILL_FIRST_ERROR=$(echo "$out" | grep -v -e '^All data transferred' -e '^Last reply' -e '^errors: ' | head -1) || true
    FILL_REPAIRED=0 FILL_MISSING=0
    [ "$FILL_ERRORS" = 0 ] && return 0
    log "WARNING: $FILL_ERRORS SETs failed, first error: $FILL_FIRST_ERROR; setting the missing keys again"
    wait_settled "$port" 120
    record "python3 bench/fill.py --repair PORT $size $n   # only because SETs failed"
    read -r FILL_REPAIRED FILL_MISSING < <(python3 "$BENCH_ROOT/fill.py" --repair "$port" "$size" "$n")
    log "repair: $FILL_REPAIRED keys set, $FILL_MISSING still missing"
}

# fill_note: a newline and a results line about failed SETs ("" when none failed)
fill_note() {
    [ "$FILL_ERRORS" = 0 ] && return 0
    printf '\n%s' "- **the server refused $FILL_ERRORS of the fill's SETs** (first error: \`$FILL_FIRST_ERROR\`); a second attempt at the missing keys (\`fill.py --repair\`) set $FILL_REPAIRED, $FILL_MISSING still missing"
}

# check_values PORT SIZE N: GET some random keys and compare with the expected values
check_values() {
    local r
    r=$(python3 "$BENCH_ROOT/fill.py" --check "$1" "$2" "$3" 50) || die "wrong value returned: $r"
    echo "$r"
}

# wait_settled PORT [TIMEOUT_S]: until values_in_flash is unchanged for 3 s
# and no stash is pending (demotion finished)
wait_settled() {
    local port=$1 timeout=${2:-600} prev=-1 same=0 t=0 cur pend
    while [ "$t" -lt "$timeout" ]; do
        cur=$(info "$port" values_in_flash tiered)
        pend=$(info "$port" tiered_pending_stash_cnt tiered)
        if [ "$cur" = "$prev" ] && [ "$pend" = 0 ]; then
            same=$((same + 1))
            [ "$same" -ge 3 ] && { log "settled after ${t}s: values_in_flash=$cur"; return 0; }
        else
            same=0
        fi
        prev=$cur; sleep 1; t=$((t + 1))
    done
    log "WARNING: values_in_flash still changing after ${timeout}s"
}

# ------------------------------------------------------------- device
# data_dev DIR: kernel name of the block device holding DIR (partition, dm, ...)
data_dev() {
    local src
    src=$(findmnt -no SOURCE --target "$1" | head -1 | sed 's/\[.*//')
    [ -b "$src" ] || { echo none; return; }
    lsblk -no KNAME "$src" | head -1
}

# dev_model KNAME: model (of the whole disk), size, rotational flag
dev_model() {
    local d=$1 p
    [ "$d" = none ] && { echo "not a block device (overlay/tmpfs?): device reads cannot be counted"; return; }
    p=$(lsblk -no PKNAME "/dev/$d" | head -1); p=${p:-$d}
    while [ -n "$(lsblk -no PKNAME "/dev/$p" 2>/dev/null | head -1)" ]; do
        p=$(lsblk -no PKNAME "/dev/$p" | head -1)
    done
    local model
    model=$(lsblk -dno MODEL "/dev/$p" | sed 's/ *$//')
    echo "/dev/$d on disk /dev/$p, model '${model:-(none reported)}', $(lsblk -dno SIZE "/dev/$p" | tr -d ' '), rotational=$(cat "/sys/block/$p/queue/rotational"), scheduler: $(cat "/sys/block/$p/queue/scheduler" 2>/dev/null)"
}

# dev_reads KNAME: "reads_completed sectors_read" (0 0 when unknown)
dev_reads() {
    [ -r "/sys/class/block/$1/stat" ] || { echo "0 0"; return; }
    awk '{ print $1, $3 }' "/sys/class/block/$1/stat"
}

drop_caches() {
    sync
    echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || log "WARNING: cannot drop caches (not root?)"
}

# ------------------------------------------------------------- numbers
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
div() { awk -v a="$1" -v b="$2" -v f="${3:-%.2f}" 'BEGIN { if (b == 0) print "n/a"; else printf f "\n", a / b }'; }

# timed OUTFILE CMD...: run CMD (stdout to OUTFILE, stderr to OUTFILE.err) and
# set CLIENT_WALL, CLIENT_USER, CLIENT_SYS (seconds) from the shell's `time`
timed() {
    local out=$1 tf; shift
    tf=$(mktemp)
    { TIMEFORMAT='%3R %3U %3S'; time "$@" >"$out" 2>"$out.err"; } 2>"$tf"
    read -r CLIENT_WALL CLIENT_USER CLIENT_SYS <"$tf"
    rm -f "$tf"
    if [ -s "$out.err" ]; then log "stderr of $1: $(head -c 300 "$out.err")"; fi
}

# bench_csv FILE TEST COLUMN: a column of redis-benchmark --csv output
# (columns: test rps avg min p50 p95 p99 max), TEST is matched as a prefix
bench_csv() {
    awk -F, -v t="$2" -v c="$3" '{ gsub(/"/, "") } index($1, t) == 1 { v = $c } END { print v }' "$1"
}

# tier_mark PORT: remembers the device reads, chunk loads and journal
# bytes of a server so far; tier_since PORT N then sets READS (device reads
# per command), LOADS (chunk loads) and JBYTES (journal bytes per command)
# for the N commands since ("-" when the server has no INFO tiered).
tier_mark() {
    TM_F=$(info "$1" tiered_total_fetches tiered); TM_L=$(info "$1" chunk_loads tiered)
    TM_J=$(info "$1" journal_bytes persistence)
}
tier_since() {
    if [ -n "$TM_F" ]; then
        READS=$(div $(( $(info "$1" tiered_total_fetches tiered) - TM_F )) "$2" %.3f)
        LOADS=$(( $(info "$1" chunk_loads tiered) - TM_L ))
        JBYTES=$(div $(( $(info "$1" journal_bytes persistence) - TM_J )) "$2" %.0f)
    else
        READS="-"; LOADS="-"; JBYTES="-"
    fi
}

# rb_run NAME PORT PID RANGE ARGS...: redis-benchmark -n REQUESTS -r RANGE
# -c CLIENTS of the command ARGS; sets RPS P99 CPU_US (server CPU per
# command) and tier_since's READS LOADS JBYTES
rb_run() {
    local name=$1 port=$2 pid=$3 range=$4 out c0 c1; shift 4
    out=$(bench_tmpdir rb)/out.csv
    tier_mark "$port"
    local bench=(-n "$REQUESTS" -r "$range" -c "$CLIENTS" --threads 1 --csv "$@")
    record "redis-benchmark -h 127.0.0.1 -p PORT ${bench[*]}"
    c0=$(cpu_s "$pid")
    timed "$out" redis-benchmark -h 127.0.0.1 -p "$port" "${bench[@]}"
    c1=$(cpu_s "$pid")
    alive "$pid"
    RPS=$(tail -1 "$out" | cut -d, -f2 | tr -d '"')
    P99=$(tail -1 "$out" | cut -d, -f7 | tr -d '"')
    CPU_US=$(awk -v a="$c0" -v b="$c1" -v n="$REQUESTS" 'BEGIN { printf "%.1f", (b - a) * 1e6 / n }')
    tier_since "$port" "$REQUESTS"
    log "$name: $RPS ops/s"
}

# ------------------------------------------------------------- listload
# listload_build: builds bench/listload (Go) into RUN_DIR
listload_build() {
    LISTLOAD="$RUN_DIR/listload"
    (cd "$(dirname "${BASH_SOURCE[0]}")/listload" && go build -o "$LISTLOAD" .) \
        || die "go build of bench/listload failed"
}

# run_go NAME PORT PID CMD: bench/listload -cmd CMD (random unpadded
# indexes or members, which redis-benchmark cannot send) with REQUESTS,
# CLIENTS, ITEMS and VALUE; sets the same figures as `rb_run`
run_go() {
    local name=$1 port=$2 pid=$3 cmd=$4 out c0 c1
    tier_mark "$port"
    record "bench/listload -p PORT -cmd $cmd -n $REQUESTS -c $CLIENTS -len $ITEMS -d $VALUE"
    c0=$(cpu_s "$pid")
    out=$("$LISTLOAD" -p "$port" -cmd "$cmd" -n "$REQUESTS" -c "$CLIENTS" -len "$ITEMS" -d "$VALUE")
    c1=$(cpu_s "$pid")
    alive "$pid"
    read -r RPS _ P99 <<<"$out"
    CPU_US=$(awk -v a="$c0" -v b="$c1" -v n="$REQUESTS" 'BEGIN { printf "%.1f", (b - a) * 1e6 / n }')
    tier_since "$port" "$REQUESTS"
    log "$name: $RPS ops/s"
}

# ------------------------------------------------------------- fio
fio_engine() {  # fio_engine FILE: the best engine that works here
    local e
    for e in io_uring libaio psync; do
        if fio --name=probe --filename="$1" --size=1m --rw=randread --bs=4k --direct=1 \
            --ioengine="$e" --iodepth=2 --runtime=1 --output=/dev/null >/dev/null 2>&1; then
            echo "$e"; return
        fi
    done
    die "fio cannot do O_DIRECT reads on $1"
}

# fio_seqwrite FILE SIZE: lays out FILE; prints "MiB/s"
fio_seqwrite() {
    local args=(--name=seqwrite --filename="$1" --size="$2" --rw=write --bs=1m --direct=1
        --ioengine=psync --end_fsync=1 --output-format=json)
    record "fio ${args[*]}"
    fio "${args[@]}" | python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]["write"]; print("%.0f" % (j["bw_bytes"] / 2**20))'
}

# fio_randread FILE SIZE ENGINE DEPTH RUNTIME: prints "IOPS p50_us p99_us
# cpu_us_per_read" (total latency, submission to completion; fio's own
# user + system CPU per read: the kernel's block path is most of it)
fio_randread() {
    local args=(--name=randread --filename="$1" --size="$2" --ioengine="$3" --iodepth="$4"
        --rw=randread --bs=4k --direct=1 --numjobs=1 --time_based --runtime="$5"
        --lat_percentiles=1 --randrepeat=0 --output-format=json)
    record "fio ${args[*]}"
    fio "${args[@]}" | python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]
r = j["read"]
p = (r.get("lat_ns") or {}).get("percentile") or r["clat_ns"]["percentile"]
cpu = (j["usr_cpu"] + j["sys_cpu"]) * 1e4 / max(r["iops"], 1)
print("%.0f %.0f %.0f %.1f" % (r["iops"], p["50.000000"] / 1e3, p["99.000000"] / 1e3, cpu))'
}

# --------------------------------------------------------- results file
# strata_identity: version, binary checksum and build time, repository state
strata_identity() {
    [ -x "$STRATA_BIN" ] || { echo "strata-server: not used"; return; }
    local rev dirty=""
    rev=$(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
    [ -z "$(git -C "$REPO_ROOT" status --porcelain -- crates Cargo.toml Cargo.lock 2>/dev/null)" ] || dirty=" with uncommitted changes in crates/"
    echo "$("$STRATA_BIN" --version): $STRATA_BIN, sha256 $(sha256sum "$STRATA_BIN" | cut -c1-12), built $(date -u -r "$STRATA_BIN" '+%Y-%m-%d %H:%M:%S UTC'); repository at $rev$dirty when the server started"
}

# header TITLE: the common head of every results file
header() {
    local dev; dev=$(data_dev "$BENCH_DIR")
    cat <<EOF
# $1

Generated by \`bench/$(basename "$0")\` on $(date -u '+%Y-%m-%d %H:%M UTC')$([ "$QUICK" = 1 ] && echo ' — **QUICK=1 smoke run: sizes far below the full run, figures are not representative**').

## Machine

- CPUs: $(nproc) ($(lscpu 2>/dev/null | awk -F: '/Model name/ { gsub(/^ +/, "", $2); print $2; exit }'))
- RAM: $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
- Kernel: $(uname -r)
- Data dir: $BENCH_DIR on $(dev_model "$dev")
- Load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (the machine may be shared; see the server and client CPU figures)
- **Client and server share the same $(nproc) cores**: the benchmark client's CPU time is reported beside the server's.

## Versions

- ${STRATA_ID:-$(strata_identity)}
- $(redis-server --version 2>/dev/null || echo "redis-server: not installed")
- $(redis-benchmark --version 2>/dev/null || echo "redis-benchmark: not installed")
- $(fio --version 2>/dev/null || echo "fio: not installed")
EOF
}

# commands_section: the exact commands recorded with `record`
commands_section() {
    printf '\n## Commands\n\n```\n'
    awk '!seen[$0]++' "$CMDLOG"
    printf '```\n'
}
