#!/usr/bin/env bash
# Denoising in one job beside PCA and beside PCA + inverse, on the same cube, interleaved round by
# round: `pca --components 10` (Float32 components), `denoise --components 10` (PCA and MNF, the
# image rebuilt in its own type), and `pca --components 10 --type float64 --stats` followed by
# `inverse` (the two-step way). Prints every round, the medians and the ratios to PCA. With SPY=1
# also Spectral Python's PCA and MNF denoise to 10 components on SPY_INPUT (in memory, float64:
# keep it to a few GB), timed from reading the file to the denoised cube in memory.
#
#   bench/denoise_vs_pca.sh BUILD [ROUNDS=5] [DEVICE=cpu] [INPUT=/tmp/hyperstream-bench/jasper_2300.tif]
#
# BUILD is a build folder, or (on the GPU machine) a device bundle's run.sh. The default input is
# made as mnf_vs_pca.sh makes it. Outputs go beside the input (OUT_DIR to choose another folder).
set -euo pipefail
source "$(dirname "$(realpath "$0")")/common.sh"
program_of "$1"
rounds=${2:-5} device=${3:-cpu} input=${4:-/tmp/hyperstream-bench/jasper_2300.tif}
ensure_cube "$input"
out=$(mktemp -d "${OUT_DIR:-$(dirname "$input")}/denoise_vs_pca.XXXXXX")
trap 'rm -rf "$out"' EXIT

seconds() {  # seconds ARGS...: wall time of hyperstream runs, one per ';'-separated command
  local start end args=()
  start=$(date +%s%N)
  rm -f "$out"/*.tif
  for word in "$@" ";"; do
    if [[ $word == ";" ]]; then
      "${program[@]}" "${args[@]}" --device "$device" -q >/dev/null
      args=()
    else
      args+=("$word")
    fi
  done
  end=$(date +%s%N)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f\n", (b - a) / 1e9 }'
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2)}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

pca=() denoise=() mnf=() twostep=()
for ((r = 1; r <= rounds; r++)); do
  pca+=("$(seconds pca "$input" "$out/pcs.tif" --components 10)")
  denoise+=("$(seconds denoise "$input" "$out/denoised.tif" --components 10)")
  mnf+=("$(seconds denoise "$input" "$out/denoised.tif" --transform mnf --components 10)")
  twostep+=("$(seconds pca "$input" "$out/pcs.tif" --components 10 --type float64 --stats \
    "$out/pcs.json" ";" inverse "$out/pcs.tif" "$out/pcs.json" "$out/inverse.tif")")
  echo "round $r: pca ${pca[-1]} s, denoise ${denoise[-1]} s, denoise mnf ${mnf[-1]} s," \
    "pca + inverse ${twostep[-1]} s"
done
mp=$(printf '%s\n' "${pca[@]}" | median) md=$(printf '%s\n' "${denoise[@]}" | median)
mm=$(printf '%s\n' "${mnf[@]}" | median) mt=$(printf '%s\n' "${twostep[@]}" | median)
echo "median: pca $mp s, denoise $md s ($(ratio "$md" "$mp")x), denoise mnf $mm s" \
  "($(ratio "$mm" "$mp")x), pca + inverse $mt s ($(ratio "$mt" "$mp")x)"

if [[ ${SPY:-0} == 1 ]]; then
  spy_input=${SPY_INPUT:-$input}
  /usr/bin/python3 - "$spy_input" <<'PY'
import sys, time
import numpy as np, spectral
from osgeo import gdal
path = sys.argv[1]
def timed(name, denoise):
    start = time.perf_counter()
    X = gdal.Open(path).ReadAsArray().transpose(1, 2, 0).astype(np.float64)
    read = time.perf_counter() - start
    denoised = denoise(X)
    print(f"Spectral Python {name} denoise to 10 components on {path}: "
          f"{time.perf_counter() - start:.1f} s (read {read:.1f} s)")
timed("PCA", lambda X: spectral.principal_components(X).denoise(X, num=10))
timed("MNF", lambda X: spectral.mnf(spectral.calc_stats(X), spectral.noise_from_diffs(X))
      .denoise(X, num=10))
PY
fi
