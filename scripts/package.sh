#!/usr/bin/env bash
# Builds the Debian package build-deb/hyperstream_VERSION_amd64.deb for this machine's suite and
# QGIS, and the plugin ZIP beside it (build-deb/hyperstream-0.1.0-qgis3.40-trixie.zip, say) (packaging/debian.cmake says what it installs where; the version names what it fits, e.g.
# 0.1.0+qgis3.40~trixie). Needs what scripts/install-deps.sh installs, and CUDA for the GPU backend.
#   scripts/package.sh                   build the .deb for this machine's suite
#   scripts/package.sh --test            and install it with apt in a bare chroot of the suite
#                                        (scripts/test-package.sh; root, debootstrap)
#   scripts/package.sh --suite SUITE     build it inside a bare chroot of SUITE (bookworm, trixie,
#                                        forky, ...; ../shared/tools/fresh-machine.sh), into
#                                        build-deb-SUITE/; with --test, test it in another one
set -euo pipefail
cd "$(dirname "$0")/.."
suite="" test=""
while [ $# -gt 0 ]; do
  case $1 in
    --suite) suite=$2; shift 2 ;;
    --test) test=1; shift ;;
    *) echo "usage: scripts/package.sh [--suite SUITE] [--test]" >&2; exit 2 ;;
  esac
done

if [ -n "$suite" ]; then
  # The chroot shares the host's /dev: the package comes back through /dev/shm.
  fresh=${FRESH_MACHINE:-$PWD/../shared/tools/fresh-machine.sh}
  out=/dev/shm/hyperstream-package-$$
  mkdir -p "$out"
  trap 'rm -rf "$out"' EXIT
  SUITE=$suite "$fresh" \
    "bash scripts/install-deps.sh && bash scripts/package.sh && cp build-deb/*.deb build-deb/*.zip $out/"
  rm -rf "build-deb-$suite" && mkdir -p "build-deb-$suite" && mv "$out"/* "build-deb-$suite/"
  deb=$(ls "build-deb-$suite"/hyperstream_*_amd64.deb)
  echo "$deb"
  [ -n "$test" ] && SUITE=$suite bash scripts/test-package.sh "$deb"
  exit 0
fi

configure() {
  cmake -S . -B build-deb -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
    -DHYPERSTREAM_DEB=ON -DHYPERSTREAM_QGIS=ON -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON "$@" >/dev/null
}
# Built first with a placeholder: the Depends come from the binaries themselves.
configure -DHYPERSTREAM_DEB_DEPENDS=placeholder
targets=(hyperstream hyperstream_plugin)
# (the list whole first: grep -q would end the pipe early, and pipefail fail it at random)
all_targets=$(ninja -C build-deb -t targets all)
grep -q '^hyperstream-mpi:' <<<"$all_targets" && targets+=(hyperstream-mpi)
ninja -C build-deb "${targets[@]}"
binaries=("$PWD/build-deb/cli/hyperstream" "$PWD/build-deb/plugin/hyperstream/libhyperstream_qgis.so")
[ -f build-deb/cli/hyperstream-mpi ] && binaries+=("$PWD/build-deb/cli/hyperstream-mpi")
shlibs=$(mktemp -d)
mkdir "$shlibs/debian" && touch "$shlibs/debian/control"  # dpkg-shlibdeps wants one
depends=$(cd "$shlibs" && dpkg-shlibdeps -O "${binaries[@]}" 2>/dev/null |
  sed -n 's/^shlibs:Depends=//p')
rm -rf "$shlibs"
[ -n "$depends" ] || { echo "dpkg-shlibdeps found no dependencies" >&2; exit 1; }
configure -DHYPERSTREAM_DEB_DEPENDS="$depends"
rm -f build-deb/hyperstream_*_amd64.deb
(cd build-deb && cpack -G DEB >/dev/null)
deb=$(ls build-deb/hyperstream_*_amd64.deb)
echo "$deb"
ninja -C build-deb plugin_zip | sed -n 's/.*plugin ZIP: //p'
dpkg-deb --info "$deb" | sed -n '/Depends/p'
dpkg-deb --contents "$deb" | awk '{print $6, $7, $8}'
[ -n "$test" ] && bash scripts/test-package.sh "$deb"
exit 0
