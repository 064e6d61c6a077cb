#!/usr/bin/env bash
# Detection beside PCA on the same cube, interleaved round by round: `pca --components 10`,
# `rx`, `detect --method mf|ace|cem` with three ATGP endmembers of the cube as targets (all
# Float32 scores), `sam` against a library of twelve (the class map and the best angle), and with
# each column's statistics `rx --per-column` (rxc) and
# `detect --method mf --per-column --target-mode absorption` of a methane-like absorption (mfc),
# both with `--shrinkage 1e-4` (the tiled cube's columns repeat 100 pixels: fewer than its bands),
# and local RX `rx --window 15 --guard 3 --components 10` (rxl).
# JOBS="pca rx ace" runs those alone (pca first: the ratios are to it). Prints every round, the
# medians and the ratios to PCA. With BASE=OLD_BUILD, each job also runs with that build right
# after this one's, and the medians say new / old. With SPY=1, also Spectral Python's rx,
# matched_filter, ace and spectral_angles (in memory, float64, one process) against
# `hyperstream rx/detect/sam --type float64` on SPY_INPUT (a cube Spectral Python can hold;
# default a 600 x 600 tile of Jasper Ridge), timed from reading the file to the scores, and the
# largest difference of their scores relative to the largest score (SAM: of the angles, and
# how many classes differ).
#
#   bench/detect_bench.sh BUILD [ROUNDS=5] [DEVICE=cpu] [INPUT=/tmp/hyperstream-bench/jasper_2300.tif]
#
# BUILD is a build folder, or (on the GPU machine) a device bundle's run.sh. Outputs go beside the
# input (OUT_DIR to choose another folder).
set -euo pipefail
source "$(dirname "$(realpath "$0")")/common.sh"
if [[ -n ${BASE:-} ]]; then
  program_of "$BASE"
  base_program=("${program[@]}")
fi
program_of "$1"
rounds=${2:-5} device=${3:-cpu} input=${4:-/tmp/hyperstream-bench/jasper_2300.tif}
ensure_cube "$input"
out=$(mktemp -d "${OUT_DIR:-$(dirname "$input")}/detect_bench.XXXXXX")
trap 'rm -rf "$out"' EXIT
"${program[@]}" endmembers "$input" "$out/targets.csv" --count 3 --method atgp -q
"${program[@]}" endmembers "$input" "$out/library.csv" --count 12 --method atgp -q
# Three narrow absorption features of 2 % per unit, on the targets' band columns.
awk -F, 'NR == 1 { print; n = NF - 3 }
  END { printf "absorption,0,0"
        for (b = 0; b < n; ++b) {
          k = 0
          for (i = 1; i <= 3; ++i) { c = (0.4 + 0.15 * i) * n; k += 0.02 * exp(-((b - c) / 0.8) ^ 2) }
          printf ",%.9g", k }
        print "" }' "$out/targets.csv" >"$out/absorption.csv"

run=("${program[@]}")
seconds() {  # seconds ARGS...: wall time of one run of "${run[@]}"
  local start end
  rm -f "$out"/*.tif
  start=$(date +%s%N)
  "${run[@]}" "$@" --device "$device" -q >/dev/null
  end=$(date +%s%N)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f\n", (b - a) / 1e9 }'
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2)}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

declare -A times
if [[ -n ${JOBS:-} ]]; then
  read -ra jobs <<<"$JOBS"
else
  jobs=(pca rx mf ace cem sam rxl rxc mfc)
fi
keys=()  # each job, then (BASE) the same with the base build
for job in "${jobs[@]}"; do keys+=("$job@new" ${BASE:+"$job@base"}); done
for ((r = 1; r <= rounds; r++)); do
  line="round $r:"
  for key in "${keys[@]}"; do
    job=${key%@*}
    if [[ $key == *@base ]]; then run=("${base_program[@]}"); else run=("${program[@]}"); fi
    case $job in
      pca) t=$(seconds pca "$input" "$out/pcs.tif" --components 10) ;;
      rx) t=$(seconds rx "$input" "$out/rx.tif") ;;
      sam) t=$(seconds sam "$input" "$out/library.csv" "$out/sam.tif" --angle "$out/angle.tif") ;;
      rxc) t=$(seconds rx "$input" "$out/rxc.tif" --per-column --shrinkage 1e-4) ;;
      rxl) t=$(seconds rx "$input" "$out/rxl.tif" --window 15 --guard 3 --components 10) ;;
      mfc) t=$(seconds detect "$input" "$out/absorption.csv" "$out/mfc.tif" --method mf \
        --per-column --target-mode absorption --shrinkage 1e-4) ;;
      *) t=$(seconds detect "$input" "$out/targets.csv" "$out/$job.tif" --method "$job") ;;
    esac
    times[$key]+="$t "
    line+=" ${key%@new} $t s,"
  done
  echo "${line%,}"
done
median_of() { tr ' ' '\n' <<<"${times[$1]}" | grep . | median; }
mp=$(median_of pca@new)
line="median: pca $mp s"
for job in "${jobs[@]:1}"; do
  m=$(median_of "$job@new")
  line+=", $job $m s ($(ratio "$m" "$mp")x)"
done
if [[ -n ${BASE:-} ]]; then
  line+="; the base build:"
  for job in "${jobs[@]}"; do
    b=$(median_of "$job@base")
    line+=" $job $b s (new / base $(ratio "$(median_of "$job@new")" "$b")),"
  done
  line=${line%,}
fi
echo "$line"

if [[ ${SPY:-0} == 1 ]]; then
  spy_input=${SPY_INPUT:-$out/spy.tif}
  [[ -f $spy_input ]] || ensure_cube "$spy_input" 600
  "${program[@]}" endmembers "$spy_input" "$out/spy_targets.csv" --count 3 --method atgp -q
  "${program[@]}" endmembers "$spy_input" "$out/spy_library.csv" --count 12 --method atgp -q
  for job in rx mf ace sam; do
    start=$(date +%s%N)
    if [[ $job == rx ]]; then
      "${program[@]}" rx "$spy_input" "$out/spy_rx.tif" --type float64 --device "$device" -q
    elif [[ $job == sam ]]; then
      "${program[@]}" sam "$spy_input" "$out/spy_library.csv" "$out/spy_sam.tif" \
        --angles "$out/spy_angles.tif" --type float64 --device "$device" -q
    else
      "${program[@]}" detect "$spy_input" "$out/spy_targets.csv" "$out/spy_$job.tif" \
        --method "$job" --type float64 --device "$device" -q
    fi
    awk -v a="$start" -v b="$(date +%s%N)" -v j="$job" \
      'BEGIN { printf "hyperstream %s (float64 scores): %.2f s\n", j, (b - a) / 1e9 }'
  done
  /usr/bin/python3 "$(dirname "$(realpath "$0")")/detect_spectral.py" "$spy_input" \
    "$out/spy_targets.csv" "$out/spy_library.csv" "$out"
fi
