#!/usr/bin/env bash
# Jobs whose output is as large as their input, against the floor of writing it: two builds side
# by side, interleaved round by round, on the 2.09 GB cube (Jasper Ridge tiled to
# 2300 x 2300 x 198, uint16):
#   cp       `cp` of the cube into the output folder (what writing 2.09 GB costs there)
#   pca      `pca --components 10` (reads the cube twice, writes 211 MB)
#   denoise  `denoise --components 10` (PCA's passes, the image rebuilt in uint16: 2.09 GB)
#   spp      `spp` (window 5, Float32: 4.19 GB written)
#   spp-shm  the new build's `spp` into SHM (tmpfs): its compute, plus a copy into memory
#   cp-spp   `cp` of that SPP output from SHM into the output folder (writing 4.19 GB there)
# Prints every round (with its own denoise / (pca + cp)), the medians, new/old, and the jobs
# against their floors (denoise / (pca + cp), spp / (spp-shm + cp-spp)); then checks that both
# builds wrote the same samples (every band, read with GDAL). JOBS="denoise" (or "spp") runs
# only those jobs and their floors; the default is "denoise spp" (denoise brings pca).
#
#   bench/write_floor.sh OLD_BUILD NEW_BUILD [ROUNDS=3] [INPUT=/tmp/hyperstream-bench/jasper_2300.tif]
#
# Outputs go beside the input (OUT_DIR to choose another folder); SHM defaults to /dev/shm.
# SETTLE=S waits S seconds after removing the outputs before each command: on a VM whose freed
# memory goes back to its host (free page reporting), every command then writes into memory the
# host has taken back, as a job does that writes seconds after its start.
set -euo pipefail
here=$(dirname "$(realpath "$0")")
source "$here/common.sh"
old=$(realpath "$1")/cli/hyperstream new=$(realpath "$2")/cli/hyperstream
rounds=${3:-3} input=${4:-/tmp/hyperstream-bench/jasper_2300.tif}
jobs=" ${JOBS:-denoise spp} "
has() { [[ $jobs == *" $1 "* ]]; }
ensure_cube "$input"
out=$(mktemp -d "${OUT_DIR:-$(dirname "$input")}/write_floor.XXXXXX")
shm=$(mktemp -d "${SHM:-/dev/shm}/write_floor.XXXXXX")
trap 'rm -rf "$out" "$shm"' EXIT

seconds() {  # seconds COMMAND...: wall time of one run, after removing the outputs it replaces
  local start end
  rm -f "$out"/*.tif
  sleep "${SETTLE:-0}"
  start=$(date +%s%N)
  "$@" >/dev/null 2>&1
  end=$(date +%s%N)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f\n", (b - a) / 1e9 }'
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2)}'; }
declare -A runs
record() { runs[$1]+="$2 "; }

keys=(cp)
has denoise && keys+=(pca-old pca-new denoise-old denoise-new)
has spp && keys+=(spp-old spp-new spp-shm cp-spp)
last() { echo "${runs[$1]}" | awk '{print $NF}'; }
for ((r = 1; r <= rounds; r++)); do
  record cp "$(seconds cp "$input" "$out/copy.tif")"
  for build in old new; do
    program=${!build}
    if has denoise; then
      record "pca-$build" "$(seconds "$program" pca "$input" "$out/pcs.tif" --components 10 -q \
        --device cpu)"
      record "denoise-$build" "$(seconds "$program" denoise "$input" "$out/denoised.tif" \
        --components 10 -q --device cpu)"
    fi
    has spp && record "spp-$build" "$(seconds "$program" spp "$input" "$out/spp.tif" -q --device cpu)"
  done
  if has spp; then
    rm -f "$shm"/*.tif
    record spp-shm "$(seconds "$new" spp "$input" "$shm/spp.tif" -q --device cpu)"
    record cp-spp "$(seconds cp "$shm/spp.tif" "$out/spp_copy.tif")"
  fi
  echo -n "round $r:"
  for key in "${keys[@]}"; do echo -n " $key $(last "$key")"; done
  has denoise && awk -v d="$(last denoise-new)" -v p="$(last pca-new)" -v c="$(last cp)" \
    'BEGIN { printf " (denoise-new / (pca-new + cp) %.2f)", d / (p + c) }'
  echo
done

declare -A med
for key in "${!runs[@]}"; do med[$key]=$(echo "${runs[$key]}" | tr ' ' '\n' | grep . | median); done
echo "medians of $rounds (s):"
for key in "${keys[@]}"; do echo "  $key ${med[$key]}"; done
if has denoise; then
  awk -v po="${med[pca-old]}" -v pn="${med[pca-new]}" -v dold="${med[denoise-old]}" \
    -v dn="${med[denoise-new]}" -v cp="${med[cp]}" 'BEGIN {
    printf "new/old: pca %.2f, denoise %.2f\n", pn / po, dn / dold
    printf "denoise / (pca + cp): old %.2f, new %.2f\n", dold / (po + cp), dn / (pn + cp)
  }'
fi
if has spp; then
  awk -v so="${med[spp-old]}" -v sn="${med[spp-new]}" -v ss="${med[spp-shm]}" \
    -v cs="${med[cp-spp]}" 'BEGIN {
    printf "new/old: spp %.2f\n", sn / so
    printf "spp / (spp-shm + cp-spp): old %.2f, new %.2f\n", so / (ss + cs), sn / (ss + cs)
  }'
fi

# The same samples from both builds.
pairs=()
if has denoise; then
  "$old" denoise "$input" "$out/denoised_old.tif" --components 10 -q --device cpu
  "$new" denoise "$input" "$out/denoised_new.tif" --components 10 -q --device cpu
  pairs+=("$out/denoised_old.tif" "$out/denoised_new.tif")
fi
if has spp; then
  "$old" spp "$input" "$out/spp_old.tif" -q --device cpu
  "$new" spp "$input" "$shm/spp_new.tif" -q --device cpu
  pairs+=("$out/spp_old.tif" "$shm/spp_new.tif")
fi
/usr/bin/python3 - "${pairs[@]}" <<'PY'
import sys
import numpy as np
from osgeo import gdal
files = sys.argv[1:]
for a, b in zip(files[0::2], files[1::2]):
    A, B = gdal.Open(a), gdal.Open(b)
    same = all(np.array_equal(A.GetRasterBand(i).ReadAsArray(), B.GetRasterBand(i).ReadAsArray(),
                              equal_nan=True) for i in range(1, A.RasterCount + 1))
    print(f"{b.rsplit('/', 1)[1]}: every sample of {A.RasterCount} bands "
          f"{'identical to' if same else 'DIFFERENT from'} the old build's")
PY
