#!/usr/bin/env bash
# Screenshots for docs/screenshots/ (not run in CI): in the QGIS desktop under Xvfb, the
# Processing Toolbox, every Hyperstream dialog and the Model Designer with each shipped model
# (scripts/screenshots.py); in headless Chromium, each kind of HTML report, written by the
# command line from the demo scene.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/demo.sh >/dev/null
sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
command -v Xvfb >/dev/null || $sudo apt-get install -y -qq xvfb >/dev/null
command -v chromium >/dev/null || $sudo apt-get install -y -qq chromium >/dev/null
shots=$PWD/docs/screenshots demo=$PWD/demo cli=$PWD/build/cli/hyperstream
mkdir -p "$shots" "$demo/reports"

# The reports, from the demo scene (AVIRIS-like, with wavelengths and pure patches).
r=$demo/reports
"$cli" synth "$demo/mixed.tif" --rows 200 --cols 240 --bands 160 --endmembers 5 --pure-patches 5 \
  --snr 35 --truth --quiet
"$cli" pca "$demo/scene.tif" "$r/pcs.tif" --components 10 --html "$r/pca.html" --quiet
"$cli" mnf "$demo/scene.tif" "$r/mnf.tif" --components 10 --html "$r/mnf.html" --quiet
"$cli" denoise "$demo/scene.tif" "$r/denoised.tif" --transform mnf --components 10 \
  --html "$r/denoise.html" --quiet
"$cli" spp "$demo/mixed.tif" "$r/spp.tif" --noise-adjusted --quiet
"$cli" endmembers "$demo/mixed.tif" "$r/em.csv" --count 5 --method nfindr \
  --locations-from "$r/spp.tif" --average-window 3 --exclude-nm 1340-1450,1790-1960 \
  --html "$r/endmembers.html" --quiet
"$cli" abundances "$demo/mixed.tif" "$r/em.csv" "$r/abundances.tif" --rmse "$r/rmse.tif" \
  --exclude-nm 1340-1450,1790-1960 \
  --html "$r/abundances.html" --quiet
"$cli" sam "$demo/mixed.tif" "$r/em.csv" "$r/classes.tif" --max-angle 0.1 \
  --exclude-nm 1340-1450,1790-1960 --html "$r/sam.html" --quiet
"$cli" detect "$demo/mixed.tif" "$r/em.csv" "$r/ace.tif" --method ace --components auto \
  --exclude-nm 1340-1450,1790-1960 --html "$r/detect.html" --quiet
"$cli" rx "$demo/mixed.tif" "$r/rx_local.tif" --window 15 --guard 3 \
  --exclude-nm 1340-1450,1790-1960 --html "$r/rx.html" --quiet
for report in pca mnf denoise endmembers abundances sam detect rx; do
  timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size=900,1900 --screenshot="$shots/report_$report.png" "file://$r/$report.html" \
    >/dev/null 2>&1
done

# The desktop.
for display in $(seq 87 99); do
  [ -e /tmp/.X11-unix/X$display ] || [ -e /tmp/.X$display-lock ] || break
done
Xvfb :$display -screen 0 1600x1000x24 >/dev/null 2>&1 &
xvfb=$!
trap 'kill $xvfb' EXIT
sleep 2
export DISPLAY=:$display QGIS_CUSTOM_CONFIG_PATH=$demo/qgis-config
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
export HYPERSTREAM_SHOTS=$shots HYPERSTREAM_SCENE=$demo/scene.tif HYPERSTREAM_MIXED=$demo/mixed.tif
export HYPERSTREAM_MODELS=$PWD/build/plugin/hyperstream/models
timeout 300 qgis --noversioncheck --nologo --code scripts/screenshots.py >/dev/null 2>&1 || true
ls -l "$shots"
