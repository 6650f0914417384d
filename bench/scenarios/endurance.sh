#!/usr/bin/env bash
# Flash endurance (ScaleFlux "Redis on Flash" white paper, "Flash Endurance"
# and Table 2, drive life vs write throughput): under write-heavy runs on a
# dataset several times the RAM budget — SET-only with uniform keys, and 80/20
# SET/GET (--ratio 4:1, memtier's --ratio is SET:GET) — measure the bytes
# strata writes to flash per second, the write amplification
# (flash_bytes_written / flash_stash_bytes, i.e. log writes incl. GC over
# the bytes demoted, and flash_bytes_written / bytes of client SET payload),
# and project the life of a drive: rated TBW / bytes written per day.
#   KEYS           keys (default 2000000; QUICK: 200000)
#   VALUE_SIZE     bytes (default 512)
#   MAXMEM_RAM     strata --maxmemory-ram (default 256mb; QUICK: 48mb)
#   FLASH_FACTOR   --flash-max-size = FLASH_FACTOR x the values' bytes, so the
#                  log fills and GC runs (default 2; 0 = the server's default)
#   WORKLOADS      names among "set mix" (default "set mix")
#   WARMUP_TIME    seconds of an unmeasured run before each workload (default 30; QUICK: 3)
#   TEST_TIME      seconds per measured run (default 60; QUICK: 5)
#   RUNS           measured runs per workload, medians quoted (default 3; QUICK: 1)
#   DRIVE_TB       drive capacity in TB (10^12 B) (default 3.84)
#   DWPD           rated drive writes per day (default 1)
#   WARRANTY_YEARS years the rating covers (default 5)
#                  -> TBW = DRIVE_TB x 10^12 x DWPD x 365 x WARRANTY_YEARS bytes
#   TABLE_MBPS     write throughputs (MB/s, 10^6 B) for the Table 2-style life table
#                  (default "10 25 50 100 200 400 800"; the measured ones are added)
#   TABLE_DWPD     drive ratings (DWPD) for its columns (default "0.3 1 3 10")
#   SB_THREADS / SB_CLIENTS / PIPELINE  (default 1 / 8 / 8)
set -euo pipefail
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/extra.sh"

if [ "$QUICK" = 1 ]; then
    d_keys=200000 d_ram=48mb d_warm=3 d_time=5 d_runs=1
else
    d_keys=2000000 d_ram=256mb d_warm=30 d_time=60 d_runs=3
fi
KEYS=${KEYS:-$d_keys}
VALUE_SIZE=${VALUE_SIZE:-512}
MAXMEM_RAM=${MAXMEM_RAM:-$d_ram}
FLASH_FACTOR=${FLASH_FACTOR:-2}
WORKLOADS=${WORKLOADS:-set mix}
WARMUP_TIME=${WARMUP_TIME:-$d_warm}
TEST_TIME=${TEST_TIME:-$d_time}
RUNS=${RUNS:-$d_runs}
DRIVE_TB=${DRIVE_TB:-3.84}
DWPD=${DWPD:-1}
WARRANTY_YEARS=${WARRANTY_YEARS:-5}
TABLE_MBPS=${TABLE_MBPS:-10 25 50 100 200 400 800}
TABLE_DWPD=${TABLE_DWPD:-0.3 1 3 10}
TBW=$(awk -v t="$DRIVE_TB" -v d="$DWPD" -v y="$WARRANTY_YEARS" 'BEGIN { printf "%.0f", t * 1e12 * d * 365 * y }')

need_common
need_sb
OUT=$(result_file endurance)
DEV=$(data_dev "$BENCH_DIR")
T0=$(date +%s)
dev_written() { [ -r "/sys/class/block/$DEV/stat" ] && awk '{ printf "%.0f\n", $7 * 512 }' "/sys/class/block/$DEV/stat" || echo 0; }

fopt=()
if [ "$FLASH_FACTOR" != 0 ]; then
    FLASH_MAX=$(awk -v k="$KEYS" -v v="$VALUE_SIZE" -v f="$FLASH_FACTOR" 'BEGIN { printf "%dmb", k * v * f / 1048576 + 64 }')
    fopt=(--flash-max-size "$FLASH_MAX")
else
    FLASH_MAX="server default (from free space)"
fi
port=$(free_port); dir=$(bench_tmpdir strata)
start_strata "$port" "$dir" --maxmemory-ram "$MAXMEM_RAM" "${fopt[@]}"; spid=$LAST_PID
log "filling $KEYS x $VALUE_SIZE B"
sb_fill "$port" STRATA_PORT "$KEYS" "$VALUE_SIZE"
fill_note=$FILL_NOTE
wait_settled "$port"
DIRECT=$(info "$port" flash_direct_io tiered)
BACKEND=$(info "$port" flash_io_backend tiered)
after_fill=$(strata_state "$port")
read -r fw0 fs0 _ < <(tiered "$port")
log "after fill: $after_fill"

declare -A NAME=([set]="SET only, uniform keys" [mix]="80/20 SET/GET, uniform keys")
declare -A RATIO=([set]=1:0 [mix]=4:1)
declare -A FIRSTERR OPS SOPS P99 FWPS WA1 WA2 GCPS DEVW HIT SCPU CCPU ERR LIFE
for w in $WORKLOADS; do
    [ -n "${RATIO[$w]:-}" ] || die "unknown workload $w (set, mix)"
    args=(-d "$VALUE_SIZE" --ratio "${RATIO[$w]}" --key-pattern R:R --key-minimum 1 --key-maximum "$KEYS" --distinct-client-seed --randomize)
    log "$w: warm-up ${WARMUP_TIME}s"
    sb_run "$spid" "$port" STRATA_PORT 1 "${args[@]}" --test-time "$WARMUP_TIME"
    for run in $(seq "$RUNS"); do
        read -r a0 b0 c0 _ < <(tiered "$port"); d0=$(dev_written)
        sb_run "$spid" "$port" STRATA_PORT 1 "${args[@]}" --test-time "$TEST_TIME"
        read -r a1 b1 c1 _ < <(tiered "$port"); d1=$(dev_written)
        sets=$(sb_get "$SB_JSON" aggregate.sets.count)
        payload=$(awk -v n="$sets" -v v="$VALUE_SIZE" 'BEGIN { printf "%.0f", n * v }')
        OPS[$w]+=" $R_OPS"; P99[$w]+=" $R_P99"; HIT[$w]+=" $R_HIT"; SCPU[$w]+=" $R_SCPU"; CCPU[$w]+=" $R_CCPU"; ERR[$w]+=" $R_ERR"
        SOPS[$w]+=" $(printf '%.0f' "$(sb_get "$SB_JSON" aggregate.sets.ops_per_sec)")"
        FWPS[$w]+=" $R_FWPS"
        fe=$(sb_get "$SB_JSON" aggregate.first_error); [ "$fe" = n/a ] || FIRSTERR[$w]=$fe
        WA1[$w]+=" $(div $((a1 - a0)) $((b1 - b0)) %.3f)"
        WA2[$w]+=" $(div $((a1 - a0)) "$payload" %.3f)"
        GCPS[$w]+=" $(div $((c1 - c0)) "$R_DUR" %.0f)"
        DEVW[$w]+=" $(div $((d1 - d0)) "$CLIENT_WALL" %.0f)"
        log "$w run $run: flash written $((a1 - a0)) B, stashed $((b1 - b0)) B, GC relocated $((c1 - c0)) B, client SET payload $payload B, device written $((d1 - d0)) B"
    done
done
alive "$spid"
after=$(strata_state "$port")
read -r fw1 fs1 _ < <(tiered "$port")
elapsed=$(($(date +%s) - T0))

# life in years for B/s and a TBW
life() { awk -v b="$1" -v t="$2" 'BEGIN { if (b == "n/a" || b <= 0) print "∞"; else printf "%.1f", t / (b * 86400) / 365 }'; }
{
    scenario_header "Flash endurance: bytes written, write amplification and drive life under write-heavy load"
    cat <<EOF

After ScaleFlux, *Redis on Flash* (section "Flash Endurance", Table 2: drive
life vs write throughput). Flash devices are rated in drive writes per day
(DWPD) or total bytes written (TBW); the life of a drive is TBW / bytes
written per day.

## Setup

- strata-server --maxmemory-ram $MAXMEM_RAM --flash-max-size $FLASH_MAX --threads $STRATA_THREADS (tiering-promote: server default); flash_io_backend:$BACKEND, **flash_direct_io:$DIRECT**
- dataset: $KEYS keys × $VALUE_SIZE B = $(awk -v k="$KEYS" -v s="$VALUE_SIZE" 'BEGIN { printf "%.0f MiB", k * s / 1048576 }') of values, filled with \`-n allkeys --key-pattern P:P --ratio 1:0\`$( [ -n "$fill_note" ] && printf '\n%s' "$fill_note")
- after the fill: $after_fill
- workloads: uniform keys over the whole range (\`--key-pattern R:R --distinct-client-seed --randomize\`), closed loop, -t $SB_THREADS -c $SB_CLIENTS --pipeline $PIPELINE; a ${WARMUP_TIME} s warm-up, then $RUNS run(s) of ${TEST_TIME} s each, medians quoted; every SET overwrites an existing key, so its old flash record becomes garbage for GC
- flash written/s = Δflash_bytes_written / run time (log appends + GC relocation); WA (stash) = Δflash_bytes_written / Δflash_stash_bytes (bytes written per byte demoted); WA (client) = Δflash_bytes_written / (SETs × $VALUE_SIZE B of client payload); device writes/s from /sys/class/block/$DEV/stat field 7 (every process's writes to $DEV count)
- drive for the projection: ${DRIVE_TB} TB, ${DWPD} DWPD over ${WARRANTY_YEARS} years → **TBW = $(awk -v t="$TBW" 'BEGIN { printf "%.3g PB", t / 1e15 }')** ($TBW B); life = TBW / (flash bytes written per second × 86400) / 365 years, at the measured (saturating) write rate, i.e. a worst case: the server written flat out around the clock
- $(client_note)
- total time of the script: ${elapsed} s

## Results (medians)

| workload | --ratio SET:GET | ops/s | SET/s | p99 ms | RAM hit ratio (GETs) | flash MB/s written | GC MB/s relocated | WA (stash) | WA (client SET bytes) | device MB/s written | server CPU % | client CPU % | errors | drive life (years) at this rate |
|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
EOF
    for w in $WORKLOADS; do
        fw=$(m "${FWPS[$w]}")
        echo "| ${NAME[$w]} | ${RATIO[$w]} | $(m "${OPS[$w]}") | $(m "${SOPS[$w]}") | $(m "${P99[$w]}") | $(m "${HIT[$w]}") | $(div "$fw" 1e6 %.1f) | $(div "$(m "${GCPS[$w]}")" 1e6 %.2f) | **$(m "${WA1[$w]}")** | **$(m "${WA2[$w]}")** | $(div "$(m "${DEVW[$w]}")" 1e6 %.1f) | $(m "${SCPU[$w]}") | $(m "${CCPU[$w]}") | $(m "${ERR[$w]}") | **$(life "$fw" "$TBW")** |"
    done
    printf '\nOver the whole script (fill excluded): flash_bytes_written grew by %s B for %s B stashed (WA %s).\n' \
        "$((fw1 - fw0))" "$((fs1 - fs0))" "$(div $((fw1 - fw0)) $((fs1 - fs0)) %.3f)"
    printf '\n## Drive life vs write throughput (Table 2 style)\n\nYears until a %s TB drive reaches its rated TBW (= DRIVE_TB × DWPD × 365 × %s years), writing at a steady rate:\n\n| write throughput |' "$DRIVE_TB" "$WARRANTY_YEARS"
    for d in $TABLE_DWPD; do printf ' %s DWPD (%s PB) |' "$d" "$(awk -v t="$DRIVE_TB" -v d="$d" -v y="$WARRANTY_YEARS" 'BEGIN { printf "%.2f", t * d * 365 * y / 1000 }')"; done
    printf '\n|---|'; for d in $TABLE_DWPD; do printf -- '---:|'; done; printf '\n'
    rows=()
    for w in $WORKLOADS; do rows+=("$(m "${FWPS[$w]}")|measured: ${NAME[$w]}"); done
    for mb in $TABLE_MBPS; do rows+=("$((mb * 1000000))|$mb MB/s"); done
    for r in "${rows[@]}"; do
        b=${r%%|*}; lab=${r#*|}
        case $lab in measured*) lab="**$lab ($(div "$b" 1e6 %.1f) MB/s)**" ;; esac
        printf '| %s |' "$lab"
        for d in $TABLE_DWPD; do
            t=$(awk -v tb="$DRIVE_TB" -v d="$d" -v y="$WARRANTY_YEARS" 'BEGIN { printf "%.0f", tb * 1e12 * d * 365 * y }')
            printf ' %s |' "$(life "$b" "$t")"
        done
        printf '\n'
    done
    printf '\n## Every measured run\n\n| workload | ops/s | p99 ms | flash B/s written | GC B/s relocated | WA (stash) | WA (client) | device B/s written | server CPU %% | client CPU %% | errors |\n|---|---|---|---|---|---|---|---|---|---|---|\n'
    for w in $WORKLOADS; do
        echo "| ${NAME[$w]} |${OPS[$w]} |${P99[$w]} |${FWPS[$w]} |${GCPS[$w]} |${WA1[$w]} |${WA2[$w]} |${DEVW[$w]} |${SCPU[$w]} |${CCPU[$w]} |${ERR[$w]} |"
    done
    for w in $WORKLOADS; do [ -n "${FIRSTERR[$w]:-}" ] && printf '\n**%s: error replies** (first: `%s`)\n' "${NAME[$w]}" "${FIRSTERR[$w]}"; done
    printf '\n## Server state at the end\n\n- %s\n' "$after"
    commands_section
} >"$OUT"
log "wrote $OUT"
cat "$OUT"
