#!/usr/bin/env bash
# Runs every fuzz target for a set time and reports executions and crashes
# (issue 44, point 5: 0 crashes in 10 minutes per target is the goal).
#   SECS     seconds per target (default 600)
#   TARGETS  targets to run (default: all of fuzz/Cargo.toml's)
# With nightly Rust and cargo-fuzz (`cargo install cargo-fuzz`): libFuzzer,
# coverage-guided, starting from fuzz/corpus/<target> (kept between runs)
# and the checked-in fuzz/regressions/<target>; crashes land in
# fuzz/artifacts/<target>/. Without them: the stable smoke runner
# (fuzz/tests/smoke.rs) for the same time, seeded and mutation-based.
# Every crash found becomes a file in fuzz/regressions/<target>/ once fixed
# (the smoke test, which CI runs, replays them all).
# Prints one line per target: engine, executions, crashes, seconds.
set -eu
cd "$(dirname "$0")/../fuzz"
SECS=${SECS:-600}
ALL=$(grep -A1 '^\[\[bin\]\]' Cargo.toml | sed -n 's/^name = "\(.*\)"/\1/p')
TARGETS=${TARGETS:-$ALL}

if cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "# libFuzzer (cargo +nightly fuzz), ${SECS} s per target"
    cargo +nightly fuzz build -O >/dev/null 2>&1
    for t in $TARGETS; do
        mkdir -p "corpus/$t" "artifacts/$t"
        before=$(find "artifacts/$t" -type f | wc -l)
        log=$(mktemp)
        dict=()
        case $t in resp_*) dict=(-dict=dict/resp.dict) ;; esac
        seeds=()
        [ -d "regressions/$t" ] && seeds=("regressions/$t")
        # -fork keeps going past a crash, so the run counts them all.
        cargo +nightly fuzz run -O "$t" "corpus/$t" "${seeds[@]}" -- \
            -max_total_time="$SECS" -print_final_stats=1 "${dict[@]}" \
            -fork=1 -ignore_crashes=1 -artifact_prefix="artifacts/$t/" >"$log" 2>&1 || true
        # The fork mode's last status line: "#<executions>: cov ...
        # oom/timeout/crash: a/b/c".
        last=$(grep -E '^#[0-9]+: cov' "$log" | tail -1 || true)
        execs=$(echo "$last" | sed -nE 's/^#([0-9]+):.*/\1/p')
        crashes=$(echo "$last" | sed -nE 's#.*oom/timeout/crash: ([0-9]+)/([0-9]+)/([0-9]+).*#\1 + \2 + \3#p')
        after=$(find "artifacts/$t" -type f | wc -l)
        echo "$t: libfuzzer, ${execs:-0} executions, $(( ${crashes:-0} )) crashes (oom+timeout+crash; $((after - before)) new artifacts), ${SECS} s"
        rm -f "$log"
    done
else
    echo "# no nightly cargo-fuzz: the stable smoke runner, ${SECS} s per target"
    FUZZ_SMOKE_SECS=$SECS cargo test --release --test smoke -- --nocapture 2>&1 \
        | grep -E '^[a-z_]+: .*executions|FUZZ_SMOKE_SEED|failed on' \
        | sed -E 's/^([a-z_]+): ([0-9]+) regression inputs, ([0-9]+) executions, ([0-9]+) crashes/\1: smoke, \3 executions, \4 crashes ('"$SECS"' s; \2 regression inputs)/'
fi
