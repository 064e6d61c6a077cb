#pragma once
// Endmember extraction, file to file: ATGP, VCA or N-FINDR (materials/EndmemberSearch.h) over the
// image, or over another image of the same grid (SPP's output: the search then prefers spatially
// homogeneous areas), each pass a strip pass of the pipeline; the spectra are taken from the
// input at the pixels found, optionally averaged over a window around each. Writes the endmember
// table (CSV) and, optionally, the pixels as a GeoPackage point layer.

#include "core/Feedback.h"
#include "core/JobOptions.h"
#include "io/Raster.h"
#include "materials/EndmemberSearch.h"
#include "spectra/EndmemberTable.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hyperstream {

// JobOptions::output is the CSV; outputType, format and creationOptions are not used.
struct EndmemberOptions : JobOptions {
  SearchSettings search;     // the method, the count, VCA's seed and projection
  std::string locations;     // the image searched; empty: the input
  std::string pointsOutput;  // GeoPackage of the endmember pixels, optional
  std::string htmlReport;    // optional
  int averageWindow = 1;     // odd: each spectrum the mean of the most homogeneous window
                             // of this size that holds its pixel
};

struct EndmemberResult {
  RasterInfo input;
  std::vector<int> bands;
  EndmemberTable table;
  EndmemberSearch search;
  int searchedBands = 0;
  int64_t stripRows = 0;
  bool resident = false;  // the searched cube stayed in memory between the passes
  std::string backend;
  double seconds = 0;
};

// Throws Error (naming the parameter) or Canceled; on any throw no output is left behind.
EndmemberResult runEndmembers(const EndmemberOptions& options, Feedback& feedback);

}  // namespace hyperstream
