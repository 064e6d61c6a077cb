#!/usr/bin/env bash
# The first command of the README: installs, builds, writes the synthetic demo scene
# (512 x 512 x 224 int16, AVIRIS-like) and runs the PCA on it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh >/dev/null
mkdir -p demo
build/cli/hyperstream synth demo/scene.tif --truth --quiet
build/cli/hyperstream pca demo/scene.tif demo/components.tif \
  --stats demo/components.json --table demo/components.csv
echo
echo "demo scene:  $PWD/demo/scene.tif (+ scene_abundances.tif, scene_endmembers.csv)"
echo "components:  $PWD/demo/components.tif"
echo "statistics:  $PWD/demo/components.json, $PWD/demo/components.csv"
