#!/usr/bin/env bash
# One-shot GPU jobs on a band-interleaved cube (ENVI, band sequential) against the same cube
# pixel-interleaved (GeoTIFF), and a previous build beside this one. Run on the GPU machine from a
# device bundle whose bin/ holds hyperstream, libhyperstream_cuda.so and bench_io_floor, and
# optionally a previous build's hyperstream-before and libhyperstream_cuda-before.so:
#   bench/band_interleaved_gpu.sh BUNDLE WORKDIR OUTDIR [ROUNDS=5]
# The cube is `hyperstream synth` 2300 x 2300 x 198 uint16 (2.09 GB); WORKDIR should be in memory
# (/dev/shm). Each round, in turn: the floor of each file (bench_io_floor: read once, write 10
# Float32 bands), PCA to 10 components on GPU 0 of each file, and FCLS abundances of 12 ATGP
# endmembers and per-column RX of the band-sequential file on GPU 0, by each build. Wall times in
# OUTDIR/results.tsv with medians in OUTDIR/medians.txt; each PCA's statistics JSON beside them.
set -euo pipefail
source "$(dirname "$(realpath "$0")")/common.sh"
bundle=$(cd "$1" && pwd); work=$2; out=$3; rounds=${4:-5}
mkdir -p "$work" "$out"
run=$bundle/run.sh
bin=$bundle/bin
[ -n "${OPENBLAS_CORETYPE+set}" ] || export OPENBLAS_CORETYPE=SkylakeX
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  lscpu | grep -E 'Model name|^CPU\(s\)'
} > "$out/machine.txt" 2>&1
builds=(now)
[ -x "$bin/hyperstream-before" ] && builds+=(before)
# Runs a build's command line: hyperstream[-before] with its own CUDA library.
hs() {
  local build=$1; shift
  local suffix=; [ "$build" = now ] || suffix=-$build
  HYPERSTREAM_CUDA_LIBRARY=$bin/libhyperstream_cuda$suffix.so "$run" "$bin/hyperstream$suffix" "$@"
}
# shellcheck disable=SC2034  # read by timed (common.sh)
stale_outputs="$work/out*"
hs now synth "$work/cube.tif" --rows 2300 --cols 2300 --bands 198 --type uint16 --quiet
hs now synth "$work/cube.bsq" --rows 2300 --cols 2300 --bands 198 --type uint16 --format ENVI \
  --quiet
hs now endmembers "$work/cube.tif" "$work/atgp12.csv" --count 12 --method atgp --quiet
for round in $(seq "$rounds"); do
  for file in tif bsq; do
    timed "floor_$file" floor "$round" "$run" "$bin/bench_io_floor" "$work/cube.$file" \
      "$work/out.tif" 10
    for build in "${builds[@]}"; do
      timed "pca_${file}_$build" gpu "$round" hs "$build" pca "$work/cube.$file" "$work/out.tif" \
        --components 10 --device gpu:0 --stats "$out/pca_${file}_${build}_$round.json" --quiet
    done
  done
  for build in "${builds[@]}"; do
    timed "fcls_bsq_$build" gpu "$round" hs "$build" abundances "$work/cube.bsq" \
      "$work/atgp12.csv" "$work/out.tif" --device gpu:0 --quiet
    timed "rx_per_column_bsq_$build" gpu "$round" hs "$build" rx "$work/cube.bsq" \
      "$work/out.tif" --per-column --device gpu:0 --quiet
  done
done
python3 - "$out/results.tsv" > "$out/medians.txt" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, _kind, _round, seconds = line.split('\t')
    runs.setdefault(name, []).append(float(seconds))
for name, seconds in runs.items():
    print(f'{name}\t{statistics.median(seconds):.3f}\t{min(seconds):.3f}-{max(seconds):.3f}')
PY
cat "$out/medians.txt"
tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")"
rm -f "$work"/cube.* "$work"/out*
