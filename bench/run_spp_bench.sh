#!/usr/bin/env bash
# SPP on the CPU (docs/benchmarks.md, "SPP"): the paper's Cuprite size, 350 x 350 x 188, made
# from the Jasper Ridge scene (mirror-tiled to 350 x 350 by ../shared/tools/tile_cube.py, first 188
# of its 198 bands), windows 3-11, file to file, medians of ROUNDS runs interleaved by round; and
# the I/O floor (bench_io_floor: read once, write 188 Float32 bands).
#   bench/run_spp_bench.sh BUILD_DIR WORKDIR [ROUNDS]
set -euo pipefail
build=$(cd "$1" && pwd); work=$2; rounds=${3:-5}
mkdir -p "$work"
shared=$(cd "$(dirname "$0")/../../shared" && pwd)
cube=$work/cuprite350.tif
if [ ! -e "$cube" ]; then
  /usr/bin/python3 "$shared/tools/tile_cube.py" "$shared/data/jasper_ridge_100x100x198_uint16.tif" \
    350 350 "$work/tiled.tif" > /dev/null
  gdal_translate -q $(for b in $(seq 188); do printf -- '-b %d ' "$b"; done) "$work/tiled.tif" "$cube"
  rm -f "$work/tiled.tif"
fi
printf 'what\tround\tseconds\n'
# Every run writes a new file: replacing a finished one would add freeing its pages to the run.
for round in $(seq "$rounds"); do
  rm -f "$work/floor.tif" "$work/spp.tif"
  /usr/bin/time -f "floor\t$round\t%e" "$build/bench/bench_io_floor" "$cube" "$work/floor.tif" 188 \
    > /dev/null
  for window in 3 5 7 9 11; do
    rm -f "$work/floor.tif" "$work/spp.tif"
    /usr/bin/time -f "window $window\t$round\t%e" "$build/cli/hyperstream" spp "$cube" \
      "$work/spp.tif" --window "$window" --quiet
  done
done 2>&1
