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
// Noise-adjusted (an option, not in the paper): each angle less the angle the sensor noise alone
// would make between the two pixels, gamma' = max(0, gamma - sqrt(tr N (1/|y_p|^2 + 1/|y_q|^2))),
// tr N from diagonal neighbours' differences (spp/SppNoise.h). Published SPP pulls a dark
// homogeneous area (water) toward the mean, its noisy pixels' angles being large; this keeps it.
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
  bool noiseAdjusted = false;  // discount the angles the noise explains (see above)
  std::string alphaOutput;     // optional single-band rasters
  std::string rhoOutput;
};

struct SppResult {
  RasterInfo input;
  std::vector<int> bands;
  int64_t validPixels = 0;
  std::vector<double> centroid;  // c, per band
  double noiseVariance = 0;      // tr N when noise-adjusted, else 0
  int64_t noisePairs = 0;        // the pixel pairs it was estimated from
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
