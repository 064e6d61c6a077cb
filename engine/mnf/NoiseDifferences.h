#pragma once
// MNF's noise estimate: the differences between each pixel and its neighbour in one direction
// (Spectral Python's noise_from_diffs), made strip by strip into a strip of their own, so that
// the PCA kernels' moments give their covariance.

#include "core/Samples.h"
#include "core/WorkerThreads.h"
#include "mnf/NoiseDirection.h"
#include "pca/PcaKernels.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hyperstream {

// Strips must come in image order. A pair is counted at its second pixel, x(r + dRow, c + dCol),
// so that a strip needs only the row above it: the differences of a strip are its own, whatever
// the strip heights. The strip made has the input strip's pixels and layout; where a pixel has no
// pair (the image's edge) or either pixel is invalid, it holds nodata.
class NoiseDifferences {
 public:
  NoiseDifferences(NoiseDirection direction, int64_t width, int bands, SampleType type,
                   const double* nodata);

  // Int32 for samples of at most 16 bits (exact, and the integer moments take them), else Float64.
  SampleType differenceType() const { return differenceType_; }
  // The row above the next strip (one row, the layout of the strips to come); without it the next
  // strip starts the image.
  void setRowAbove(const StripView& row);
  // The differences ending in `strip`'s pixels; valid until the next call. Keeps the strip's last
  // row as the next strip's row above.
  StripView differences(const StripView& strip);

 private:
  template <class T, class D>
  void differencesOf(const StripView& strip);
  template <class T>
  void findValid(const StripView& strip, unsigned char* valid);
  template <class T>
  void keepLastRow(const StripView& strip);
  void findPairs(int64_t rows);

  int dRow_ = 0, dCol_ = 0;
  int64_t width_;
  int bands_;
  SampleType type_, differenceType_;
  std::vector<double> nodata_;            // the input's, per band
  std::vector<double> differenceNodata_;  // INT32_MIN or NaN, per band
  std::vector<unsigned char> strip_;      // the differences
  std::vector<unsigned char> valid_;      // per pixel of the strip
  std::vector<unsigned char> paired_;     // per pixel: it and its partner are valid
  std::vector<unsigned char> above_;      // the row above, pixel-interleaved
  std::vector<unsigned char> aboveValid_;
  bool hasAbove_ = false;
  WorkerThreads workers_;
};

}  // namespace hyperstream
