#pragma once
// Files a run reads: checked before anything opens them (a FIFO would block the open forever,
// a device would be read without end), and claimed with the sidecars GDAL would read beside
// them, so that no output of the run is ever one of them.

#include <QByteArray>

#include <cstdint>

#include <string>
#include <vector>

namespace hyperstream {

// Throws Error(parameter) unless `path` is an existing regular file (through any symbolic
// links), or one of GDAL's virtual paths (/vsizip/, /vsimem/, ...), and unless each sidecar of it
// that exists is a regular file too.
void checkInputFile(const std::string& path, const std::string& parameter);

// The most a statistics JSON or a table may hold (far more than any real one does).
constexpr int64_t kLargestTextInput = int64_t{1} << 30;

// The whole of a small input file (a statistics JSON, an endmember table), opened without
// blocking and checked to be a regular file of at most `largest` bytes; throws Error(parameter).
QByteArray readInputFile(const std::string& path, const std::string& parameter, int64_t largest);

// The files GDAL may read beside `path` (existing or not): its .aux.xml, .aux, .ovr, .msk and
// .hdr, and the world, projection and RPC files named after it.
std::vector<std::string> sidecarsOf(const std::string& path);

// A file a run reads, as OutputCheck claims it.
struct InputFile {
  std::string path;
  std::string parameter;  // INPUT, STATS, ENDMEMBERS, LOCATIONS, ...
  std::string sidecarOf;  // empty for the file itself; else the file GDAL reads it with
};
// A raster input's files (RasterInfo::files) and their sidecars.
std::vector<InputFile> rasterInputFiles(const std::string& parameter,
                                        const std::vector<std::string>& files);
// A plain input file (a JSON, a CSV table): GDAL reads nothing beside it.
InputFile plainInputFile(const std::string& parameter, const std::string& path);

}  // namespace hyperstream
