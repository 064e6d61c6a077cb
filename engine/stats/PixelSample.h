#pragma once
// A sample of an image's valid pixels taken from the strips of a pass the job makes anyway: the
// pixels floor((j + 1/2) N / S) of the N in the image, j = 0 .. S - 1, kept where valid, as
// float64. The pixels picked depend on the image alone, not on its strips or workers.

#include "core/StripView.h"

#include <cstdint>
#include <vector>

namespace hyperstream {

struct PixelSample {
  int bands = 0;
  std::vector<double> values;   // pixel-interleaved: pixel i's band b at i * bands + b
  std::vector<int64_t> pixels;  // each one's index in the image, ascending
  int64_t size() const { return static_cast<int64_t>(pixels.size()); }
  const double* spectrum(int64_t i) const { return values.data() + i * bands; }
};

class PixelSampler {
 public:
  // At most `maxPixels` of an image of `imagePixels`; every pixel when it has no more.
  PixelSampler(int64_t imagePixels, int64_t maxPixels);
  // The strip's picked pixels; `firstImagePixel` is the image index of strip.firstPixel 0 (a
  // worker's first row). Strips come in the image's order.
  void take(const StripView& strip, int64_t firstImagePixel = 0);
  PixelSample& sample() { return sample_; }
  // Several workers' samples, each of its own rows, as one.
  static PixelSample merged(const std::vector<PixelSample>& parts);

 private:
  int64_t picked(int64_t j) const;

  int64_t imagePixels_;
  int64_t count_;
  int64_t next_ = 0;  // the next j to look at
  PixelSample sample_;
};

}  // namespace hyperstream
