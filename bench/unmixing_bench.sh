#!/usr/bin/env bash
# The unmixing chain on one cube: ATGP, VCA and N-FINDR (P = 6 and 12) and FCLS abundances from
# VCA's endmembers, file to file in one process beside the I/O floor (bench_unmixing: rounds after
# the first are what a second run in a QGIS session pays), then, with PY=1, what a Python user has
# on the same cube in the same run: Spectral Python's smacc and ppi and a NumPy/SciPy FCLS
# (bench/unmixing_python.py, 1000 PPI projections).
#
#   bench/unmixing_bench.sh BUILD [ROUNDS=5] [DEVICE=cpu] [CUBE=350]
#
# BUILD is a build folder, or (on the GPU machine) a device bundle's run.sh with bench_unmixing
# beside hyperstream in its bin/. CUBE 350 is Jasper Ridge tiled to 350 x 350 and cut to its first
# 188 bands (the GPU SPP paper's Cuprite size), 2300 the 2.09 GB cube; any other value is a path.
set -euo pipefail
source "$(dirname "$(realpath "$0")")/common.sh"
program_of "$1"
rounds=${2:-5} device=${3:-cpu} cube=${4:-350}
here=$(dirname "$(realpath "$0")")
bench=$(dirname "${program[-1]}")/../bench/bench_unmixing
[[ -x $bench ]] || bench=$(dirname "${program[-1]}")/bench_unmixing
case $cube in
  350) cube=/tmp/hyperstream-bench/jasper_350x350x188.tif
       if [[ ! -f $cube ]]; then
         ensure_cube /tmp/hyperstream-bench/j350_198.tif 350
         gdal_translate -q $(seq -f "-b %g" 1 188) /tmp/hyperstream-bench/j350_198.tif "$cube"
       fi ;;
  2300) cube=/tmp/hyperstream-bench/jasper_2300.tif; ensure_cube "$cube" ;;
esac
out=$(mktemp -d "$(dirname "$cube")/unmixing.XXXXXX")
trap 'rm -rf "$out"' EXIT
"${program[@]:0:${#program[@]}-1}" "$bench" "$cube" "$out" "$device" "$rounds" 6 12
if [[ ${PY:-0} == 1 ]]; then
  for p in 6 12; do
    "${program[@]}" endmembers "$cube" "$out/vca$p.csv" --count $p --method vca -q
    echo "Python, P = $p:"
    /usr/bin/python3 "$here/unmixing_python.py" "$cube" $p "$out/vca$p.csv" 1000 3
  done
fi
