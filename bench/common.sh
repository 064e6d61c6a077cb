# Sourced by the CPU benchmark scripts: installs the peers, builds build/, sets the OpenBLAS core
# type and describes the machine.
#   bench_setup OUT   (then: hs=build/cli/hyperstream; the machine in OUT/machine.txt)
bench_setup() {
  scripts/install-deps.sh --bench
  scripts/build.sh >/dev/null
  describe_machine "$1"
}

# The OpenBLAS core type, as bench_setup sets it, and the machine in OUT/machine.txt (for scripts
# that need no benchmark peers).
#   describe_machine OUT
describe_machine() {
  mkdir -p "$1"
  # Debian's OpenBLAS 0.3.21 runs generic kernels on CPUs newer than itself unless told the core
  # type (see README). Every tool here that uses OpenBLAS gets the same setting; an existing one
  # is kept.
  if [ -z "${OPENBLAS_CORETYPE+set}" ]; then
    if grep -qw avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX
    elif grep -qw avx2 /proc/cpuinfo; then export OPENBLAS_CORETYPE=Haswell; fi
  fi
  {
    echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
    echo "memory: $(free -g | awk '/Mem:/{print $2}') GiB"
    echo "OPENBLAS_CORETYPE: ${OPENBLAS_CORETYPE:-unset}"
  } | tee "$1/machine.txt"
}

# The hyperstream command line of a build folder, or (on the GPU machine) of a device bundle's
# run.sh: its bin/hyperstream runs through it. Sets the array `program`.
#   program_of BUILD_OR_RUN_SH
program_of() {
  if [[ -d $1 ]]; then
    program=("$(realpath "$1")/cli/hyperstream")
  else
    program=("$(realpath "$1")" "$(dirname "$(realpath "$1")")/bin/hyperstream")
  fi
}

# Makes the 2.09 GB benchmark cube (Jasper Ridge tiled to 2300 x 2300 x 198, uint16; SIZE x SIZE
# when given) at PATH unless it is there (../shared/tools/tile_cube.py; python3-gdal,
# python3-numpy).
#   ensure_cube PATH [SIZE]
ensure_cube() {
  [[ -f $1 ]] && return
  local size=${2:-2300}
  local here
  here=$(dirname "${BASH_SOURCE[0]}")
  mkdir -p "$(dirname "$1")"
  /usr/bin/python3 "$here/../../shared/tools/tile_cube.py" \
    "$here/../../shared/data/jasper_ridge_100x100x198_uint16.tif" "$size" "$size" "$1" >/dev/null
}

# Times one command for the GPU machine's scripts, after removing what the run before wrote (the
# files $stale_outputs, a glob, matches): appends "NAME KIND ROUND SECONDS" to $out/results.tsv
# and prints it; the command's output goes to $work/last.log, printed when it fails. Every run
# writes a new file: replacing a finished one would add freeing its pages to the run.
#   timed NAME KIND ROUND COMMAND...
timed() {
  local name=$1 kind=$2 round=$3; shift 3
  # shellcheck disable=SC2086  # a glob, expanded here
  rm -f $stale_outputs
  local start; start=$(date +%s.%N)
  "$@" < /dev/null > "$work/last.log" 2>&1 || { cat "$work/last.log"; return 1; }
  printf '%s\t%s\t%s\t%s\n' "$name" "$kind" "$round" \
    "$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')" \
    | tee -a "$out/results.tsv"
}
