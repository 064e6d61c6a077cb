#pragma once
// Streaming statistics of a set of pixels: count, mean, centred co-moment matrix, band ranges.

#include "core/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>
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

// Per component min/max over valid pixels (the range of the Byte rescale).
struct ComponentRange {
  std::vector<double> minimum;
  std::vector<double> maximum;
  void merge(const ComponentRange& other);
};

// The smallest spread (maximum - minimum) of a band whose variance float64 keeps to full
// precision: its square stays far above where products underflow (DBL_MIN / epsilon, ~1e-292).
constexpr double kSmallestSpread = 1e-140;

// Throws Error("INPUT") naming the first band (as "selected band number N") whose values float64
// products cannot take: a spread above 0 but below kSmallestSpread, or a value beyond `largest`
// in magnitude.
void checkProductScale(const Moments& moments, double largest);
// The same for one band (0-based) whose values lie from `minimum` to `maximum`; `where` follows
// the band's name in the message (" in column 12", or empty).
void checkBandScale(int band, double minimum, double maximum, double largest,
                    const std::string& where);
// The error for a band whose variance is not finite in float64.
Error varianceOverflow(int band, double magnitude, const std::string& where);

}  // namespace hyperstream
