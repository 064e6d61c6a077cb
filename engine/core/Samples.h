#pragma once
// Sample types of strips and the valid-pixel test, shared by the backends.

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

// GCC builds AVX-512, AVX2 (x86-64-v3: with FMA, which a plain "avx2" copy lacks) and baseline
// copies of hot loops marked with this and picks one by the CPU's features when the library loads
// (clang does not clone templates; it gets the baseline).
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define HYPERSTREAM_VECTOR_CLONES \
  __attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))
#else
#define HYPERSTREAM_VECTOR_CLONES
#endif

namespace hyperstream {

// Whether hot loops should use 64-byte vectors: on CPUs with AVX-512 one register holds them;
// elsewhere they take 32-byte ones, since GCC splits a wider vector over register pairs and spills
// (3-5x slower, measured).
inline bool wideVectors() {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  return __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

// The sample types the kernels take (GDAL's, without GDAL: the CUDA library links none).
enum class SampleType { Byte, UInt16, Int16, UInt32, Int32, Float32, Float64 };

// Calls f with a value of the `index`th of Types.
template <class T, class... Rest, class F>
decltype(auto) withTypeAt(int index, F&& f) {
  if constexpr (sizeof...(Rest) > 0)
    if (index > 0) return withTypeAt<Rest...>(index - 1, std::forward<F>(f));
  return f(T{});
}

// Calls f with a value of the C++ type that stores `type`.
template <class F>
decltype(auto) withSampleType(SampleType type, F&& f) {
  // In SampleType's order.
  return withTypeAt<uint8_t, uint16_t, int16_t, uint32_t, int32_t, float, double>(
      static_cast<int>(type), std::forward<F>(f));
}

// Where sample (pixel p, band b) of a strip lies: data[p * pixelStep + b * bandStep]. Strips are
// pixel-interleaved (a pixel's bands together) or band-major (each band's pixels together, as a
// band-interleaved file holds them: read without a gather).
struct SampleLayout {
  int64_t pixelStep = 1;
  int64_t bandStep = 1;
  static SampleLayout pixelInterleaved(int bands) { return {bands, 1}; }
  static SampleLayout bandMajor(int64_t pixels) { return {1, pixels}; }
  bool isPixelInterleaved() const { return bandStep == 1; }
};

// Keeps valid[p] only where sample p of one band is finite and differs from the band's nodata
// (hasNodata): the band-major form of allSamplesValid, one band at a time.
template <class T>
HYPERSTREAM_VECTOR_CLONES void clearInvalidSamples(const T* __restrict samples, int64_t count,
                                                   T nodata, bool hasNodata,
                                                   unsigned char* __restrict valid) {
  const auto has = static_cast<int>(hasNodata);
  for (int64_t p = 0; p < count; ++p) {
    int bad = has & static_cast<int>(samples[p] == nodata);
    if constexpr (std::is_floating_point_v<T>)
      bad |= static_cast<int>(!(std::abs(samples[p]) <= std::numeric_limits<T>::max()));
    valid[p] = static_cast<unsigned char>(valid[p] & (bad ^ 1));
  }
}

inline int sampleSize(SampleType type) {
  return withSampleType(type, [](auto sample) { return static_cast<int>(sizeof sample); });
}

// True when every band of the pixel is finite and differs from its nodata value (has[b] != 0):
// a loop without early exit, which the compiler vectorises.
template <class T>
HYPERSTREAM_VECTOR_CLONES bool allSamplesValid(const T* __restrict pixel,
                                               const T* __restrict nodata,
                                               const unsigned char* __restrict has, int bands) {
  int bad = 0;
  for (int b = 0; b < bands; ++b) {
    if constexpr (std::is_floating_point_v<T>)
      bad |= static_cast<int>(!(std::abs(pixel[b]) <= std::numeric_limits<T>::max()));
    bad |= static_cast<int>(has[b]) & static_cast<int>(pixel[b] == nodata[b]);
  }
  return bad == 0;
}

// The valid-pixel test for samples of type T: every band finite and not its nodata value.
template <class T>
class ValidPixel {
 public:
  ValidPixel(const double* nodata, int bands) : bands_(bands), value_(bands), has_(bands, 0) {
    for (int b = 0; b < bands; ++b) {
      const double v = nodata[b];
      // A nodata value the type cannot hold never matches a sample; a floating type holds it
      // rounded to its own precision, as a file of that type stores it (-1.23e34 in Float32).
      if (std::isnan(v) || v < static_cast<double>(std::numeric_limits<T>::lowest()) ||
          v > static_cast<double>(std::numeric_limits<T>::max()) ||
          (!std::is_floating_point_v<T> && static_cast<double>(static_cast<T>(v)) != v))
        continue;
      value_[b] = static_cast<T>(v);
      has_[b] = 1;
      anyNodata_ = true;
    }
  }
  // True when no sample of this type can be invalid (integer type, no nodata).
  bool alwaysValid() const { return !std::is_floating_point_v<T> && !anyNodata_; }
  // Per band: the nodata value in the sample type, and whether the band has one it can hold.
  const std::vector<T>& nodataValues() const { return value_; }
  const std::vector<unsigned char>& hasNodata() const { return has_; }

  bool operator()(const T* pixel) const {
    return allSamplesValid(pixel, value_.data(), has_.data(), bands_);
  }

 private:
  int bands_;
  std::vector<T> value_;
  std::vector<unsigned char> has_;
  bool anyNodata_ = false;
};

// A valid pixel: the sample type's test (finite, not nodata) and a spectrum that is not all zero.
template <class T>
bool validSpectrum(const T* pixel, int bands, const ValidPixel<T>& isValid) {
  if (!isValid(pixel)) return false;
  for (int b = 0; b < bands; ++b)
    if (pixel[b] != T(0)) return true;
  return false;
}

}  // namespace hyperstream
