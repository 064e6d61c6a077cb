#!/usr/bin/env bash
# What the defaults that count the scene's materials cost on a large cube (issue 54): endmembers
# with --count auto against --count 4 (N-FINDR, VCA), and rx / detect with their default
# components against --components all, side by side, ROUNDS rounds interleaved, medians.
#   bench/defaults_cost.sh [BUILD] [ROUNDS] [CUBE]
# CUBE: the 2.09 GB Jasper Ridge tiling (made when absent).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
build=${1:-build}
rounds=${2:-3}
cube=${3:-/tmp/hyperstream-bench/big.tif}
describe_machine /tmp/hyperstream-bench >/dev/null
ensure_cube "$cube"
program_of "$build"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"${program[@]}" endmembers "$cube" "$work/targets.csv" --count 4 --method nfindr --quiet
declare -A times
jobs=(
  "nfindr_auto|endmembers $cube $work/o.csv --method nfindr"
  "nfindr_4|endmembers $cube $work/o.csv --method nfindr --count 4"
  "vca_auto|endmembers $cube $work/o.csv --method vca"
  "vca_4|endmembers $cube $work/o.csv --method vca --count 4"
  "rx_default|rx $cube $work/o.tif"
  "rx_all|rx $cube $work/o.tif --components all"
  "mf_default|detect $cube $work/targets.csv $work/o.tif --method mf"
  "mf_all|detect $cube $work/targets.csv $work/o.tif --method mf --components all"
)
for ((round = 1; round <= rounds; round++)); do
  for job in "${jobs[@]}"; do
    name=${job%%|*}
    read -ra arguments <<<"${job#*|}"
    rm -f "$work/o.csv" "$work/o.tif"
    start=$EPOCHREALTIME
    "${program[@]}" "${arguments[@]}" --quiet
    times[$name]+="$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.3f ", b - a}')"
  done
done
for job in "${jobs[@]}"; do
  name=${job%%|*}
  printf '%-12s %s (median %s s)\n' "$name" "${times[$name]}" \
    "$(tr ' ' '\n' <<<"${times[$name]}" | grep . | sort -n | awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}')"
done
