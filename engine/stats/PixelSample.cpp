#include "stats/PixelSample.h"

#include "core/Samples.h"

#include <algorithm>
#include <stdexcept>

namespace hyperstream {

PixelSampler::PixelSampler(int64_t imagePixels, int64_t maxPixels)
    : imagePixels_(imagePixels), count_(std::min(imagePixels, maxPixels)) {
  if (maxPixels < 1) throw std::logic_error("a pixel sample needs at least one pixel");
}

int64_t PixelSampler::picked(int64_t j) const {
  // (2j + 1) N / (2S) in 128 bits: N may pass 2^32, S is small.
  const __int128 twice = static_cast<__int128>(2) * count_;
  return static_cast<int64_t>((static_cast<__int128>(2 * j + 1) * imagePixels_) / twice);
}

void PixelSampler::take(const StripView& strip, int64_t firstImagePixel) {
  sample_.bands = strip.bands;
  const int64_t first = firstImagePixel + strip.firstPixel;
  const int64_t end = first + strip.pixels;
  // Strips come in order, but a worker's first may start anywhere: skip to the first pick in it.
  if (next_ < count_ && picked(next_) < first)
    next_ = std::max(
        next_, static_cast<int64_t>(static_cast<__int128>(first) * count_ / imagePixels_) - 1);
  while (next_ < count_ && picked(next_) < first) ++next_;
  const SampleLayout layout = strip.layout();
  withSampleType(strip.type, [&](auto type) {
    using T = decltype(type);
    const auto* data = static_cast<const T*>(strip.data);
    const ValidPixel<T> isValid(strip.nodata, strip.bands);
    std::vector<T> pixel(static_cast<size_t>(strip.bands));
    for (; next_ < count_ && picked(next_) < end; ++next_) {
      const int64_t p = picked(next_) - first;
      for (int b = 0; b < strip.bands; ++b)
        pixel[b] = data[p * layout.pixelStep + b * layout.bandStep];
      if (!isValid(pixel.data())) continue;
      sample_.pixels.push_back(p + first);
      sample_.values.insert(sample_.values.end(), pixel.begin(), pixel.end());
    }
  });
}

PixelSample PixelSampler::merged(const std::vector<PixelSample>& parts) {
  PixelSample all;
  for (const PixelSample& part : parts) {
    if (part.size() == 0) continue;
    all.bands = part.bands;
    all.pixels.insert(all.pixels.end(), part.pixels.begin(), part.pixels.end());
    all.values.insert(all.values.end(), part.values.begin(), part.values.end());
  }
  return all;
}

}  // namespace hyperstream
