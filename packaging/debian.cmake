# A Debian package (CPack DEB) that installs Hyperstream for every user of the machine:
#   /usr/bin/hyperstream, /usr/bin/hyperstream-mpi     the command line
#   /usr/lib/hyperstream/libhyperstream_cuda.so        the CUDA backend (needs NVIDIA's CUDA 13 cuBLAS)
#   /usr/share/qgis/python/plugins/hyperstream/        the plugin, where QGIS looks for system plugins
#   /etc/xdg/QGIS/QGIS3.ini                            enables it by default (Qt's system-wide
#                                                      fallback of QGIS's settings; a user who
#                                                      disables it in the Plugin Manager keeps that)
# scripts/package.sh configures a build with HYPERSTREAM_DEB=ON and runs cpack.
# HYPERSTREAM_DEB is declared in the top CMakeLists.txt: the provider's install reads it too.
if(NOT HYPERSTREAM_DEB)
  return()
endif()
if(NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  message(FATAL_ERROR "HYPERSTREAM_DEB=ON needs -DCMAKE_INSTALL_PREFIX=/usr")
endif()
if(NOT HYPERSTREAM_HAVE_QGIS)
  message(FATAL_ERROR "HYPERSTREAM_DEB=ON needs the QGIS provider (apt install libqgis-dev)")
endif()

install(FILES ${CMAKE_CURRENT_LIST_DIR}/qgis-system-settings.ini DESTINATION /etc/xdg/QGIS
        RENAME QGIS3.ini)

install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION share/doc/hyperstream RENAME copyright)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/CHANGELOG.md
        DESTINATION share/doc/hyperstream)

set(CPACK_GENERATOR DEB)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_NAME hyperstream)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "Hyperstream developers <hyperstream@example.org>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "hyperspectral PCA, MNF, SPP and unmixing for QGIS, on GPUs or all CPU cores")
set(CPACK_PACKAGE_DESCRIPTION
    "Hyperstream streams multi- and hyperspectral rasters of any size through GDAL in strips and \
computes principal components (PCA), the minimum noise fraction (MNF), denoising and inverse \
transforms, spatial preprocessing (SPP), endmembers (VCA, N-FINDR, ATGP) and abundances (FCLS, \
NNLS, UCLS) on NVIDIA GPUs (CUDA 13 and its cuBLAS from NVIDIA, not part of this package) or on \
every CPU core. It installs the hyperstream command line, hyperstream-mpi and a QGIS Processing \
provider, enabled for every user and usable from the Processing Toolbox, the modeler, qgis_process \
and PyQGIS.")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE amd64)
# What the binaries link (objdump -p: NEEDED), as bookworm names it, and QGIS 3.22 itself: the
# provider library is built against libqgis_core.so.3.22.16. Listed by hand because dpkg-shlibdeps
# stops at the CUDA backend's cuBLAS, which no Debian package provides.
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libc6 (>= 2.36), libstdc++6 (>= 12), libgcc-s1, libqt5core5a (>= 5.15), libqt5gui5 (>= 5.15), \
libgdal32, liblapacke, libopenblas0, libqgis-core3.22.16, qgis (>= 3.22.16), qgis (<< 3.23), \
python3-qgis (>= 3.22.16), python3-qgis (<< 3.23)")
if(HYPERSTREAM_HAVE_MPI)
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", libopenmpi3")
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "openmpi-bin")
endif()
# dpkg keeps an administrator's edits of the settings file across upgrades.
file(WRITE ${CMAKE_BINARY_DIR}/debian/conffiles "/etc/xdg/QGIS/QGIS3.ini\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_BINARY_DIR}/debian/conffiles
    ${CMAKE_CURRENT_LIST_DIR}/prerm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
