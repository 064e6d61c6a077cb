#pragma once
// The per-column detectors' kernels on GPU `device` (see CudaColumnDetectKernels.cu); throws
// DeviceError.

#include "detect/ColumnDetectKernels.h"

#include <cstdint>
#include <memory>
#include <string>

namespace hyperstream::cuda {

std::unique_ptr<ColumnDetectKernels> makeCudaColumnDetectKernels(int device, int64_t memoryBytes,
                                                                 std::string description);

}  // namespace hyperstream::cuda
