#pragma once
// The GPU side of the engine, as the engine sees it: the CUDA backend lives in its own shared
// library (libhyperstream_cuda.so), loaded at run time, so that builds and plugins work on
// machines without CUDA.

#include "core/Device.h"
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

// Whether an NVIDIA driver with at least one device is there, found cheaply: the driver library
// alone (not the CUDA backend and cuBLAS, which cost 0.4 s and 200 MiB to load). `whyNot` says
// why not.
bool gpuDriverPresent(std::string* whyNot);

// What `auto` weighs for a job: the bytes of input it computes on, and how much work each byte
// is relative to PCA's (SPP's windows make each byte several times more work).
struct JobWork {
  int64_t bytes = 0;
  double weight = 1.0;
};

// Why `auto` should leave the GPU out of a job this small, or empty when the GPU pays: its start
// (the driver, a context and cuBLAS, 0.3-0.5 s) is only won back on enough work per CPU core
// (`cores` of them), unless CUDA already runs in this process (`gpuStarted`).
std::string tooSmallForGpu(const JobWork& work, int cores, bool gpuStarted);

// The backend for `device` (auto, cpu or one GPU). `auto` takes the GPU when one is usable and
// the job is large enough (tooSmallForGpu), and says on `feedback` what it chose and why; a GPU
// asked for but not usable throws Error("DEVICE").
std::unique_ptr<ComputeBackend> selectBackend(const DeviceChoice& device, const JobWork& work,
                                              int64_t gpuMemoryBytes, Feedback& feedback);

// selectBackend on a thread of its own: starting a GPU (the CUDA driver and a context, 0.2-0.3 s
// on an H100) then overlaps the job's checks of its outputs and planning. The CPU needs no
// thread. get() waits for the backend, passes on what selectBackend said (so that a job failing
// first says nothing about devices) and throws what it threw; the destructor waits too.
class BackendStart {
 public:
  BackendStart(const DeviceChoice& device, const JobWork& work, int64_t gpuMemoryBytes);
  std::unique_ptr<ComputeBackend> get(Feedback& feedback);

 private:
  std::vector<std::string> said_;  // selectBackend's messages, all of level Info
  std::future<std::unique_ptr<ComputeBackend>> backend_;
};

// The GPUs of a choice of several (gpu:N,M,... or gpu:all), checked against the GPUs found;
// throws Error("DEVICE").
std::vector<int> resolveGpus(const DeviceChoice& device);

}  // namespace hyperstream
