#!/usr/bin/env bash
# Two builds' MNF and PCA side by side, interleaved round by round, file to file, 10 components:
# prints every round, the medians and each build's MNF over its own PCA.
#
#   bench/mnf_two_builds.sh OLD_BUILD NEW_BUILD CUBE [ROUNDS=5]
#
# OLD_BUILD and NEW_BUILD are build folders holding cli/hyperstream (an old one: git worktree add,
# then cmake with -DHYPERSTREAM_CUDA=OFF -DHYPERSTREAM_QGIS=OFF and ninja hyperstream), or command
# lines: on the GPU machine, "B/run.sh B/bin/hyperstream_old" of a device bundle with both builds.
set -euo pipefail
program() { if [[ -d $1 ]]; then echo "$1/cli/hyperstream"; else echo "$1"; fi; }
read -ra old <<<"$(program "$1")"
read -ra new <<<"$(program "$2")"
cube=$3 rounds=${4:-5}
out=$(mktemp -d /tmp/mnf_two_builds.XXXXXX)
trap 'rm -rf "$out"' EXIT
milliseconds() {
  local start
  start=$(date +%s%N)
  "$@" --components 10 --device cpu -q >/dev/null
  echo $((($(date +%s%N) - start) / 1000000))
}
for _ in $(seq "$rounds"); do
  echo "$(milliseconds "${old[@]}" mnf "$cube" "$out/old.tif")" \
    "$(milliseconds "${new[@]}" mnf "$cube" "$out/new.tif")" \
    "$(milliseconds "${new[@]}" pca "$cube" "$out/pca.tif")" \
    "$(milliseconds "${old[@]}" pca "$cube" "$out/oldpca.tif")"
done | /usr/bin/python3 -c "
import statistics, sys
rows = [list(map(int, line.split())) for line in sys.stdin if line.strip()]
print('rounds (ms: MNF old, MNF new, PCA new, PCA old):', rows)
old, new, pca, oldpca = (statistics.median(column) for column in zip(*rows))
print(f'{len(rows)} rounds, medians: MNF old {old/1000:.2f} s, new {new/1000:.2f} s; '
      f'PCA old {oldpca/1000:.2f} s, new {pca/1000:.2f} s; MNF/PCA old {old/oldpca:.2f}, '
      f'new {new/pca:.2f}')"
