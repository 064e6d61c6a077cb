#pragma once
// The unmixing chain's kernels on GPU `device` (see CudaPixelKernels.cu); throws DeviceError.

#include "pixels/PixelKernels.h"

#include <cstdint>
#include <memory>
#include <string>

namespace hyperstream::cuda {

std::unique_ptr<PixelKernels> makeCudaPixelKernels(int device, int64_t memoryBytes,
                                                   std::string description);

}  // namespace hyperstream::cuda
