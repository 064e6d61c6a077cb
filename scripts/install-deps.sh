#!/usr/bin/env bash
# Installs what building and testing Hyperstream needs, from the Debian suite's packages (bookworm,
# trixie, forky: the names below are the same in each).
#   scripts/install-deps.sh [--bench|--fuzz|--qt6]   (--bench: also the benchmark peers, OTB and
#     GRASS; --fuzz: clang and its libFuzzer runtime; --qt6: Qt 6 for scripts/test-qt6.sh)
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config qtbase5-dev libgdal-dev libhdf5-dev gdal-bin
          libopenblas-dev liblapacke-dev
          libopenmpi-dev openmpi-bin  # hyperstream-mpi and its tests
          libqgis-dev qgis python3-qgis  # the QGIS provider, qgis_process and PyQGIS
          xvfb)  # the QGIS desktop test (tests/test_qgis_desktop.sh)
if [ "${1:-}" = "--bench" ]; then
  packages+=(otb-bin grass-core python3-gdal python3-numpy python3-spectral time)
fi
if [ "${1:-}" = "--fuzz" ]; then
  packages+=(clang libclang-rt-14-dev)
fi
if [ "${1:-}" = "--qt6" ]; then
  packages+=(qt6-base-dev)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
install() {
  echo "installing: $*"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
[ ${#missing[@]} -eq 0 ] || install "${missing[@]}"
# CUDA 13's nvcc accepts GCC up to 15: where the default GCC is newer (forky's 16), an older one
# for the GPU backend's host code, when the suite has one (CMakeLists.txt picks it).
gcc_major=$(gcc -dumpversion 2>/dev/null | cut -d. -f1 || true)
if [ -x /usr/local/cuda/bin/nvcc ] && [ "${gcc_major:-0}" -ge 16 ]; then
  for older in g++-15 g++-14; do
    apt-cache show "$older" >/dev/null 2>&1 || continue
    dpkg-query -W -f='${Status}' "$older" 2>/dev/null | grep -q "install ok installed" ||
      install "$older"
    break
  done
fi
