#pragma once
// The GPU side of the engine, as the engine sees it: the CUDA library (libhyperstream_cuda.so),
// loaded at run time so that builds and plugins work on machines without CUDA, makes each
// algorithm's kernels on a GPU.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hyperstream {

class ColumnDetectKernels;
class PcaKernels;
class SppKernels;
class PixelKernels;

struct GpuDevice {
  int index = 0;
  std::string name;
  int64_t totalBytes = 0;
  int64_t freeBytes = 0;
  int major = 0, minor = 0;  // compute capability
};

struct GpuKernelOptions {
  int device = 0;
  // Device memory the kernels may use; 0: the device's free memory less a margin.
  int64_t memoryBytes = 0;
};

class GpuRuntime {
 public:
  virtual ~GpuRuntime() = default;
  // "CUDA driver 13.0, runtime 13.0"; throws DeviceError.
  virtual std::string versions() const = 0;
  // Throws DeviceError when the driver is missing or too old. Starts a context on every device.
  virtual std::vector<GpuDevice> devices() const = 0;
  // How many devices there are, without starting their contexts; throws as devices().
  virtual int deviceCount() const = 0;
  // Each algorithm's kernels on a GPU; throw DeviceError when the device cannot be used.
  virtual std::unique_ptr<PcaKernels> createPcaKernels(const GpuKernelOptions& options) = 0;
  virtual std::unique_ptr<SppKernels> createSppKernels(const GpuKernelOptions& options) = 0;
  virtual std::unique_ptr<PixelKernels> createPixelKernels(const GpuKernelOptions& options) = 0;
  virtual std::unique_ptr<ColumnDetectKernels> createColumnDetectKernels(
      const GpuKernelOptions& options) = 0;
};

// The library's one exported entry point.
using GpuRuntimeEntry = GpuRuntime* (*)();
constexpr const char* kGpuRuntimeSymbol = "hyperstream_gpu_runtime";

// The CUDA runtime, loaded on first use; null (and `whyNot` set) when this build has none or its
// libraries cannot be loaded here. HYPERSTREAM_CUDA_LIBRARY names the library file to load
// instead of the one beside the engine.
GpuRuntime* gpuRuntime(std::string* whyNot);

// Whether an NVIDIA driver with at least one device is there, found cheaply: the driver library
// alone (not the CUDA library and cuBLAS, which cost 0.4 s and 200 MiB to load). `whyNot` says
// why not.
bool gpuDriverPresent(std::string* whyNot);

}  // namespace hyperstream
