#!/usr/bin/env bash
# Journal bytes per write command: strata-server (appendonly yes,
# everysec, everything in RAM) beside redis-server (appendonly yes,
# everysec), the same commands to both (bench/journal_bytes.py says how).
#   SMALL_N (2000)  commands per small-value row, one key each
#   BIG_N (300)     commands per big-value row, one at a time
#   BIG (50000)     elements of the big collections
set -euo pipefail
source "$(dirname "$0")/lib.sh"

need_common
need redis-server redis-server
need_strata
OUT=$(result_file journal_bytes)

sport=$(free_port); sdir=$(bench_tmpdir strata)
start_strata "$sport" "$sdir" --maxmemory-ram 4gb --appendonly yes --appendfsync everysec
rport=$(free_port); rdir=$(bench_tmpdir redis)
start_redis "$rport" "$rdir" --appendonly yes --appendfsync everysec
record "python3 bench/journal_bytes.py STRATA_PORT REDIS_PORT REDIS_DIR   # SMALL_N=${SMALL_N:-2000} BIG_N=${BIG_N:-300} BIG=${BIG:-50000}"
table=$(python3 "$BENCH_ROOT/journal_bytes.py" "$sport" "$rport" "$rdir")
{
    echo "# Journal bytes per write command"
    echo
    echo '```'; cat "$CMDLOG"; echo '```'
    echo
    echo "$table"
} >"$OUT"
cat "$OUT"
