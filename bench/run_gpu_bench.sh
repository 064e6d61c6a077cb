#!/usr/bin/env bash
# The GPU benchmark (docs/benchmarks.md, "GPU"), run on the GPU machine from a device bundle
# (../shared/tools/device-bundle.sh with hyperstream, bench_io_floor, bench_gpu and
# libhyperstream_cuda.so):
#   bench/run_gpu_bench.sh BUNDLE WORKDIR OUTDIR [ROUNDS]
# Cubes come from `hyperstream synth` (the 2300 x 2300 x 198 uint16 one has the shape and type of
# the tiled Jasper Ridge cube of the CPU benchmark). For each: the I/O floor (bench_io_floor:
# read once, write 10 Float32 bands), hyperstream on the GPU and on the CPU's cores, 10
# components, wall time and peak RSS per run, the JSON reports with the GPU's own stage times.
set -euo pipefail
bundle=$(cd "$1" && pwd); work=$2; out=$3; rounds=${4:-3}
mkdir -p "$work" "$out"
run=$bundle/run.sh
hs=$bundle/bin/hyperstream
# OpenBLAS does not know every CPU; its AVX-512 kernels are what the CPU backend should get.
[ -n "${OPENBLAS_CORETYPE+set}" ] || export OPENBLAS_CORETYPE=SkylakeX
{
  nvidia-smi --query-gpu=name,memory.total,driver_version,pcie.link.gen.max,pcie.link.width.max \
    --format=csv
  lscpu | grep -E 'Model name|^CPU\(s\)'
  free -g | head -2
} > "$out/machine.txt" 2>&1
"$run" "$hs" devices >> "$out/machine.txt"
# The Gram matrix in strips of 64 MiB (165000 pixels) and in the resident cube's chunks.
"$run" "$bundle/bin/bench_gpu" $((2300 * 2300)) 198 10 165000 > "$out/bench_gpu.txt"
"$run" "$bundle/bin/bench_gpu" $((2300 * 2300)) 198 10 1355000 >> "$out/bench_gpu.txt"
cat "$out/bench_gpu.txt"

# Every run writes a new file: replacing a finished one would add freeing its pages to the run.
timed() {  # name kind round command...: appends "name kind round seconds rss_kib"
  local name=$1 kind=$2 round=$3; shift 3
  rm -f "$work/floor.tif" "$work/gpu.tif" "$work/cpu.tif"
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "%e %M" -o "$work/time.txt" "$@" > "$work/last.log" 2>&1 ||
      { cat "$work/last.log"; return 1; }
  else  # no GNU time there: wall time only
    local start; start=$(date +%s.%N)
    "$@" > "$work/last.log" 2>&1 || { cat "$work/last.log"; return 1; }
    awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f 0\n", b - a }' > "$work/time.txt"
  fi
  printf '%s\t%s\t%s\t%s\n' "$name" "$kind" "$round" "$(cat "$work/time.txt" | tr ' ' '\t')" \
    | tee -a "$out/results.tsv"
}

while read -r name rows cols bands type; do
  cube=$work/$name.tif
  timed "$name" synth 1 "$run" "$hs" synth "$cube" --rows "$rows" --cols "$cols" --bands "$bands" \
    --type "$type" --quiet
  for round in $(seq "$rounds"); do
    timed "$name" floor "$round" "$run" "$bundle/bin/bench_io_floor" "$cube" "$work/floor.tif" 10
    cat "$work/last.log" >> "$out/${name}_floor.txt"
    timed "$name" gpu "$round" "$run" "$hs" pca "$cube" "$work/gpu.tif" --components 10 \
      --device gpu --stats "$out/${name}_gpu_$round.json" --quiet
  done
  for round in $(seq 2); do
    timed "$name" cpu "$round" "$run" "$hs" pca "$cube" "$work/cpu.tif" --components 10 \
      --device cpu --stats "$out/${name}_cpu_$round.json" --quiet
  done
  rm -f "$cube" "$work"/*.tif
done <<'CUBES'
grass512 512 512 224 int16
jasper2300 2300 2300 198 uint16
gpca6955 6955 1562 224 int16
CUBES
