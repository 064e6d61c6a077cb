#pragma once
// Local RX's windows (engine/detect/LocalRxJob.h) over a strip of principal components: what the
// kernels compute (UnmixingKernels::windowScores), on the CPU's threads or a GPU. Pixel p's
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

// One pixel's score on the CPU; its work memory belongs to one thread.
class WindowScorer {
 public:
  WindowScorer(int components, const WindowRule& rule);
  // NaN when the background has fewer than two valid pixels or its covariance is singular.
  double score(const WindowStrip& strip, int64_t row, int64_t column);

 private:
  template <class F>
  void forEachBackground(const WindowStrip& strip, int64_t row, int64_t column, F&& f) const;
  int64_t backgroundMean(const WindowStrip& strip, int64_t row, int64_t column);
  void backgroundCovariance(const WindowStrip& strip, int64_t row, int64_t column, int64_t n);
  bool factor();
  double whitenedSquare();

  int k_;
  int64_t halo_, guardHalo_;
  double shrinkage_, noise_;
  std::vector<double> mean_, covariance_, d_;
};

}  // namespace hyperstream
