#!/usr/bin/env bash
# Installs a Hyperstream .deb with apt in a bare Debian chroot of $SUITE (default bookworm;
# ../shared/tools/fresh-machine.sh, or $FRESH_MACHINE) and checks what a new user meets without
# any other step:
# qgis_process lists every algorithm and runs one, the command line runs, the GPU backend's absence
# is reported, and removing the package leaves nothing behind. Needs root.
#   scripts/test-package.sh build-deb/hyperstream_0.1.0_amd64.deb
set -euo pipefail
deb=$(readlink -f "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
fresh=${FRESH_MACHINE:-$here/../shared/tools/fresh-machine.sh}
[ -x "$fresh" ] || { echo "no fresh-machine tool at $fresh (set FRESH_MACHINE)"; exit 2; }
# fresh-machine.sh runs a command on a clone of the current repository: make one holding the
# package and the checks.
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp "$deb" "$stage/"
cat >"$stage/check.sh" <<'CHECK'
set -euo pipefail
fail() { echo "FAIL: $*"; exit 1; }
apt-get update -qq
apt-get install -y -qq --no-install-recommends ./hyperstream_*.deb >/tmp/apt.log 2>&1 ||
  { tail -20 /tmp/apt.log; fail "apt install"; }
echo "installed: $(dpkg-query -W -f='${Package} ${Version}, ${Installed-Size} KiB' hyperstream)"
export QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR=$(mktemp -d)
# Debian's qgis_process wrapper adds --noversioncheck, which 3.22's binary rejects.
qp=qgis_process.bin; command -v $qp >/dev/null || qp=qgis_process
$qp list 2>/dev/null | grep 'hyperstream:' | tee /tmp/list.txt
for id in pca mnf denoise applytransform inversetransform spp endmembers abundances; do
  grep -q "hyperstream:$id"$'\t' /tmp/list.txt || fail "qgis_process list lacks hyperstream:$id"
done
hyperstream synth /tmp/scene.tif --rows 40 --cols 50 --bands 30 --quiet
$qp run hyperstream:pca -- INPUT=/tmp/scene.tif OUTPUT=/tmp/pcs.tif COMPONENTS=3 \
  >/tmp/run.log 2>&1 || { cat /tmp/run.log; fail "qgis_process run"; }
grep -q "Computed on" /tmp/run.log || fail "no device line"
grep "Computed on" /tmp/run.log
hyperstream pca /tmp/scene.tif /tmp/cli.tif --components 3 --quiet || fail "hyperstream pca"
hyperstream devices || true
hyperstream pca /tmp/scene.tif /tmp/gpu.tif --components 3 --device gpu --quiet 2>/tmp/gpu.log &&
  fail "--device gpu succeeded without a GPU"
echo "--device gpu without a GPU: $(head -1 /tmp/gpu.log)"
apt-get purge -y -qq hyperstream >/dev/null 2>&1
left=$(ls /usr/share/qgis/python/plugins/hyperstream /usr/lib/hyperstream /etc/xdg/QGIS/QGIS3.ini \
  /usr/bin/hyperstream 2>/dev/null || true)
[ -z "$left" ] || fail "left after purge: $left"
echo "PACKAGE OK"
CHECK
(cd "$stage" && git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm package)
cd "$stage" && "$fresh" "bash check.sh"
