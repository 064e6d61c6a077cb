#include "mnf/NoiseDifferences.h"

#include "core/Error.h"

#include <algorithm>
#include <cstring>
#include <limits>

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
      differenceType_(sampleSize(type) <= 2 && type != SampleType::Float32 ? SampleType::Int32
                                                                           : SampleType::Float64),
      nodata_(nodata, nodata + bands),
      differenceNodata_(bands, differenceType_ == SampleType::Int32
                                   ? static_cast<double>(std::numeric_limits<int32_t>::min())
                                   : std::numeric_limits<double>::quiet_NaN()) {}

void NoiseDifferences::setRowAbove(const StripView& row) {
  withSampleType(type_, [&](auto sample) { keepLastRow<decltype(sample)>(row); });
}

StripView NoiseDifferences::differences(const StripView& strip) {
  const int64_t pixels = strip.pixels;
  strip_.resize(static_cast<size_t>(pixels * bands_ * sampleSize(differenceType_)));
  valid_.resize(pixels);
  paired_.resize(pixels);
  withSampleType(type_, [&](auto sample) {
    using T = decltype(sample);
    findValid<T>(strip, valid_.data());
    findPairs(pixels / width_);
    if (differenceType_ == SampleType::Int32)
      differencesOf<T, int32_t>(strip);
    else
      differencesOf<T, double>(strip);
    keepLastRow<T>(strip);
  });
  StripView made = strip;
  made.data = strip_.data();
  made.type = differenceType_;
  made.nodata = differenceNodata_.data();
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

// paired_[p]: pixel p is valid and so is its partner, in the strip or the row above.
void NoiseDifferences::findPairs(int64_t rows) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t partnerRow = r - dRow_;
    const unsigned char* partner = partnerRow >= 0 ? valid_.data() + partnerRow * width_
                                   : hasAbove_     ? aboveValid_.data()
                                                   : nullptr;
    for (int64_t c = 0; c < width_; ++c) {
      const int64_t c1 = c - dCol_;
      const bool inImage = partner && c1 >= 0 && c1 < width_;
      paired_[r * width_ + c] =
          static_cast<unsigned char>(inImage && partner[c1] && valid_[r * width_ + c]);
    }
  }
}

// Each band's differences, x(partner) - x(pixel), nodata where there is no valid pair.
template <class T, class D>
void NoiseDifferences::differencesOf(const StripView& strip) {
  const T* x = static_cast<const T*>(strip.data);
  const T* above = reinterpret_cast<const T*>(above_.data());
  const SampleLayout layout = strip.layout();
  D* out = reinterpret_cast<D*>(strip_.data());
  const int64_t rows = strip.pixels / width_;
  workers_.split(bands_, [&](int64_t firstBand, int64_t lastBand) {
    for (int64_t b = firstBand; b < lastBand; ++b) {
      const D nodata = static_cast<D>(differenceNodata_[b]);
      const T* band = x + b * layout.bandStep;
      D* target = out + b * layout.bandStep;
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t partnerRow = r - dRow_;
        for (int64_t c = 0; c < width_; ++c) {
          const int64_t p = r * width_ + c;
          D value = nodata;
          if (paired_[p]) {
            const int64_t c1 = c - dCol_;
            const T partner = partnerRow >= 0 ? band[(partnerRow * width_ + c1) * layout.pixelStep]
                                              : above[c1 * bands_ + b];
            value = static_cast<D>(partner) - static_cast<D>(band[p * layout.pixelStep]);
          }
          target[p * layout.pixelStep] = value;
        }
      }
    }
  });
}

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
  for (int64_t c = 0; c < width_; ++c)
    for (int b = 0; b < bands_; ++b)
      row[c * bands_ + b] = data[(first + c) * layout.pixelStep + b * layout.bandStep];
  StripView last = strip;
  last.data = row;
  last.pixels = width_;
  last.bandMajor = false;
  findValid<T>(last, aboveValid_.data());
  hasAbove_ = true;
}

}  // namespace hyperstream
