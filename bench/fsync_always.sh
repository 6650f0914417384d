#!/usr/bin/env bash
# appendfsync always: HSET / RPUSH / ZADD throughput, strata-server vs
# redis-server (both appendonly yes, appendfsync always), redis-benchmark
# -c 50 -r 100000 -n N (20,000) per test, two alternating rounds; client
# and servers share the machine's cores.
#   bash bench/fsync_always.sh
set -u
BIN=${BIN:-$(dirname "$0")/../target/release/strata-server}
N=${N:-20000}
for round in 1 2; do
for srv in strata redis; do
  d=$(mktemp -d "${BENCH_DIR:-/tmp}/fsync.XXXX")
  if [ $srv = strata ]; then
    $BIN --port 7900 --bind 127.0.0.1 --dir $d --appendonly yes --appendfsync always --save '' --memcached-port 0 --loglevel warning --maxmemory-ram 1gb > /dev/null 2>&1 &
  else
    redis-server --port 7900 --bind 127.0.0.1 --dir $d --appendonly yes --appendfsync always --save '' --loglevel warning > /dev/null 2>&1 &
  fi
  pid=$!
  sleep 0.5
  for t in hset rpush zadd; do
    r=$(redis-benchmark -p 7900 -n $N -c 50 -r 100000 -t $t -q 2>/dev/null | tr '\r' '\n' | grep -i "requests per second" | tail -1)
    echo "round $round $srv $t: $r"
  done
  kill $pid; wait $pid 2>/dev/null; rm -rf $d
done
done
