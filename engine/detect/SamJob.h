#pragma once
// The spectral angle mapper, file to file: each valid pixel's angle to each spectrum of a library
// (detect/SpectralLibrary.h, resampled to the image's bands), a class map of the nearest spectrum
// (0 where every angle exceeds the largest allowed, and for invalid pixels), the best angle and
// optionally every angle. One pass over the image; the angle is scale-free, so the library's
// units need not be the image's.

#include "core/Feedback.h"
#include "core/JobOptions.h"
#include "detect/SpectralLibrary.h"
#include "io/Raster.h"

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
};

struct SamResult {
  RasterInfo input;
  std::vector<int> bands;
  std::string libraryFormat;
  std::vector<Target> library;  // on the selected bands
  int64_t validPixels = 0;
  std::vector<int64_t> classCounts;  // per class; [0]: valid pixels left unclassified
  int64_t stripRows = 0;
  std::string backend;
  DeviceTimes device;
  double seconds = 0;
};

// The classes' counts as a CSV table: class,name,pixels,percent (of the valid pixels).
QByteArray classCountsCsv(const SamResult& result);

// Throws Error (naming the parameter) or Canceled; on any throw no output is left behind.
SamResult runSpectralAngles(const SamOptions& options, Feedback& feedback);

}  // namespace hyperstream
