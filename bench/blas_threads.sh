#!/usr/bin/env bash
# OpenBLAS's threads against Hyperstream's (issue 35, item 6): two command lines side by side,
# interleaved, on a synthetic cube: MNF and PCA on the CPU, ROUNDS rounds each; prints each
# round's wall and CPU seconds (user + system: OpenBLAS threads spinning after the fit's LAPACK
# calls show there) and the medians. Built against OpenBLAS >= 0.3.27, the newer build keeps each
# worker's BLAS calls and small fits on one thread.
#
#   bench/blas_threads.sh OLD_PROGRAM NEW_PROGRAM [ROUNDS=5] [ROWS=2000] [BANDS=224]
#
# A PROGRAM may be a command with a prefix (a bundle's run.sh): quote it, "b/run.sh b/bin/x".
set -euo pipefail
old=$1 new=$2 rounds=${3:-5} rows=${4:-2000} bands=${5:-224}
work=$(mktemp -d /tmp/blas_threads.XXXXXX)
trap 'rm -rf "$work"' EXIT
$new synth "$work/cube.tif" --rows "$rows" --cols 1000 --bands "$bands" -q
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2)}'; }
TIMEFORMAT='%R %U %S'
for job in mnf pca; do
  : >"$work/old.txt"; : >"$work/new.txt"
  for ((r = 1; r <= rounds; r++)); do
    for build in old new; do
      program=$old; [[ $build == new ]] && program=$new
      rm -f "$work/out.tif"
      t=$( { time $program "$job" "$work/cube.tif" "$work/out.tif" --components 10 --device cpu \
              -q >/dev/null 2>&1; } 2>&1 )
      read -r wall user sys <<<"$t"
      cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
      echo "$job round $r $build: wall $wall s, cpu $cpu s"
      echo "$wall $cpu" >>"$work/$build.txt"
    done
  done
  for build in old new; do
    echo "$job $build median: wall $(cut -d' ' -f1 "$work/$build.txt" | median) s," \
      "cpu $(cut -d' ' -f2 "$work/$build.txt" | median) s"
  done
done
