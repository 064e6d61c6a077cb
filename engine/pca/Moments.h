#pragma once
// Streaming statistics of a set of pixels: count, mean, centred co-moment matrix, band ranges.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hyperstream {

struct Moments {
  int bands = 0;
  int64_t count = 0;             // valid pixels
  std::vector<double> mean;      // per band
  std::vector<double> comoment;  // bands x bands, row-major, symmetric: sum of (x-m)(x-m)^T
  std::vector<double> minimum;   // per band, over valid pixels
  std::vector<double> maximum;

  Moments() = default;
  explicit Moments(int bandCount);

  // Chan-Golub-LeVeque update: merging the moments of two disjoint pixel sets gives the moments
  // of their union, whatever the order or the partition.
  void merge(const Moments& other);
  // Sample covariance, comoment / (count - 1).
  std::vector<double> covariance() const;

  // As one array of packedSize(bands) doubles (to send to another process), and back.
  static size_t packedSize(int bands);
  std::vector<double> packed() const;
  static Moments unpacked(const double* values, int bands);
};

}  // namespace hyperstream
