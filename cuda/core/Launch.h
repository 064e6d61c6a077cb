#pragma once
// What the device kernels of every algorithm share: launch shapes and launch checks.

#include "cuda/core/CudaResources.h"

#include <cstdint>

// Expands INSTANTIATE(T) for every sample type the kernels take (core/Samples.h's SampleType).
// clang-format off
#define HYPERSTREAM_FOR_EACH_SAMPLE_TYPE(INSTANTIATE) \
  INSTANTIATE(uint8_t) INSTANTIATE(uint16_t) INSTANTIATE(int16_t) INSTANTIATE(uint32_t) \
  INSTANTIATE(int32_t) INSTANTIATE(float) INSTANTIATE(double)
// clang-format on

namespace hyperstream::cuda {

constexpr int kWarps = 8;  // per block
constexpr int kThreads = 32 * kWarps;
constexpr int kPixelsPerBlock = 128;  // of the sweeps: enough blocks to fill the GPU
constexpr double kInfinity = __builtin_huge_val();

inline unsigned gridFor(int64_t items, int64_t perBlock) {
  const int64_t blocks = (items + perBlock - 1) / perBlock;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > (1 << 20) ? (1 << 20) : blocks));
}

inline void checkLaunch(const char* kernel) {
  check(cudaGetLastError(), kernel);
}

}  // namespace hyperstream::cuda
