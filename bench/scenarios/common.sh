# shellcheck shell=bash
# Shared helpers for the scenario scripts (bench/scenarios/*.sh), on top of
# bench/lib.sh: strata-bench as the client, its JSON report parsed, server and
# client CPU, device reads and the page-cache drop around every run.
# Source it from a scenario script:
#   source "$(dirname "$0")/common.sh"
# Parameters (environment variables), besides those of lib.sh:
#   SB_BIN       strata-bench binary (default target/release/strata-bench,
#                built with cargo if missing)
#   SB_THREADS   strata-bench -t (default 1)
#   SB_CLIENTS   strata-bench -c, connections per thread (default 8)
#   PIPELINE     strata-bench --pipeline (default 8)
#   DROP_CACHES  1 = drop the page cache before every measured run (default 1)

source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

SB_BIN=${SB_BIN:-$REPO_ROOT/target/release/strata-bench}
SB_THREADS=${SB_THREADS:-1}
SB_CLIENTS=${SB_CLIENTS:-8}
PIPELINE=${PIPELINE:-8}
DROP_CACHES=${DROP_CACHES:-1}
SCEN_TMP=$(bench_tmpdir sb)
SB_SEQ=0

need_sb() {
    if [ ! -x "$SB_BIN" ] || [ ! -x "$STRATA_BIN" ]; then
        command -v cargo >/dev/null || die "$SB_BIN or $STRATA_BIN missing and no cargo to build them"
        log "building strata-bench and strata-server (release)"
        (cd "$REPO_ROOT" && cargo build --release -p strata-bench -p strata-server)
    fi
}

sb_identity() {
    echo "$("$SB_BIN" --version): $SB_BIN, sha256 $(sha256sum "$SB_BIN" | cut -c1-12), built $(date -u -r "$SB_BIN" '+%Y-%m-%d %H:%M:%S UTC')"
}

# scenario_header TITLE: lib.sh's header with this script's path and strata-bench's version
scenario_header() {
    header "$1" | sed -e "s#\`bench/$(basename "$0")\`#\`bench/scenarios/$(basename "$0")\`#" \
        -e "s#^- \(redis-benchmark .*\)#- $(sb_identity | sed 's/#/\\#/g') (the client)\n- \1 (not used here)#" \
        -e "s#^- \(fio-.*\)#- \1 (not used here)#"
}

# sb_json FILE: "ops avg p50 p99 hit flash_reads/s flash_bytes_written/s errors
# get_misses duration seed" from a strata-bench JSON report (aggregate of its runs,
# totals = GETs and SETs together; hit is n/a when the run had no GET)
sb_json() {
    python3 - "$1" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
a = j["aggregate"]
t = a["totals"]
ti = a.get("tiered") or {}
hit = ti.get("ram_hit_ratio")
def f(v, fmt):
    return "n/a" if v is None else fmt % v
print(" ".join([
    "%.0f" % t["ops_per_sec"], "%.3f" % t["avg_latency_ms"], "%.3f" % t["p50_latency_ms"],
    "%.3f" % t["p99_latency_ms"], f(hit, "%.4f"),
    f(ti.get("flash_reads_per_sec") if ti else None, "%.0f"),
    f(ti.get("flash_bytes_written_per_sec") if ti else None, "%.0f"),
    str(a["errors"] + a["connection_errors"]),
    "%.0f" % (a["gets"]["misses_per_sec"] * a["duration_secs"]),
    "%.3f" % a["duration_secs"], str(j.get("seed", "n/a")),
]))
EOF
}

# sb_cmd PORT ARGS...: the strata-bench command line (in SB_CMD)
sb_cmd() {
    local port=$1; shift
    SB_SEQ=$((SB_SEQ + 1))
    SB_JSON=$SCEN_TMP/run$SB_SEQ.json
    SB_CMD=("$SB_BIN" -s 127.0.0.1 -p "$port" -t "$SB_THREADS" -c "$SB_CLIENTS" --pipeline "$PIPELINE"
        "$@" --hide-histogram --json-out-file "$SB_JSON")
}

# record_sb NAME: record SB_CMD with its port shown as NAME and no temp path
record_sb() {
    local s
    s=$(printf '%q ' "${SB_CMD[@]}")
    s=${s/ -p ${SB_CMD[4]} / -p $1 }
    s=${s/$SB_BIN/target/release/strata-bench}
    record "${s% --json-out-file *} --json-out-file run.json"
}

# sb_fill PORT PORTNAME KEYS SIZE: SET keys 1..KEYS once each
# (-n allkeys --ratio 1:0 --key-pattern P:P); a second pass if any SET failed
# (e.g. OOM while demotion lags). Sets FILL_NOTE ("" if all went well).
sb_fill() {
    local port=$1 name=$2 keys=$3 size=$4 r errs dbsize
    sb_cmd "$port" -d "$size" --ratio 1:0 --key-pattern P:P --key-minimum 1 --key-maximum "$keys" -n allkeys
    record_sb "$name"
    timed "$SCEN_TMP/fill.out" "${SB_CMD[@]}"
    [ -s "$SB_JSON" ] || die "fill failed: $(tail -5 "$SCEN_TMP/fill.out" "$SCEN_TMP/fill.out.err")"
    r=$(sb_json "$SB_JSON"); errs=$(echo "$r" | cut -d' ' -f8)
    log "fill of $keys keys on $name: $(echo "$r" | cut -d' ' -f1) SET/s in ${CLIENT_WALL}s, $errs errors"
    FILL_NOTE=""
    if [ "$errs" != 0 ]; then
        local first; first=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["aggregate"]["first_error"])' "$SB_JSON")
        log "WARNING: $errs fill SETs failed (first: $first); waiting for demotion, then filling again"
        info "$port" values_in_flash tiered >/dev/null && wait_settled "$port" 120
        record_sb "$name   # again, because $errs SETs failed"
        sb_cmd "$port" -d "$size" --ratio 1:0 --key-pattern P:P --key-minimum 1 --key-maximum "$keys" -n allkeys
        "${SB_CMD[@]}" >"$SCEN_TMP/fill2.out" 2>&1 || true
        [ -s "$SB_JSON" ] || die "second fill failed: $(tail -5 "$SCEN_TMP/fill2.out")"
        local errs2; errs2=$(sb_json "$SB_JSON" | cut -d' ' -f8)
        FILL_NOTE="- **the fill's first pass got $errs error replies** (first: \`$first\`); a second pass over all keys got $errs2"
        [ "$errs2" = 0 ] || die "$errs2 SETs still fail on the second fill pass ($first): the keys do not fit in the RAM budget"
    fi
    dbsize=$(redis-cli -p "$port" dbsize)
    [ "$dbsize" = "$keys" ] || die "DBSIZE on $name is $dbsize after filling $keys keys"
}

# sb_run SERVER_PID PORT PORTNAME STRATA(0|1) ARGS...: one measured run.
# Drops the page cache first (DROP_CACHES=1); sets R_OPS R_AVG R_P50 R_P99
# R_HIT R_FRPS (strata flash reads/s) R_FWPS (flash bytes written/s) R_ERR
# R_MISS (GET misses) R_DUR R_SEED (strata-bench's base seed) R_DEVRPS (device reads/s) R_DEVKBPS (device KiB
# read/s) R_GCPS (Δflash_gc_bytes_relocated / s) R_SCPU R_CCPU (server / client CPU, % of one core, over the client's
# wall time).
sb_run() {
    local pid=$1 port=$2 name=$3 strata=$4 r0 s0 c0 r1 s1 c1 g0=0 g1=0; shift 4
    sb_cmd "$port" "$@"
    record_sb "$name"
    # STRATA_INFO_PORT: strata's RESP port when the load goes to another one
    [ "$strata" = 1 ] && g0=$(info "${STRATA_INFO_PORT:-$port}" flash_gc_bytes_relocated tiered)
    [ "$DROP_CACHES" = 1 ] && drop_caches
    read -r r0 s0 < <(dev_reads "$DEV"); c0=$(cpu_s "$pid")
    timed "$SCEN_TMP/run.out" "${SB_CMD[@]}"
    [ -s "$SB_JSON" ] || die "strata-bench wrote no report: $(tail -5 "$SCEN_TMP/run.out" "$SCEN_TMP/run.out.err")"
    alive "$pid"
    read -r r1 s1 < <(dev_reads "$DEV"); c1=$(cpu_s "$pid")
    [ "$strata" = 1 ] && g1=$(info "${STRATA_INFO_PORT:-$port}" flash_gc_bytes_relocated tiered)
    R_GCPS=$(awk -v a="${g0:-0}" -v b="${g1:-0}" -v t="$CLIENT_WALL" 'BEGIN { printf "%.0f", (b - a) / t }')
    read -r R_OPS R_AVG R_P50 R_P99 R_HIT R_FRPS R_FWPS R_ERR R_MISS R_DUR R_SEED < <(sb_json "$SB_JSON")
    R_DEVRPS=$(awk -v a="$r0" -v b="$r1" -v t="$CLIENT_WALL" 'BEGIN { printf "%.0f", (b - a) / t }')
    R_DEVKBPS=$(awk -v a="$s0" -v b="$s1" -v t="$CLIENT_WALL" 'BEGIN { printf "%.0f", (b - a) / 2 / t }')
    R_SCPU=$(awk -v a="$c0" -v b="$c1" -v t="$CLIENT_WALL" 'BEGIN { printf "%.0f", 100 * (b - a) / t }')
    R_CCPU=$(awk -v u="$CLIENT_USER" -v s="$CLIENT_SYS" -v t="$CLIENT_WALL" 'BEGIN { printf "%.0f", 100 * (u + s) / t }')
    if [ "$strata" = 0 ]; then R_HIT=- R_FRPS=- R_FWPS=- R_DEVRPS=- R_DEVKBPS=- R_GCPS=-; fi
    log "$name $*: $R_OPS ops/s, avg/p50/p99 $R_AVG/$R_P50/$R_P99 ms, hit $R_HIT, flash reads/s $R_FRPS," \
        "device reads/s $R_DEVRPS ($R_DEVKBPS KiB/s), flash written $R_FWPS B/s (GC relocated $R_GCPS B/s), errors $R_ERR, GET misses $R_MISS," \
        "server CPU $R_SCPU%, client CPU $R_CCPU%"
}

# MB/s from B/s ("-"/"n/a" kept)
mbps() { case $1 in -|n/a) echo "$1" ;; *) awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }' ;; esac; }
# median of a space-separated list; "-"/"n/a" when the list holds one
# shellcheck disable=SC2086
m() { case " $1 " in *" - "*) echo - ;; *" n/a "*) echo n/a ;; *) median $1 ;; esac; }

# strata_state PORT: one line about the tiers
strata_state() {
    echo "values_in_ram=$(info "$1" values_in_ram tiered), values_in_flash=$(info "$1" values_in_flash tiered), index_bytes=$(info "$1" index_bytes tiered), ram_used_bytes=$(info "$1" ram_used_bytes tiered), maxmemory_ram=$(info "$1" maxmemory_ram tiered), flash_write_amplification=$(info "$1" flash_write_amplification tiered), flash_gc_bytes_relocated=$(info "$1" flash_gc_bytes_relocated tiered)"
}
