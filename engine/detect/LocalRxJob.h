#pragma once
// Local (dual-window) RX: each pixel's Mahalanobis distance from the pixels around it rather than
// from the whole image, so that an anomaly stands out of its own neighbourhood (a vehicle on a
// road, a roof in a field) even where the image's other materials span more. The background of
// pixel p is the valid pixels of the window × window square centred on p, less the guard × guard
// square around p (the pixel itself at least, so that a target does not dilute its own
// background); the score is (y_p − m)ᵀ(C + εI)⁻¹(y_p − m) with m and C the background's mean and
// covariance (two passes over it, in float64) and y the image's first K principal components.
// ε is by default the components' noise variance (HySime's noise of each band, from the PCA's
// moments, carried into the components: (1/K) Σ_k Σ_b v_kb² σ_b²), which keeps a background of
// few pixels for many components regular; a shrinkage S takes S × the window's mean component
// variance instead (0: none).
//
// The job is two: a PCA of the image (any device, streamed) writes the K components in Float64
// into a hidden folder beside the output, then the windows stream over that file, strips with
// their halo rows, on the CPU's threads or the GPU (a warp a pixel). Each window's sums run over
// its pixels in image order, so the scores do not depend on the strips or the device.

#include "core/Feedback.h"
#include "core/JobOptions.h"
#include "detect/DetectJob.h"
#include "io/Raster.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hyperstream {

// Windows cover at most this many pixels' components per pixel's covariance.
constexpr int kMaxLocalComponents = 64;
constexpr int kMaxWindow = 255;

// outputType: Float32 or Float64 (scores are computed in float64).
struct LocalRxOptions : JobOptions {
  int window = 0;       // the background window's side, odd, 3 or more
  int guard = 1;        // the guard window's side, odd, smaller than the window
  int components = 10;  // K, or kSignalSubspace (HySime's estimate), or kSceneMaterials
  // ε = shrinkage × the window's mean component variance; unset: the components' noise variance.
  std::optional<double> shrinkage;
  int64_t gpuMemoryBytes = 0;  // for the components and the windows
  std::string htmlReport;      // optional (detect/DetectReport.h)
};

struct LocalRxResult {
  RasterInfo input;
  std::vector<int> bands;
  int components = 0;
  int64_t validPixels = 0;
  // The components' noise variance added to every window's diagonal (0 with a shrinkage, or
  // where the image gives no noise estimate).
  double noise = 0;
  // Valid pixels left as nodata: fewer than two valid pixels in their background, or its
  // covariance singular to working precision (a constant neighbourhood; a shrinkage scores them).
  int64_t unscoredPixels = 0;
  std::string backend;    // the PCA's, then the windows'
  double pcaSeconds = 0;  // the components' job
  double seconds = 0;
};

// The local form of an rx job's options: the shared options, the components (10 where none, or
// all, are asked for: callers refuse `all` themselves), the shrinkage and the windows.
LocalRxOptions localRxOptions(const DetectOptions& options, int window, int guard);

// Throws Error (naming the parameter: WINDOW, GUARD, COMPONENTS, SHRINKAGE, OUTPUT_TYPE, RAM_MB,
// DEVICE, ...) or Canceled; on any throw no output is left behind.
LocalRxResult runLocalRx(const LocalRxOptions& options, Feedback& feedback);

}  // namespace hyperstream
