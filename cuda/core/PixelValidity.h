#pragma once
// A pixel's validity on the device, by the engine's rule (core/Samples.h: every band finite and
// not its band's nodata), a warp's lanes over the bands.

#include <cuda_runtime.h>

#include <type_traits>

namespace hyperstream::cuda {

// nodataValue null: no band has a nodata value. Every lane of the warp gets the answer.
template <class T>
__device__ inline bool validPixel(const T* __restrict__ pixel, int bands, int lane,
                                  const T* __restrict__ nodataValue,
                                  const unsigned char* __restrict__ hasNodata) {
  bool bad = false;
  for (int b = lane; b < bands; b += 32) {
    const T v = pixel[b];
    if constexpr (std::is_floating_point_v<T>) bad |= !isfinite(v);
    if (nodataValue) bad |= hasNodata[b] && v == nodataValue[b];
  }
  return !__any_sync(0xffffffffu, bad);
}

}  // namespace hyperstream::cuda
