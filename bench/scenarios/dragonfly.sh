#!/usr/bin/env bash
# Dragonfly's SSD-tiering comparison (seed 003): write a dataset ~4x the RAM
# budget at a fixed rate, then read it with uniform random GETs; strata (RESP)
# vs memcached with extstore (memcached text protocol), the same key count,
# value size and client settings; plus strata's flash read rate vs fio's
# 4 KiB random-read IOPS at the same depth. Both servers are flash-bound: each
# runs in its own memory cgroup whose limit counts the page cache (RAM budget
# + CG_SLACK_MB), the page cache is dropped before every read run, and the
# device's own read count is recorded.
#   RAM_MB        RAM budget: strata --maxmemory-ram, memcached -m (default 512; QUICK: 64)
#   VALUE_SIZE    bytes (default 1024)
#   DATA_FACTOR   dataset / RAM budget (default 4)
#   KEYS          keys (default RAM_MB MiB x DATA_FACTOR / VALUE_SIZE)
#   CG_SLACK_MB   cgroup limit = RAM_MB + this, per server (default 160; QUICK: 96)
#   FILL_RATE     requests/s of the write phase, open loop (default 50000; QUICK: 50000)
#   MC_THREADS    memcached -t (default: number of CPUs)
#   EXT_OPTS      memcached -o extras (default ext_threads=4,ext_item_size=512,ext_item_age=0)
#   STRATA_PROMOTE  strata --tiering-promote ("" = the server's default, second)
#   TEST_TIME     seconds per read run (default 30; QUICK: 5)
#   RUNS          read runs per server (alternating), medians (default 3; QUICK: 1)
#   FIO_SIZE      fio file (default 4g; QUICK: 1g)
#   SB_THREADS / SB_CLIENTS / PIPELINE  (default 1 / 8 / 4: 32 reads in flight; fio at that depth)
#   STRATA_PROTO  redis (default) or memcache: strata is filled and read over
#                 its memcached port with the memcached text protocol, as
#                 memcached is (INFO tiered still read over RESP)
set -euo pipefail
PIPELINE=${PIPELINE:-4}
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/extra.sh"

if [ "$QUICK" = 1 ]; then
    d_ram=64 d_slack=96 d_time=5 d_runs=1 d_fio=1g
else
    d_ram=512 d_slack=160 d_time=30 d_runs=3 d_fio=4g
fi
RAM_MB=${RAM_MB:-$d_ram}
VALUE_SIZE=${VALUE_SIZE:-1024}
DATA_FACTOR=${DATA_FACTOR:-4}
KEYS=${KEYS:-$((RAM_MB * 1048576 * DATA_FACTOR / VALUE_SIZE))}
CG_SLACK_MB=${CG_SLACK_MB:-$d_slack}
FILL_RATE=${FILL_RATE:-50000}
MC_THREADS=${MC_THREADS:-$(nproc)}
EXT_OPTS=${EXT_OPTS:-ext_threads=4,ext_item_size=512,ext_item_age=0}
STRATA_PROMOTE=${STRATA_PROMOTE:-}
TEST_TIME=${TEST_TIME:-$d_time}
RUNS=${RUNS:-$d_runs}
FIO_SIZE=${FIO_SIZE:-$d_fio}
DEPTH=$((SB_THREADS * SB_CLIENTS * PIPELINE))

need_common
need_sb
need memcached memcached
need fio fio
OUT=$(result_file "dragonfly$([ "${STRATA_PROTO:-redis}" = memcache ] && echo -memcache)")
DEV=$(data_dev "$BENCH_DIR")
T0=$(date +%s)
DATA_MB=$((KEYS * VALUE_SIZE / 1048576))
EXT_GB=$(((DATA_MB * 2 + 1023) / 1024)); [ "$EXT_GB" -ge 1 ] || EXT_GB=1
CGK=$(cg_kind)
[ "$CGK" != none ] || log "WARNING: no memory cgroup available: the servers are NOT confined (page cache not limited)"
CG_S=$(cg_create strata $((RAM_MB + CG_SLACK_MB)))
CG_M=$(cg_create memcached $((RAM_MB + CG_SLACK_MB)))
CG_PATHS+=($CG_S $CG_M)   # cg_create ran in a subshell: register them here for cg_cleanup
[ "$CGK" = none ] || [ -n "$CG_S" ] && [ -n "$CG_M" ] || log "WARNING: could not create the cgroups"

# ---- strata: fill at FILL_RATE
sport=$(free_port); sdir=$(bench_tmpdir strata)
popt=(); [ -n "$STRATA_PROMOTE" ] && popt=(--tiering-promote "$STRATA_PROMOTE")
STRATA_PROTO=${STRATA_PROTO:-redis}
SPROTO=()   # the client's protocol options for strata's load port
if [ "$STRATA_PROTO" = memcache ]; then
    smc=$(free_port)
    popt+=(--memcached-port "$smc")
    SPROTO=(-P memcache_text --info-port "$sport")
fi
start_strata_cg "$CG_S" "$sport" "$sdir" --maxmemory-ram "${RAM_MB}mb" "${popt[@]}"; spid=$LAST_PID
sload=$([ "$STRATA_PROTO" = memcache ] && echo "$smc" || echo "$sport")
log "strata: writing $KEYS x $VALUE_SIZE B at $FILL_RATE/s over $STRATA_PROTO"
xfill "$sload" STRATA_PORT "$KEYS" "$VALUE_SIZE" 1 --rate "$FILL_RATE" "${SPROTO[@]}"
S_FILL="$XF_OPS SET/s, p99 $XF_P99 ms, $XF_ERR errors${XF_FIRST:+ (first: $XF_FIRST)}, ${XF_WALL} s, client CPU $XF_CCPU%"
wait_settled "$sport" 300
S_STORED=$(redis-cli -p "$sport" dbsize)
DIRECT=$(info "$sport" flash_direct_io tiered)
BACKEND=$(info "$sport" flash_io_backend tiered)
S_STATE=$(strata_state "$sport")
S_CG_FILL=$(cg_report "$CG_S")
log "strata after fill: DBSIZE $S_STORED; $S_STATE; cgroup: $S_CG_FILL"

# ---- memcached + extstore: the same fill
mport=$(free_port); mdir=$(bench_tmpdir memcached)
start_memcached "$mport" "$mdir" "$RAM_MB" "$MC_THREADS" "$CG_M" -o "ext_path=$mdir/extstore:${EXT_GB}G,$EXT_OPTS"; mpid=$LAST_PID
log "memcached: writing $KEYS x $VALUE_SIZE B at $FILL_RATE/s"
xfill "$mport" MEMCACHED_PORT "$KEYS" "$VALUE_SIZE" 1 --rate "$FILL_RATE" -P memcache_text
M_FILL="$XF_OPS SET/s, p99 $XF_P99 ms, $XF_ERR errors${XF_FIRST:+ (first: $XF_FIRST)}, ${XF_WALL} s, client CPU $XF_CCPU%"
sleep 3
M_STORED=$(mc_stat "$mport" curr_items)
M_STATS=$(mc_stats "$mport" | awk '$1 ~ /^(curr_items|total_items|evictions|extstore_objects_written|extstore_objects_used|extstore_bytes_written|extstore_bytes_used|extstore_pages_free|extstore_io_queue|bytes|limit_maxbytes)$/ { printf "%s%s=%s", sep, $1, $2; sep = ", " }')
M_CG_FILL=$(cg_report "$CG_M")
log "memcached after fill: $M_STATS; cgroup: $M_CG_FILL"

# ---- fio file
FIO_FILE=$RUN_DIR/fio.dat
log "laying out the fio file ($FIO_SIZE)"
fio_seqwrite "$FIO_FILE" "$FIO_SIZE" >/dev/null
ENGINE=$(fio_engine "$FIO_FILE")

# ---- reads: uniform random GETs, runs alternating
RARGS=(-d "$VALUE_SIZE" --ratio 0:1 --key-pattern R:R --key-minimum 1 --key-maximum "$KEYS" --distinct-client-seed --randomize)
declare -A OPS HITS P50 P99 AVG DEVR DEVK SCPU CCPU ERR MISS FRPS RHIT
FIO_IOPS="" FIO_P50="" FIO_P99=""
for run in $(seq "$RUNS"); do
    drop_caches
    read -r iops fp50 fp99 _fio_cpu < <(fio_randread "$FIO_FILE" "$FIO_SIZE" "$ENGINE" "$DEPTH" "$TEST_TIME")
    FIO_IOPS+=" $iops"; FIO_P50+=" $fp50"; FIO_P99+=" $fp99"
    log "fio depth $DEPTH: $iops IOPS, p50 $fp50 us, p99 $fp99 us"
    for srv in strata memcached; do
        if [ "$srv" = strata ]; then
            STRATA_INFO_PORT=$sport sb_run "$spid" "$sload" STRATA_PORT 1 "${RARGS[@]}" --test-time "$TEST_TIME" "${SPROTO[@]}"
        else
            # strata=0: no INFO to ask; the device reads are counted here instead
            read -r dr0 _ < <(dev_reads "$DEV"); ds0=$(awk '{ print $3 }' "/sys/class/block/$DEV/stat" 2>/dev/null || echo 0)
            sb_run "$mpid" "$mport" MEMCACHED_PORT 0 "${RARGS[@]}" --test-time "$TEST_TIME" -P memcache_text
            read -r dr1 ds1 < <(dev_reads "$DEV")
            R_DEVRPS=$(div $((dr1 - dr0)) "$CLIENT_WALL" %.0f); R_DEVKBPS=$(div $(((ds1 - ds0) / 2)) "$CLIENT_WALL" %.0f)
            R_HIT=- R_FRPS=-
        fi
        OPS[$srv]+=" $R_OPS"; P50[$srv]+=" $R_P50"; P99[$srv]+=" $R_P99"; AVG[$srv]+=" $R_AVG"
        HITS[$srv]+=" $(printf '%.0f' "$(sb_get "$SB_JSON" aggregate.gets.hits_per_sec)")"
        DEVR[$srv]+=" $R_DEVRPS"; DEVK[$srv]+=" $R_DEVKBPS"; SCPU[$srv]+=" $R_SCPU"; CCPU[$srv]+=" $R_CCPU"
        ERR[$srv]+=" $R_ERR"; MISS[$srv]+=" $R_MISS"; FRPS[$srv]+=" $R_FRPS"; RHIT[$srv]+=" $R_HIT"
    done
done
alive "$spid"; alive "$mpid"
S_CG_END=$(cg_report "$CG_S"); M_CG_END=$(cg_report "$CG_M")
S_END=$(strata_state "$sport")
M_END=$(mc_stats "$mport" | awk '$1 ~ /^(curr_items|evictions|get_hits|get_misses|get_extstore|get_aborted_extstore|get_oom_extstore|recache_from_extstore|miss_from_extstore|badcrc_from_extstore|extstore_objects_used|extstore_bytes_read)$/ { printf "%s%s=%s", sep, $1, $2; sep = ", " }')
elapsed=$(($(date +%s) - T0))
fio_med=$(median $FIO_IOPS)
s_frps=$(m "${FRPS[strata]}")

{
    scenario_header "Dataset 4x RAM, written at a fixed rate, then uniform random reads: strata vs memcached + extstore"
    cat <<EOF

After Dragonfly's *SSD Data Tiering* page (seed 003): "writing a 90GB dataset
into all stores and then reading them randomly with uniform distribution"
on a 32 GB instance; Dragonfly 60K reads/s at 5 ms p99 vs memcached/extstore
16K at 190 ms. Here: the same steps, scaled to this VM.

## Setup

- RAM budget $RAM_MB MiB per server; dataset $KEYS keys \`memtier-1..$KEYS\` × $VALUE_SIZE B = $DATA_MB MiB of values ($DATA_FACTOR× the budget)
- memory cgroups ($CGK): each server in its own, **limit $((RAM_MB + CG_SLACK_MB)) MiB counting its page cache** ($([ "$CGK" = v1 ] && echo "memory.limit_in_bytes under /sys/fs/cgroup/memory" || echo "memory.max"); the process is started inside it)
- strata-server --maxmemory-ram ${RAM_MB}mb ${popt[*]:-(tiering-promote: server default)} --threads $STRATA_THREADS; flash_io_backend:$BACKEND, **flash_direct_io:$DIRECT**
- $(memcached -V) -m $RAM_MB -t $MC_THREADS -o ext_path=FILE:${EXT_GB}G,$EXT_OPTS (DESIGN.md's "peer settings that hold up": ext_item_age=0 during the fill, else the fill loses items to eviction); buffered I/O on the extstore file, so the cgroup limit is what keeps its reads on the device
- write phase: \`-n allkeys --key-pattern P:P --ratio 1:0 --rate $FILL_RATE\` (open loop), -t $SB_THREADS -c $SB_CLIENTS --pipeline $PIPELINE, same for both
- read phase: \`--ratio 0:1 --key-pattern R:R --distinct-client-seed --randomize\`, -t $SB_THREADS -c $SB_CLIENTS --pipeline $PIPELINE (**$DEPTH GETs in flight**), $RUNS run(s) of ${TEST_TIME} s per server, alternating with fio, page cache dropped before each; medians quoted
- fio: 4 KiB random reads, O_DIRECT, $ENGINE, iodepth $DEPTH, numjobs 1, ${TEST_TIME} s on a $FIO_SIZE file in $BENCH_DIR; $(fio --version)
- device reads from /sys/class/block/$DEV/stat over each run (every process's reads of that device count)
- $(client_note)
- total time of the script: ${elapsed} s

## Write phase ($KEYS SETs offered at $FILL_RATE/s)

| server | result | keys stored afterwards | lost |
|---|---|---:|---:|
| strata | $S_FILL | $S_STORED | $((KEYS - S_STORED)) |
| memcached + extstore | $M_FILL | $M_STORED | $((KEYS - M_STORED)) |

- strata after the fill: $S_STATE; cgroup: $S_CG_FILL
- memcached after the fill: $M_STATS; cgroup: $M_CG_FILL

## Read phase (medians)

| server | GET/s | hits/s | misses/s | avg ms | p50 ms | p99 ms | strata flash reads/s | RAM hit ratio | device reads/s | device KiB/s read | server CPU % | client CPU % | errors |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
EOF
    for srv in strata memcached; do
        lab=$([ "$srv" = strata ] && echo "strata ($([ "$STRATA_PROTO" = memcache ] && echo "memcached text" || echo RESP))" || echo "memcached + extstore (text)")
        mo=$(m "${OPS[$srv]}"); mhits=$(m "${HITS[$srv]}")
        echo "| $lab | **$mo** | $mhits | $(awk -v a="$mo" -v b="$mhits" 'BEGIN { printf "%.0f", a - b }') | $(m "${AVG[$srv]}") | $(m "${P50[$srv]}") | **$(m "${P99[$srv]}")** | $(m "${FRPS[$srv]}") | $(m "${RHIT[$srv]}") | $(m "${DEVR[$srv]}") | $(m "${DEVK[$srv]}") | $(m "${SCPU[$srv]}") | $(m "${CCPU[$srv]}") | $(m "${ERR[$srv]}") |"
    done
    cat <<EOF

- strata ÷ memcached, GET/s: **$(div "$(m "${OPS[strata]}")" "$(m "${OPS[memcached]}")")×**, hits/s: $(div "$(m "${HITS[strata]}")" "$(m "${HITS[memcached]}")")× (DESIGN.md bar: ≥ 3× ops/s, p99 lower)
- fio at depth $DEPTH: **$fio_med IOPS** (p50 $(median $FIO_P50) µs, p99 $(median $FIO_P99) µs); strata flash reads/s ÷ fio IOPS = **$(div "$s_frps" "$fio_med" %.3f)** (bar: ≥ 0.9)
- memcached at the end: $M_END; cgroup: $M_CG_END
- strata at the end: $S_END; cgroup: $S_CG_END

## Every run

| run | fio IOPS | strata GET/s | strata p99 ms | strata flash reads/s | strata device reads/s | memcached GET/s | memcached hits/s | memcached p99 ms | memcached device reads/s | errors strata / memcached |
|---|---|---|---|---|---|---|---|---|---|---|
EOF
    for i in $(seq "$RUNS"); do
        f() { echo "$1" | awk -v i="$i" '{ print $i }'; }
        echo "| $i | $(f "$FIO_IOPS") | $(f "${OPS[strata]}") | $(f "${P99[strata]}") | $(f "${FRPS[strata]}") | $(f "${DEVR[strata]}") | $(f "${OPS[memcached]}") | $(f "${HITS[memcached]}") | $(f "${P99[memcached]}") | $(f "${DEVR[memcached]}") | $(f "${ERR[strata]}") / $(f "${ERR[memcached]}") |"
    done
    commands_section
} >"$OUT"
sed -i "s/^\(- fio-.*\) (not used here)$/\1/" "$OUT"
log "wrote $OUT"
cat "$OUT"
