#!/usr/bin/env bash
# What the size of a write call costs: 2 GiB written into a new file with dd in calls of 128 KiB
# and of 8 MiB, interleaved round by round, each after removing the previous file and waiting
# SETTLE seconds (default 3). On a VM whose freed memory goes back to its host (free page
# reporting), large calls make the page cache take large folios, each faulted back in on the host.
#
#   bench/write_calls.sh [ROUNDS=3] [DIR=/tmp]
set -euo pipefail
rounds=${1:-3} dir=${2:-/tmp}
file=$(mktemp "$dir/write_calls.XXXXXX")
trap 'rm -f "$file"' EXIT
for ((r = 1; r <= rounds; r++)); do
  echo -n "round $r:"
  for call in 128K:16384 8M:256; do
    rm -f "$file"
    sleep "${SETTLE:-3}"
    start=$(date +%s%N)
    dd if=/dev/zero of="$file" bs="${call%:*}" count="${call#*:}" status=none
    end=$(date +%s%N)
    awk -v c="${call%:*}" -v a="$start" -v b="$end" 'BEGIN { printf " %s %.3f s", c, (b - a) / 1e9 }'
  done
  echo
done
