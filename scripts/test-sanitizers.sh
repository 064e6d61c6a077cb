#!/usr/bin/env bash
# Builds Hyperstream with AddressSanitizer and UndefinedBehaviorSanitizer into build-sanitize/
# and runs the unit and integration tests there (the QGIS tests load the provider into QGIS's
# own, uninstrumented programs, which ASan cannot join; GPU and MPI tests run in the normal build).
# Then builds the fuzz targets with clang into build-fuzz/ and fuzzes each for FUZZ_SECONDS
# (default 60; 0 skips) from its corpus in tests/fuzz/corpus; an input that crashes one is left in
# build-fuzz/crashes/ (add it to the corpus, which every build replays, once fixed).
#   scripts/test-sanitizers.sh   (FUZZ_SECONDS=600 for a long run)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --fuzz
cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHYPERSTREAM_SANITIZE=ON \
  -DHYPERSTREAM_CUDA=OFF -DHYPERSTREAM_QGIS=OFF -DHYPERSTREAM_MPI=OFF >/dev/null
cmake --build build-sanitize
(
  cd build-sanitize
  export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  ctest --output-on-failure --timeout 1800 -L "unit|integration"
)

seconds=${FUZZ_SECONDS:-60}
[ "$seconds" -gt 0 ] || exit 0
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHYPERSTREAM_FUZZ=ON -DHYPERSTREAM_CUDA=OFF -DHYPERSTREAM_QGIS=OFF -DHYPERSTREAM_MPI=OFF >/dev/null
targets=(stats_json endmember_csv envi_header spectral_library product_xml product_attributes)
cmake --build build-fuzz --target "${targets[@]/#/fuzz_}"
mkdir -p build-fuzz/crashes
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$PWD/tests/fuzz/lsan.supp
for target in "${targets[@]}"; do
  work=$(mktemp -d)
  cp tests/fuzz/corpus/"$target"/* "$work"/
  echo "fuzzing $target for $seconds s"
  if ! build-fuzz/tests/fuzz/fuzz_"$target" "$work" -max_total_time="$seconds" -rss_limit_mb=4096 \
      -timeout=30 -artifact_prefix=build-fuzz/crashes/"$target"- -print_final_stats=1 \
      > build-fuzz/fuzz_"$target".log 2>&1; then
    tail -40 build-fuzz/fuzz_"$target".log
    echo "FAIL: fuzz_$target found an input that crashes it (build-fuzz/crashes/)"
    rm -rf "$work"
    exit 1
  fi
  grep -E "^stat::number_of_executed_units|^Done" build-fuzz/fuzz_"$target".log || true
  rm -rf "$work"
done
