#pragma once
// The sensor noise that noise-adjusted SPP discounts from its spectral angles: half the variance
// of the differences between each valid pixel and its valid upper-left neighbour (MNF's default
// lower-right pairs, Spectral Python's noise_from_diffs), summed over the bands: tr N.

#include "core/Samples.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace hyperstream {

class SppNoise {
 public:
  SppNoise(int64_t width, int bands) : width_(width), bands_(bands), sum_(bands), squares_(bands) {}

  // The next rows of the image (strips in image order), pixel-interleaved; pixels valid as SPP
  // takes them (validSpectrum).
  template <class T>
  void add(const T* rows, int64_t rowCount, const ValidPixel<T>& isValid);

  int64_t pairs() const { return pairs_; }
  // tr N; throws Error("NOISE_ADJUSTED") with fewer than two valid pairs.
  double trace() const;

 private:
  int64_t width_;
  int bands_;
  std::vector<double> sum_, squares_;  // per band, of the differences
  int64_t pairs_ = 0;
  std::vector<double> above_;  // the row above the next one, as float64, NaN where invalid
};

template <class T>
void SppNoise::add(const T* rows, int64_t rowCount, const ValidPixel<T>& isValid) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> row(static_cast<size_t>(width_) * bands_);
  for (int64_t r = 0; r < rowCount; ++r) {
    for (int64_t c = 0; c < width_; ++c) {
      const T* pixel = rows + (r * width_ + c) * bands_;
      const bool valid = validSpectrum(pixel, bands_, isValid);
      for (int b = 0; b < bands_; ++b) row[c * bands_ + b] = valid ? double(pixel[b]) : nan;
      if (!valid || above_.empty() || c == 0 || std::isnan(above_[(c - 1) * bands_])) continue;
      ++pairs_;
      for (int b = 0; b < bands_; ++b) {
        const double d = row[c * bands_ + b] - above_[(c - 1) * bands_ + b];
        sum_[b] += d;
        squares_[b] += d * d;
      }
    }
    above_.swap(row);
    row.resize(above_.size());
  }
}

}  // namespace hyperstream
