#!/usr/bin/env bash
# The QGIS desktop under Xvfb, with the plugin installed in a throwaway profile: results of the
# Processing dialogs load into the project, and reinstalling the plugin from a ZIP while it is
# loaded (a different build of its library) does not crash QGIS (tests/qgis_desktop.py).
#   test_qgis_desktop.sh PLUGIN_DIR HYPERSTREAM_CLI VARIANT_LIBRARY
set -euo pipefail
plugin=$1 cli=$2 variant=$3
here=$(cd "$(dirname "$0")" && pwd)
command -v Xvfb >/dev/null || { echo "SKIP: no Xvfb (apt install xvfb)"; exit 0; }
work=$(mktemp -d)
xvfb=""
trap '[ -z "$xvfb" ] || kill $xvfb 2>/dev/null; rm -rf "$work"' EXIT
export XDG_RUNTIME_DIR=$work/xdg QGIS_CUSTOM_CONFIG_PATH=$work/config
mkdir -m 700 "$work/xdg"
plugins=$QGIS_CUSTOM_CONFIG_PATH/profiles/default/python/plugins
mkdir -p "$plugins" && cp -r "$plugin" "$plugins/"
QT_QPA_PLATFORM=offscreen /usr/bin/qgis_process.bin plugins enable hyperstream >/dev/null 2>&1
"$cli" synth "$work/scene.tif" --rows 60 --cols 80 --bands 30 --quiet

# The ZIP a user would install: the same plugin with a different build of its library.
mkdir -p "$work/zip/hyperstream"
cp -r "$plugin"/. "$work/zip/hyperstream/"
cp "$variant" "$work/zip/hyperstream/libhyperstream_qgis.so"
(cd "$work/zip" && /usr/bin/python3 -c "
import os, zipfile
with zipfile.ZipFile('../hyperstream.zip', 'w') as z:
    for folder, _, files in os.walk('hyperstream'):
        for f in files: z.write(os.path.join(folder, f))")

for display in $(seq 91 99); do
  [ -e /tmp/.X11-unix/X$display ] || [ -e /tmp/.X$display-lock ] || break
done
Xvfb :$display -screen 0 1400x900x24 -nolisten tcp >/dev/null 2>&1 &
xvfb=$!
# Until its socket is there (a fixed 2 s was too short on a loaded machine once).
for _ in $(seq 100); do [ -S /tmp/.X11-unix/X$display ] && break; sleep 0.2; done
sleep 0.5
export DISPLAY=:$display HYPERSTREAM_DESKTOP_WORK=$work HYPERSTREAM_DESKTOP_RESULTS=$work/results.txt
status=0
timeout -s KILL 300 qgis --noversioncheck --nologo --code "$here/qgis_desktop.py" \
  >"$work/qgis.log" 2>&1 || status=$?
cat "$work/results.txt" 2>/dev/null || true
if ! grep -q "^done" "$work/results.txt" 2>/dev/null; then
  echo "FAIL: QGIS ended with status $status before the last step"
  tail -20 "$work/qgis.log"
  exit 1
fi
if [ -n "${HYPERSTREAM_DESKTOP_SCREENSHOT:-}" ]; then cp "$work/desktop.png" "$HYPERSTREAM_DESKTOP_SCREENSHOT"; fi
echo "1 passed, 0 failed"
