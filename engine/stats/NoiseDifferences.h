#pragma once
// MNF's noise estimate: the differences between each pixel and its neighbour in one direction
// (Spectral Python's noise_from_diffs), made strip by strip into a strip of their own, so that
// the PCA kernels' moments give their covariance.

#include "core/Samples.h"
#include "core/StripView.h"
#include "core/WorkerThreads.h"
#include "stats/NoiseDirection.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hyperstream {

// Strips must come in image order. A pair is counted at its second pixel, x(r + dRow, c + dCol),
// so that a strip needs only the row above it: the differences of a strip are its own, whatever
// the strip heights. The strip made has the input strip's rows and layout, each row the
// width - |dCol| pairs whose second pixel lies in it (the columns that have a partner), so that
// an image without nodata has gaps only in its first row; where either pixel of a pair is
// invalid, or the pair's partner lies above the image, it holds nodata.
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
  void differenceRows(const StripView& strip, int64_t r0, int64_t r1);
  template <class T>
  void findValid(const StripView& strip, unsigned char* valid);
  template <class T>
  void keepLastRow(const StripView& strip);
  void findPairs(int64_t rows);
  int64_t pairWidth() const { return width_ - (dCol_ < 0 ? -dCol_ : dCol_); }
  int64_t firstColumn() const { return dCol_ > 0 ? dCol_ : 0; }  // of the second pixels

  int dRow_ = 0, dCol_ = 0;
  int64_t width_;
  int bands_;
  SampleType type_, differenceType_;
  std::vector<double> nodata_;            // the input's, per band
  std::vector<double> differenceNodata_;  // INT32_MIN or NaN, per band
  // The differences: left uninitialised (every byte is written before it is read), so that a
  // fresh strip is not zeroed first.
  std::unique_ptr<unsigned char[]> strip_;
  size_t stripBytes_ = 0;
  std::vector<unsigned char> valid_;   // per pixel of the strip
  std::vector<unsigned char> paired_;  // per pair: both pixels valid
  std::vector<unsigned char> above_;   // the row above, in the strips' layout
  std::vector<unsigned char> aboveValid_;
  bool hasAbove_ = false;
  WorkerThreads workers_;
};

}  // namespace hyperstream
