#pragma once
// The unmixing chain's kernels on GPU `device` (see CudaUnmixingKernels.cu); throws DeviceError.

#include "pixels/UnmixingKernels.h"

#include <cstdint>
#include <memory>
#include <string>

namespace hyperstream::cuda {

std::unique_ptr<UnmixingKernels> makeCudaUnmixingKernels(int device, int64_t memoryBytes,
                                                         std::string description);

}  // namespace hyperstream::cuda
