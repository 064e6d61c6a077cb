#pragma once
// An output raster written under a temporary name beside its destination and moved over the
// destination only on commit(): a failure or cancel leaves no file and the destination untouched.

#include "Raster.h"

#include <string>
#include <vector>

namespace hyperstream {

class PendingRaster {
 public:
  PendingRaster(const std::string& destination, GDALDriver* driver, int64_t width, int64_t height,
                int bands, GDALDataType type, const std::vector<std::string>& creationOptions);
  ~PendingRaster();  // deletes the temporary files unless committed
  PendingRaster(const PendingRaster&) = delete;
  PendingRaster& operator=(const PendingRaster&) = delete;

  GDALDataset& dataset() { return *dataset_; }
  const std::string& temporaryPath() const { return temporary_; }
  // Flushes, closes and moves the raster over the destination.
  void commit();

 private:
  std::string destination_;
  std::string temporary_;
  GDALDriver* driver_;
  DatasetPtr dataset_;
  bool committed_ = false;
};

// Throws Error(parameter) unless `path` can be created: its folder exists and is writable, and it
// is none of `taken` (the input's files, other outputs).
void checkOutputPath(const std::string& path, const std::vector<std::string>& taken,
                     const std::string& parameter);

}  // namespace hyperstream
