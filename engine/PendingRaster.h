#pragma once
// An output raster written under a temporary name beside its destination and moved over the
// destination only on commit(): a failure or cancel leaves no file and the destination untouched.

#include "Raster.h"

#include <string>
#include <vector>

namespace hyperstream {

class PendingRaster {
 public:
  // temporaryPath: from temporaryPathFor(destination) when empty.
  PendingRaster(const std::string& destination, GDALDriver* driver, int64_t width, int64_t height,
                int bands, GDALDataType type, const std::vector<std::string>& creationOptions,
                const std::string& temporaryPath = {});
  ~PendingRaster();  // deletes the temporary files unless committed
  PendingRaster(const PendingRaster&) = delete;
  PendingRaster& operator=(const PendingRaster&) = delete;

  // A new name beside `destination`, hidden and unique.
  static std::string temporaryPathFor(const std::string& destination);

  GDALDataset& dataset() { return *dataset_; }
  const std::string& temporaryPath() const { return temporary_; }
  // For writers in other processes (an MPI run): closes the raster, so that GDAL writes its
  // header and allocates every block of an uncompressed file, and opens it again for update.
  // Other processes open temporaryPath() with openForUpdate() and write disjoint whole blocks.
  void reopen();
  // The temporary files (a format may have several, like ENVI's .hdr).
  std::vector<std::string> files();
  // Flushes, closes and moves the raster over the destination.
  void commit();

 private:
  std::string destination_;
  std::string temporary_;
  GDALDriver* driver_;
  DatasetPtr dataset_;
  bool committed_ = false;
};

// Opens a raster that another process created for update; throws Error(parameter).
DatasetPtr openForUpdate(const std::string& path, const std::string& parameter);

// Throws Error(parameter) unless `path` can be created: its folder exists and is writable, and it
// is none of `taken` (the input's files, other outputs).
void checkOutputPath(const std::string& path, const std::vector<std::string>& taken,
                     const std::string& parameter);
// checkOutputPath for each of a job's outputs, {parameter, path}: the first is the main output
// and must be given, the others are optional (skipped when empty). None may be one of
// `inputFiles` or another output.
void checkOutputPaths(const std::vector<std::string>& inputFiles,
                      const std::vector<std::pair<std::string, std::string>>& outputs);

}  // namespace hyperstream
