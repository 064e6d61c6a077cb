#pragma once
// The spectral angle mapper, file to file: each valid pixel's angle to each spectrum of a library
// (spectra/SpectralLibrary.h, resampled to the image's bands), a class map of the nearest spectrum
// (0 where every angle exceeds the largest allowed, and for invalid pixels), the best angle and
// optionally every angle. One pass over the image; the angle is scale-free, so the library's
// units need not be the image's.

#include "core/Feedback.h"
#include "core/JobOptions.h"
#include "io/Raster.h"
#include "run/Kernels.h"
#include "spectra/SpectralLibrary.h"

#include <gdal_priv.h>

#include <cstdint>
#include <string>
#include <vector>

namespace hyperstream {

constexpr double kAnyAngle = 3.141592653589793;  // radians: no pixel left unclassified

// outputType: of the angles, Float32 or Float64. `output` is the class map (UInt16, 0 nodata).
struct SamOptions : JobOptions {
  LibraryFiles library;
  double maxAngle = kAnyAngle;  // radians
  std::string angleOutput;      // optional: the best angle (one band)
  std::string anglesOutput;     // optional: every spectrum's angle (a band each)
  std::string countsCsv;        // optional: the classes' pixel counts
  std::string htmlReport;       // optional
};

// The best angles' histogram: bins of kAngleBin radians from 0, the last one for all beyond.
constexpr double kAngleBin = 0.005;
constexpr int kAngleBins = 201;

struct SamResult {
  RasterInfo input;
  std::vector<int> bands;
  std::string libraryFormat;
  std::vector<Target> library;  // on the selected bands
  int64_t validPixels = 0;
  std::vector<int64_t> classCounts;     // per class; [0]: valid pixels left unclassified
  std::vector<double> classAngleSums;   // per class: the sum of its pixels' angles (rad)
  std::vector<int64_t> angleHistogram;  // kAngleBins bins of the valid pixels' best angle
  int64_t stripRows = 0;
  std::string backend;
  DeviceTimes device;
  double seconds = 0;
};

// The colour of class k + 1 (the library's k-th spectrum) in the class map.
GDALColorEntry classColour(int k);

// The classes' counts as a CSV table: class,name,pixels,percent (of the valid pixels).
QByteArray classCountsCsv(const SamResult& result);

// Throws Error (naming the parameter) or Canceled; on any throw no output is left behind.
SamResult runSpectralAngles(const SamOptions& options, Feedback& feedback);

}  // namespace hyperstream
