#pragma once
// Local RX's windows (engine/detect/LocalRxJob.h) over a strip of principal components: what the
// kernels compute (PixelKernels::windowScores), on the CPU's threads or a GPU. Pixel p's
// background is the valid pixels of the window x window square centred on it, less the
// guard x guard square; its mean m and covariance C are taken in two passes over them in image
// order (rows, then columns), C + εI (ε = shrinkage x trace(C) / K + noise) is factored by Cholesky
// (C = LLᵀ, lower), and the score is |L⁻¹(y_p − m)|².

#include "core/JobOptions.h"

#include <cstdint>
#include <vector>

namespace hyperstream {

// A Cholesky pivot this far below the largest variance: the background's covariance is singular
// to working precision, and the pixel is left unscored (NaN).
constexpr double kWindowLargestCondition = 1e13;
// A pivot this far below its own variance: that component is a combination of the ones before it
// to 10 digits, and the pixel is left unscored too. So is one whose background has no more valid
// pixels than components and no ε: its covariance spans at most n - 1 of the K dimensions (the
// last pivot is then rounding, measured 7e-11 of its variance, not 0).
constexpr double kWindowLeastPivotShare = 1e-10;

struct WindowStrip {
  const double* components = nullptr;    // the buffered rows, pixel-interleaved, K per pixel
  const unsigned char* valid = nullptr;  // per buffered pixel
  int componentCount = 0;                // K
  int64_t width = 0;
  int64_t firstRow = 0, rowCount = 0;   // the buffered rows' place in the image
  int64_t scoreRow = 0, scoreRows = 0;  // the rows to score, inside the buffered ones
};

struct WindowRule {
  int window = 0;  // odd
  int guard = 1;   // odd, smaller than the window
  double shrinkage = 0;
  OutputType type = OutputType::Float32;  // of the scores: Float32 or Float64
  double noise = 0;  // added to every window's ε: the components' noise variance
};

// Pixels scored at once on the CPU: eight adjacent pixels of a row, one per vector lane.
constexpr int kWindowLanes = 8;

// The scores of kWindowLanes adjacent pixels on the CPU, each lane the same steps as the
// others; its work memory belongs to one thread.
class WindowScorer {
 public:
  WindowScorer(int components, const WindowRule& rule);
  // scores[l] for pixel (row, column + l), l < kWindowLanes: NaN where the pixel is invalid or
  // outside the image, its background has fewer than two valid pixels, or its covariance is
  // singular.
  void score(const WindowStrip& strip, int64_t row, int64_t column, double* scores);

  struct Offsets {  // of a pixel of the tile (lane 0's), in tile_ and in valid_
    int components, valid;
  };

 private:
  void gatherTile(const WindowStrip& strip, int64_t row, int64_t column);
  void listBackground(int rows, int centreRow);

  int k_;
  int halo_, guardHalo_;
  double shrinkage_, noise_;
  // The lanes' windows: their rows (at most `window`) over the columns column - halo ...
  // column + kWindowLanes - 1 + halo, each component a row of tileWidth_ values, 0 where the
  // pixel is invalid or outside the image; `valid` 1 or 0 per pixel.
  int tileWidth_, tileRows_ = 0, centreRow_ = 0;
  std::vector<double> tile_, valid_;
  std::vector<Offsets> background_;  // of lane 0's background pixels
  std::vector<double> work_;         // the lanes' means, deviations and covariances
};

}  // namespace hyperstream
