#pragma once
// The GPU side of the engine, as the engine sees it: the CUDA backend lives in its own shared
// library (libhyperstream_cuda.so), loaded at run time, so that builds and plugins work on
// machines without CUDA.

#include "run/ComputeBackend.h"

#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <vector>

namespace hyperstream {

class Feedback;

struct GpuDevice {
  int index = 0;
  std::string name;
  int64_t totalBytes = 0;
  int64_t freeBytes = 0;
  int major = 0, minor = 0;  // compute capability
};

struct GpuBackendOptions {
  int device = 0;
  // Device memory the backend may use; 0: the device's free memory less a margin.
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
  // Throws DeviceError when the device cannot be used.
  virtual std::unique_ptr<ComputeBackend> createBackend(const GpuBackendOptions& options) = 0;
};

// The library's one exported entry point.
using GpuRuntimeEntry = GpuRuntime* (*)();
constexpr const char* kGpuRuntimeSymbol = "hyperstream_gpu_runtime";

// The CUDA runtime, loaded on first use; null (and `whyNot` set) when this build has none or its
// libraries cannot be loaded here. HYPERSTREAM_CUDA_LIBRARY names the library file to load
// instead of the one beside the engine.
GpuRuntime* gpuRuntime(std::string* whyNot);

// The backend for DEVICE = auto | cpu | gpu | gpu:N. `auto` takes the GPU when one is usable and
// says on `feedback` why not otherwise; gpu without a usable GPU throws Error("DEVICE").
std::unique_ptr<ComputeBackend> selectBackend(const std::string& device, int64_t gpuMemoryBytes,
                                              Feedback& feedback);

// selectBackend on a thread of its own: starting a GPU (the CUDA driver and a context, 0.2-0.3 s
// on an H100) then overlaps the job's opening of its input and planning. `cpu` needs no thread.
// get() waits for the backend, passes on what selectBackend said (so that a job failing on its
// input first says nothing about devices) and throws what it threw; the destructor waits too.
class BackendStart {
 public:
  BackendStart(const std::string& device, int64_t gpuMemoryBytes);
  std::unique_ptr<ComputeBackend> get(Feedback& feedback);

 private:
  std::vector<std::string> said_;  // selectBackend's messages, all of level Info
  std::future<std::unique_ptr<ComputeBackend>> backend_;
};

// Parses DEVICE: -1 for auto, -2 for cpu, the GPU index otherwise; throws Error("DEVICE").
int parseDevice(const std::string& device);
// The GPUs of DEVICE = gpu:N,M,... or gpu:all (checked against the GPUs found; throws
// Error("DEVICE")); empty for the single-device forms.
std::vector<int> gpuList(const std::string& device);

}  // namespace hyperstream
