#!/usr/bin/env bash
# Sensors' products against the same cube as a plain GeoTIFF (docs/benchmarks.md, "Products as
# downloaded"): PCA to 10 components of a 1000 x 1000 EMIT-like L2A netCDF (285 Float32 bands,
# BIP in image order) and a PRISMA-like L2D HDF5-EOS (VNIR 66 + SWIR 173 UInt16 bands, BIL,
# scaled to reflectance by the reader), each against its expected cube as a Float32 GeoTIFF
# (tests/write_products). Runs alternate (product, GeoTIFF) from a warm page cache; medians.
#
#   bench/products_bench.sh   (REPS=7 BENCH_DIR=bench/out PRODUCTS="emit prisma")
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${REPS:-7}
products=${PRODUCTS:-emit prisma}
out=${BENCH_DIR:-bench/out}/products
. bench/common.sh
describe_machine "$out"
scripts/build.sh >/dev/null
hs=build/cli/hyperstream
[ -f "$out/list" ] || build/tests/write_products "$out" 1000 1000 emit,prisma >"$out/list"
ls -lL "$out"/*.nc "$out"/*.he5 "$out"/*-plain.tif | awk '{print $5, $9}' | tee -a "$out/machine.txt"

seconds() {  # INPUT: wall seconds of one PCA
  local start end
  start=$(date +%s.%N)
  "$hs" pca "$1" "$out/components.tif" --components 10 --quiet 2>/dev/null
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "| product | as downloaded (s) | same cube as GeoTIFF (s) | ratio |"
echo "|---|---|---|---|"
while read -r name product plain; do
  [[ " $products " == *" $name "* ]] || continue
  cat "$product" "$plain" >/dev/null  # warm the page cache
  seconds "$product" >/dev/null
  : >"$out/$name.times"
  for _ in $(seq "$reps"); do
    echo "$(seconds "$product") $(seconds "$plain")" >>"$out/$name.times"
  done
  a=$(awk '{print $1}' "$out/$name.times" | median)
  b=$(awk '{print $2}' "$out/$name.times" | median)
  printf "| %s | %.2f | %.2f | %.2f |\n" "$name" "$a" "$b" "$(echo "$a / $b" | bc -l)"
done <"$out/list"
