#!/usr/bin/env bash
# A log that fills: what a new user sees with a small flash-max-size (issue
# #12, fifteenth session). Three runs against one binary:
#   1. allkeys-lru, --flash-max-size $FMS (32mb), --maxmemory-ram 8mb:
#      redis-benchmark SET of 1 KiB values over 1M keys, 400k requests,
#      -c 50 -P 16; then INFO (evicted keys, keys kept, GC moves);
#   2. as 1 with --flash-max-size 256mb and 300k requests: the keys kept under
#      an 8 MB RAM budget, and the index's bytes per key;
#   3. noeviction (the default), --flash-max-size $FMS, --maxmemory-ram 16mb:
#      60,000 SETs of 1 KiB through `redis-cli --pipe` (most past the log's
#      size are refused), 3 s idle, kill -9, restart: acknowledged keys
#      before and after.
#   STRATA_BIN  the server (default target/release/strata-server)
#   PORT        (default 7720)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${STRATA_BIN:-target/release/strata-server}
PORT=${PORT:-7720}
FMS=${FMS:-32mb}
need() { command -v "$1" >/dev/null || { echo "needs $1 (apt-get install -y $2)"; exit 1; }; }
need redis-benchmark redis-tools
need redis-cli redis-tools

start() { # dir, extra args...
    local d=$1
    shift
    "$BIN" --port "$PORT" --bind 127.0.0.1 --dir "$d" --memcached-port 0 "$@" >>"$d/log" 2>&1 &
    S=$!
    for _ in $(seq 50); do
        kill -0 "$S" 2>/dev/null || { echo "server exited"; cat "$d/log"; exit 1; }
        redis-cli -p "$PORT" ping >/dev/null 2>&1 && return
        sleep 0.1
    done
    echo "server did not start"; cat "$d/log"; exit 1
}
S=
trap '[ -n "$S" ] && kill -9 "$S" 2>/dev/null; true' EXIT
info() { redis-cli -p "$PORT" info | tr -d '\r' | grep -E "^($1):" | tr '\n' ' '; echo; }

evicting() { # flash-max-size, requests
    local d
    d=$(mktemp -d)
    start "$d" --save '' --flash-max-size "$1" --maxmemory-ram 8mb --maxmemory-policy allkeys-lru
    redis-benchmark -p "$PORT" -t set -d 1024 -r 1000000 -n "$2" -c 50 -P 16 -q 2>&1 |
        tr '\r' '\n' | grep "requests per second" || true
    info "evicted_keys|db0|flash_gc_bytes_relocated|index_bytes_per_key|used_memory"
    kill "$S"; wait "$S" 2>/dev/null || true
    rm -rf "$d"
}

echo "== 1. allkeys-lru, flash-max-size $FMS, maxmemory-ram 8mb"
evicting "$FMS" 400000
echo "== 2. allkeys-lru, flash-max-size 256mb, maxmemory-ram 8mb"
evicting 256mb 300000

echo "== 3. noeviction, flash-max-size $FMS: acknowledged keys across kill -9"
d=$(mktemp -d)
start "$d" --flash-max-size "$FMS" --maxmemory-ram 16mb
# (redis-cli --pipe exits with 1 when any reply was an error.)
{ python3 bench/fill.py 60000 1024 | redis-cli -p "$PORT" --pipe 2>&1 || true; } | tail -n 1
before=$(redis-cli -p "$PORT" dbsize)
sleep 3
kill -9 "$S"; wait "$S" 2>/dev/null || true
start "$d" --flash-max-size "$FMS" --maxmemory-ram 16mb
until after=$(redis-cli -p "$PORT" dbsize) && [[ $after =~ ^[0-9]+$ ]]; do sleep 0.2; done
echo "acknowledged keys before kill -9: $before; after restart: $after"
redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
wait "$S" 2>/dev/null || true
while kill -0 "$S" 2>/dev/null; do sleep 0.1; done
rm -rf "$d"
