#!/usr/bin/env bash
# RAM per key with cold values on flash: fill N keys of VALUE_SIZE bytes into
# strata-server with a small RAM budget, wait until demotion settles, report
# RAM per key; the same fill into redis-server (all in RAM) for comparison.
#   KEYS          number of keys (default 5000000; QUICK: 200000)
#   VALUE_SIZE    value bytes (default 512)
#   MAXMEM_RAM    strata --maxmemory-ram (default 256mb; QUICK: 48mb)
#   SETTLE_TIMEOUT seconds to wait for demotion to settle (default 600; QUICK: 60)
#   WITH_REDIS    also fill redis-server (default 1)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

if [ "$QUICK" = 1 ]; then d_keys=200000 d_ram=48mb d_settle=60; else d_keys=5000000 d_ram=256mb d_settle=600; fi
KEYS=${KEYS:-$d_keys}
VALUE_SIZE=${VALUE_SIZE:-512}
MAXMEM_RAM=${MAXMEM_RAM:-$d_ram}
SETTLE_TIMEOUT=${SETTLE_TIMEOUT:-$d_settle}
WITH_REDIS=${WITH_REDIS:-1}
KEYLEN=16   # "key:%012d"
BAR=$((24 + KEYLEN))

need_common
need_strata
OUT=$(result_file ram_per_key)

# memory figures of the server on PORT: prints "used rss"
mem() { echo "$(info "$1" used_memory memory) $(info "$1" used_memory_rss memory)"; }

# ---- strata
port=$(free_port); dir=$(bench_tmpdir strata)
start_strata "$port" "$dir" --maxmemory-ram "$MAXMEM_RAM"; spid=$LAST_PID
read -r s_used0 s_rss0 < <(mem "$port")
log "strata: filling $KEYS keys x $VALUE_SIZE B"
t0=$(date +%s.%N)
fill_keys "$port" "$KEYS" "$VALUE_SIZE"
s_fill_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
s_fill_note=$(fill_note)
wait_settled "$port" "$SETTLE_TIMEOUT"
# Then active defragmentation's passes (RSS after the churn settles), at
# most DEFRAG_TIMEOUT s.
t1=$(date +%s)
while [ "$(info "$port" active_defrag_running memory)" = 1 ] && [ $(($(date +%s) - t1)) -lt "${DEFRAG_TIMEOUT:-180}" ]; do sleep 1; done
s_defrag_s=$(($(date +%s) - t1)) s_defrag_run=$(info "$port" active_defrag_running memory)
alive "$spid"
s_check=$(check_values "$port" "$VALUE_SIZE" "$KEYS")
s_dbsize=$(redis-cli -p "$port" dbsize)
read -r s_used s_rss < <(mem "$port")
declare -A T
for f in index_bytes values_in_ram values_in_flash values_in_ram_bytes ram_used_bytes \
    maxmemory_ram oom_rejections write_backpressure_waits flash_direct_io flash_io_backend flash_bytes_written tiered_entries_bytes \
    allocator_allocated allocator_active allocator_resident index_boxed_bytes; do
    T[$f]=$(info "$port" "$f")
done
s_cpu=$(cpu_s "$spid")
stop_server "$spid"

# ---- redis
if [ "$WITH_REDIS" = 1 ]; then
    port=$(free_port); dir=$(bench_tmpdir redis)
    start_redis "$port" "$dir"; rpid=$LAST_PID
    read -r r_used0 r_rss0 < <(mem "$port")
    log "redis: filling $KEYS keys x $VALUE_SIZE B"
    fill_keys "$port" "$KEYS" "$VALUE_SIZE"
    [ "$FILL_ERRORS" = 0 ] || die "redis-server refused $FILL_ERRORS SETs"
    r_check=$(check_values "$port" "$VALUE_SIZE" "$KEYS")
    r_dbsize=$(redis-cli -p "$port" dbsize)
    read -r r_used r_rss < <(mem "$port")
    stop_server "$rpid"
fi

per() { div "$1" "$s_dbsize" "%.1f"; }
idx_per=$(per "${T[index_bytes]}")
nohot_per=$(per $((s_used - s_used0 - T[values_in_ram_bytes])))
keys_alone_per=$(per $((T[index_bytes] - ${T[index_boxed_bytes]:-0})))
verdict() { awk -v x="$1" -v b="$BAR" 'BEGIN { print (x <= b ? "meets" : "**misses**") }'; }
{
    header "RAM per key, $KEYS keys x $VALUE_SIZE B, strata with cold values on flash"
    cat <<EOF

## Setup

- keys \`key:%012d\` (length $KEYLEN B), i = 0..$((KEYS - 1)), each set once with a distinct $VALUE_SIZE-byte value through \`redis-cli --pipe\`
- strata-server: --maxmemory-ram $MAXMEM_RAM, --threads $STRATA_THREADS, flash I/O ${T[flash_io_backend]}, flash_direct_io:${T[flash_direct_io]}; figures read after values_in_flash stayed unchanged for 3 s
- active defragmentation after the settle: ${s_defrag_s} s until it stopped (active_defrag_running ${s_defrag_run} when read; waits at most DEFRAG_TIMEOUT, 180 s)
- fill time (strata, including any repair): $s_fill_s s; strata server CPU for fill+settle: $s_cpu s
- value check after settle (GET of 52 keys, compared byte for byte): strata $s_check$([ "$WITH_REDIS" = 1 ] && echo ", redis $r_check")$s_fill_note
- strata INFO after the fill: oom_rejections ${T[oom_rejections]}, write_backpressure_waits ${T[write_backpressure_waits]}
- "empty" = the same INFO field right after start, before the fill

## Strata

| figure | value | per key |
|---|---:|---:|
| DBSIZE | $s_dbsize | |
| values_in_ram / values_in_flash | ${T[values_in_ram]} / ${T[values_in_flash]} | |
| values_in_ram_bytes (hot value payloads) | ${T[values_in_ram_bytes]} | $(per "${T[values_in_ram_bytes]}") |
| used_memory_rss | $s_rss (empty: $s_rss0) | $(per "$s_rss") |
| used_memory | $s_used (empty: $s_used0) | $(per "$s_used") |
| used_memory − empty − hot value payloads | $((s_used - s_used0 - T[values_in_ram_bytes])) | $nohot_per |
| index_bytes | ${T[index_bytes]} | $idx_per |
| index_boxed_bytes (boxed entries: the headers of values in RAM) | ${T[index_boxed_bytes]:-0} | $(per "${T[index_boxed_bytes]:-0}") |
| index_bytes − index_boxed_bytes (the keys alone) | $((T[index_bytes] - ${T[index_boxed_bytes]:-0})) | $keys_alone_per |
| ram_used_bytes (engine's RAM account) | ${T[ram_used_bytes]} | $(per "${T[ram_used_bytes]}") |
| flash_bytes_written | ${T[flash_bytes_written]} | $(per "${T[flash_bytes_written]}") |
| allocator_allocated / active / resident (jemalloc) | ${T[allocator_allocated]} / ${T[allocator_active]} / ${T[allocator_resident]} | |

RSS ÷ used_memory $(div "$s_rss" "$s_used"): active ÷ allocated $(div "${T[allocator_active]:-0}" "${T[allocator_allocated]:-1}") (room free in partly used pages), resident ÷ active $(div "${T[allocator_resident]:-0}" "${T[allocator_active]:-1}") (pages not yet given back, jemalloc's metadata), RSS ÷ resident $(div "$s_rss" "${T[allocator_resident]:-1}") (the rest of the process).

Bar: ≤ 24 B + key length = $BAR B per key.
- index_bytes / key = $idx_per B: $(verdict "$idx_per") the bar
- (used_memory − empty − hot value payloads) / key = $nohot_per B: $(verdict "$nohot_per") the bar (all RAM the keys cost, allocator overhead and hot-value headers included)
- (index_bytes − index_boxed_bytes) / key = $keys_alone_per B: $(verdict "$keys_alone_per") the bar (the keys alone: how many more hot values the budget holds moves the figure above, not this one)
EOF
    if [ "$WITH_REDIS" = 1 ]; then
        cat <<EOF

## redis-server (everything in RAM), same fill

| figure | value | per key |
|---|---:|---:|
| DBSIZE | $r_dbsize | |
| used_memory_rss | $r_rss (empty: $r_rss0) | $(div "$r_rss" "$r_dbsize" "%.1f") |
| used_memory | $r_used (empty: $r_used0) | $(div "$r_used" "$r_dbsize" "%.1f") |
| used_memory − empty | $((r_used - r_used0)) | $(div $((r_used - r_used0)) "$r_dbsize" "%.1f") |
EOF
    fi
    commands_section
} >"$OUT"
log "wrote $OUT"
cat "$OUT"
