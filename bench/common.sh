# Sourced by the CPU benchmark scripts: installs the peers, builds build/, sets the OpenBLAS core
# type and describes the machine.
#   bench_setup OUT   (then: hs=build/cli/hyperstream; the machine in OUT/machine.txt)
bench_setup() {
  mkdir -p "$1"
  scripts/install-deps.sh --bench
  scripts/build.sh >/dev/null
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
