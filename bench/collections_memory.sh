#!/usr/bin/env bash
# RAM per collection element, everything in RAM: the same collections
# loaded into strata-server and redis-server 7.0 (fresh servers per type),
# `used_memory` after minus before, per element. Both servers measure with
# their allocator (strata: a counting allocator; redis: jemalloc's stats).
#   KEYS        collections per type (default 10000; QUICK: 1000)
#   ELEMENTS    elements per collection (default 100)
#   VALUE_SIZE  bytes of a hash value / list element (default 100)
#   TYPES       (default "hash set zset list")
set -euo pipefail
source "$(dirname "$0")/lib.sh"

KEYS=${KEYS:-$([ "$QUICK" = 1 ] && echo 1000 || echo 10000)}
ELEMENTS=${ELEMENTS:-100}
VALUE_SIZE=${VALUE_SIZE:-100}
TYPES=${TYPES:-hash set zset list}

need_common
need redis-server redis-server
need_strata
OUT=$(result_file collections_memory)
record "python3 bench/collections_memory.py TYPE $KEYS $ELEMENTS $VALUE_SIZE | redis-cli -p PORT --pipe"

rows=""
for t in $TYPES; do
    line="| $t |"
    for srv in strata redis; do
        port=$(free_port)
        if [ "$srv" = strata ]; then
            # A RAM budget far above the data: nothing is demoted.
            start_strata "$port" "$(bench_tmpdir strata)" --maxmemory-ram 8gb
        else
            start_redis "$port" "$(bench_tmpdir redis)"
        fi
        pid=$LAST_PID
        u0=$(info "$port" used_memory memory)
        out=$(python3 "$BENCH_ROOT/collections_memory.py" "$t" "$KEYS" "$ELEMENTS" "$VALUE_SIZE" \
            | redis-cli -p "$port" --pipe 2>&1)
        echo "$out" | grep -q "errors: 0, replies: $KEYS" || die "$srv $t: $out"
        sleep 1
        alive "$pid"
        u1=$(info "$port" used_memory memory)
        enc=$(redis-cli -p "$port" object encoding "$t:00000000")
        per=$(div $((u1 - u0)) $((KEYS * ELEMENTS)) %.1f)
        log "$srv $t: used_memory $u0 -> $u1 ($per B per element, $enc)"
        line+=" $per ($enc) |"
        eval "per_$srv=$per"
        stop_server "$pid"
    done
    line+=" $(div "$per_strata" "$per_redis") |"
    rows+="$line"$'\n'
done

{
    header "RAM per collection element (all in RAM)"
    cat <<EOF2

## Results

$KEYS collections per type, $ELEMENTS elements each, hash values and list
elements of $VALUE_SIZE B, set and zset members of ~8 B (\`m<i>-<key>\`).
Bytes of \`used_memory\` (after − before loading) per element, with the
encoding OBJECT ENCODING reports.

| type | strata B/element | redis-server B/element | strata ÷ redis |
|---|---:|---:|---:|
$rows
EOF2
    commands_section
} >"$OUT"
log "wrote $OUT"
