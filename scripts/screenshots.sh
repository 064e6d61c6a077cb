#!/usr/bin/env bash
# Screenshots of the QGIS desktop with the plugin (not run in CI): the Processing Toolbox, the
# hyperstream:pca dialog and the HTML report, under Xvfb, into docs/screenshots/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/demo.sh >/dev/null
command -v Xvfb >/dev/null || { sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo; $sudo apt-get install -y -qq xvfb >/dev/null; }
Xvfb :87 -screen 0 1600x1000x24 >/dev/null 2>&1 &
xvfb=$!
trap 'kill $xvfb' EXIT
sleep 2
mkdir -p docs/screenshots
export DISPLAY=:87 QGIS_CUSTOM_CONFIG_PATH=$PWD/demo/qgis-config
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
export HYPERSTREAM_SHOTS=$PWD/docs/screenshots HYPERSTREAM_SCENE=$PWD/demo/scene.tif
export HYPERSTREAM_REPORT=$PWD/demo/components.html
timeout 180 qgis --noversioncheck --nologo --code scripts/screenshots.py >/dev/null 2>&1 || true
ls -l docs/screenshots
