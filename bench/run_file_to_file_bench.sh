#!/usr/bin/env bash
# File to file on the GPU against the I/O floor (docs/benchmarks.md, "File to file against a
# corrected I/O floor"), run on a GPU machine from a device bundle with hyperstream,
# bench_io_floor, bench_warm_jobs and libhyperstream_cuda.so:
#   bench/run_file_to_file_bench.sh BUNDLE WORKDIR OUTDIR [ROUNDS]
# Cubes from `hyperstream synth`: 2300 x 2300 x 198 uint16 (2.09 GB), 6955 x 1562 x 224 int16
# (4.87 GB) and 350 x 350 x 188 uint16 for SPP, read from the page cache.
# - In one long-lived process, as QGIS runs its algorithms: bench_warm_jobs, ROUNDS + 1 rounds of
#   the floor then PCA (then the floor then SPP, window 11), on GPU 0 and, with two GPUs or more,
#   on GPUs 0 and 1. Round 1 pays the process's start of CUDA; the later ones are summarised as
#   job / floor of the same round.
# - One-shot processes: ROUNDS rounds of the floor program, then `hyperstream pca` (and spp).
# Every run writes a new file (outputs deleted first).
set -euo pipefail
bundle=$(cd "$1" && pwd); work=$2; out=$3; rounds=${4:-3}
mkdir -p "$work/warm" "$out"
run=$bundle/run.sh
bin=$bundle/bin
{
  nvidia-smi --query-gpu=name,memory.total,driver_version,persistence_mode --format=csv
  lscpu | grep -E 'Model name|^CPU\(s\)'
  free -g | head -2
} > "$out/machine.txt" 2>&1
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
devices="gpu:0"
[ "$gpus" -ge 2 ] && devices="gpu:0 gpu:0,1"

synth() {  # name rows cols bands type
  [ -e "$work/$1.tif" ] || "$run" "$bin/hyperstream" synth "$work/$1.tif" --rows "$2" --cols "$3" \
    --bands "$4" --type "$5" --quiet 2> /dev/null
}
synth big 2300 2300 198 uint16
synth g6955 6955 1562 224 int16
synth c350 350 350 188 uint16
cat "$work"/*.tif > /dev/null  # into the page cache

for cube in big g6955; do
  for device in $devices; do
    log=$out/warm_${cube}_${device//[:,]/_}.txt
    "$run" "$bin/bench_warm_jobs" "$work/$cube.tif" "$work/c350.tif" "$work/warm" "$device" \
      $((rounds + 1)) > "$log" 2> /dev/null
    # Rounds after the first: PCA job / floor, SPP job / floor.
    awk -v what="$cube $device" '
      / pca floor / && $2 > 1 { floor = $5 }
      / pca job / && $2 > 1 { pca = pca sprintf(" %.2f", $5 / floor) }
      / spp floor / && $2 > 1 { sfloor = $5 }
      / spp job / && $2 > 1 { spp = spp sprintf(" %.2f", $5 / sfloor) }
      END { printf "in one process, %s: PCA / floor%s; SPP / floor%s\n", what, pca, spp }
    ' "$log" | tee -a "$out/summary.txt"
  done
done

timed() {  # command...: prints " seconds"
  rm -f "$work/out.tif"
  local start; start=$(date +%s.%N)
  "$@" > "$work/last.log" 2>&1 || { cat "$work/last.log"; return 1; }
  awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf " %.3f", b - a }'
}
for round in $(seq "$rounds"); do
  for cube in big g6955; do
    {
      printf 'one-shot %s round %d: floor' "$cube" "$round"
      timed "$run" "$bin/bench_io_floor" "$work/$cube.tif" "$work/out.tif" 10
      for device in $devices; do
        printf ', %s' "$device"
        timed "$run" "$bin/hyperstream" pca "$work/$cube.tif" "$work/out.tif" --components 10 \
          --device "$device" --quiet
      done
      echo
    } | tee -a "$out/summary.txt"
  done
  {
    printf 'one-shot c350 SPP window 11 round %d: floor' "$round"
    timed "$run" "$bin/bench_io_floor" "$work/c350.tif" "$work/out.tif" 0
    for device in gpu cpu; do
      printf ', %s' "$device"
      timed "$run" "$bin/hyperstream" spp "$work/c350.tif" "$work/out.tif" --window 11 \
        --device "$device" --quiet
    done
    echo
  } | tee -a "$out/summary.txt"
done
rm -f "$work"/*.tif "$work"/warm/*
