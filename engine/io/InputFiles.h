#pragma once
// Files a run reads: checked before anything opens them (a FIFO would block the open forever,
// a device would be read without end), and claimed with the sidecars GDAL would read beside
// them, so that no output of the run is ever one of them.

#include "io/InputFile.h"

#include <QByteArray>

#include <cstdint>

#include <string>
#include <vector>

namespace hyperstream {

// Throws Error(parameter) unless `path` is an existing regular file (through any symbolic
// links), one of GDAL's virtual paths (/vsizip/, /vsimem/, ...) or a subdataset of either, and
// unless each sidecar of the file that exists is a regular file too.
void checkInputFile(const std::string& path, const std::string& parameter);

// A GDAL subdataset name, such as NETCDF:"scene.nc":reflectance or GTIFF_DIR:2:scene.tif, and the
// file it is in (empty when no part of the name is an existing file).
struct SubdatasetName {
  bool isSubdataset = false;
  std::string driver;  // the name's prefix: NETCDF, HDF5, GTIFF_DIR, ...
  std::string file;
};
SubdatasetName parseSubdatasetName(const std::string& name);
// One of GDAL's virtual paths (/vsizip/, /vsimem/, ...).
bool isVirtual(const std::string& path);
// A name GDAL opens that is not a plain path: a virtual path or a subdataset name.
bool isNonFileName(const std::string& name);

// The most a statistics JSON or a table may hold (far more than any real one does).
constexpr int64_t kLargestTextInput = int64_t{1} << 30;

// The whole of a small input file (a statistics JSON, an endmember table), opened without
// blocking and checked to be a regular file of at most `largest` bytes; throws Error(parameter).
QByteArray readInputFile(const std::string& path, const std::string& parameter, int64_t largest);

// The files GDAL may read beside `path` (existing or not): its .aux.xml, .aux, .ovr, .msk and
// .hdr, and the world, projection and RPC files named after it.
std::vector<std::string> sidecarsOf(const std::string& path);

// A raster input's files (RasterInfo::files) and their sidecars.
std::vector<InputFile> rasterInputFiles(const std::string& parameter,
                                        const std::vector<std::string>& files);
// A plain input file (a JSON, a CSV table): GDAL reads nothing beside it.
InputFile plainInputFile(const std::string& parameter, const std::string& path);

}  // namespace hyperstream
