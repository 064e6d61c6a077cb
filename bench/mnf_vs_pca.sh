#!/usr/bin/env bash
# MNF beside PCA on the same cube, interleaved: 10 components each, file to file, ROUNDS rounds;
# prints every round, the medians and mnf/pca. With SPY=1 also Spectral Python's calc_stats +
# noise_from_diffs + mnf + the 10-component transform on SPY_INPUT (in memory, float64: keep it
# to a few GB), timed from reading the file to the components in memory.
#
#   bench/mnf_vs_pca.sh BUILD [ROUNDS=5] [DEVICE=cpu] [INPUT=/tmp/hyperstream-bench/jasper_2300.tif]
#
# BUILD is a build folder, or (on the GPU machine) a device bundle's run.sh: its bin/hyperstream
# then runs through it.
# The default input (2.09 GB, Jasper Ridge tiled to 2300 x 2300 x 198, uint16) is made with
# ../shared/tools/tile_cube.py (python3-gdal, python3-numpy), as compare_speed.sh makes it.
set -euo pipefail
source "$(dirname "$(realpath "$0")")/common.sh"
program_of "$1"
rounds=${2:-5} device=${3:-cpu} input=${4:-/tmp/hyperstream-bench/jasper_2300.tif}
ensure_cube "$input"
out=$(mktemp -d /tmp/mnf_vs_pca.XXXXXX)
trap 'rm -rf "$out"' EXIT

seconds() {  # seconds ARGS...: wall time of one hyperstream run
  local start end
  start=$(date +%s%N)
  rm -f "$out/out.tif"
  "${program[@]}" "$@" --device "$device" -q >/dev/null
  end=$(date +%s%N)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f\n", (b - a) / 1e9 }'
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2)}'; }

pcas=() mnfs=()
for ((r = 1; r <= rounds; r++)); do
  pcas+=("$(seconds pca "$input" "$out/out.tif" --components 10)")
  mnfs+=("$(seconds mnf "$input" "$out/out.tif" --components 10)")
  echo "round $r: pca ${pcas[-1]} s, mnf ${mnfs[-1]} s"
done
mp=$(printf '%s\n' "${pcas[@]}" | median) mm=$(printf '%s\n' "${mnfs[@]}" | median)
echo "median: pca $mp s, mnf $mm s, mnf/pca $(awk -v a="$mm" -v b="$mp" 'BEGIN { printf "%.3f", a / b }')"

if [[ ${SPY:-0} == 1 ]]; then
  spy_input=${SPY_INPUT:-$input}
  /usr/bin/python3 - "$spy_input" "${program[0]}" "$out" <<'PY'
import json, subprocess, sys, time
import numpy as np, spectral
from osgeo import gdal
path, program, out = sys.argv[1:4]
start = time.perf_counter()
X = gdal.Open(path).ReadAsArray().transpose(1, 2, 0).astype(np.float64)
read = time.perf_counter() - start
signal = spectral.calc_stats(X)
noise = spectral.noise_from_diffs(X)
m = spectral.mnf(signal, noise)
components = m.reduce(X, num=10)
total = time.perf_counter() - start
start = time.perf_counter()
subprocess.run([program, "mnf", path, f"{out}/hs.tif", "--components", "all", "--stats",
                f"{out}/hs.json", "-q"], check=True)
ours_seconds = time.perf_counter() - start
ours = np.array(json.load(open(f"{out}/hs.json"))["eigenvalues"])
theirs = np.sort(np.real(m.napc.eigenvalues))[::-1]
print(f"Spectral Python on {path}: {total:.1f} s (read {read:.1f} s); hyperstream mnf file to "
      f"file {ours_seconds:.1f} s; eigenvalues: largest relative difference "
      f"{np.max(np.abs(ours - theirs) / theirs):.2e}")
PY
fi
