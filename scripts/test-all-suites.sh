#!/usr/bin/env bash
# Before a release: the README's test command in a bare chroot of every supported Debian suite,
# then each suite's package built there and installed with apt in another (root, debootstrap;
# ../shared/tools/fresh-machine.sh). About 30-40 minutes per suite on 2 cores.
#   scripts/test-all-suites.sh [SUITE...]   (default: bookworm trixie forky)
set -uo pipefail
cd "$(dirname "$0")/.."
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(bookworm trixie forky)
fresh=${FRESH_MACHINE:-$PWD/../shared/tools/fresh-machine.sh}
mkdir -p build-suites
summary=()
for suite in "${suites[@]}"; do
  log=build-suites/$suite.log
  start=$(date +%s)
  if SUITE=$suite "$fresh" "bash .ci/run" >"$log" 2>&1; then tests=passed; else tests=FAILED; fi
  if bash scripts/package.sh --suite "$suite" --test >"build-suites/$suite-package.log" 2>&1; then
    package=passed
  else
    package=FAILED
  fi
  summary+=("$suite: tests $tests, package $package ($(( ($(date +%s) - start) / 60 )) min; $log)")
  echo "${summary[-1]}"
done
printf '%s\n' "${summary[@]}" | grep -q FAILED && exit 1
exit 0
