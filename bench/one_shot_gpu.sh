#!/usr/bin/env bash
# One-shot GPU runs against their floor (docs/benchmarks.md, "One-shot runs at the floor"), run on
# a GPU machine (two GPUs for the gpus2 rows) from a device bundle with hyperstream,
# bench_io_floor and libhyperstream_cuda.so:
#   bench/one_shot_gpu.sh BUNDLE WORKDIR OUTDIR [ROUNDS=3]
# WORKDIR should be in memory (/dev/shm) so that the page cache is not the question. For each
# cube from `hyperstream synth` (the 2.09 GB one has the tiled Jasper Ridge cube's shape and type,
# the 9.7 GB one G-PCA's): the machine's read floor (bench_read_threads: pread with 1 to 32
# threads; dd), the job's floor (bench_io_floor: read the cube once and write 10 Float32 bands
# the engine's way), `hyperstream devices` (starting CUDA and listing the GPUs), then PCA
# to 10 components on GPU 0, on GPUs 0 and 1 (when there are two), as two MPI ranks with a GPU
# each (when there are two, the bundle has hyperstream-mpi and the machine Open MPI's mpirun: the
# bundle then must not carry Open MPI's own libraries) and on the CPU's cores; wall time per run
# (results.tsv) and each run's statistics JSON, whose "seconds" hold its stages; all of OUTDIR
# also packed in OUTDIR.tar.gz. CUBES="gpca13910" runs one of the cubes.
set -euo pipefail
source "$(dirname "$(realpath "$0")")/common.sh"
bundle=$(cd "$1" && pwd); work=$2; out=$3; rounds=${4:-3}
mkdir -p "$work" "$out"
run=$bundle/run.sh
hs=$bundle/bin/hyperstream
[ -n "${OPENBLAS_CORETYPE+set}" ] || export OPENBLAS_CORETYPE=SkylakeX
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  lscpu | grep -E 'Model name|^CPU\(s\)'
  free -g | head -2
} > "$out/machine.txt" 2>&1
"$run" "$hs" devices >> "$out/machine.txt"
gpus=$(nvidia-smi --list-gpus | wc -l)
ranks=0
if [ "$gpus" -ge 2 ] && [ -x "$bundle/bin/hyperstream-mpi" ] && command -v mpirun > /dev/null; then
  ranks=2
  mpirun --version | head -1 >> "$out/machine.txt"
fi

stale_outputs="$work/out*.tif"

while read -r name rows cols bands type; do
  [[ " ${CUBES:-$name} " == *" $name "* ]] || continue
  cube=$work/$name.tif
  "$run" "$hs" synth "$cube" --rows "$rows" --cols "$cols" --bands "$bands" --type "$type" --quiet
  "$bundle/bin/bench_read_threads" "$cube" "$(nproc)" 3 | tee "$out/${name}_read_threads.txt"
  dd if="$cube" of=/dev/null bs=64M 2>&1 | tail -1 | tee -a "$out/${name}_read_threads.txt"
  for round in $(seq "$rounds"); do
    timed "$name" floor "$round" "$run" "$bundle/bin/bench_io_floor" "$cube" "$work/out.tif" 10
    cat "$work/last.log" >> "$out/${name}_floor.txt"
    timed "$name" devices "$round" "$run" "$hs" devices
    timed "$name" gpu1 "$round" "$run" "$hs" pca "$cube" "$work/out.tif" --components 10 \
      --device gpu:0 --stats "$out/${name}_gpu1_$round.json" --quiet
    if [ "$gpus" -ge 2 ]; then
      timed "$name" gpus2 "$round" "$run" "$hs" pca "$cube" "$work/out.tif" --components 10 \
        --gpus 0,1 --stats "$out/${name}_gpus2_$round.json" --quiet
    fi
    if [ "$ranks" -ge 2 ]; then
      timed "$name" ranks2 "$round" "$run" mpirun --allow-run-as-root --bind-to none -np 2 \
        "$bundle/bin/hyperstream-mpi" pca "$cube" "$work/out.tif" --components 10 --device gpu \
        --stats "$out/${name}_ranks2_$round.json" --quiet
    fi
  done
  timed "$name" cpu 1 "$run" "$hs" pca "$cube" "$work/out.tif" --components 10 --device cpu \
    --stats "$out/${name}_cpu_1.json" --quiet
  rm -f "$cube" "$work"/out*.tif
done <<'CUBES'
jasper2300 2300 2300 198 uint16
gpca13910 13910 1562 224 int16
CUBES
tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")"
