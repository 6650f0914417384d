#!/usr/bin/env bash
# Issue #12's table in one command: every row measured beside its peer
# (redis-server, memcached + extstore, fio) in this run, by the bench script
# that owns it; each script's full report goes to bench/results/efficiency/
# (or .quick/), and the table (issue's baseline, this table's previous run,
# now, goal) to bench/results/efficiency[.quick].md and, without QUICK, to
# BENCHMARKS.md between its "efficiency" markers.
#   ONLY   row names to run (default: all): cold_get dragonfly ram_8x8
#          ram_50x16 ram_per_key set_demote endurance journal default_config
#          gaussian (with its all-in-RAM peer, gaussian_ram, also alone);
#          the table is built from every row's latest report
#   QUICK  smoke sizes (each script's own QUICK sizes, plus the ones below)
# Client and server share the machine's cores in every row.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

ROWS_ALL="cold_get dragonfly ram_8x8 ram_50x16 ram_per_key set_demote endurance journal default_config gaussian"
ONLY=${ONLY:-$ROWS_ALL}
# The Gaussian row's all-in-RAM peer runs with it.
case " $ONLY " in *" gaussian "*) ONLY+=" gaussian_ram" ;; esac
# Sizes: each script's QUICK ones, or these (chosen so the whole table
# takes about an hour; the index of every key must fit its RAM budget).
# The RAM-per-key row's budget is the keys' index (~40 B per key) plus
# ~20%, so its values are on flash as the row says: with 1400mb, 13% of
# the values stayed in RAM and their 80-byte entries counted as the keys'.
if [ "$QUICK" = 1 ]; then
    EFF_DIR=$RESULTS_DIR/efficiency.quick
    k_perkey=1000000 ram_perkey=64mb k_demote=300000 n_demote=600000 ram_demote=48mb
    P_COLD="" P_DRAGON="" P_ENDURE="" P_GAUSS=""
else
    EFF_DIR=$RESULTS_DIR/efficiency
    k_perkey=10000000 ram_perkey=480mb k_demote=1000000 n_demote=2000000 ram_demote=128mb
    P_COLD="KEYS=1000000 MAXMEM_RAM=112mb DURATION=10 RUNS=2 FIO_SIZE=2g"
    P_DRAGON="TEST_TIME=15 RUNS=2"
    P_ENDURE="RUNS=1"
    P_GAUSS="KEYS=1000000 RUNS=1 TEST_TIME=30 CAL_STEPS=4"
fi
mkdir -p "$EFF_DIR"
OUT=$(result_file efficiency)
need_common
need_strata
T0=$(date +%s)
FAILED="" RAN=0

report() {  # report ROW: the row's report file (a missing path if none)
    local f
    for f in "$EFF_DIR/$1/"*.md; do [ -f "$f" ] && { echo "$f"; return; }; done
    echo "$EFF_DIR/$1/none"
}

# step NAME SCRIPT [VAR=value ...]: runs a bench script with its reports in
# EFF_DIR/NAME; its output in EFF_DIR/NAME.log
step() {
    local name=$1 script=$2; shift 2
    case " $ONLY " in *" $name "*) ;; *) return 0 ;; esac
    mkdir -p "$EFF_DIR/$name"
    # Each run's reports replace the last (a print-only script's report is
    # written below only when none exists: an old one would stay).
    rm -f "$EFF_DIR/$name/"*.md
    RAN=1
    log "== $name: $script $*"
    record "$* bash bench/$script"
    if ! env RESULTS_DIR="$EFF_DIR/$name" "$@" bash "$BENCH_ROOT/$script" >"$EFF_DIR/$name.log" 2>&1; then
        log "$name failed: $(tail -3 "$EFF_DIR/$name.log")"
        FAILED+=" $name"
    elif [ ! -f "$(report "$name")" ]; then
        # A script that only prints (set_demote.sh): its output is the report.
        { echo "# $script $*"; echo; echo '```'; cat "$EFF_DIR/$name.log"; echo '```'; } >"$EFF_DIR/$name/$name.md"
    fi
}

# shellcheck disable=SC2086
step cold_get get_uniform_flash.sh DEPTHS="8x1 32x1 16x4" $P_COLD
# shellcheck disable=SC2086
step dragonfly scenarios/dragonfly.sh $P_DRAGON
step ram_8x8 ram_get_set.sh CLIENTS=8 PIPELINE=8
step ram_50x16 ram_get_set.sh CLIENTS=50 PIPELINE=16
step ram_per_key ram_per_key.sh KEYS=$k_perkey MAXMEM_RAM=$ram_perkey WITH_REDIS=0
step set_demote set_demote.sh KEYS=$k_demote N=$n_demote MAXMEM_RAM=$ram_demote RUNS=3
# shellcheck disable=SC2086
step endurance scenarios/endurance.sh FLASH_FACTOR=1.25 WORKLOADS=set $P_ENDURE
step journal journal_cost.sh
step default_config scenarios/default_config.sh
# shellcheck disable=SC2086
step gaussian scenarios/rof-doc.sh $P_GAUSS
# The same Gaussian command with every value in RAM, at the σ just used.
sigma=$(grep -o 'σ of the measured runs: \*\*[0-9]*\*\*' "$(report gaussian)" 2>/dev/null | grep -o '[0-9][0-9]*' || true)
# shellcheck disable=SC2086
[ -z "$sigma" ] || step gaussian_ram scenarios/rof-doc.sh $P_GAUSS RAM_FRACTION=1.5 CALIBRATE=0 SIGMA="$sigma"

# cell FILE ROW COLUMN: the cell of the markdown table row whose first cell
# is ROW, in the column whose header is COLUMN (the first such table); bold
# marks and anything after the first space dropped. "-" if absent.
cell() {
    [ -f "$1" ] || { echo -; return; }
    awk -F'|' -v row="$2" -v col="$3" '
        function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
        /^\|/ {
            if (!c) { for (i = 2; i < NF; i++) if (trim($i) == col) { c = i; next } }
            if (c && trim($2) == row) { v = trim($c); gsub(/\*/, "", v); split(v, w, " "); print w[1]; found = 1; exit }
            next
        }
        { c = 0 }
        END { if (!found) print "-" }' "$1"
}
num() { case $1 in -|n/a|"") echo -; ;; *) echo "${1%\%}"; esac; }
ratio() { case "$1 $2" in *-*|*n/a*) echo -; ;; *) div "$1" "$2"; esac; }

F=$(report cold_get)
cpu32=$(cell "$F" 32x1 "server CPU µs/GET"); fcpu32=$(cell "$F" 32x1 "fio CPU µs/read")
fio8=$(cell "$F" 8x1 "GET/s ÷ IOPS"); fio32=$(cell "$F" 32x1 "GET/s ÷ IOPS"); fio64=$(cell "$F" 16x4 "GET/s ÷ IOPS")
F=$(report dragonfly)
mc=$(ratio "$(cell "$F" "strata (RESP)" "GET/s")" "$(cell "$F" "memcached + extstore (text)" "GET/s")")
F=$(report ram_8x8)
g8=$(cell "$F" GET "strata ÷ redis"); s8=$(cell "$F" SET "strata ÷ redis")
F=$(report ram_50x16)
g50=$(cell "$F" GET "strata ÷ redis"); s50=$(cell "$F" SET "strata ÷ redis")
F=$(report ram_per_key)
perkey=$(cell "$F" "used_memory − empty − hot value payloads" "per key")
alone=$(cell "$F" "index_bytes − index_boxed_bytes (the keys alone)" "per key")
rss=$(ratio "$(cell "$F" used_memory_rss value)" "$(cell "$F" used_memory value)")
# shellcheck disable=SC2046
demote=$(median $(grep -o 'SET in RAM = [0-9.]*' "$(report set_demote)" 2>/dev/null | grep -o '[0-9.]*$'))
demote=${demote:--}
F=$(report endurance)
wa=$(cell "$F" "SET only, uniform keys" "WA (stash)")
F=$(report journal)
always=$(cell "$F" "yes / always" "strata ÷ redis")
F=$(report default_config)
dflt=$(ratio "$(cell "$F" strata SET/s)" "$(cell "$F" redis SET/s)")
dflt_p99="$(cell "$F" strata "p99 ms") vs $(cell "$F" redis "p99 ms") ms"
F=$(report gaussian); FR=$(report gaussian_ram)
gauss_cell() {  # gauss_cell FILE FIELD: a cell of rof-doc's result row
    [ -f "$1" ] || return 0
    grep -A2 '^| measured RAM hit ratio' "$1" 2>/dev/null | sed -n 3p | awk -F'|' -v f="$2" '{ v = $f; gsub(/[* ]/, "", v); print v }'
}
g_hit=$(gauss_cell "$F" 2); g_ops=$(gauss_cell "$F" 3); g_avg=$(gauss_cell "$F" 6)
r_ops=$(gauss_cell "$FR" 3)
gauss="$(ratio "${g_ops:--}" "${r_ops:--}")× at ${g_hit:--} hit; avg ${g_avg:--} ms"

# The previous run's "now" column, from BENCHMARKS.md's block.
BEGIN_MARK='<!-- efficiency:begin -->' END_MARK='<!-- efficiency:end -->'
prev() {
    awk -F'|' -v n="$1" -v b="$BEGIN_MARK" -v e="$END_MARK" '
        $0 == b { on = 1; next } $0 == e { on = 0 }
        on && /^\| / && !/^\| figure/ { r++; if (r == n) { gsub(/^ +| +$/, "", $5); print $5 } }' "$REPO_ROOT/BENCHMARKS.md"
}
row() {  # row N FIGURE BASELINE NOW GOAL
    local p; p=$(prev "$1"); echo "| $2 | $3 | ${p:--} | $4 | $5 |"
}
elapsed=$(($(date +%s) - T0))
TABLE=$(
    echo "| figure | issue #12's baseline | previous run | now | goal |"
    echo "|---|---|---|---|---|"
    row 1 "server CPU per cold GET, 32 in flight (µs; fio's own CPU per read beside it)" "35" "$cpu32 (fio $fcpu32)" "≤ 8"
    row 2 "uniform flash-bound GET ÷ fio randread, 8 / 32 / 64 in flight" "50 / 42 / 63 %" "$(num "$fio8") / $(num "$fio32") / $(num "$fio64") %" "≥ 80 / 90 / 90 %"
    row 3 "vs memcached + extstore, same RAM box, flash-bound GET" "1.52–1.62×" "${mc}×" "≥ 3×"
    row 4 "RAM GET / SET vs redis-server, 8 × P8" "0.61–0.74×" "$g8× / $s8×" "≥ 1.0×"
    row 5 "RAM GET / SET vs redis-server, 50 × P16" "1.06–1.08×" "$g50× / $s50×" "≥ 1.3×"
    row 6 "all RAM the keys cost per key, values on flash ($k_perkey keys)" "102 B" "$perkey B (the keys alone, without the headers of values in RAM: $alone B)" "≤ 40 B"
    row 7 "used_memory_rss ÷ used_memory after the fill's demotion" "2.1" "$rss" "≤ 1.2"
    row 8 "SET with every value demoted ÷ SET in RAM (median of 3)" "0.43" "$demote" "≥ 0.8"
    row 9 "flash write amplification, uniform SET, data at 80% of flash-max-size" "1.75" "$wa" "≤ 1.3"
    row 10 "appendfsync always SET vs redis-server appendfsync always" "0.62–0.69×" "${always}×" "≥ 1.0×"
    row 11 "SET P8, each server's default config (2 × 25 conns); p99" "0.57× (22.6 vs 3.9 ms)" "${dflt}× ($dflt_p99)" "≥ 1.0×, p99 ≤ redis"
    row 12 "Gaussian GET+SET 1:1 near 85% RAM hit ÷ all in RAM; avg latency" "~0.6×; 2.5 ms" "$gauss" "≥ 0.9×; < 1 ms"
)
{
    header "Issue #12's efficiency table"
    cat <<EOF

Each row's full report (setup, every run, server and client CPU per
request where the script measures them) is in \`$(basename "$EFF_DIR")/\`,
named after the row. Rows run: $ONLY.${FAILED:+ **Failed:$FAILED** (see their logs).}
Total time: ${elapsed} s. Client and server share the machine's 2 cores.

$TABLE
EOF
    commands_section
} >"$OUT.new"
# Only a run that measured something replaces the report.
if [ "$RAN" = 1 ]; then mv "$OUT.new" "$OUT"; log "wrote $OUT"; else OUT=$OUT.new; fi
# BENCHMARKS.md gets the table when a row ran and every row has a report
# (a row can be run again alone with ONLY).
complete=1
for r in $ROWS_ALL gaussian_ram; do [ -f "$(report "$r")" ] || complete=0; done
if [ "$QUICK" != 1 ] && [ "$RAN" = 1 ] && [ "$complete" = 1 ]; then
    python3 - "$REPO_ROOT/BENCHMARKS.md" "$BEGIN_MARK" "$END_MARK" "$TABLE" "$(date -u +%F) ($(git -C "$REPO_ROOT" rev-parse --short HEAD), ${elapsed} s)" <<'PY'
import sys
path, b, e, table, when = sys.argv[1:]
s = open(path).read()
block = f"{b}\nLast run: {when}; `bash bench/efficiency.sh`; reports in bench/results/efficiency/.\n\n{table}\n{e}"
if b in s and e in s:
    s = s[: s.index(b)] + block + s[s.index(e) + len(e):]
else:
    s = s.replace("## Summary (the bars of DESIGN.md)", "## Issue #12's efficiency table\n\n" + block + "\n\n## Summary (the bars of DESIGN.md)", 1)
open(path, "w").write(s)
PY
    log "updated BENCHMARKS.md"
fi
cat "$OUT"
[ "$RAN" = 1 ] || rm -f "$OUT"
