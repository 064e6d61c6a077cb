#!/usr/bin/env bash
# Builds Hyperstream with AddressSanitizer and UndefinedBehaviorSanitizer into build-sanitize/
# and runs the unit and integration tests there (the QGIS tests load the provider into QGIS's
# own, uninstrumented programs, which ASan cannot join; GPU and MPI tests run in the normal build).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHYPERSTREAM_SANITIZE=ON \
  -DHYPERSTREAM_CUDA=OFF -DHYPERSTREAM_QGIS=OFF -DHYPERSTREAM_MPI=OFF >/dev/null
cmake --build build-sanitize
cd build-sanitize
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --output-on-failure --timeout 1800 -L "unit|integration"
