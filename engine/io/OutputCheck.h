#pragma once
// Before any work: every file a job will write (each output, and the files its driver writes
// beside it: ENVI's .hdr, GDAL's .aux.xml) is checked against every file the run reads (rasters
// with the sidecars GDAL would read beside them, statistics, tables), against the other outputs
// and against what exists there already. A run never replaces a file it reads, makes a sidecar
// of one, replaces a file that belongs to something else, or writes anything but a regular file.

#include "core/Feedback.h"
#include "io/InputFiles.h"
#include "io/PendingRaster.h"

#include <string>
#include <vector>

namespace hyperstream {

class OutputCheck {
 public:
  // `inputs`: every file the run reads (see InputFiles.h).
  OutputCheck(std::vector<InputFile> inputs, Feedback& feedback);

  // A raster of at most `bands` bands of `type`, written with `format`. The driver writes a
  // one-pixel raster beside the destination first, which shows the files it writes and whether
  // it can write pixels at all (GDAL's VRT driver cannot); the creation options are validated.
  // Partial outputs that dead processes of this machine left in that folder are removed.
  void raster(const std::string& parameter, const std::string& path, const RasterFormat& format,
              int bands, GDALDataType type);
  // A raster's destination alone, claimed before its format is looked for: a file the run reads
  // is refused as such whatever its extension (raster() claims it again with the driver's files).
  void rasterDestination(const std::string& parameter, const std::string& path);
  // A plain file (a JSON, CSV or HTML report).
  void file(const std::string& parameter, const std::string& path);

 private:
  struct Claim {
    std::string file;  // canonical
    std::string parameter;
  };
  // Claims `files` for the output `parameter` writes at `destination`, of which it may replace
  // `replaceable`; throws Error(parameter) for the first it must not write.
  void claim(const std::string& parameter, const std::string& destination,
             const std::vector<std::string>& files, const std::vector<std::string>& replaceable);
  // Empty, or why the output may not write `file` (canonically `path`).
  std::string whyNotWritable(const std::string& parameter, const std::string& destination,
                             const std::string& file, const std::string& path,
                             const std::vector<std::string>& mayReplace) const;
  void removeStalePendingFolders(const std::string& folder);

  std::vector<InputFile> inputs_;  // canonical paths
  std::vector<Claim> claimed_;
  std::vector<std::string> cleanedFolders_;
  Feedback& feedback_;
};

}  // namespace hyperstream
