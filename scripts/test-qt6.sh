#!/usr/bin/env bash
# Builds the engine, the command line and their tests against Qt 6 into build-qt6/ (the QGIS
# provider stays on QGIS's Qt 5) and runs their tests: what a QGIS 4 port would stand on.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --qt6
cmake -S . -B build-qt6 -G Ninja -DCMAKE_BUILD_TYPE=Release -DHYPERSTREAM_QT=6 \
  -DHYPERSTREAM_CUDA=OFF >/dev/null
cmake --build build-qt6
cd build-qt6
ctest --output-on-failure --timeout 900 -L "unit|integration|mpi"
