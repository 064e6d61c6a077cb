#!/usr/bin/env bash
# Peak memory at a small RAM budget (docs/benchmarks.md, "Memory at --ram 64"): every algorithm on
# the 1000 x 1000 x 198 uint16 cube (Jasper Ridge mirror-tiled, 396 MB) in six layouts: striped,
# 512 x 512 pixel-interleaved tiles and 512 x 512 band-interleaved tiles, each uncompressed and
# DEFLATE. Peak resident memory and wall time from /usr/bin/time, REPS rounds (every job and layout
# once per round); the table gives the largest peak and the median time; the log's warnings are
# kept.
#
#   bench/memory_at_budget.sh   (RAM=64 REPS=3 BENCH_DIR=bench/out LAYOUTS="..." JOBS="..."
#                                BUILD=build)
#
# Output: $BENCH_DIR/memory.tsv (round, job, layout, seconds, peak MiB, warnings) and a Markdown
# table.
set -euo pipefail
cd "$(dirname "$0")/.."
ram=${RAM:-64}
reps=${REPS:-3}
out=${BENCH_DIR:-bench/out}
data=${SHARED_DATA:-../shared/data}
build=${BUILD:-build}
layouts=${LAYOUTS:-strips strips_DEFLATE pixel_tiles pixel_tiles_DEFLATE band_tiles band_tiles_DEFLATE}
jobs=${JOBS:-pca mnf denoise apply inverse spp vca nfindr atgp abundances}
. bench/common.sh
scripts/install-deps.sh
[ -x "$build/cli/hyperstream" ] || scripts/build.sh >/dev/null
describe_machine "$out"
hs=$build/cli/hyperstream

base=$out/mem_base.tif
[ -f "$base" ] || /usr/bin/python3 ../shared/tools/tile_cube.py \
  "$data/jasper_ridge_100x100x198_uint16.tif" 1000 1000 "$base" --interleave PIXEL
layout_file() {  # layout -> the file, made from the base cube once
  local layout=$1 file=$out/mem_$1.tif options=()
  case $layout in
    strips) options=(-co INTERLEAVE=PIXEL) ;;
    strips_DEFLATE) options=(-co INTERLEAVE=PIXEL -co COMPRESS=DEFLATE) ;;
    pixel_tiles) options=(-co TILED=YES -co BLOCKXSIZE=512 -co BLOCKYSIZE=512 -co INTERLEAVE=PIXEL) ;;
    pixel_tiles_DEFLATE) options=(-co TILED=YES -co BLOCKXSIZE=512 -co BLOCKYSIZE=512
                                  -co INTERLEAVE=PIXEL -co COMPRESS=DEFLATE) ;;
    band_tiles) options=(-co TILED=YES -co BLOCKXSIZE=512 -co BLOCKYSIZE=512 -co INTERLEAVE=BAND) ;;
    band_tiles_DEFLATE) options=(-co TILED=YES -co BLOCKXSIZE=512 -co BLOCKYSIZE=512
                                 -co INTERLEAVE=BAND -co COMPRESS=DEFLATE) ;;
  esac
  [ -f "$file" ] || gdal_translate -q "${options[@]}" -co NUM_THREADS=ALL_CPUS "$base" "$file"
  echo "$file"
}

# What apply, inverse and abundances read besides the image: made once from the striped cube.
fit=$out/mem_fit
[ -f "$fit.json" ] || $hs pca "$base" "$fit.tif" --components 10 --stats "$fit.json" -q
[ -f "$out/mem_em.csv" ] || $hs endmembers "$base" "$out/mem_em.csv" --count 5 -q

command_of() {  # job input -> the command line
  local job=$1 input=$2 o=$out/m_out
  case $job in
    pca) echo "$hs pca $input $o.tif --components 10" ;;
    mnf) echo "$hs mnf $input $o.tif --components 10" ;;
    denoise) echo "$hs denoise $input $o.tif --components 10" ;;
    apply) echo "$hs apply $fit.json $input $o.tif" ;;
    inverse) echo "$hs inverse $fit.tif $fit.json $o.tif" ;;
    spp) echo "$hs spp $input $o.tif --window 5" ;;
    vca|nfindr|atgp) echo "$hs endmembers $input $o.csv --count 3 --method $job" ;;
    abundances) echo "$hs abundances $input $out/mem_em.csv $o.tif" ;;
  esac
}

results=$out/memory.tsv
: > "$results"
for layout in $layouts; do layout_file "$layout" > /dev/null; done
for round in $(seq 1 "$reps"); do
for layout in $layouts; do
  input=$(layout_file "$layout")
  for job in $jobs; do
    rm -rf "$out"/m_out.* "$out"/.m_out.*
    # shellcheck disable=SC2046
    if /usr/bin/time -f "%e %M" -o "$out/time.txt" $(command_of "$job" "$input") --ram "$ram" \
        > "$out/last.log" 2>&1; then
      warned=$(grep -c "^warning" "$out/last.log" || true)
      read -r seconds kib < "$out/time.txt"
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$job" "$layout" "$seconds" "$((kib / 1024))" \
        "$warned" | tee -a "$results"
      [ "$round" != 1 ] || grep "^warning" "$out/last.log" | sed "s/^/  $job $layout: /" || true
    else
      echo "$job $layout failed:"; tail -3 "$out/last.log"
      printf '%s\t%s\t%s\tfailed\t-\t-\n' "$round" "$job" "$layout" >> "$results"
    fi
  done
done
done

/usr/bin/python3 - "$results" "$layouts" <<'PY'
import sys
import statistics
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
layouts = sys.argv[2].split()
jobs = list(dict.fromkeys(r[1] for r in rows))
cells = {}
for r in rows:
    cells.setdefault((r[1], r[2]), []).append(r)
print("| job | " + " | ".join(l.replace("_", " ") for l in layouts) + " |")
print("|---|" + "---|" * len(layouts))
for job in jobs:
    out = []
    for l in layouts:
        runs = cells.get((job, l), [])
        if not runs or any(r[3] == "failed" for r in runs):
            out.append("failed")
            continue
        peak = max(int(r[4]) for r in runs)
        seconds = statistics.median(float(r[3]) for r in runs)
        warned = any(r[5] != "0" for r in runs)
        out.append(f"{peak} MiB, {seconds:.1f} s" + (" (warned)" if warned else ""))
    print(f"| {job} | " + " | ".join(out) + " |")
PY
