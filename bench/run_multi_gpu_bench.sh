#!/usr/bin/env bash
# One GPU against two (docs/benchmarks.md, "Several GPUs"), run on the two-GPU machine from a
# device bundle with hyperstream, hyperstream-mpi, bench_io_floor, bench_backend and
# libhyperstream_cuda.so,
# and Open MPI's mpirun on the PATH:
#   bench/run_multi_gpu_bench.sh BUNDLE WORKDIR OUTDIR [ROUNDS]
# For each cube from `hyperstream synth`: the I/O floor (bench_io_floor: read once, write 10
# Float32 bands), then PCA with 10 components on GPU 0 alone, on GPUs 0 and 1 in one process
# (--gpus 0,1) and as two MPI ranks (one GPU each), MNF (10 components) and FCLS abundances (12
# VCA endmembers found once per cube) on one GPU and on two; wall time per run and the JSON
# reports, whose
# "gpu" object holds the device stages (for several GPUs, the slowest GPU's) as the job saw them:
# cold, and waiting for the reader. The warm compute stages on 1 and 2 GPUs come from
# bench_backend, run here first.
set -euo pipefail
source "$(dirname "$(realpath "$0")")/common.sh"
bundle=$(cd "$1" && pwd); work=$2; out=$3; rounds=${4:-3}
mkdir -p "$work" "$out"
run=$bundle/run.sh
hs=$bundle/bin/hyperstream
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  nvidia-smi topo -m || true
  lscpu | grep -E 'Model name|^CPU\(s\)'
  free -g | head -2
} > "$out/machine.txt" 2>&1
"$run" "$hs" devices >> "$out/machine.txt"
# 1 and 2 GPUs in turn each round, on one cube (filled on every core, page-locked).
"$run" "$bundle/bin/bench_backend" 2300 2300 198 10 5 1,2 | tee -a "$out/bench_backend.txt"

stale_outputs="$work/floor.tif $work/pc.tif $work/ab.tif"

while read -r name rows cols bands type; do
  cube=$work/$name.tif
  timed "$name" synth 1 "$run" "$hs" synth "$cube" --rows "$rows" --cols "$cols" \
    --bands "$bands" --type "$type" --quiet
  timed "$name" endmembers 1 "$run" "$hs" endmembers "$cube" "$work/em.csv" --count 12 \
    --method vca --device gpu:0 --quiet
  for round in $(seq "$rounds"); do
    timed "$name" floor "$round" "$run" "$bundle/bin/bench_io_floor" "$cube" "$work/floor.tif" 10
    timed "$name" gpu1 "$round" "$run" "$hs" pca "$cube" "$work/pc.tif" --components 10 \
      --device gpu:0 --stats "$out/${name}_gpu1_$round.json" --quiet
    timed "$name" gpus2 "$round" "$run" "$hs" pca "$cube" "$work/pc.tif" --components 10 \
      --gpus 0,1 --stats "$out/${name}_gpus2_$round.json" --quiet
    timed "$name" ranks2 "$round" "$run" mpirun --allow-run-as-root --bind-to none -np 2 \
      "$bundle/bin/hyperstream-mpi" pca "$cube" "$work/pc.tif" --components 10 --device gpu \
      --stats "$out/${name}_ranks2_$round.json" --quiet
    timed "$name" mnf_gpu1 "$round" "$run" "$hs" mnf "$cube" "$work/pc.tif" --components 10 \
      --device gpu:0 --stats "$out/${name}_mnf_gpu1_$round.json" --quiet
    timed "$name" mnf_gpus2 "$round" "$run" "$hs" mnf "$cube" "$work/pc.tif" --components 10 \
      --gpus 0,1 --stats "$out/${name}_mnf_gpus2_$round.json" --quiet
    timed "$name" fcls_gpu1 "$round" "$run" "$hs" abundances "$cube" "$work/em.csv" \
      "$work/ab.tif" --device gpu:0 --quiet
    timed "$name" fcls_gpus2 "$round" "$run" "$hs" abundances "$cube" "$work/em.csv" \
      "$work/ab.tif" --device gpu:0,1 --quiet
  done
  rm -f "$cube" "$work"/*.tif "$work/em.csv"
done <<'CUBES'
jasper2300 2300 2300 198 uint16
gpca6955 6955 1562 224 int16
gpca13910 13910 1562 224 int16
gpca27820 27820 1562 224 int16
CUBES
