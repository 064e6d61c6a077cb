#!/usr/bin/env bash
# How long Ctrl-C takes to stop a PCA in pass 2, and what it leaves: `pca --components all` of a
# synthetic cube (scene 2000 x 1500 x 198 int16, 1.19 GB; output 2.26 GB of Float32), SIGINT at
# fixed fractions of the uninterrupted run, for each binary given, interleaved round by round.
#
#   bench/run_cancel_bench.sh NEW_BINARY [OLD_BINARY]   (REPS=3 BENCH_DIR=bench/out)
#
# Before every run the previous output is deleted and the page cache synced, so that a run does
# not pay for writing back the last one. Prints one line per run and the medians, in seconds
# from the signal to the process's exit.
set -euo pipefail
cd "$(dirname "$0")/.."
binaries=("$@")
[ ${#binaries[@]} -ge 1 ] || { echo "usage: $0 NEW_BINARY [OLD_BINARY]"; exit 2; }
reps=${REPS:-3}
out=${BENCH_DIR:-bench/out}/cancel
mkdir -p "$out"
cube=$out/cube.tif
[ -f "$cube" ] || "${binaries[0]}" synth "$cube" --rows 2000 --cols 1500 --bands 198 --quiet

settle() { rm -rf "$out"/dest.tif "$out"/.dest.* ; sync; sleep 1; }
# The uninterrupted run's length, per binary (the fractions are of it): the shorter of two,
# after a first run that warms the page cache. Also the floor's comparison of the full runs.
declare -A full
settle
"${binaries[0]}" pca "$cube" "$out/dest.tif" --components all --quiet 2>/dev/null
for round in 1 2; do
  for b in "${binaries[@]}"; do
    settle
    start=$(date +%s.%N)
    "$b" pca "$cube" "$out/dest.tif" --components all --quiet 2>/dev/null
    seconds=$(echo "$(date +%s.%N) - $start" | bc)
    echo "full run: $seconds s  ($b)"
    if [ -z "${full[$b]:-}" ] || (( $(echo "$seconds < ${full[$b]}" | bc) )); then
      full[$b]=$seconds
    fi
  done
done

results=$out/results.tsv
: >"$results"
for round in $(seq "$reps"); do
  for fraction in 0.6 0.75 0.9; do
    for b in "${binaries[@]}"; do
      settle
      "$b" pca "$cube" "$out/dest.tif" --components all --quiet 2>/dev/null &
      pid=$!
      sleep "$(echo "${full[$b]} * $fraction" | bc)"
      signal=$(date +%s.%N)
      kill -INT $pid 2>/dev/null || true
      status=0
      wait $pid || status=$?
      stop=$(echo "$(date +%s.%N) - $signal" | bc)
      left=$(find "$out" -name '*part*' -printf '%s\n' | awk '{s += $1} END {print s + 0}')
      echo -e "$b\t$fraction\t$status\t$stop\t$left" | tee -a "$results"
    done
  done
done
echo
echo "medians of the canceled runs (exit 130), seconds from SIGINT to exit:"
for b in "${binaries[@]}"; do
  awk -F'\t' -v b="$b" '$1 == b && $3 == 130 {print $4}' "$results" | sort -n |
    awk -v b="$b" '{v[NR] = $1} END {if (NR) printf "%s: median %.3f s, range %.3f-%.3f s (%d runs)\n", b, (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[1], v[NR], NR}'
done
settle
