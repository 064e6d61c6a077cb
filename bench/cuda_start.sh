#!/usr/bin/env bash
# What a one-shot GPU process pays to start and end CUDA (docs/benchmarks.md, "One-shot runs at
# the floor"), run on a GPU machine from a device bundle with hyperstream, bench_io_floor and
# bench_cuda_start:
#   bench/cuda_start.sh BUNDLE WORKDIR OUTDIR [ROUNDS=5]
# Times from outside (results.tsv): /bin/true; bench_cuda_start in each mode (none: the process
# with CUDA's libraries loaded; teardown, keep, abandon: three ways to end after starting CUDA,
# allocating and uploading); `hyperstream devices`; and on the 2.09 GB cube the floor and PCA on
# GPU 0, whose messages are stamped with the seconds since the process started (pca_*.log).
# Each bench_cuda_start run's own step times go to cuda_start_MODE.txt.
set -euo pipefail
source "$(dirname "$(realpath "$0")")/common.sh"
bundle=$(cd "$1" && pwd); work=$2; out=$3; rounds=${4:-5}
mkdir -p "$work" "$out"
run=$bundle/run.sh
hs=$bundle/bin/hyperstream
[ -n "${OPENBLAS_CORETYPE+set}" ] || export OPENBLAS_CORETYPE=SkylakeX
nvidia-smi --query-gpu=name,memory.total,driver_version,persistence_mode --format=csv \
  > "$out/machine.txt" 2>&1
stale_outputs="$work/out*.tif"
cube=$work/jasper2300.tif
"$run" "$hs" synth "$cube" --rows 2300 --cols 2300 --bands 198 --type uint16 --quiet

# Prints each line of a command's output after the seconds since it started.
stamped() {
  local start=$EPOCHREALTIME
  { "$@" 2>&1 | while IFS= read -r line; do echo "$EPOCHREALTIME $line"; done
    echo "$EPOCHREALTIME (exit)"; } | awk -v start="$start" '{ $1 = sprintf("%.3f", $1 - start) } 1'
}

for round in $(seq "$rounds"); do
  timed true true "$round" /bin/true
  for mode in none teardown keep abandon; do
    timed cuda_start "$mode" "$round" "$run" "$bundle/bin/bench_cuda_start" "$mode" 2500 256
    cp "$work/last.log" "$out/cuda_start_$mode.txt"
  done
  timed devices devices "$round" "$run" "$hs" devices
  timed jasper2300 floor "$round" "$run" "$bundle/bin/bench_io_floor" "$cube" "$work/out.tif" 10
  timed jasper2300 gpu1 "$round" "$run" "$hs" pca "$cube" "$work/out.tif" --components 10 \
    --device gpu:0 --stats "$out/pca_$round.json"
  rm -f "$work"/out*.tif
  stamped "$run" "$hs" pca "$cube" "$work/out.tif" --components 10 --device gpu:0 \
    > "$out/pca_$round.log"
done
rm -f "$cube" "$work"/out*.tif
tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")"
