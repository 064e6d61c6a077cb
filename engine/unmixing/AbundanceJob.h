#pragma once
// Abundances, file to file: each valid pixel's least-squares mixture of the endmembers of a table
// (spectra/EndmemberTable.h) under the method's constraints (pixels/AbundanceSolver.h), one
// band per endmember; optionally a band of each pixel's reconstruction error (RMSE over the
// bands). One pass over the image, strips computed while others are read and written.

#include "core/Feedback.h"
#include "core/JobOptions.h"
#include "io/Raster.h"
#include "pixels/AbundanceSolver.h"
#include "pixels/PixelKernels.h"
#include "spectra/EndmemberTable.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hyperstream {

std::string abundanceMethodName(AbundanceMethod method);        // "ucls", "nnls", "fcls"
AbundanceMethod parseAbundanceMethod(const std::string& name);  // throws Error("METHOD")

// outputType: Float32 or Float64 (abundances and RMSE).
struct AbundanceOptions : JobOptions {
  // Any table of spectra (spectra/SpectralLibrary.h): the endmembers' CSV or point layer, a CSV of
  // spectra by column, an ENVI spectral library.
  std::string endmembers;
  std::string layer;  // a point layer's name in `endmembers`; empty: the first
  AbundanceMethod method = AbundanceMethod::Fcls;
  std::string rmseOutput;  // optional single-band raster
  std::string htmlReport;  // optional
};

struct AbundanceResult {
  RasterInfo input;
  std::vector<int> bands;
  EndmemberTable endmembers;
  int64_t validPixels = 0;
  int64_t stripRows = 0;
  double conditionNumber = 0;  // of the endmembers' Gram matrix
  std::string backend;
  DeviceTimes device;
  double seconds = 0;
};

// The model of a table's endmembers for `bands` bands; throws Error("ENDMEMBERS") when the table
// does not fit the image or its spectra are (nearly) linearly dependent.
Unmixing unmixingModel(const EndmemberTable& table, int bands, AbundanceMethod method,
                       double* conditionNumber);

// Throws Error (naming the parameter) or Canceled; on any throw no output is left behind.
AbundanceResult runAbundances(const AbundanceOptions& options, Feedback& feedback);

}  // namespace hyperstream
