#include "stats/NoiseDifferences.h"

#include "core/Error.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

namespace hyperstream {

namespace {

struct DirectionName {
  NoiseDirection direction;
  const char* name;
  int rowStep, columnStep;
};
constexpr DirectionName kDirections[] = {{NoiseDirection::LowerRight, "lowerright", 1, 1},
                                         {NoiseDirection::LowerLeft, "lowerleft", 1, -1},
                                         {NoiseDirection::Right, "right", 0, 1},
                                         {NoiseDirection::Lower, "lower", 1, 0}};

const DirectionName& entry(NoiseDirection direction) {
  return *std::find_if(std::begin(kDirections), std::end(kDirections),
                       [direction](const DirectionName& e) { return e.direction == direction; });
}

}  // namespace

std::string noiseDirectionName(NoiseDirection direction) {
  return entry(direction).name;
}

NoiseDirection parseNoiseDirection(const std::string& name) {
  for (const DirectionName& e : kDirections)
    if (name == e.name) return e.direction;
  throw Error("NOISE_DIRECTION",
              "'" + name + "' is not a direction: lowerright, lowerleft, right or lower");
}

int rowStep(NoiseDirection direction) {
  return entry(direction).rowStep;
}

int columnStep(NoiseDirection direction) {
  return entry(direction).columnStep;
}

NoiseDifferences::NoiseDifferences(NoiseDirection direction, int64_t width, int bands,
                                   SampleType type, const double* nodata)
    : dRow_(rowStep(direction)),
      dCol_(columnStep(direction)),
      width_(width),
      bands_(bands),
      type_(type),
      differenceType_(sampleSize(type) <= 2 ? SampleType::Int32 : SampleType::Float64),
      nodata_(nodata, nodata + bands),
      differenceNodata_(bands, differenceType_ == SampleType::Int32
                                   ? static_cast<double>(std::numeric_limits<int32_t>::min())
                                   : std::numeric_limits<double>::quiet_NaN()) {}

void NoiseDifferences::setRowAbove(const StripView& row) {
  withSampleType(type_, [&](auto sample) { keepLastRow<decltype(sample)>(row); });
}

StripView NoiseDifferences::differences(const StripView& strip) {
  const int64_t rows = strip.pixels / width_;
  const int64_t pixels = rows * pairWidth();
  const auto bytes = static_cast<size_t>(pixels * bands_ * sampleSize(differenceType_));
  if (bytes > stripBytes_) {
    strip_.reset(new unsigned char[bytes]);
    stripBytes_ = bytes;
  }
  valid_.resize(strip.pixels);
  paired_.resize(pixels);
  withSampleType(type_, [&](auto sample) {
    using T = decltype(sample);
    findValid<T>(strip, valid_.data());
    findPairs(rows);
    workers_.split(rows, [&](int64_t r0, int64_t r1) {
      if (differenceType_ == SampleType::Int32)
        differenceRows<T, int32_t>(strip, r0, r1);
      else
        differenceRows<T, double>(strip, r0, r1);
    });
    keepLastRow<T>(strip);
  });
  StripView made = strip;
  made.data = strip_.get();
  made.type = differenceType_;
  made.nodata = differenceNodata_.data();
  made.pixels = pixels;
  made.groupPixels = strip.groupPixels / width_ * pairWidth();
  made.firstPixel = strip.firstPixel / width_ * pairWidth();
  return made;
}

template <class T>
void NoiseDifferences::findValid(const StripView& strip, unsigned char* valid) {
  const ValidPixel<T> isValid(nodata_.data(), bands_);
  const T* data = static_cast<const T*>(strip.data);
  const SampleLayout layout = strip.layout();
  workers_.split(strip.pixels, [&](int64_t first, int64_t last) {
    if (layout.isPixelInterleaved()) {
      for (int64_t p = first; p < last; ++p) valid[p] = isValid(data + p * bands_) ? 1 : 0;
      return;
    }
    std::fill(valid + first, valid + last, 1);
    for (int b = 0; b < bands_; ++b)
      clearInvalidSamples(data + b * layout.bandStep + first, last - first,
                          isValid.nodataValues()[b], isValid.hasNodata()[b] != 0, valid + first);
  });
}

// paired_[p]: the pair ending at p is in the image and both its pixels are valid.
void NoiseDifferences::findPairs(int64_t rows) {
  const int64_t first = firstColumn(), width = pairWidth();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t partnerRow = r - dRow_;
    const unsigned char* partner = partnerRow >= 0 ? valid_.data() + partnerRow * width_
                                   : hasAbove_     ? aboveValid_.data()
                                                   : nullptr;
    unsigned char* paired = paired_.data() + r * width;
    const unsigned char* valid = valid_.data() + r * width_ + first;
    if (!partner) {
      std::fill(paired, paired + width, 0);
      continue;
    }
    partner += first - dCol_;
    for (int64_t c = 0; c < width; ++c) paired[c] = valid[c] & partner[c];
  }
}

// One band's row of differences, x(partner) - x(pixel), or nodata where there is no valid pair
// (band-major strips: each band's row is contiguous, and the loop is vectorised).
template <class T, class D>
void differenceRow(const T* __restrict partner, const T* __restrict pixel,
                   const unsigned char* __restrict paired, int64_t width, D nodata,
                   D* __restrict out) {
  for (int64_t c = 0; c < width; ++c) {
    const D difference = static_cast<D>(partner[c]) - static_cast<D>(pixel[c]);
    out[c] = paired[c] ? difference : nodata;
  }
}

// Each pixel's differences, all bands together (pixel-interleaved strips).
template <class T, class D>
void differencePixels(const T* __restrict partner, const T* __restrict pixel,
                      const unsigned char* __restrict paired, int64_t width, int bands,
                      const D* __restrict nodata, D* __restrict out) {
  for (int64_t c = 0; c < width; ++c, partner += bands, pixel += bands, out += bands) {
    if (!paired[c]) {
      std::copy_n(nodata, bands, out);
      continue;
    }
    for (int b = 0; b < bands; ++b) out[b] = static_cast<D>(partner[b]) - static_cast<D>(pixel[b]);
  }
}

// The differences of rows [r0, r1) of the strip, in its layout.
template <class T, class D>
void NoiseDifferences::differenceRows(const StripView& strip, int64_t r0, int64_t r1) {
  const T* x = static_cast<const T*>(strip.data);
  const T* above = reinterpret_cast<const T*>(above_.data());
  const SampleLayout in = strip.layout();
  const int64_t rows = strip.pixels / width_, width = pairWidth();
  const SampleLayout out = strip.bandMajor ? SampleLayout::bandMajor(rows * width)
                                           : SampleLayout::pixelInterleaved(bands_);
  // The row above keeps the strip's layout, one row long.
  const int64_t aboveBandStep = strip.bandMajor ? width_ : 1;
  D* made = reinterpret_cast<D*>(strip_.get());
  std::vector<D> nodata(differenceNodata_.begin(), differenceNodata_.end());
  const int64_t first = firstColumn(), step = in.pixelStep;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t partnerRow = r - dRow_;
    const unsigned char* paired = paired_.data() + r * width;
    D* target = made + r * width * out.pixelStep;
    const T* pixel = x + (r * width_ + first) * step;
    const T* partner = partnerRow >= 0 ? x + (partnerRow * width_ + first - dCol_) * step
                       : hasAbove_     ? above + (first - dCol_) * step
                                       : nullptr;
    if (!partner) {  // the image's first row: no pairs (paired is all 0)
      partner = pixel;
    }
    if (!strip.bandMajor) {
      differencePixels(partner, pixel, paired, width, bands_, nodata.data(), target);
      continue;
    }
    const int64_t partnerBandStep = partnerRow >= 0 ? in.bandStep : aboveBandStep;
    for (int b = 0; b < bands_; ++b)
      differenceRow(partner + b * partnerBandStep, pixel + b * in.bandStep, paired, width,
                    nodata[b], target + b * out.bandStep);
  }
}

// The strip's last row, in its layout, and which of its pixels are valid.
template <class T>
void NoiseDifferences::keepLastRow(const StripView& strip) {
  const int64_t rows = strip.pixels / width_;
  if (rows < 1) return;
  const T* data = static_cast<const T*>(strip.data);
  const SampleLayout layout = strip.layout();
  above_.resize(static_cast<size_t>(width_ * bands_) * sizeof(T));
  aboveValid_.resize(width_);
  T* row = reinterpret_cast<T*>(above_.data());
  const int64_t first = (rows - 1) * width_;
  if (strip.bandMajor) {
    for (int b = 0; b < bands_; ++b)
      std::copy_n(data + b * layout.bandStep + first, width_, row + b * width_);
  } else {
    std::copy_n(data + first * bands_, width_ * bands_, row);
  }
  StripView last = strip;
  last.data = row;
  last.pixels = width_;
  findValid<T>(last, aboveValid_.data());
  hasAbove_ = true;
}

}  // namespace hyperstream
