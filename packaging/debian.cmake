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
# The version names what the package fits, e.g. 0.1.0+qgis3.40~trixie (CMakeLists.txt).
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION}+qgis${HYPERSTREAM_QGIS_SERIES}~${HYPERSTREAM_SUITE})
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
# What the binaries link, as this suite names it: dpkg-shlibdeps over the command line, the MPI
# program and the provider library (scripts/package.sh runs it after building and passes the
# result as HYPERSTREAM_DEB_DEPENDS; not the CUDA backend, whose cuBLAS no Debian package
# provides), and the QGIS release the provider is built against.
if(NOT HYPERSTREAM_DEB_DEPENDS)
  message(FATAL_ERROR "HYPERSTREAM_DEB=ON needs HYPERSTREAM_DEB_DEPENDS (scripts/package.sh sets it)")
endif()
string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" series "${QGIS_VERSION}")
math(EXPR next_minor "${CMAKE_MATCH_2} + 1")
set(qgis_range ">= ${QGIS_VERSION}), qgis (<< ${CMAKE_MATCH_1}.${next_minor}")
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${HYPERSTREAM_DEB_DEPENDS}, qgis (${qgis_range}), \
python3-qgis (>= ${QGIS_VERSION}), python3-qgis (<< ${CMAKE_MATCH_1}.${next_minor})")
if(HYPERSTREAM_HAVE_MPI)
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "openmpi-bin")
endif()
# dpkg keeps an administrator's edits of the settings file across upgrades.
file(WRITE ${CMAKE_BINARY_DIR}/debian/conffiles "/etc/xdg/QGIS/QGIS3.ini\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_BINARY_DIR}/debian/conffiles
    ${CMAKE_CURRENT_LIST_DIR}/prerm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
