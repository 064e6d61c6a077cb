#pragma once
// SPP's kernels on GPU `device` (see CudaSppKernels.cu); throws DeviceError.

#include "spp/SppKernels.h"

#include <cstdint>
#include <memory>
#include <string>

namespace hyperstream::cuda {

std::unique_ptr<SppKernels> makeCudaSppKernels(int device, int64_t memoryBytes,
                                               std::string description);

}  // namespace hyperstream::cuda
