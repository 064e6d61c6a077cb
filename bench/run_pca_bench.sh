#!/usr/bin/env bash
# PCA benchmark on the 2300 x 2300 x 198 uint16 cube (2.09 GB, the Jasper Ridge scene mirror-tiled):
# Hyperstream against Orfeo Toolbox, GRASS i.pca and the I/O floor, side by side, repeated.
#
#   bench/run_pca_bench.sh            (REPS=3 PEER_REPS=REPS BENCH_DIR=bench/out RAM=1024)
#
# Every tool reads the same file from a warm page cache; wall time and peak RSS come from
# /usr/bin/time. Runs are interleaved (one of each per round), so machine noise hits all alike.
# Output: $BENCH_DIR/results.tsv and a Markdown summary on stdout (for docs/benchmarks.md).
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${REPS:-3}
peer_reps=${PEER_REPS:-$reps}
ram=${RAM:-1024}
out=${BENCH_DIR:-bench/out}
data=${SHARED_DATA:-../shared/data}
. bench/common.sh
bench_setup "$out"
hs=build/cli/hyperstream

cube=$out/big.tif
if [ ! -f "$cube" ]; then
  echo "building $cube from the Jasper Ridge scene"
  /usr/bin/python3 ../shared/tools/tile_cube.py "$data/jasper_ridge_100x100x198_uint16.tif" 2300 2300 "$cube"
fi

build/bench/bench_kernels $((2300 * 73)) 198 | tee -a "$out/machine.txt"

results=$out/results.tsv
: > "$results"
outputs=("$out/floor.tif" "$out/hs10.tif" "$out/hs10r.tif" "$out/hsall.tif" "$out/otb.tif")
# Every run writes a new file: replacing a finished one would add freeing its pages to the run.
timed() {  # name round command...
  local name=$1 round=$2; shift 2
  rm -f "${outputs[@]}"
  if /usr/bin/time -f "%e %M" -o "$out/time.txt" "$@" > "$out/last.log" 2>&1; then
    printf '%s\t%s\t%s\n' "$name" "$round" "$(tr ' ' '\t' < "$out/time.txt")" | tee -a "$results"
  else
    echo "$name failed:"; tail -5 "$out/last.log"; exit 1
  fi
}

grassdb=$out/grassdb
names=$(seq -f "big.%g" 1 198 | paste -sd, -)
if [ "$peer_reps" -gt 0 ]; then
  rm -rf "$grassdb"
  # The cube has a pixel grid and no CRS: an XY location with the cube's extent.
  grass -c XY "$grassdb/loc" -e >/dev/null 2>&1
  grass "$grassdb/loc/PERMANENT" --exec g.region n=2300 s=0 e=2300 w=0 res=1 -s >/dev/null 2>&1
  timed grass_import 1 grass "$grassdb/loc/PERMANENT" --exec r.in.gdal -o input="$cube" output=big --overwrite --quiet
  grass "$grassdb/loc/PERMANENT" --exec g.region raster=big.1 >/dev/null 2>&1
fi

for round in $(seq 1 "$reps"); do
  timed io_floor_10 "$round" build/bench/bench_io_floor "$cube" "$out/floor.tif" 10 1
  timed io_floor_10_two_reads "$round" build/bench/bench_io_floor "$cube" "$out/floor.tif" 10 2
  timed hyperstream_10 "$round" $hs pca "$cube" "$out/hs10.tif" --components 10 --ram "$ram" -q \
    --stats "$out/hs10_$round.json"
  timed hyperstream_10_resident "$round" $hs pca "$cube" "$out/hs10r.tif" --components 10 --ram 3072 -q \
    --stats "$out/hs10r_$round.json"
  timed hyperstream_all "$round" $hs pca "$cube" "$out/hsall.tif" --components all --ram "$ram" -q
  timed io_floor_198 "$round" build/bench/bench_io_floor "$cube" "$out/floor.tif" 198 1
  if [ "$round" -le "$peer_reps" ]; then
    timed otb_10 "$round" otbcli_DimensionalityReduction -in "$cube" -out "$out/otb.tif" float \
      -method pca -method.pca.whiten 0 -nbcomp 10 -ram "$ram"
    grass "$grassdb/loc/PERMANENT" --exec g.remove -f type=raster pattern='pc.*' >/dev/null 2>&1
    timed grass_ipca_all "$round" grass "$grassdb/loc/PERMANENT" --exec i.pca input="$names" \
      output=pc rescale=0,0 --overwrite --quiet
  fi
done
rm -f "${outputs[@]}"
/usr/bin/python3 bench/summarise.py "$results" "$out"
