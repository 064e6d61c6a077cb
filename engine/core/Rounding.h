#pragma once
// How a rebuilt value becomes an output sample, one rule for the CPU and the GPU.

#include <cmath>
#include <limits>
#include <type_traits>

#ifdef __CUDACC__
#define HYPERSTREAM_HOST_DEVICE __host__ __device__
#else
#define HYPERSTREAM_HOST_DEVICE
#endif

namespace hyperstream {

// Floating-point outputs: the value itself. Integer outputs: rounded half away from zero and
// clamped to the type's range; with `avoidNodata` (the output declares `nodata`), a valid value
// that lands on nodata moves one step towards the unrounded value (off the range's end), so that
// no valid pixel reads as nodata.
template <class Out>
HYPERSTREAM_HOST_DEVICE inline Out toSample(double value, double nodata, bool avoidNodata) {
  if constexpr (std::is_floating_point_v<Out>) {
    return static_cast<Out>(value);
  } else {
    constexpr double lowest = static_cast<double>(std::numeric_limits<Out>::lowest());
    constexpr double highest = static_cast<double>(std::numeric_limits<Out>::max());
    double rounded = round(value);  // NaN cannot reach here: only valid pixels are rebuilt
    rounded = rounded < lowest ? lowest : (rounded > highest ? highest : rounded);
    if (avoidNodata && rounded == nodata)
      rounded = (value > nodata && nodata < highest) || nodata == lowest ? nodata + 1 : nodata - 1;
    return static_cast<Out>(rounded);
  }
}

}  // namespace hyperstream
