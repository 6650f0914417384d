#!/usr/bin/env bash
# Restart with most values on flash (issue 4's bar: 10M keys serving in <= 5 s).
# Fills KEYS keys of VALUE_SIZE B with appendonly yes (default everysec) into a
# RAM budget far below the data, so most values live only on flash, then
# measures three restarts, each from exec to the first GET served (not
# -LOADING), polled every 5 ms by bench/first_get.py:
#   clean    SHUTDOWN (checkpoint at shutdown) -> restart: checkpoint load only
#   crash    TAIL_KEYS overwrites after that checkpoint, kill -9 -> restart:
#            checkpoint + replay of the log tail
#   scan     the checkpoint removed (as if corrupt), kill -9 -> restart: a full
#            scan of the log
# After each restart it checks sample values (strata-bench --verify) and the
# key count, and reports INFO persistence's recovery_* fields.
#   KEYS        (default 10000000; QUICK: 300000)
#   VALUE_SIZE  (default 100)
#   MAXMEM_RAM  (default 1200mb; QUICK: 64mb): the index alone is ~94 B/key
#   TAIL_KEYS   overwrites after the checkpoint for "crash" (default KEYS/10)
#   RESULT_NAME results file name (default restart)
#   MIX_HASHES  also this many hashes of 10 fields x 10 B (bench/
#               collections_memory.py), for a restart with mixed types
#               (default 0)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/scenarios/common.sh"

if [ "$QUICK" = 1 ]; then d_keys=300000 d_ram=64mb; else d_keys=10000000 d_ram=1200mb; fi
KEYS=${KEYS:-$d_keys}
VALUE_SIZE=${VALUE_SIZE:-100}
MAXMEM_RAM=${MAXMEM_RAM:-$d_ram}
TAIL_KEYS=${TAIL_KEYS:-$((KEYS / 10))}
MIX_HASHES=${MIX_HASHES:-0}
TOTAL_KEYS=$((KEYS + MIX_HASHES))

need_common
need_strata
need_sb
OUT=$(result_file "${RESULT_NAME:-restart}")
T0=$(date +%s)

port=$(free_port); dir=$(bench_tmpdir strata)
ARGS=(--port "$port" --bind 127.0.0.1 --dir "$dir" --threads "$STRATA_THREADS" --memcached-port 0
    --appendonly yes --appendfsync everysec --loglevel notice --maxmemory-ram "$MAXMEM_RAM")
: "${STRATA_ID:=$(strata_identity)}"
record "$(printf '%q ' "$STRATA_BIN" "${ARGS[@]}")"
"$STRATA_BIN" "${ARGS[@]}" >"$dir/server.log" 2>&1 &
spid=$!; SERVER_PIDS+=("$spid")
wait_ping "$port" "$spid" "$dir/server.log"
log "filling $KEYS x $VALUE_SIZE B (appendonly yes, everysec, --maxmemory-ram $MAXMEM_RAM)"
sb_cmd "$port" -d "$VALUE_SIZE" --ratio 1:0 --key-pattern P:P --key-minimum 1 --key-maximum "$KEYS" -n allkeys --verify
record_sb STRATA_PORT
timed "$SCEN_TMP/fill.out" "${SB_CMD[@]}"
[ "$(redis-cli -p "$port" dbsize)" = "$KEYS" ] || die "fill: DBSIZE is not $KEYS"
log "fill: $(sb_json "$SB_JSON" | cut -d' ' -f1) SET/s in ${CLIENT_WALL}s"
if [ "$MIX_HASHES" -gt 0 ]; then
    log "filling $MIX_HASHES hashes of 10 fields x 10 B"
    record "python3 bench/collections_memory.py hash $MIX_HASHES 10 10 | redis-cli -p STRATA_PORT --pipe"
    python3 "$BENCH_ROOT/collections_memory.py" hash "$MIX_HASHES" 10 10 | redis-cli -p "$port" --pipe \
        | grep -q "errors: 0, replies: $MIX_HASHES" || die "hash fill failed"
    [ "$(redis-cli -p "$port" dbsize)" = "$TOTAL_KEYS" ] || die "fill: DBSIZE is not $TOTAL_KEYS"
fi
wait_settled "$port" 600
after_fill=$(strata_state "$port")
jbytes=$(info "$port" journal_bytes persistence)
KEY="memtier-$((KEYS / 2))"

# restart NAME: starts the server on $dir, times the first GET, checks values
declare -A ACC SERVED LEN REC
restart() {
    local name=$1 r
    record "python3 bench/first_get.py PORT $KEY -- $(printf '%q ' "$STRATA_BIN" "${ARGS[@]}")"
    drop_caches
    r=$(cd "$dir" && python3 "$BENCH_ROOT/first_get.py" "$port" "$KEY" -- "$STRATA_BIN" "${ARGS[@]}")
    spid=$(cat "$dir/server.pid"); SERVER_PIDS+=("$spid")
    read -r ACC[$name] SERVED[$name] LEN[$name] <<<"$r"
    [ "${LEN[$name]}" = "$VALUE_SIZE" ] || die "$name: GET $KEY returned $r"
    local keys; keys=$(redis-cli -p "$port" dbsize)
    [ "$keys" = "$TOTAL_KEYS" ] || die "$name: DBSIZE is $keys after restart, expected $TOTAL_KEYS"
    if [ "$MIX_HASHES" -gt 0 ]; then
        local h=$((MIX_HASHES / 3)) want
        want=$(python3 -c "print(chr(97 + $h % 26) * 10)")
        [ "$(redis-cli -p "$port" hget "$(printf 'hash:%08d' "$h")" f7)" = "$want" ] \
            || die "$name: HGET of hash $h is wrong after restart"
        [ "$(redis-cli -p "$port" hlen "$(printf 'hash:%08d' "$h")")" = 10 ] || die "$name: HLEN of hash $h"
    fi
    sb_cmd "$port" -d "$VALUE_SIZE" --ratio 0:1 --key-pattern R:R --key-minimum 1 --key-maximum "$KEYS" -n 2000 --verify
    "${SB_CMD[@]}" >"$dir/verify.out" 2>&1 || die "$name: verify run failed: $(tail -3 "$dir/verify.out")"
    local bad; bad=$(python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["aggregate"]; print(a.get("verify_errors", a.get("errors", 0)))' "$SB_JSON")
    [ "$bad" = 0 ] || die "$name: $bad wrong values after restart"
    REC[$name]=$(redis-cli -p "$port" info persistence | tr -d '\r' | grep -E '^recovery_(source|duration_ms|keys|keys_per_sec|checkpoint_keys|bytes_scanned|records_replayed|corrupt_records|torn_tail_bytes|missing_keys):' | tr '\n' ' ')
    log "$name: port open after ${ACC[$name]} s, first GET served after ${SERVED[$name]} s; ${REC[$name]}"
}

# 1. clean: SHUTDOWN writes a checkpoint
redis-cli -p "$port" shutdown >/dev/null 2>&1 || true
wait "$spid" 2>/dev/null || true
cp_bytes=$(stat -c %s "$dir/flash/checkpoint")
log_bytes=$(du -sb "$dir/flash" | cut -f1)
restart clean

# 2. crash: overwrites after the checkpoint, then kill -9
sb_cmd "$port" -d "$VALUE_SIZE" --ratio 1:0 --key-pattern P:P --key-minimum 1 --key-maximum "$TAIL_KEYS" -n allkeys --verify
record_sb "STRATA_PORT   # $TAIL_KEYS overwrites after the checkpoint"
"${SB_CMD[@]}" >"$dir/tail.out" 2>&1 || die "tail writes failed"
sleep 2   # everysec: let the last second reach the device
tail_bytes=$(info "$port" log_bytes_since_checkpoint persistence)
kill -KILL "$spid"; wait "$spid" 2>/dev/null || true
restart crash

# 3. scan: no checkpoint
kill -KILL "$spid"; wait "$spid" 2>/dev/null || true
rm -f "$dir/flash/checkpoint"
restart scan
stop_server "$spid"
elapsed=$(($(date +%s) - T0))

{
    header "Restart with $TOTAL_KEYS keys mostly on flash"
    cat <<EOF2

Issue 4's bar: a restart with 10,000,000 keys mostly on flash serves its
first GET in ≤ 5 s. Time is measured by a client from the server's exec to
the first GET answered with a value (not \`-LOADING\`), polling every 5 ms;
the page cache is dropped before each restart.

## Setup

- strata-server $(printf '%s ' "${ARGS[@]}" | sed "s/$port/PORT/; s|$dir|DIR|")
- fill: $KEYS keys × $VALUE_SIZE B with strata-bench (\`-n allkeys --key-pattern P:P --verify\`: values derived from their keys); journal record bytes: $jbytes
- after the fill: $after_fill
- flash directory at the clean shutdown: $log_bytes bytes, of which checkpoint $cp_bytes bytes
- crash case: $TAIL_KEYS overwrites after the checkpoint ($tail_bytes log bytes since it), then kill -9
- mixed types: $MIX_HASHES hashes of 10 fields x 10 B besides the strings (one field read back with HGET and HLEN checked after each restart)
- every restart: DBSIZE must be $TOTAL_KEYS and 2,000 random GETs verified byte-exact (\`strata-bench --verify\`)
- total time of the script: ${elapsed} s

## Result

| restart | port open (s) | first GET served (s) | recovery (INFO persistence) |
|---|---:|---:|---|
| clean (checkpoint only) | ${ACC[clean]} | **${SERVED[clean]}** | ${REC[clean]} |
| crash (checkpoint + log tail) | ${ACC[crash]} | **${SERVED[crash]}** | ${REC[crash]} |
| scan (no checkpoint: full log scan) | ${ACC[scan]} | **${SERVED[scan]}** | ${REC[scan]} |
EOF2
    commands_section
} >"$OUT"
log "wrote $OUT"
cat "$OUT"
