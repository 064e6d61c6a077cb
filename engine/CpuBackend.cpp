// The CPU backend: strip kernels on OpenBLAS (which uses every core) and plain loops the compiler
// vectorises over the bands of pixel-interleaved spectra.

#include "ComputeBackend.h"
#include "CpuSpp.h"
#include "Error.h"
#include "Samples.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace hyperstream {

int64_t groupRows(int64_t width) {
  constexpr int64_t kGroupPixels = 1024;  // DSYRK with k >= 1024 runs at its full rate
  return std::max<int64_t>(1, (kGroupPixels + width - 1) / std::max<int64_t>(1, width));
}

void ComponentRange::merge(const ComponentRange& other) {
  if (minimum.empty()) {
    *this = other;
    return;
  }
  for (size_t k = 0; k < minimum.size(); ++k) {
    minimum[k] = std::min(minimum[k], other.minimum[k]);
    maximum[k] = std::max(maximum[k], other.maximum[k]);
  }
}

namespace {

// Pixels per BLAS call at most: the converted block (pixels x bands) stays in the cache.
constexpr int64_t kChunkPixels = 1024;

// row = pixel - shift, and the running sum and range of the band values. Separate, unaliased
// arrays let the compiler vectorise over the bands.
template <class T>
HYPERSTREAM_VECTOR_CLONES void addShiftedPixel(const T* __restrict pixel,
                                               const double* __restrict shift,
                                               double* __restrict row, double* __restrict sum,
                                               double* __restrict lo, double* __restrict hi,
                                               int bands) {
  for (int b = 0; b < bands; ++b) {
    const double v = static_cast<double>(pixel[b]);
    row[b] = v - shift[b];
    sum[b] += row[b];
    lo[b] = v < lo[b] ? v : lo[b];
    hi[b] = v > hi[b] ? v : hi[b];
  }
}

// row = pixel - center, in float64 (exact for every input type), rounded once to C.
template <class T, class C>
HYPERSTREAM_VECTOR_CLONES void centrePixel(const T* __restrict pixel,
                                           const double* __restrict center, C* __restrict row,
                                           int bands) {
  for (int b = 0; b < bands; ++b)
    row[b] = static_cast<C>(static_cast<double>(pixel[b]) - center[b]);
}

template <class T>
void markValid(const StripView& strip, std::vector<unsigned char>& valid) {
  valid.resize(strip.pixels);
  const ValidPixel<T> isValid(strip.nodata, strip.bands);
  if (isValid.alwaysValid()) {
    std::fill(valid.begin(), valid.end(), 1);
    return;
  }
  const T* data = static_cast<const T*>(strip.data);
  for (int64_t p = 0; p < strip.pixels; ++p) valid[p] = isValid(data + p * strip.bands);
}

class CpuBackend : public ComputeBackend {
 public:
  std::string name() const override {
    return std::string("cpu (OpenBLAS ") + openblas_get_corename() + " kernels, " +
           std::to_string(openblas_get_num_threads()) + " threads)";
  }

  bool usesEveryCore() const override { return true; }

  std::string advice() const override {
    // OpenBLAS falls back to its generic kernels on CPUs newer than its release; they run 3-4x
    // slower than the AVX2/AVX-512 ones the CPU can use.
    const std::string core = openblas_get_corename();
    if ((core == "Prescott" || core == "Core2" || core == "Nehalem") &&
        __builtin_cpu_supports("avx2"))
      return "OpenBLAS does not recognise this CPU and runs its generic " + core +
             " kernels; setting OPENBLAS_CORETYPE=Haswell (or SkylakeX on AVX-512 CPUs) in the "
             "environment before starting makes the CPU backend 3-4x faster";
    return {};
  }

  bool prepare(const CubeLayout& layout) override {
    total_ = Moments(layout.bands);
    return false;
  }

  void accumulateMoments(const StripView& strip) override {
    if (total_.bands != strip.bands) total_ = Moments(strip.bands);
    withSampleType(strip.type, [&](auto sample) { accumulate<decltype(sample)>(strip, total_); });
  }

  double spatialPreprocess(const SppStrip& strip, const SppOutput& output) override {
    return spp_.run(strip, output);
  }

  Moments takeMoments(int bands) override {
    Moments result = std::move(total_);
    if (result.bands != bands) result = Moments(bands);
    total_ = Moments(bands);
    return result;
  }

  ComponentRange componentRange(const StripView& strip, const Projection& projection) override {
    ComponentRange range;
    range.minimum.assign(projection.components, std::numeric_limits<double>::infinity());
    range.maximum.assign(projection.components, -std::numeric_limits<double>::infinity());
    withSampleType(strip.type, [&](auto sample) {
      forEachProjectedChunk<decltype(sample), float>(
          strip, projection, [&](int64_t first, int64_t count, const float* values) {
            for (int64_t p = 0; p < count; ++p) {
              if (!valid_[first + p]) continue;
              const float* pixel = values + p * projection.components;
              for (int k = 0; k < projection.components; ++k) {
                range.minimum[k] = std::min(range.minimum[k], static_cast<double>(pixel[k]));
                range.maximum[k] = std::max(range.maximum[k], static_cast<double>(pixel[k]));
              }
            }
          });
    });
    return range;
  }

  void project(const StripView& strip, const Projection& projection, const OutputEncoding& encoding,
               void* output) override {
    withSampleType(strip.type, [&](auto sample) {
      using T = decltype(sample);
      switch (encoding.type) {
        case GDT_Float64:
          forEachProjectedChunk<T, double>(
              strip, projection, [&](int64_t first, int64_t count, const double* values) {
                encodeFloat(values, first, count, projection.components, encoding,
                            static_cast<double*>(output));
              });
          break;
        case GDT_Float32:
          forEachProjectedChunk<T, float>(strip, projection,
                                          [&](int64_t first, int64_t count, const float* values) {
                                            encodeFloat(values, first, count, projection.components,
                                                        encoding, static_cast<float*>(output));
                                          });
          break;
        case GDT_Byte:
          forEachProjectedChunk<T, float>(strip, projection,
                                          [&](int64_t first, int64_t count, const float* values) {
                                            encodeByte(values, first, count, projection.components,
                                                       encoding, static_cast<uint8_t*>(output));
                                          });
          break;
        default:
          throw Error("OUTPUT_TYPE", "output type must be Float32, Float64 or Byte");
      }
    });
  }

 private:
  template <class T>
  void accumulate(const StripView& strip, Moments& total) {
    markValid<T>(strip, valid_);
    const int64_t group = strip.groupPixels > 0 ? strip.groupPixels : strip.pixels;
    for (int64_t first = 0; first < strip.pixels; first += group)
      total.merge(groupMoments<T>(strip, first, std::min(group, strip.pixels - first)));
  }

  // Moments of one group in one pass: each valid pixel, shifted by the group's first valid pixel
  // (close to the mean, so nothing cancels), goes into a float64 block; DSYRK adds the block's
  // co-moment. The shift is taken out exactly at the end.
  template <class T>
  Moments groupMoments(const StripView& strip, int64_t first, int64_t count) {
    const int bands = strip.bands;
    const T* data = static_cast<const T*>(strip.data);
    Moments result(bands);
    int64_t start = first;
    while (start < first + count && !valid_[start]) ++start;
    if (start == first + count) return result;
    std::vector<double>& shift = shift_;
    shift.assign(bands, 0.0);
    for (int b = 0; b < bands; ++b) shift[b] = static_cast<double>(data[start * bands + b]);
    std::vector<double>& sum = sum_;
    sum.assign(bands, 0.0);
    double* lo = result.minimum.data();
    double* hi = result.maximum.data();
    chunk_.resize(static_cast<size_t>(kChunkPixels) * bands);
    double* block = chunk_.data();
    int64_t filled = 0;
    auto flush = [&] {
      if (filled == 0) return;
      cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, bands, static_cast<int>(filled), 1.0,
                  block, bands, 1.0, result.comoment.data(), bands);
      filled = 0;
    };
    for (int64_t p = start; p < first + count; ++p) {
      if (!valid_[p]) continue;
      addShiftedPixel(data + p * bands, shift.data(), block + filled * bands, sum.data(), lo, hi,
                      bands);
      ++result.count;
      if (++filled == kChunkPixels) flush();
    }
    flush();
    // Sum (x-s)(x-s)^T = M + n (m-s)(m-s)^T: subtract the shift's share, mirror the triangle.
    const double n = static_cast<double>(result.count);
    for (int b = 0; b < bands; ++b) result.mean[b] = shift[b] + sum[b] / n;
    for (int i = 0; i < bands; ++i)
      for (int j = i; j < bands; ++j) {
        double& upper = result.comoment[static_cast<size_t>(i) * bands + j];
        upper -= sum[i] * sum[j] / n;
        result.comoment[static_cast<size_t>(j) * bands + i] = upper;
      }
    return result;
  }

  // Centres and projects the strip block by block in precision C, calling
  // consume(firstPixel, pixelCount, values) with pixelCount x components values per block.
  // Invalid pixels are projected as if they were at the centre; consumers skip them.
  template <class T, class C, class Consume>
  void forEachProjectedChunk(const StripView& strip, const Projection& projection,
                             Consume&& consume) {
    const int bands = strip.bands;
    const int components = projection.components;
    const T* data = static_cast<const T*>(strip.data);
    markValid<T>(strip, valid_);

    const double* center = projection.center.data();
    const std::vector<C> weights(projection.weights.begin(), projection.weights.end());
    auto& block = scratch<C>(static_cast<size_t>(kChunkPixels) * bands);
    auto& result = resultScratch<C>(static_cast<size_t>(kChunkPixels) * components);
    // Blocks never straddle groups, so every pixel meets the same BLAS call shape whatever the
    // strip heights.
    const int64_t group = strip.groupPixels > 0 ? strip.groupPixels : strip.pixels;
    for (int64_t first = 0; first < strip.pixels;) {
      const int64_t groupEnd = std::min(strip.pixels, (first / group + 1) * group);
      const int64_t count = std::min(kChunkPixels, groupEnd - first);
      for (int64_t p = 0; p < count; ++p) {
        const T* pixel = data + (first + p) * bands;
        C* row = block.data() + p * bands;
        if (valid_[first + p]) {
          centrePixel(pixel, center, row, bands);
        } else {
          std::fill(row, row + bands, C(0));
        }
      }
      if constexpr (std::is_same_v<C, double>)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(count), components,
                    bands, 1.0, block.data(), bands, weights.data(), components, 0.0, result.data(),
                    components);
      else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(count), components,
                    bands, 1.0f, block.data(), bands, weights.data(), components, 0.0f,
                    result.data(), components);
      consume(first, count, result.data());
      first += count;
    }
  }

  template <class C, class Out>
  void encodeFloat(const C* values, int64_t first, int64_t count, int components,
                   const OutputEncoding& encoding, Out* output) const {
    for (int64_t p = 0; p < count; ++p) {
      Out* out = output + (first + p) * components;
      const C* in = values + p * components;
      if (valid_[first + p]) {
        for (int k = 0; k < components; ++k) out[k] = static_cast<Out>(in[k]);
      } else {
        std::fill(out, out + components, static_cast<Out>(encoding.nodata));
      }
    }
  }

  void encodeByte(const float* values, int64_t first, int64_t count, int components,
                  const OutputEncoding& encoding, uint8_t* output) const {
    for (int64_t p = 0; p < count; ++p) {
      uint8_t* out = output + (first + p) * components;
      const float* in = values + p * components;
      if (!valid_[first + p]) {
        std::fill(out, out + components, static_cast<uint8_t>(encoding.nodata));
        continue;
      }
      for (int k = 0; k < components; ++k) {
        const double scaled =
            encoding.byteLow +
            (static_cast<double>(in[k]) - encoding.byteMinimum[k]) * encoding.byteScale[k];
        out[k] = static_cast<uint8_t>(std::clamp(std::round(scaled), 0.0, 255.0));
      }
    }
  }

  template <class C>
  std::vector<C>& scratch(size_t size) {
    std::vector<C>* buffer;
    if constexpr (std::is_same_v<C, double>)
      buffer = &chunk_;
    else
      buffer = &chunkFloat_;
    buffer->resize(size);
    return *buffer;
  }
  template <class C>
  std::vector<C>& resultScratch(size_t size) {
    std::vector<C>* buffer;
    if constexpr (std::is_same_v<C, double>)
      buffer = &resultDouble_;
    else
      buffer = &resultFloat_;
    buffer->resize(size);
    return *buffer;
  }

  Moments total_;
  CpuSpp spp_;
  std::vector<unsigned char> valid_;
  std::vector<double> shift_, sum_;
  std::vector<double> chunk_;
  std::vector<float> chunkFloat_;
  std::vector<double> resultDouble_;
  std::vector<float> resultFloat_;
};

}  // namespace

std::unique_ptr<ComputeBackend> makeCpuBackend() {
  return std::make_unique<CpuBackend>();
}

}  // namespace hyperstream
