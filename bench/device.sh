#!/usr/bin/env bash
# What the device under BENCH_DIR can do: fio 4 KiB random reads (O_DIRECT,
# numjobs=1) at several queue depths, and 1 MiB sequential writes.
#   FIO_SIZE  file size (default 8g; QUICK: 1g)
#   RUNTIME   seconds per random-read run (default 20; QUICK: 3)
#   DEPTHS    queue depths (default "1 8 32 64")
#   RUNS      repetitions, medians quoted (default 3; QUICK: 1)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

if [ "$QUICK" = 1 ]; then d_size=1g d_runtime=3 d_runs=1; else d_size=8g d_runtime=20 d_runs=3; fi
FIO_SIZE=${FIO_SIZE:-$d_size}
RUNTIME=${RUNTIME:-$d_runtime}
RUNS=${RUNS:-$d_runs}
DEPTHS=${DEPTHS:-1 8 32 64}

need fio fio
need_common
OUT=$(result_file device)
DEV=$(data_dev "$BENCH_DIR")
dir=$(bench_tmpdir fio)
FILE=$dir/fio.dat

ENGINE=$(fio_engine "$FILE")
log "fio engine: $ENGINE, device: $DEV"

declare -A IOPS P50 P99 READS
writes=()
for run in $(seq "$RUNS"); do
    rm -f "$FILE"
    drop_caches
    w=$(fio_seqwrite "$FILE" "$FIO_SIZE"); writes+=("$w")
    log "run $run: seq write 1 MiB: $w MiB/s"
    for d in $DEPTHS; do
        drop_caches
        read -r r0 _ < <(dev_reads "$DEV")
        read -r iops p50 p99 _fio_cpu < <(fio_randread "$FILE" "$FIO_SIZE" "$ENGINE" "$d" "$RUNTIME")
        read -r r1 _ < <(dev_reads "$DEV")
        IOPS[$d]+=" $iops"; P50[$d]+=" $p50"; P99[$d]+=" $p99"; READS[$d]+=" $((r1 - r0))"
        log "run $run: depth $d: $iops IOPS, p50 ${p50} us, p99 ${p99} us, device reads $((r1 - r0))"
    done
done

{
    header "Device: fio 4 KiB random read and 1 MiB sequential write"
    cat <<EOF

## Setup

- fio file: $FIO_SIZE in a temp dir under $BENCH_DIR (device $DEV), deleted afterwards
- random reads: bs=4k, direct=1 (O_DIRECT), ioengine=$ENGINE, numjobs=1, $RUNTIME s time-based per depth; caches dropped before each run
- latency is fio's total latency (submission to completion)
- $RUNS run(s); every figure below is the median of the runs (all runs listed)
$([ "$ENGINE" = psync ] && echo "- **psync fallback: iodepth > 1 has no effect (one synchronous read at a time)**")

## Random read 4 KiB

| iodepth | IOPS (median) | p50 µs | p99 µs | device reads / run (from /sys/class/block/$DEV/stat) | IOPS of each run |
|---:|---:|---:|---:|---:|---|
EOF
    for d in $DEPTHS; do
        # shellcheck disable=SC2086
        echo "| $d | $(median ${IOPS[$d]}) | $(median ${P50[$d]}) | $(median ${P99[$d]}) | $(median ${READS[$d]}) | ${IOPS[$d]# } |"
    done
    cat <<EOF

Device reads include any other process's reads of the same device during the run.

## Sequential write, 1 MiB blocks, O_DIRECT, $FIO_SIZE

- median: $(median "${writes[@]}") MiB/s (runs: ${writes[*]})
EOF
    commands_section
} >"$OUT"
log "wrote $OUT"
cat "$OUT"
