#!/usr/bin/env bash
# Two builds side by side, interleaved: jobs on the 2.09 GB cube (Jasper Ridge tiled to 2300 x 2300
# x 198, uint16) and the SPP of a 350 x 350 x 188 int16 scene at window 11, ROUNDS rounds each;
# prints every round, the medians and new/old. For checking that a change costs no speed. Every
# job is given its options in full, so that both builds do the same work whatever their defaults.
#
#   [JOBS="pca spp"] bench/compare_speed.sh OLD_BUILD NEW_BUILD [ROUNDS=5] [DEVICE=cpu] [DATA=/tmp/hyperstream-bench]
#
# JOBS: any of pca spp denoise rx mf sam endmembers abundances (mf, sam and abundances take the
# cube's four ATGP endmembers, found once by the new build). DATA keeps the inputs between runs
# (about 2.2 GB); the cube is made with ../shared/tools/tile_cube.py (python3-gdal,
# python3-numpy), the SPP input with `hyperstream synth`.
set -euo pipefail
old=$(realpath "$1")/cli/hyperstream
new=$(realpath "$2")/cli/hyperstream
rounds=${3:-5} device=${4:-cpu} data=${5:-/tmp/hyperstream-bench}
here=$(dirname "$(realpath "$0")")
mkdir -p "$data"
pca_input=$data/jasper_2300.tif spp_input=$data/synth_350x350x188.tif
[[ -f $pca_input ]] || /usr/bin/python3 "$here/../../shared/tools/tile_cube.py" \
  "$here/../../shared/data/jasper_ridge_100x100x198_uint16.tif" 2300 2300 "$pca_input" >/dev/null
[[ -f $spp_input ]] || "$new" synth "$spp_input" --rows 350 --cols 350 --bands 188 -q
out=$(mktemp -d /tmp/compare_speed.XXXXXX)
trap 'rm -rf "$out"' EXIT

seconds() {  # seconds PROGRAM ARGS...: wall time of one run
  local start end
  rm -f "$out"/o.*  # replacing a finished output would add freeing its pages
  start=$(date +%s%N)
  "$@" --device "$device" -q 2>"$out/err" >/dev/null || { echo "failed: $* ($(cat "$out/err"))" >&2; return 1; }
  end=$(date +%s%N)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f\n", (b - a) / 1e9 }'
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2)}'; }

[[ -f $data/endmembers.csv ]] ||
  "$new" endmembers "$pca_input" "$data/endmembers.csv" --count 4 --method atgp -q
table=$data/endmembers.csv

run_job() {  # run_job PROGRAM JOB: one run's wall time
  local program=$1
  case $2 in
    pca) seconds "$program" pca "$pca_input" "$out/o.tif" --components 10 ;;
    spp) seconds "$program" spp "$spp_input" "$out/o.tif" --window 11 ;;
    denoise) seconds "$program" denoise "$pca_input" "$out/o.tif" --components 10 ;;
    rx) seconds "$program" rx "$pca_input" "$out/o.tif" --components all ;;
    mf) seconds "$program" detect "$pca_input" "$table" "$out/o.tif" --method mf --components all ;;
    sam) seconds "$program" sam "$pca_input" "$table" "$out/o.tif" ;;
    endmembers) seconds "$program" endmembers "$pca_input" "$out/o.csv" --count 4 ;;
    abundances) seconds "$program" abundances "$pca_input" "$table" "$out/o.tif" ;;
    *) echo "unknown job $2" >&2; exit 2 ;;
  esac
}

for job in ${JOBS:-pca spp}; do
  olds=() news=()
  for ((r = 1; r <= rounds; r++)); do
    for build in old new; do
      program=$old
      [[ $build == new ]] && program=$new
      t=$(run_job "$program" "$job") || exit 1
      if [[ $build == old ]]; then olds+=("$t"); else news+=("$t"); fi
    done
    echo "$job round $r: old ${olds[-1]} s, new ${news[-1]} s"
  done
  mo=$(printf '%s\n' "${olds[@]}" | median) mn=$(printf '%s\n' "${news[@]}" | median)
  echo "$job median: old $mo s, new $mn s, new/old $(awk -v a="$mn" -v b="$mo" 'BEGIN { printf "%.3f", a / b }')"
done
