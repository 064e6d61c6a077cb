#pragma once
// PCA's kernels on GPU `device` (see CudaPcaKernels.cu); throws DeviceError.

#include "projection/PcaKernels.h"

#include <cstdint>
#include <memory>
#include <string>

namespace hyperstream::cuda {

std::unique_ptr<PcaKernels> makeCudaPcaKernels(int device, int64_t memoryBytes,
                                               std::string description);

}  // namespace hyperstream::cuda
