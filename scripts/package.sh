#!/usr/bin/env bash
# Builds the Debian package build-deb/hyperstream_VERSION_amd64.deb (packaging/debian.cmake says
# what it installs where). Needs what scripts/install-deps.sh installs, and CUDA for the GPU backend.
#   scripts/package.sh            build the .deb
#   scripts/package.sh --test     and install it with apt in a bare bookworm chroot
#                                 (scripts/test-package.sh; root, debootstrap)
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-deb -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DHYPERSTREAM_DEB=ON -DHYPERSTREAM_QGIS=ON -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON >/dev/null
targets=(hyperstream hyperstream_plugin)
ninja -C build-deb -t targets all | grep -q '^hyperstream-mpi:' && targets+=(hyperstream-mpi)
ninja -C build-deb "${targets[@]}"
(cd build-deb && cpack -G DEB >/dev/null)
deb=$(ls build-deb/hyperstream_*_amd64.deb)
echo "$deb"
dpkg-deb --info "$deb" | sed -n '/Depends/p'
dpkg-deb --contents "$deb" | awk '{print $6, $7, $8}'
[ "${1:-}" = --test ] && bash scripts/test-package.sh "$deb"
exit 0
