#!/usr/bin/env bash
# Gaussian sigma sweep (ScaleFlux "Redis on Flash" white paper, Figure 12:
# performance vs RAM hit rate). Same fill as corners.sh (dataset several times
# the RAM budget), then for each key standard deviation sigma, GETs with a
# Gaussian key pattern centred on the middle of the key range
# (--key-pattern G:G --key-median), strata with --tiering-promote second: a
# warm-up run at that sigma lets promotion/demotion settle, then the measured
# run(s). Throughput and latency are given against the *measured* RAM hit ratio,
# in a table and a PNG plot. Client: strata-bench, on the same cores.
#   KEYS         keys, values VALUE_SIZE B (default 2000000; QUICK: 300000)
#   VALUE_SIZE   value bytes (default 512)
#   MAXMEM_RAM   strata --maxmemory-ram (default 256mb; QUICK: 48mb)
#   SIGMA_DIVS   sigma = KEYS / d for each d (default "2000 500 100 50 30 20 10 3")
#   UNIFORM      1 = add a uniform (R:R) point after the sigmas (default 1)
#   WARMUP_TIME  seconds of the warm-up run at each sigma (default 30; QUICK: 4)
#   TEST_TIME    seconds per measured run (default 30; QUICK: 4)
#   RUNS         measured runs per sigma, medians quoted (default 3; QUICK: 1)
#   SB_THREADS / SB_CLIENTS / PIPELINE  strata-bench -t / -c / --pipeline (1 / 8 / 8)
set -euo pipefail
source "$(dirname "$0")/common.sh"

if [ "$QUICK" = 1 ]; then
    d_keys=300000 d_ram=48mb d_warm=4 d_time=4 d_runs=1
else
    d_keys=2000000 d_ram=256mb d_warm=30 d_time=30 d_runs=3
fi
KEYS=${KEYS:-$d_keys}
VALUE_SIZE=${VALUE_SIZE:-512}
MAXMEM_RAM=${MAXMEM_RAM:-$d_ram}
SIGMA_DIVS=${SIGMA_DIVS:-2000 500 100 50 30 20 10 3}
UNIFORM=${UNIFORM:-1}
WARMUP_TIME=${WARMUP_TIME:-$d_warm}
TEST_TIME=${TEST_TIME:-$d_time}
RUNS=${RUNS:-$d_runs}

need_common
need_sb
OUT=$(result_file gaussian)
PNG=${OUT%.md}.png
DEV=$(data_dev "$BENCH_DIR")
T0=$(date +%s)
MEDIAN_KEY=$(((1 + KEYS) / 2))

# ---- strata, filled
port=$(free_port); dir=$(bench_tmpdir strata)
start_strata "$port" "$dir" --maxmemory-ram "$MAXMEM_RAM" --tiering-promote second; spid=$LAST_PID
log "filling $KEYS keys x $VALUE_SIZE B"
sb_fill "$port" STRATA_PORT "$KEYS" "$VALUE_SIZE"
fill_note=$FILL_NOTE
wait_settled "$port"
DIRECT=$(info "$port" flash_direct_io tiered)
BACKEND=$(info "$port" flash_io_backend tiered)
[ "$DIRECT" = 1 ] || log "WARNING: flash_direct_io is $DIRECT: flash reads may come from the page cache"
settled=$(strata_state "$port")
log "after fill: $settled"

POINTS=()
for d in $SIGMA_DIVS; do POINTS+=("$d"); done
[ "$UNIFORM" = 1 ] && POINTS+=(uniform)
declare -A SIG WHIT OPS AVG P50 P99 HIT FRPS DEVR FW GC SCPU CCPU ERR MISS VRAM SEED
for pt in "${POINTS[@]}"; do
    if [ "$pt" = uniform ]; then
        pat=(--key-pattern R:R); SIG[$pt]=-
    else
        SIG[$pt]=$((KEYS / pt))
        [ "${SIG[$pt]}" -ge 1 ] || die "sigma KEYS/$pt is below 1"
        pat=(--key-pattern G:G --key-median "$MEDIAN_KEY" --key-stddev "${SIG[$pt]}")
    fi
    args=(-d "$VALUE_SIZE" --ratio 0:1 "${pat[@]}" --key-minimum 1 --key-maximum "$KEYS" --distinct-client-seed --randomize)
    log "sigma ${SIG[$pt]} ($pt): warm-up ${WARMUP_TIME}s"
    sb_run "$spid" "$port" STRATA_PORT 1 "${args[@]}" --test-time "$WARMUP_TIME"
    WHIT[$pt]=$R_HIT
    for run in $(seq "$RUNS"); do
        sb_run "$spid" "$port" STRATA_PORT 1 "${args[@]}" --test-time "$TEST_TIME"
        OPS[$pt]+=" $R_OPS"; AVG[$pt]+=" $R_AVG"; P50[$pt]+=" $R_P50"; P99[$pt]+=" $R_P99"
        HIT[$pt]+=" $R_HIT"; FRPS[$pt]+=" $R_FRPS"; DEVR[$pt]+=" $R_DEVRPS"; FW[$pt]+=" $R_FWPS"; GC[$pt]+=" $R_GCPS"
        SCPU[$pt]+=" $R_SCPU"; CCPU[$pt]+=" $R_CCPU"; ERR[$pt]+=" $R_ERR"; MISS[$pt]+=" $R_MISS"; SEED[$pt]+=" $R_SEED"
    done
    VRAM[$pt]=$(info "$port" values_in_ram tiered)
done
alive "$spid"
after=$(strata_state "$port")
elapsed=$(($(date +%s) - T0))

# ---- plot: throughput and average latency against the measured RAM hit ratio
TSV=$SCEN_TMP/points.tsv
for pt in "${POINTS[@]}"; do
    lab=$([ "$pt" = uniform ] && echo uniform || echo "σ=1/$pt")
    printf '%s\t%s\t%s\t%s\t%s\n' "$lab" "$(m "${HIT[$pt]}")" "$(m "${OPS[$pt]}")" "$(m "${AVG[$pt]}")" "$(m "${P99[$pt]}")"
done >"$TSV"
title="strata GET, Gaussian keys over $KEYS x $VALUE_SIZE B, --maxmemory-ram $MAXMEM_RAM$([ "$QUICK" = 1 ] && echo ' (QUICK smoke run)' || true)"
python3 -c 'import matplotlib' 2>/dev/null || pip install matplotlib >&2 || true
if python3 -c 'import matplotlib' 2>/dev/null; then
    PLOTTER="python3 + matplotlib $(python3 -c 'import matplotlib; print(matplotlib.__version__)')"
    python3 - "$TSV" "$PNG" "$title" <<'EOF'
import sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if r[1] not in ("n/a", "-")]
rows.sort(key=lambda r: float(r[1]))
lab = [r[0] for r in rows]; x = [100 * float(r[1]) for r in rows]
ops = [float(r[2]) / 1000 for r in rows]; avg = [float(r[3]) for r in rows]
fig, ax = plt.subplots(figsize=(9, 5.5))
l1 = ax.plot(x, ops, "o-", color="tab:blue", label="throughput (kops/s)")
ax.set_xlabel("measured RAM hit ratio (%)")
ax.set_ylabel("GET throughput (kops/s)", color="tab:blue")
ax.set_ylim(bottom=0)
ax.set_xlim(0, 102)
ax.grid(True, alpha=0.3)
ax2 = ax.twinx()
l2 = ax2.plot(x, avg, "s--", color="tab:red", label="average latency (ms)")
ax2.set_ylabel("average latency (ms)", color="tab:red")
ax2.set_ylim(bottom=0)
for xi, yi, t in zip(x, ops, lab):
    ax.annotate(t, (xi, yi), textcoords="offset points", xytext=(4, 6), fontsize=8)
ax.legend(l1 + l2, [l.get_label() for l in l1 + l2], loc="upper center")
ax.set_title(sys.argv[3], fontsize=10)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
EOF
else
    need gnuplot gnuplot
    PLOTTER="$(gnuplot --version)"
    sort -t$'\t' -k2,2g "$TSV" | awk -F'\t' '$2 != "n/a" { print $2 * 100 "\t" $3 / 1000 "\t" $4 "\t\"" $1 "\"" }' >"$TSV.dat"
    gnuplot <<EOF
set terminal pngcairo size 990,600
set output "$PNG"
set title "$title"
set xlabel "measured RAM hit ratio (%)"
set ylabel "GET throughput (kops/s)"
set y2label "average latency (ms)"
set xrange [0:102]
set yrange [0:*]
set y2range [0:*]
set ytics nomirror
set y2tics
set grid
plot "$TSV.dat" using 1:2 with linespoints title "throughput (kops/s)", \
     "" using 1:3 axes x1y2 with linespoints dashtype 2 title "average latency (ms)", \
     "" using 1:2:4 with labels offset 1,1 font ",8" notitle
EOF
fi
[ -s "$PNG" ] || die "no plot written to $PNG"

# ---- report
{
    scenario_header "Gaussian key sweep: GET throughput and latency vs measured RAM hit ratio"
    cat <<EOF

After ScaleFlux, *Redis on Flash* (Figures 11 and 12, performance vs RAM hit
rate): GETs with Gaussian keys around the middle of the key range; the wider
the distribution (σ), the lower the RAM hit ratio.

## Setup

- strata-server --maxmemory-ram $MAXMEM_RAM --threads $STRATA_THREADS (0 = one per CPU) --tiering-promote second; flash_io_backend:$BACKEND, **flash_direct_io:$DIRECT**
- dataset: $KEYS keys \`memtier-<n>\` (n = 1..$KEYS) x $VALUE_SIZE B = $(awk -v k="$KEYS" -v s="$VALUE_SIZE" 'BEGIN { printf "%.0f MiB", k * s / 1048576 }') of values, filled by strata-bench \`-n allkeys --ratio 1:0 --key-pattern P:P\`$( [ -n "$fill_note" ] && printf '\n%s' "$fill_note")
- after the fill settled: $settled
- each point: σ = $KEYS / d (\`--key-pattern G:G --key-median $MEDIAN_KEY --key-stddev σ\`, draws outside 1..$KEYS redrawn), or uniform (\`R:R\`); \`--ratio 0:1 --distinct-client-seed --randomize\` (a new base seed per run, listed below: with a fixed seed every run would repeat the warm-up's key sequence, and with promotion on second read that inflates the measured RAM hit ratio); a ${WARMUP_TIME} s warm-up run at that σ (promotion/demotion settle), then $RUNS measured run(s) of ${TEST_TIME} s; figures are medians of the measured runs (all listed below). Points run in the order of the table, on the same server.
- client: strata-bench -t $SB_THREADS -c $SB_CLIENTS --pipeline $PIPELINE ($((SB_THREADS * SB_CLIENTS)) connections, up to $((SB_THREADS * SB_CLIENTS * PIPELINE)) GETs in flight)
- before every run (warm-up and measured) the page cache is dropped ($( [ "$DROP_CACHES" = 1 ] && echo "echo 3 > /proc/sys/vm/drop_caches" || echo "DROP_CACHES=0: not dropped")); device reads come from /sys/class/block/$DEV/stat over the run (every process's reads of that device count)
- RAM hit ratio = Δtiered_ram_hits / Δ(hits + misses) over the run, strata flash reads/s = Δtiered_total_fetches / s, flash written = Δflash_bytes_written / s (strata-bench's INFO-tiered deltas)
- **client and server share the $(nproc) cores**: server CPU = Δ(utime+stime) of the server process, client CPU = strata-bench's user+sys, both over the client's wall time, in % of one core (200% = both cores)
- plot: \`$(basename "$PNG")\` ($PLOTTER): throughput and average latency against the measured RAM hit ratio
- total time of the script: ${elapsed} s

## Results (medians)

| σ (keys) | σ / key range | warm-up RAM hit ratio | measured RAM hit ratio | GET/s | avg ms | p50 ms | p99 ms | strata flash reads/s | device reads/s | flash MiB written/s | server CPU % | client CPU % | values_in_ram after |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
EOF
    for pt in "${POINTS[@]}"; do
        if [ "$pt" = uniform ]; then s="uniform (R:R)"; f="-"; else s=${SIG[$pt]}; f="1/$pt"; fi
        echo "| $s | $f | ${WHIT[$pt]} | $(m "${HIT[$pt]}") | $(m "${OPS[$pt]}") | $(m "${AVG[$pt]}") | $(m "${P50[$pt]}") | $(m "${P99[$pt]}") | $(m "${FRPS[$pt]}") | $(m "${DEVR[$pt]}") | $(mbps "$(m "${FW[$pt]}")") | $(m "${SCPU[$pt]}") | $(m "${CCPU[$pt]}") | ${VRAM[$pt]} |"
    done
    printf '\n![GET throughput and average latency vs measured RAM hit ratio](%s)\n' "$(basename "$PNG")"
    printf '\n## Every measured run\n\n| σ | GET/s | avg ms | p99 ms | RAM hit ratio | strata flash reads/s | device reads/s | flash B written/s | GC B relocated/s | server CPU %% | client CPU %% | errors | GET misses | seeds |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'
    for pt in "${POINTS[@]}"; do
        echo "| ${SIG[$pt]/#-/uniform} |${OPS[$pt]} |${AVG[$pt]} |${P99[$pt]} |${HIT[$pt]} |${FRPS[$pt]} |${DEVR[$pt]} |${FW[$pt]} |${GC[$pt]} |${SCPU[$pt]} |${CCPU[$pt]} |${ERR[$pt]} |${MISS[$pt]} |${SEED[$pt]} |"
    done
    printf '\nErrors are error replies plus requests lost to broken connections; GET misses must be 0 (every key exists).\n'
    printf '\n## Server state at the end\n\n- %s\n' "$after"
    commands_section
} >"$OUT"
log "wrote $OUT and $PNG"
cat "$OUT"
