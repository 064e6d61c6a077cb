#!/usr/bin/env bash
# Compressed and tiled inputs (docs/benchmarks.md, "Compressed inputs"): PCA to 10 components of
# the 2300 x 2300 x 198 uint16 cube (2.09 GB, the Jasper Ridge scene mirror-tiled) stored as
# 256 x 256 pixel-interleaved tiles in DEFLATE, ZSTD and LZW, against the decompression floor
# (bench/read_floor.py: GDAL reading the file with every core, once and twice) and, on DEFLATE,
# Orfeo Toolbox and an older Hyperstream; then the 1000 x 1000 x 190 DEFLATE cube at --ram 64
# (PCA and SPP), and a DEFLATE tiled output.
#
#   bench/run_compressed_bench.sh   (REPS=3 PEER_REPS=1 BENCH_DIR=bench/out CODECS="DEFLATE ZSTD LZW"
#                                    OLD=path/to/an/older/hyperstream)
#
# Runs are interleaved (one of each per round) from a warm page cache; wall time and peak RSS from
# /usr/bin/time. Output: $BENCH_DIR/compressed.tsv and a Markdown table on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${REPS:-3}
peer_reps=${PEER_REPS:-1}
out=${BENCH_DIR:-bench/out}
data=${SHARED_DATA:-../shared/data}
codecs=${CODECS:-DEFLATE ZSTD LZW}
. bench/common.sh
bench_setup "$out"
hs=build/cli/hyperstream

tiled() {  # source target codec [gdal_translate options...]
  local source=$1 target=$2 codec=$3; shift 3
  [ -f "$target" ] || gdal_translate -q "$@" -co TILED=YES -co COMPRESS="$codec" \
    -co INTERLEAVE=PIXEL -co NUM_THREADS=ALL_CPUS -co BIGTIFF=YES "$source" "$target"
}
cube=$out/big.tif
[ -f "$cube" ] || /usr/bin/python3 ../shared/tools/tile_cube.py \
  "$data/jasper_ridge_100x100x198_uint16.tif" 2300 2300 "$cube"
for codec in $codecs; do tiled "$cube" "$out/big_$codec.tif" "$codec"; done
small=$out/small_DEFLATE.tif
if [ ! -f "$small" ]; then
  /usr/bin/python3 ../shared/tools/tile_cube.py "$data/jasper_ridge_100x100x198_uint16.tif" \
    1000 1000 "$out/small.tif" --interleave PIXEL
  tiled "$out/small.tif" "$small" DEFLATE $(seq -f '-b %g' 1 190)
fi
ls -lL "$cube" "$out"/big_*.tif "$small" | awk '{print $5, $9}' | tee -a "$out/machine.txt"

results=$out/compressed.tsv
: > "$results"
timed() {  # name round command...
  local name=$1 round=$2; shift 2
  rm -f "$out"/c_*.tif
  if /usr/bin/time -f "%e %M" -o "$out/time.txt" "$@" > "$out/last.log" 2>&1; then
    printf '%s\t%s\t%s\n' "$name" "$round" "$(tr ' ' '\t' < "$out/time.txt")" | tee -a "$results"
  else
    echo "$name failed:"; tail -5 "$out/last.log"; exit 1
  fi
}

for round in $(seq 1 "$reps"); do
  for codec in $codecs; do
    input=$out/big_$codec.tif
    timed "floor_${codec}_once" "$round" bench/read_floor.py "$input" 1
    timed "floor_${codec}_twice" "$round" bench/read_floor.py "$input" 2
    timed "hyperstream_${codec}" "$round" $hs pca "$input" "$out/c_pca.tif" --components 10 -q
  done
  timed floor_small_twice "$round" bench/read_floor.py "$small" 2
  timed hyperstream_small_pca_ram64 "$round" $hs pca "$small" "$out/c_small.tif" --ram 64 \
    --components 10 -q
  timed hyperstream_small_spp_ram64 "$round" $hs spp "$small" "$out/c_small.tif" --ram 64 -q
  timed hyperstream_plain "$round" $hs pca "$cube" "$out/c_plain.tif" --components 10 -q
  timed hyperstream_plain_to_deflate "$round" $hs pca "$cube" "$out/c_deflate.tif" \
    --components 10 -q --co COMPRESS=DEFLATE --co TILED=YES
  if [ "$round" -le "$peer_reps" ]; then
    timed otb_DEFLATE "$round" otbcli_DimensionalityReduction -in "$out/big_DEFLATE.tif" \
      -out "$out/c_otb.tif" float -method pca -method.pca.whiten 0 -nbcomp 10 -ram 1024
    [ -z "${OLD:-}" ] || timed old_DEFLATE "$round" "$OLD" pca "$out/big_DEFLATE.tif" \
      "$out/c_old.tif" --components 10 -q
  fi
done
rm -f "$out"/c_*.tif
/usr/bin/python3 - "$results" <<'PY'
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    name, _round, seconds, rss = line.split('\t')
    by.setdefault(name, []).append((float(seconds), int(rss) / 1024))
print('| run | n | median s | min-max s | peak RSS MiB |')
print('|---|---|---|---|---|')
for name, values in by.items():
    secs = [s for s, _ in values]
    print(f'| {name} | {len(secs)} | {statistics.median(secs):.2f} | {min(secs):.2f}-{max(secs):.2f} '
          f'| {max(r for _, r in values):.0f} |')
PY
