#!/usr/bin/env bash
# The first command of the README: installs, builds, writes the synthetic demo scene
# (512 x 512 x 224 int16, AVIRIS-like) and runs hyperstream:pca on it through QGIS's qgis_process,
# with the plugin installed into a demo QGIS profile.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh >/dev/null
demo=$PWD/demo
mkdir -p "$demo"
build/cli/hyperstream synth "$demo/scene.tif" --truth --quiet

export QT_QPA_PLATFORM=offscreen QGIS_CUSTOM_CONFIG_PATH=$demo/qgis-config
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
plugins=$QGIS_CUSTOM_CONFIG_PATH/profiles/default/python/plugins
rm -rf "$plugins/hyperstream" && mkdir -p "$plugins" && cp -r build/plugin/hyperstream "$plugins/"
# /usr/bin/qgis_process is Debian's wrapper; it adds --noversioncheck, which 3.22 rejects.
# (fails harmlessly when an earlier run already enabled it)
/usr/bin/qgis_process.bin plugins enable hyperstream >/dev/null 2>&1 || true
/usr/bin/qgis_process.bin run hyperstream:pca -- INPUT="$demo/scene.tif" OUTPUT="$demo/components.tif" \
  OUTPUT_STATS="$demo/components.json" OUTPUT_TABLE="$demo/components.csv" \
  OUTPUT_HTML_FILE="$demo/components.html" 2>/dev/null
echo
echo "demo scene:  $demo/scene.tif (+ scene_abundances.tif, scene_endmembers.csv)"
echo "components:  $demo/components.tif"
echo "statistics:  $demo/components.json, $demo/components.csv"
echo "report:      $demo/components.html"
echo "QGIS profile with the plugin enabled: $QGIS_CUSTOM_CONFIG_PATH"
