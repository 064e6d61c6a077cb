#!/usr/bin/env bash
# Two builds' MNF side by side with PCA, interleaved round by round, file to file, 10 components:
# prints the medians and each MNF over PCA (the new build's PCA).
#
#   bench/mnf_two_builds.sh OLD_BUILD NEW_BUILD CUBE [ROUNDS=5]
#
# A build folder holds cli/hyperstream (an old one: git worktree add, then cmake with
# -DHYPERSTREAM_CUDA=OFF -DHYPERSTREAM_QGIS=OFF and ninja hyperstream).
set -euo pipefail
old=$1/cli/hyperstream new=$2/cli/hyperstream cube=$3 rounds=${4:-5}
out=$(mktemp -d /tmp/mnf_two_builds.XXXXXX)
trap 'rm -rf "$out"' EXIT
milliseconds() {
  local start
  start=$(date +%s%N)
  "$@" --components 10 --device cpu -q >/dev/null
  echo $((($(date +%s%N) - start) / 1000000))
}
for _ in $(seq "$rounds"); do
  echo "$(milliseconds "$old" mnf "$cube" "$out/old.tif")" \
    "$(milliseconds "$new" mnf "$cube" "$out/new.tif")" \
    "$(milliseconds "$new" pca "$cube" "$out/pca.tif")"
done | /usr/bin/python3 -c "
import statistics, sys
rows = [list(map(int, line.split())) for line in sys.stdin if line.strip()]
old, new, pca = (statistics.median(column) for column in zip(*rows))
print(f'{len(rows)} rounds, medians: MNF old {old/1000:.2f} s, MNF new {new/1000:.2f} s, '
      f'PCA {pca/1000:.2f} s; old/PCA {old/pca:.2f}, new/PCA {new/pca:.2f}')"
