#pragma once
// How a rebuilt value becomes an output sample, one rule for the CPU and the GPU.

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#ifdef __CUDACC__
#define HYPERSTREAM_HOST_DEVICE __host__ __device__
#else
#define HYPERSTREAM_HOST_DEVICE
#endif

namespace hyperstream {

// Floating-point outputs take a value as it is. Integer outputs take it rounded half away from
// zero and clamped to the type's range; with `avoidNodata` (the output declares `nodata`), a valid
// value that lands on nodata moves one step towards the unrounded value (off the range's end), so
// that no valid pixel reads as nodata. Two steps, each a loop of conversions and selects that
// vectorises on its own (together, or with std::round, GCC does not vectorise them):
//   clampForRounding: the value clamped to one past the type's range (so that it converts);
//   roundClamped: the rest, from a clamped value.
// toSample does both, for one value. Only valid pixels' values come here: they are finite.
template <class Out>
HYPERSTREAM_HOST_DEVICE inline double clampForRounding(double value) {
  if constexpr (std::is_floating_point_v<Out>) {
    return value;
  } else {
    constexpr double below = static_cast<double>(std::numeric_limits<Out>::lowest()) - 1;
    constexpr double above = static_cast<double>(std::numeric_limits<Out>::max()) + 1;
    const double v = value < below ? below : value;
    return v > above ? above : v;
  }
}

template <class Out>
HYPERSTREAM_HOST_DEVICE inline Out roundClamped(double v, double nodata, bool avoidNodata) {
  if constexpr (std::is_floating_point_v<Out>) {
    return static_cast<Out>(v);
  } else {
    using Whole = std::conditional_t<(sizeof(Out) < 4), int32_t, int64_t>;
    constexpr double lowest = static_cast<double>(std::numeric_limits<Out>::lowest());
    constexpr double highest = static_cast<double>(std::numeric_limits<Out>::max());
    // Half away from zero as one add and one truncation: adding the largest double below 0.5,
    // with v's sign, carries into the next whole number exactly when |fraction| >= 0.5, for
    // every |v| < 2^52 (the sum rounds to nearest, ties to even).
    const double half = v < 0 ? -0.49999999999999994 : 0.49999999999999994;
    double rounded = std::trunc(v + half);
    rounded = rounded < lowest ? lowest : rounded;
    rounded = rounded > highest ? highest : rounded;
    const double reserved = avoidNodata ? nodata : std::numeric_limits<double>::quiet_NaN();
    const double up = nodata == highest ? nodata - 1 : nodata + 1;
    const double down = nodata == lowest ? nodata + 1 : nodata - 1;
    rounded = rounded == reserved ? (v > nodata ? up : down) : rounded;
    return static_cast<Out>(static_cast<Whole>(rounded));
  }
}

template <class Out>
HYPERSTREAM_HOST_DEVICE inline Out toSample(double value, double nodata, bool avoidNodata) {
  return roundClamped<Out>(clampForRounding<Out>(value), nodata, avoidNodata);
}

}  // namespace hyperstream
