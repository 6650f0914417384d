#!/usr/bin/env bash
# Runs test files of Redis's own test suite (tcl) against a Strata server.
#   apt-get source redis          # Debian 12: redis 7.0.15 (needs deb-src)
#   apt-get install tcl
#   bash tools/redis_test_suite.sh redis-7.0.15 unit/type/stream unit/type/stream-cgroups
# Each file runs with `--tags -needs:repl --ignore-encoding` (no replicas
# here; OBJECT ENCODING checks of Redis's internal encodings skipped) on a
# fresh target/release/strata-server with its default configuration.
set -euo pipefail
src=$(cd "$1" && pwd); shift
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${STRATA_BIN:-$here/target/release/strata-server}
[ -x "$bin" ] || cargo build --release -p strata-server
status=0
for unit in "$@"; do
    dir=$(mktemp -d)
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$bin" --port "$port" --memcached-port 0 --dir "$dir" --save "" --enable-debug-command yes --loglevel warning &
    pid=$!
    for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
    echo "=== $unit"
    out=$(cd "$src" && ./runtest --host 127.0.0.1 --port "$port" --single "$unit" \
        --tags -needs:repl --ignore-encoding 2>&1 || true)
    grep -E '\[(err|exception)\]|All tests passed' <<<"$out" || true
    grep -q 'All tests passed' <<<"$out" || status=1
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -rf "$dir"
done
exit $status
