#pragma once
// Spatial preprocessing (SPP, Zortea & Plaza 2009), file to file: each valid pixel moves toward
// the image's mean spectrum by how much it differs in spectral angle from its spatial
// neighbourhood, so that an endmember extractor afterwards prefers homogeneous areas.
//
//   alpha(p) = sum_q beta(q) gamma(p,q) over valid neighbours q != p within the window,
//              beta = 1/(drow^2 + dcol^2) normalised over the neighbours used,
//              gamma = 2 asin(|u_p - u_q| / 2) with u the unit spectra (accurate for small angles);
//   rho(p) = (1 + sqrt(alpha))^2;  y'_p = (y_p - c) / rho(p) + c.
//
// A pixel is valid when every band is finite, not nodata, and its spectrum's norm is positive.

#include "core/Feedback.h"
#include "core/JobOptions.h"
#include "io/Raster.h"
#include "run/Kernels.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hyperstream {

enum class SppBorder {
  Truncate,  // neighbours outside the image are left out
  Mirror,    // reflected at the edge without repeating it: row -1 -> 1, row H -> H-2
};

// outputType: Float32 or Float64; device: auto, the CPU or one GPU.
struct SppOptions : JobOptions {
  int window = 5;  // odd, 3 ... 15
  SppBorder border = SppBorder::Truncate;
  std::string alphaOutput;  // optional single-band rasters
  std::string rhoOutput;
};

struct SppResult {
  RasterInfo input;
  std::vector<int> bands;
  int64_t validPixels = 0;
  std::vector<double> centroid;  // c, per band
  int64_t stripRows = 0;
  bool resident = false;  // the cube stayed in memory between the passes
  double meanAlpha = 0;   // over valid pixels
  std::string backend;
  DeviceTimes device;  // on a GPU, its own timings
  double seconds = 0;
};

// Throws Error (naming the parameter) or Canceled; on any throw no output is left behind.
SppResult runSpp(const SppOptions& options, Feedback& feedback);

}  // namespace hyperstream
