#!/usr/bin/env bash
# The engine's floors (docs/design.md, "The folders"): each folder of engine/ includes only itself
# and the folders after it in this order, so that no algorithm family includes another and no
# floor includes what is built on it. Prints every include that breaks the order; exit 1 if any.
#
#   tests/check_floors.sh ENGINE_DIR
set -euo pipefail
engine=${1:?usage: check_floors.sh ENGINE_DIR}
# One level per entry, top first; the folders of one level may not include one another.
levels=("pca detect spp unmixing synth" covariance materials pixels spectra projection run stats
        io core)
declare -A level
for i in "${!levels[@]}"; do
  for folder in ${levels[$i]}; do level[$folder]=$i; done
done
bad=0
for dir in "$engine"/*/; do
  folder=$(basename "$dir")
  if [[ -z ${level[$folder]+x} ]]; then
    echo "engine/$folder: not in tests/check_floors.sh's levels (nor in docs/design.md?)"
    bad=1
    continue
  fi
  while IFS=: read -r file line target; do
    [[ $target == "$folder" ]] && continue
    if [[ -z ${level[$target]+x} ]] || ((level[$target] <= level[$folder])); then
      echo "${file#"$engine"/}:$line includes $target/ (not a floor below $folder/)"
      bad=1
    fi
  done < <(grep -rnoE '^#include "[a-z]+/' "$dir" --include='*.h' --include='*.cpp' |
             sed -E 's/:#include "([a-z]+)\/$/:\1/')
done
((bad == 0)) && echo "floors: every engine folder includes only those below it"
exit $bad
