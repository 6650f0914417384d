# shellcheck shell=bash
# More helpers for the scenario scripts rof-doc.sh, speedb.sh, endurance.sh,
# dragonfly.sh and memstac.sh, on top of common.sh (which sources lib.sh):
# a fill with any key range / prefix / protocol / rate, memcached (with or
# without extstore), memory cgroups that count the page cache, JSON fields of
# a strata-bench report, INFO tiered counters, and waiting for /tmp/BENCH_BUSY.
# Source it after common.sh:
#   source "$(dirname "$0")/common.sh"; source "$(dirname "$0")/extra.sh"

CG_PATHS=()

# wait_idle: while /tmp/BENCH_BUSY exists (someone else is measuring), wait
wait_idle() {
    local n=0
    while [ -e /tmp/BENCH_BUSY ]; do
        [ $((n % 6)) = 0 ] && log "waiting: /tmp/BENCH_BUSY exists (another benchmark is running)"
        n=$((n + 1)); sleep 10
    done
}

# sb_get FILE DOTTED.PATH: one field of a strata-bench JSON report ("n/a" if absent/null)
sb_get() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v.get(k) if isinstance(v, dict) else None
print("n/a" if v is None else v)
EOF
}

# tiered PORT: "flash_bytes_written flash_stash_bytes flash_gc_bytes_relocated
# tiered_ram_hits tiered_ram_misses tiered_total_fetches values_in_ram values_in_flash"
tiered() {
    redis-cli -p "$1" info tiered | tr -d '\r' | awk -F: '
        { v[$1] = $2 }
        END { printf "%.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f\n", v["flash_bytes_written"], v["flash_stash_bytes"],
                    v["flash_gc_bytes_relocated"], v["tiered_ram_hits"], v["tiered_ram_misses"],
                    v["tiered_total_fetches"], v["values_in_ram"], v["values_in_flash"] }'
}

# xfill PORT NAME KEYS SIZE KEYMIN [strata-bench args ...]: SET keys
# KEYMIN..KEYMIN+KEYS-1 once each (-n allkeys --ratio 1:0 --key-pattern P:P),
# extra args e.g. -P memcache_text, --key-prefix, --rate. No second pass: the
# caller decides what failed SETs mean. Sets XF_OPS XF_P99 XF_ERR XF_FIRST
# XF_WALL XF_CCPU (client CPU %) and XF_JSON.
xfill() {
    local port=$1 name=$2 keys=$3 size=$4 kmin=$5; shift 5
    sb_cmd "$port" -d "$size" --ratio 1:0 --key-pattern P:P --key-minimum "$kmin" \
        --key-maximum $((kmin + keys - 1)) -n allkeys "$@"
    record_sb "$name"
    timed "$SCEN_TMP/xfill.out" "${SB_CMD[@]}"
    [ -s "$SB_JSON" ] || die "fill of $name failed: $(tail -5 "$SCEN_TMP/xfill.out" "$SCEN_TMP/xfill.out.err")"
    XF_JSON=$SB_JSON
    read -r XF_OPS _ _ XF_P99 _ _ _ XF_ERR _ _ < <(sb_json "$SB_JSON")
    XF_FIRST=$(sb_get "$SB_JSON" aggregate.first_error)
    XF_WALL=$CLIENT_WALL
    XF_CCPU=$(awk -v u="$CLIENT_USER" -v s="$CLIENT_SYS" -v t="$CLIENT_WALL" 'BEGIN { printf "%.0f", 100 * (u + s) / t }')
    log "fill of $keys keys on $name: $XF_OPS SET/s, p99 $XF_P99 ms, in ${XF_WALL}s, $XF_ERR errors${XF_FIRST:+ (first: $XF_FIRST)}"
}

# ------------------------------------------------------------- memcached
# mc_stats PORT [ARG]: "stats [ARG]" as NAME VALUE lines
mc_stats() {
    python3 - "$1" "${2:-}" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(("stats %s\r\n" % sys.argv[2]).strip().encode() + b"\r\n")
buf = b""
while not buf.endswith(b"END\r\n"):
    d = s.recv(65536)
    if not d: break
    buf += d
for line in buf.decode().splitlines():
    p = line.split()
    if len(p) == 3 and p[0] == "STAT": print(p[1], p[2])
EOF
}
mc_stat() { mc_stats "$1" | awk -v f="$2" '$1 == f { print $2; exit }'; }

wait_mc() {  # wait_mc PORT PID LOGFILE
    local i
    for i in $(seq 100); do
        mc_stat "$1" pid >/dev/null 2>&1 && [ -n "$(mc_stat "$1" pid 2>/dev/null)" ] && return 0
        kill -0 "$2" 2>/dev/null || { tail -20 "$3" >&2; die "memcached on port $1 exited"; }
        sleep 0.1
    done
    die "memcached on port $1 does not answer"
}

# start_memcached PORT DIR MB THREADS CGROUP(""=none) [memcached args ...]; sets LAST_PID
start_memcached() {
    local port=$1 dir=$2 mb=$3 thr=$4 cg=$5; shift 5
    need memcached memcached
    local args=(-p "$port" -l 127.0.0.1 -U 0 -u root -t "$thr" -m "$mb" -c 4096 "$@")
    record "$([ -n "$cg" ] && echo "(in memory cgroup $(basename "$cg")) ")$(printf '%q ' memcached "${args[@]}")"
    cg_exec "$cg" memcached "${args[@]}" >"$dir/server.log" 2>&1 &
    LAST_PID=$!
    SERVER_PIDS+=("$LAST_PID")
    wait_mc "$port" "$LAST_PID" "$dir/server.log"
}

# start_strata_cg CGROUP PORT DIR [--option value ...]: start_strata inside a cgroup
start_strata_cg() {
    local cg=$1 port=$2 dir=$3; shift 3
    local args=(--port "$port" --bind 127.0.0.1 --dir "$dir" --threads "$STRATA_THREADS"
        --save "" --appendonly no --memcached-port 0 --loglevel warning "$@")
    : "${STRATA_ID:=$(strata_identity)}"
    record "$([ -n "$cg" ] && echo "(in memory cgroup $(basename "$cg")) ")$(printf '%q ' "$STRATA_BIN" "${args[@]}")"
    cg_exec "$cg" "$STRATA_BIN" "${args[@]}" >"$dir/server.log" 2>&1 &
    LAST_PID=$!
    SERVER_PIDS+=("$LAST_PID")
    wait_ping "$port" "$LAST_PID" "$dir/server.log"
}

# ------------------------------------------------------------- cgroups
# Memory cgroups whose limit counts the page cache: v1 (/sys/fs/cgroup/memory,
# memory.limit_in_bytes) if mounted, else v2 (memory.max in a child of
# /sys/fs/cgroup with the memory controller enabled).
cg_kind() {
    if [ -w /sys/fs/cgroup/memory/cgroup.procs ] || [ -d /sys/fs/cgroup/memory/tasks ] || [ -e /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
        echo v1
    elif grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
        echo v2
    else
        echo none
    fi
}

# cg_create NAME LIMIT_MB: prints the cgroup's path (empty when impossible) (called in $(...), so
# the caller must add the path to CG_PATHS for cg_cleanup)
cg_create() {
    local name="strata-bench-$1-$$" mb=$2 p
    case $(cg_kind) in
        v1)
            p=/sys/fs/cgroup/memory/$name
            mkdir -p "$p" || { echo ""; return; }
            echo 0 >"$p/memory.swappiness" 2>/dev/null || true
            echo $((mb * 1048576)) >"$p/memory.limit_in_bytes" || { rmdir "$p"; echo ""; return; }
            ;;
        v2)
            grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null ||
                echo +memory >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
            p=/sys/fs/cgroup/$name
            mkdir -p "$p" || { echo ""; return; }
            echo $((mb * 1048576)) >"$p/memory.max" || { rmdir "$p"; echo ""; return; }
            echo 0 >"$p/memory.swap.max" 2>/dev/null || true
            ;;
        *) echo ""; return ;;
    esac
    CG_PATHS+=("$p")
    echo "$p"
}

# cg_exec CGROUP CMD...: exec CMD inside CGROUP ("" = no cgroup); the pid stays the same
cg_exec() {
    local cg=$1; shift
    if [ -z "$cg" ]; then exec "$@"; fi
    # shellcheck disable=SC2016
    exec sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$@"
}

# cg_report CGROUP: limit, peak, page cache and anonymous memory now, limit hits
cg_report() {
    local p=$1
    [ -n "$p" ] && [ -d "$p" ] || { echo "no cgroup"; return; }
    if [ -e "$p/memory.limit_in_bytes" ]; then
        awk -v lim="$(cat "$p/memory.limit_in_bytes")" -v peak="$(cat "$p/memory.max_usage_in_bytes")" \
            -v fc="$(cat "$p/memory.failcnt")" '
            $1 == "total_cache" { c = $2 } $1 == "total_rss" { r = $2 }
            END { printf "limit %.0f MiB, peak usage %.0f MiB, now: page cache %.0f MiB + anon %.0f MiB, limit hit %d times\n", lim/1048576, peak/1048576, c/1048576, r/1048576, fc }' "$p/memory.stat"
    else
        local peak=n/a; [ -r "$p/memory.peak" ] && peak=$(awk '{ printf "%.0f", $1/1048576 }' "$p/memory.peak")
        awk -v lim="$(cat "$p/memory.max")" -v peak="$peak" -v ev="$(awk '$1 == "max" { print $2 }' "$p/memory.events")" '
            $1 == "file" { c = $2 } $1 == "anon" { r = $2 }
            END { printf "limit %.0f MiB, peak usage %s MiB, now: page cache %.0f MiB + anon %.0f MiB, limit hit %d times\n", lim/1048576, peak, c/1048576, r/1048576, ev }' "$p/memory.stat"
    fi
}

cg_cleanup() {
    local p
    for p in "${CG_PATHS[@]}"; do rmdir "$p" 2>/dev/null || true; done
}
# lib.sh's trap stops the servers; then the cgroups can go
trap 'cleanup; cg_cleanup' EXIT

# ------------------------------------------------------------- numbers
# fmt_si N: 1234567 -> 1.23e6 style, kept readable
fmt_int() { awk -v v="$1" 'BEGIN { if (v == "n/a" || v == "-") print v; else printf "%.0f\n", v }'; }

# client_note: the sentence every report carries about the shared cores
client_note() {
    echo "**Client and server share the $(nproc) cores**: strata-bench's CPU (user+sys over its wall time) is given beside the server's (Δ utime+stime of the server process), both in % of one core ($(($(nproc) * 100))% = every core). A client near 100% measures the client."
}

# ------------------------------------------------------------- sigma search
# calibrate_sigma PID PORT TARGET SIGMA0 SIGMA_LO SIGMA_HI STEPS CAL_TIME ARGS...:
# find the Gaussian --key-stddev whose *measured* RAM hit ratio is nearest
# TARGET (0..1). Each probe: a settle run and a measured run of CAL_TIME s
# with ARGS --key-stddev σ (ARGS hold the ratio, key range, median ...);
# bisection on log σ (the hit ratio falls as σ grows), starting at SIGMA0,
# stopping early within CAL_TOL (default 0.02). Sets CAL_SIGMA, CAL_HIT and
# CAL_ROWS (markdown table rows, one per probe).
calibrate_sigma() {
    local pid=$1 port=$2 target=$3 s=$4 lo=$5 hi=$6 steps=$7 t=$8 i best_d=9 d; shift 8
    CAL_ROWS="" CAL_SIGMA=$s CAL_HIT=n/a
    for i in $(seq "$steps"); do
        sb_run "$pid" "$port" STRATA_PORT 1 "$@" --key-stddev "$s" --test-time "$t"
        local settle_hit=$R_HIT
        sb_run "$pid" "$port" STRATA_PORT 1 "$@" --key-stddev "$s" --test-time "$t"
        CAL_ROWS+="| $i | $s | $settle_hit | $R_HIT | $R_OPS | $R_P99 |"$'\n'
        log "calibration $i: sigma $s -> RAM hit ratio $R_HIT (target $target)"
        [ "$R_HIT" = n/a ] && break
        d=$(awk -v h="$R_HIT" -v g="$target" 'BEGIN { d = h - g; print (d < 0 ? -d : d) }')
        if awk -v d="$d" -v b="$best_d" 'BEGIN { exit !(d < b) }'; then best_d=$d CAL_SIGMA=$s CAL_HIT=$R_HIT; fi
        awk -v d="$d" -v tol="${CAL_TOL:-0.02}" 'BEGIN { exit !(d <= tol) }' && break
        if awk -v h="$R_HIT" -v g="$target" 'BEGIN { exit !(h > g) }'; then lo=$s; else hi=$s; fi
        s=$(awk -v a="$lo" -v b="$hi" 'BEGIN { printf "%.0f", sqrt(a * b) }')
        [ "$s" -ge 1 ] || s=1
    done
}
