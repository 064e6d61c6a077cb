#!/usr/bin/env bash
# Behaviour unchanged: runs two builds of Hyperstream over a matrix of inputs and options and
# checks that their outputs are bitwise equal (JSON statistics with the timings left out).
#
#   tests/compare_builds.sh OLD_BUILD NEW_BUILD [WORKDIR]
#
# OLD_BUILD and NEW_BUILD are build folders (with cli/hyperstream). DEVICE=gpu (or gpu:N) runs
# both on a GPU instead of the CPU; INPUTS="a.tif b.tif" runs those of WORKDIR/in only (made
# elsewhere: the GPU machine has no GDAL tools). NEW_JSON_KEYS="a b" leaves out of the JSON
# comparison the report keys the new build adds. Inputs: synthetic scenes of every input type, made nasty
# (nodata, NaN, constant bands, a huge mean, sizes no tile or strip divides), ENVI, tiled and
# band-interleaved copies, and the real scenes of ../shared/data when it is there. Needs
# python3-gdal and python3-numpy to make the inputs (WORKDIR/in may hold them made elsewhere).
# Prints one line per case and exits 1 on any difference the old build does not show itself.
set -euo pipefail

if [[ $# -lt 2 ]]; then
  sed -n '2,14p' "$0" | cut -c3-
  exit 2
fi
old=$(realpath "$1")/cli/hyperstream
new=$(realpath "$2")/cli/hyperstream
work=${3:-$(mktemp -d /tmp/compare_builds.XXXXXX)}
device=${DEVICE:-cpu}
shared=$(dirname "$(realpath "$0")")/../../shared/data
for program in "$old" "$new"; do
  [[ -x $program ]] || { echo "no $program" >&2; exit 2; }
done
mkdir -p "$work/in"
cd "$work/in"

# --- Inputs -------------------------------------------------------------------------------
make_inputs() {
  "$new" synth s16.tif --rows 97 --cols 83 --bands 48 --type int16 --seed 3 -q
  "$new" synth u16.tif --rows 64 --cols 71 --bands 30 --type uint16 --seed 4 --border 0 -q
  "$new" synth f32.tif --rows 53 --cols 61 --bands 36 --type float32 --seed 5 -q
  gdal_translate -q -ot Byte -scale 0 12000 1 255 -a_nodata none u16.tif byte.tif
  gdal_translate -q -ot Float64 s16.tif f64.tif
  gdal_translate -q -of ENVI s16.tif envi.img
  gdal_translate -q -co TILED=YES -co BLOCKXSIZE=32 -co BLOCKYSIZE=32 -co COMPRESS=DEFLATE \
    s16.tif tiled.tif
  gdal_translate -q -co INTERLEAVE=BAND u16.tif bandint.tif
  gdal_translate -q -srcwin 0 10 71 3 u16.tif rows3.tif
  /usr/bin/python3 - <<'EOF'
import numpy as np
from osgeo import gdal
gdal.UseExceptions()
rng = np.random.default_rng(11)
def write(path, cube, nodata=None, like=None):
    bands, rows, cols = cube.shape
    kind = {np.dtype('float32'): gdal.GDT_Float32, np.dtype('float64'): gdal.GDT_Float64,
            np.dtype('uint16'): gdal.GDT_UInt16}[cube.dtype]
    out = gdal.GetDriverByName('GTiff').Create(path, cols, rows, bands, kind)
    for b in range(bands):
        band = out.GetRasterBand(b + 1)
        if nodata is not None: band.SetNoDataValue(nodata)
        band.WriteArray(cube[b])
    out = None
# NaN pixels and a constant band, no nodata declared.
cube = gdal.Open('f32.tif').ReadAsArray().astype(np.float32)
cube[:, 5:7, 10:40] = np.nan
cube[3, 20, 20] = np.inf
cube[7] = 0.25
write('nan.tif', cube)
# A huge mean with small variance (DN offsets), Float64.
cube = 1e7 + rng.normal(0, 3, (24, 45, 39))
cube[:, :, 0] = -9999
write('bigmean.tif', cube, nodata=-9999)
# uint16 near the top of its range.
cube = (60000 + rng.integers(0, 5000, (20, 33, 29))).astype(np.uint16)
write('u16high.tif', cube)
EOF
  if [[ -d $shared ]]; then
    ln -sf "$shared"/jasper*.tif "$shared"/jasper*.bsq "$shared"/jasper*.hdr "$shared"/samson*.tif "$shared"/moffett*.tif . 2>/dev/null || true
  fi
}
[[ -f u16high.tif || -n ${INPUTS:-} ]] || make_inputs
shopt -s nullglob
inputs=(*.tif *.img *.bsq)
[[ -n ${INPUTS:-} ]] && read -r -a inputs <<<"$INPUTS"

# --- Cases --------------------------------------------------------------------------------
pca_cases=(
  "pca|out.tif --stats out.json --table out.csv"
  "pca|out.tif --components all --type float64 --matrix correlation --stats out.json"
  "pca|out.tif --type byte --strip-rows 7 --stats out.json"
  "pca|out.tif --components 5 --ram 16 --stats out.json"
  "pca|out.img --format ENVI --components 3 --bands 2-12,15 --strip-rows 13"
  "mnf|out.tif --stats out.json --table out.csv"
  "mnf|out.tif --noise lower --components 4 --type byte --strip-rows 7 --stats out.json"
  "mnf|out.tif --noise right --snr 2 --type float64 --ram 16"
  "apply|out.tif"
  "apply|out.tif --components 2 --type float64 --strip-rows 7"
  "inverse|out.tif"
  "inverse|out.tif --components 2 --type float64 --strip-rows 9"
)
# Jobs that rebuild the image or score it from the same passes.
projection_cases=(
  "denoise|out.tif --components 4"
  "denoise|out.tif --components 3 --type float64 --strip-rows 7"
  "rx|out.tif --type float64"
  "rx|out.tif --components 5 --strip-rows 9"
  "detect|@TARGETS@ out.tif --method ace"
  "detect|@TARGETS@ out.tif --method mf --type float64 --strip-rows 7"
  "rx|out.tif --per-column --shrinkage 0.001 --type float64"
  "rx|out.tif --per-column --strip-rows 7"
  "rx|out.tif --window 5 --components 4"
  "rx|out.tif --window 7 --guard 3 --components 3 --type float64 --strip-rows 7"
  "detect|@TARGETS@ out.tif --method ace --per-column --shrinkage 0.01"
  "detect|@TARGETS@ out.tif --method mf --per-column --type float64"
)
spp_cases=(
  "spp|out.tif"
  "spp|out.tif --window 3 --border mirror --type float64 --alpha a.tif --rho r.tif --strip-rows 5"
  "spp|out.tif --window 11 --ram 16 --alpha a.tif"
  "spp|out.img --format ENVI --window 7 --bands 1-9 --strip-rows 9"
)

# The JSON report without its timings (and the keys named in NEW_JSON_KEYS): by Python where it is
# installed, else by Perl's JSON::PP (the GPU machine has no Python).
normalised_json() {
  if [[ -x /usr/bin/python3 ]]; then
    /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for key in ["seconds"] + sys.argv[2].split(): d.pop(key, None)
for key in [k for k in d.get("gpu", {}) if k.endswith("_seconds")]: del d["gpu"][key]
print(json.dumps(d, sort_keys=True))' "$1" "${NEW_JSON_KEYS:-}"
  else
    perl -MJSON::PP -e '
local $/; open(my $f, "<", $ARGV[0]) or die; my $d = JSON::PP->new->decode(<$f>);
delete $d->{$_} for ("seconds", split(" ", $ARGV[1] // ""));
if (ref $d->{gpu} eq "HASH") { delete $d->{gpu}{$_} for grep { /_seconds$/ } keys %{$d->{gpu}} }
print JSON::PP->new->canonical->encode($d), "\n";' "$1" "${NEW_JSON_KEYS:-}"
  fi
}

run_case() {  # run_case DIR PROGRAM INPUT COMMAND OPTIONS...
  local dir=$1 program=$2 input=$3 command=$4
  shift 4
  mkdir -p "$dir"
  local rc=0
  if [[ $command == synth ]]; then  # no input, no device
    (cd "$dir" && "$program" synth "$@" -q >stdout.txt 2>stderr.txt) || rc=$?
  elif [[ $command == apply || $command == inverse ]]; then  # the fit made of the input below
    local fit=$work/in/fits/$input
    local files=("$fit.json" "$work/in/$input")
    [[ $command == inverse ]] && files=("$fit.components.tif" "$fit.json")
    (cd "$dir" && "$program" "$command" "${files[@]}" "$@" --device "$device" -q \
      >stdout.txt 2>stderr.txt) || rc=$?
  else
    (cd "$dir" && "$program" "$command" "$work/in/$input" "$@" --device "$device" -q \
      >stdout.txt 2>stderr.txt) || rc=$?
  fi
  echo "$rc" >"$dir/rc.txt"
}

same_outputs() {  # same_outputs OLD_DIR NEW_DIR: every file equal, JSON without timings
  local a=$1 b=$2 file
  [[ "$(cd "$a" && ls -1 | sort)" == "$(cd "$b" && ls -1 | sort)" ]] || return 1
  for file in "$a"/*; do
    file=$(basename "$file")
    case $file in
      *.json) [[ "$(normalised_json "$a/$file")" == "$(normalised_json "$b/$file")" ]] ;;
      # Messages may name a pending output's folder, which holds the process id.
      stderr.txt) [[ "$(sed 's/\.part-[^/]*//g' "$a/$file")" == "$(sed 's/\.part-[^/]*//g' "$b/$file")" ]] ;;
      *) cmp -s "$a/$file" "$b/$file" ;;
    esac || { echo "    differs: $file"; return 1; }
  done
}

synth_cases=(
  "synth|out.tif --rows 37 --cols 41 --bands 23 --truth"
  "synth|out.img --format ENVI --type float32 --rows 20 --cols 30 --bands 12 --seed 7"
  "synth|out.tif --type uint16 --dead-bands 0 --border 0 --rows 9 --cols 70 --bands 40"
)

# detect's targets (@TARGETS@ in a case): two ATGP endmembers of each input, by the new build.
mkdir -p "$work/in/targets"
for input in "${inputs[@]}"; do
  [[ -f $work/in/targets/$input.csv ]] ||
    "$new" endmembers "$input" "$work/in/targets/$input.csv" --count 2 --method atgp -q \
      >/dev/null 2>&1 || true
done

# apply's and inverse's statistics and components: a PCA of each input (four components, Byte
# where the input is, to invert Byte components), by the new build on the CPU.
mkdir -p "$work/in/fits"
for input in "${inputs[@]}"; do
  fit=$work/in/fits/$input
  [[ -f $fit.json ]] ||
    "$new" pca "$input" "$fit.components.tif" --components 4 --stats "$fit.json" \
      $([[ $input == byte.tif ]] && echo --type byte) --device cpu -q >/dev/null 2>&1 || true
done

failures=0 unstable=0 count=0
for input in "${inputs[@]}" "(none)"; do
  cases=("${pca_cases[@]}" "${projection_cases[@]}" "${spp_cases[@]}")
  [[ $input == "(none)" ]] && cases=("${synth_cases[@]}")
  for entry in "${cases[@]}"; do
    command=${entry%%|*}
    read -r -a options <<<"${entry#*|}"
    options=("${options[@]/@TARGETS@/$work/in/targets/$input.csv}")
    count=$((count + 1))
    dir="$work/runs/$count"
    rm -rf "$dir"
    run_case "$dir/old" "$old" "$input" "$command" "${options[@]}"
    run_case "$dir/new" "$new" "$input" "$command" "${options[@]}"
    label="$input $command ${options[*]}"
    if same_outputs "$dir/old" "$dir/new"; then
      echo "same  (rc $(cat "$dir/new/rc.txt")) $label"
    else
      # A path that is not bitwise reproducible from run to run (on a GPU, say) differs from
      # itself too: reported apart, for a closer look.
      run_case "$dir/old2" "$old" "$input" "$command" "${options[@]}"
      if same_outputs "$dir/old" "$dir/old2" >/dev/null; then
        echo "DIFF  $label   [$dir]"
        failures=$((failures + 1))
      else
        echo "UNSTABLE (the old build differs from itself) $label   [$dir]"
        unstable=$((unstable + 1))
      fi
    fi
  done
done
echo "$((count - failures - unstable)) of $count cases the same, $unstable not reproducible by the old build itself (device $device; $work)"
[[ $failures -eq 0 ]]
