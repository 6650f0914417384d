#!/usr/bin/env bash
# OmniTier MemStac on Samsung NVMe (seed 004): 100 B records (20 B keys, 80 B
# values), uniform and Zipf "ETC" keys, 100% GET and 80/20 GET/SET, latency
# vs throughput at 1, 8, 16 and 32 requests in flight per connection
# (--pipeline). Strata (a RAM budget of the keys plus 1/8 of the values, the
# paper's "at most 1/8 of the cache capacity resident in DRAM") vs
# redis-server over RESP (all in RAM); memcached (all in RAM) over the
# memcached text protocol; strata-mc = Strata over its memcached port with
# the memcached text protocol (the paper's comparison, memcached's client
# path on both). A table and a PNG plot (mean latency vs throughput).
#   KEYS          records (default 4000000; QUICK: 200000)
#   VALUE_SIZE    bytes (default 80); KEY_LEN key bytes (default 20): keys are
#                 a prefix padded so that prefix + decimal number = KEY_LEN
#   KEY_OVERHEAD  strata RAM per key besides the values (default 170 B)
#   VALUE_RAM_FRACTION  share of the values' bytes in strata's RAM (default 0.125)
#   MAXMEM_RAM    strata --maxmemory-ram (default KEYS*(KEY_OVERHEAD + VALUE_SIZE*VALUE_RAM_FRACTION))
#   MC_MB         memcached -m (default KEYS*200 B + 64 MiB: everything in RAM)
#   ZIPF_S        Zipf-Mandelbrot exponent (default 2.5, the paper's ETC)
#   ZIPF_BETA     shift in ranks (default 0.03 x KEYS: the paper's continuous
#                 p(τ) ∝ (τ + 0.03)^-s over τ in (0,1) is (k + 0.03·N)^-s over ranks k)
#   WORKLOADS     among "uniform-get uniform-8020 zipf-get zipf-8020" (default all)
#   DEPTHS        --pipeline values (default "1 8 16 32")
#   SERVERS       among "strata strata-mc redis memcached" (default "strata redis memcached")
#   WARMUP_TIME   seconds of an unmeasured run per workload and server (default 10; QUICK: 1)
#   TEST_TIME     seconds per point (default 10; QUICK: 2)
#   SB_THREADS / SB_CLIENTS  (default 1 / 8)
set -euo pipefail
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/extra.sh"

if [ "$QUICK" = 1 ]; then
    d_keys=200000 d_warm=1 d_time=2
else
    d_keys=4000000 d_warm=10 d_time=10
fi
KEYS=${KEYS:-$d_keys}
VALUE_SIZE=${VALUE_SIZE:-80}
KEY_LEN=${KEY_LEN:-20}
KEY_OVERHEAD=${KEY_OVERHEAD:-170}
VALUE_RAM_FRACTION=${VALUE_RAM_FRACTION:-0.125}
MAXMEM_RAM=${MAXMEM_RAM:-$(awk -v k="$KEYS" -v v="$VALUE_SIZE" -v f="$VALUE_RAM_FRACTION" -v o="$KEY_OVERHEAD" 'BEGIN { printf "%dmb", k * (o + v * f) / 1048576 + 1 }')}
MC_MB=${MC_MB:-$((KEYS * 200 / 1048576 + 64))}
ZIPF_S=${ZIPF_S:-2.5}
ZIPF_BETA=${ZIPF_BETA:-$(awk -v k="$KEYS" 'BEGIN { printf "%.0f", 0.03 * k }')}
WORKLOADS=${WORKLOADS:-uniform-get uniform-8020 zipf-get zipf-8020}
DEPTHS=${DEPTHS:-1 8 16 32}
SERVERS=${SERVERS:-strata redis memcached}
WARMUP_TIME=${WARMUP_TIME:-$d_warm}
TEST_TIME=${TEST_TIME:-$d_time}

need_common
need_sb
OUT=$(result_file "${RESULT_NAME:-memstac}")   # RESULT_NAME: another report name
PNG=${OUT%.md}.png
DEV=$(data_dev "$BENCH_DIR")
T0=$(date +%s)

# keys: <prefix><D digits> with D fixed over the range, prefix padded to KEY_LEN - D
D=$((${#KEYS} + 1))
KMIN=$((10 ** (D - 1))); KMAX=$((KMIN + KEYS - 1))
PLEN=$((KEY_LEN - D)); [ "$PLEN" -ge 1 ] || die "KEY_LEN $KEY_LEN too short for $KEYS keys"
PREFIX=$(printf '%-*s' "$PLEN" "ms:" | tr ' ' 'x')
log "keys ${PREFIX}${KMIN} .. ${PREFIX}${KMAX} (${#PREFIX} + $D = $KEY_LEN bytes)"
KARGS=(--key-prefix "$PREFIX" --key-minimum "$KMIN" --key-maximum "$KMAX")

declare -A PID PORT PROTO PNAME LABEL FILL
LABEL=([strata]="strata (RESP)" [strata-mc]="strata (memcached text)" [redis]="redis-server (RESP)" [memcached]="memcached (text)")
declare -A INFO_PORT   # strata's RESP port, for INFO, when the load uses another
for s in $SERVERS; do
    PORT[$s]=$(free_port); dir=$(bench_tmpdir "$s")
    case $s in
        strata) start_strata "${PORT[$s]}" "$dir" --maxmemory-ram "$MAXMEM_RAM"; PROTO[$s]=redis; PNAME[$s]=STRATA_PORT ;;
        strata-mc)
            INFO_PORT[$s]=$(free_port)
            start_strata "${INFO_PORT[$s]}" "$dir" --maxmemory-ram "$MAXMEM_RAM" --memcached-port "${PORT[$s]}"
            PROTO[$s]=memcache_text; PNAME[$s]=STRATA_MC_PORT ;;
        redis) start_redis "${PORT[$s]}" "$dir"; PROTO[$s]=redis; PNAME[$s]=REDIS_PORT ;;
        memcached) start_memcached "${PORT[$s]}" "$dir" "$MC_MB" "$(nproc)" ""; PROTO[$s]=memcache_text; PNAME[$s]=MEMCACHED_PORT ;;
        *) die "unknown server $s" ;;
    esac
    PID[$s]=$LAST_PID
    SB_CLIENTS_SAVE=$SB_CLIENTS PIPELINE_SAVE=$PIPELINE
    PIPELINE=16
    xfill "${PORT[$s]}" "${PNAME[$s]}" "$KEYS" "$VALUE_SIZE" "$KMIN" --key-prefix "$PREFIX" -P "${PROTO[$s]}"
    PIPELINE=$PIPELINE_SAVE
    FILL[$s]="$XF_OPS SET/s, $XF_ERR errors${XF_FIRST:+ (first: $XF_FIRST)}"
    if [ "$s" = memcached ]; then n=$(mc_stat "${PORT[$s]}" curr_items); else n=$(redis-cli -p "${INFO_PORT[$s]:-${PORT[$s]}}" dbsize); fi
    FILL[$s]+=", $n keys stored"
    [ "$n" = "$KEYS" ] || log "WARNING: $s holds $n of $KEYS keys after the fill"
done
for s in strata strata-mc; do
    [[ " $SERVERS " == *" $s "* ]] || continue
    ip=${INFO_PORT[$s]:-${PORT[$s]}}
    wait_settled "$ip"
    DIRECT=$(info "$ip" flash_direct_io tiered)
    S_FILL_STATE=$(strata_state "$ip")
    log "$s after fill: $S_FILL_STATE"
done
REDIS_MEM=$([[ " $SERVERS " == *" redis "* ]] && info "${PORT[redis]}" used_memory_human memory || echo -)

declare -A WPAT WRAT WNAME
WPAT=([uniform-get]="R:R" [uniform-8020]="R:R" [zipf-get]="Z:Z" [zipf-8020]="Z:Z")
WRAT=([uniform-get]="0:1" [uniform-8020]="1:4" [zipf-get]="0:1" [zipf-8020]="1:4")
WNAME=([uniform-get]="uniform, 100% GET" [uniform-8020]="uniform, 80/20 GET/SET" [zipf-get]="Zipf ETC, 100% GET" [zipf-8020]="Zipf ETC, 80/20 GET/SET")
TSV=$SCEN_TMP/points.tsv; : >"$TSV"
ROWS=""
for w in $WORKLOADS; do
    [ -n "${WPAT[$w]:-}" ] || die "unknown workload $w"
    args=(-d "$VALUE_SIZE" "${KARGS[@]}" --ratio "${WRAT[$w]}" --key-pattern "${WPAT[$w]}" --distinct-client-seed --randomize)
    [ "${WPAT[$w]}" = Z:Z ] && args+=(--zipf-s "$ZIPF_S" --zipf-beta "$ZIPF_BETA")
    for s in $SERVERS; do
        st=0; [[ "$s" == strata* ]] && st=1
        extra=(); [ -n "${INFO_PORT[$s]:-}" ] && extra=(--info-port "${INFO_PORT[$s]}")
        export STRATA_INFO_PORT=${INFO_PORT[$s]:-}
        [ -n "$STRATA_INFO_PORT" ] || unset STRATA_INFO_PORT
        PIPELINE=8
        sb_run "${PID[$s]}" "${PORT[$s]}" "${PNAME[$s]}" "$st" "${args[@]}" -P "${PROTO[$s]}" "${extra[@]}" --test-time "$WARMUP_TIME"
        for d in $DEPTHS; do
            PIPELINE=$d
            sb_run "${PID[$s]}" "${PORT[$s]}" "${PNAME[$s]}" "$st" "${args[@]}" -P "${PROTO[$s]}" "${extra[@]}" --test-time "$TEST_TIME"
            ROWS+="| ${WNAME[$w]} | ${LABEL[$s]} | $d | $((SB_THREADS * SB_CLIENTS * d)) | **$R_OPS** | **$R_AVG** | $R_P50 | $R_P99 | $R_HIT | $R_FRPS | $R_DEVRPS | $R_SCPU | $R_CCPU | $R_ERR | $R_MISS |"$'\n'
            printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$w" "${WNAME[$w]}" "$s" "$d" "$R_OPS" "$R_AVG" >>"$TSV"
        done
    done
done
for s in $SERVERS; do alive "${PID[$s]}"; done
S_END=-
for s in strata strata-mc; do
    [[ " $SERVERS " == *" $s "* ]] && S_END=$(strata_state "${INFO_PORT[$s]:-${PORT[$s]}}")
done
elapsed=$(($(date +%s) - T0))

# ---- plot: mean latency vs throughput, one panel per workload
title="100 B records ($KEYS keys), 1/8 of values in strata's RAM$([ "$QUICK" = 1 ] && echo ' (QUICK smoke run)' || true)"
python3 -c 'import matplotlib' 2>/dev/null || pip install matplotlib >&2 || true
PLOTTER="python3 + matplotlib $(python3 -c 'import matplotlib; print(matplotlib.__version__)' 2>/dev/null || echo missing)"
python3 - "$TSV" "$PNG" "$title" <<'EOF' || log "WARNING: plot failed"
import sys, collections
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
wl = list(dict.fromkeys(r[0] for r in rows))
names = {r[0]: r[1] for r in rows}
n = len(wl); cols = 2 if n > 1 else 1; nr = (n + cols - 1) // cols
fig, axes = plt.subplots(nr, cols, figsize=(6 * cols, 4.2 * nr), squeeze=False)
style = {"strata": ("tab:blue", "o-"), "strata-mc": ("tab:green", "D-"), "redis": ("tab:red", "s--"), "memcached": ("tab:gray", "^:")}
for i, w in enumerate(wl):
    ax = axes[i // cols][i % cols]
    by = collections.OrderedDict()
    for r in rows:
        if r[0] == w: by.setdefault(r[2], []).append((float(r[4]) / 1000, float(r[5]), r[3]))
    for s, pts in by.items():
        c, st = style.get(s, ("k", "o-"))
        ax.plot([p[0] for p in pts], [p[1] for p in pts], st, color=c, label=s)
        for x, y, d in pts:
            ax.annotate("qd" + d, (x, y), textcoords="offset points", xytext=(3, 3), fontsize=7)
    ax.set_title(names[w], fontsize=10)
    ax.set_xlabel("throughput (kops/s)"); ax.set_ylabel("mean latency (ms)")
    ax.set_xlim(left=0); ax.set_ylim(bottom=0); ax.grid(True, alpha=0.3); ax.legend(fontsize=8)
for j in range(n, nr * cols): axes[j // cols][j % cols].axis("off")
fig.suptitle(sys.argv[3], fontsize=10)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
EOF

{
    scenario_header "Latency vs throughput, 100 B records, uniform and Zipf ETC: strata vs redis-server (memcached as reference)"
    cat <<EOF

After OmniTier, *MemStac on Samsung NVMe SSDs* (seed 004), Figures 1 and 3:
100 B records (20 B keys, 80 B values), 100% GET and 80% GET / 20% SET,
uniform and Facebook ETC (Zipf-Mandelbrot s = 2.5, β = 0.03) keys, mean
latency against throughput at queue depths 1, 8, 16 and 32 per connection.

## Setup

- records: $KEYS keys \`${PREFIX}${KMIN}\` .. \`${PREFIX}${KMAX}\` ($KEY_LEN B) × $VALUE_SIZE B values
- strata-server --maxmemory-ram $MAXMEM_RAM (= $KEYS × ($KEY_OVERHEAD B + $VALUE_SIZE B × $VALUE_RAM_FRACTION): the keys plus at most 1/8 of the values) --threads $STRATA_THREADS (tiering-promote: server default); flash_direct_io:${DIRECT:-n/a}; after the fill: ${S_FILL_STATE:-n/a}
- redis-server (all in RAM, --save "" --appendonly no): used_memory $REDIS_MEM after the fill
- memcached -m $MC_MB -t $(nproc) (all in RAM, no extstore), **over the memcached text protocol: a reference, not the same protocol**
- fills (-n allkeys, P:P, -c $SB_CLIENTS --pipeline 16): $(for s in $SERVERS; do printf '%s: %s; ' "$s" "${FILL[$s]}"; done)
- Zipf: \`--key-pattern Z:Z --zipf-s $ZIPF_S --zipf-beta $ZIPF_BETA\` (β = 0.03 × $KEYS keys: the paper's continuous law over τ = rank / N); ranks spread over the key range by strata-bench's fixed permutation
- 80/20 GET/SET: \`--ratio 1:4\` (memtier's --ratio is SET:GET); \`--distinct-client-seed --randomize\`
- each workload and server: a ${WARMUP_TIME} s warm-up at pipeline 8, then one ${TEST_TIME} s closed-loop run per depth, -t $SB_THREADS -c $SB_CLIENTS ($((SB_THREADS * SB_CLIENTS)) connections) --pipeline qd; page cache dropped before every run
- the paper's servers had 120-528 connections over 10 GbE on many cores; here $((SB_THREADS * SB_CLIENTS)) loopback connections on $(nproc) cores
- $(client_note)
- plot: \`$(basename "$PNG")\` ($PLOTTER)
- total time of the script: ${elapsed} s

## Results

| workload | server | qd (pipeline) | in flight | ops/s | mean ms | p50 ms | p99 ms | RAM hit ratio | strata flash reads/s | device reads/s | server CPU % | client CPU % | errors | GET misses |
|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
$ROWS
GET misses must be 0 (every key exists).

![mean latency vs throughput](%PNG%)

## Strata at the end

- $S_END
EOF
    commands_section
} >"$OUT"
sed -i "s#%PNG%#$(basename "$PNG")#" "$OUT"
log "wrote $OUT and $PNG"
cat "$OUT"
