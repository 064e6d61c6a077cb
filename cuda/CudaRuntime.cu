// The CUDA library's entry point: the runtime the engine loads (run/GpuRuntime.h), which finds
// the GPUs and makes each algorithm's kernels on one.

#include "cuda/core/CudaResources.h"
#include "cuda/detect/CudaColumnDetectKernels.h"
#include "cuda/pixels/CudaPixelKernels.h"
#include "cuda/projection/CudaPcaKernels.h"
#include "cuda/spp/CudaSppKernels.h"
#include "run/GpuRuntime.h"

#include <memory>
#include <string>
#include <vector>

namespace hyperstream::cuda {

namespace {

std::string version(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

// Throws unless an NVIDIA driver new enough for this build's runtime is there.
void requireDriver() {
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  if (driver == 0) throw DeviceError("no NVIDIA driver (libcuda.so.1) on this machine");
  if (driver < runtime)
    throw DeviceError("the NVIDIA driver supports CUDA " + version(driver) + ", this build needs " +
                      version(runtime) + " or newer");
}

class CudaRuntime final : public GpuRuntime {
 public:
  std::string versions() const override {
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    return (driver > 0 ? "CUDA driver " + version(driver) : std::string("no CUDA driver")) +
           ", runtime " + version(runtime);
  }

  int deviceCount() const override {
    requireDriver();
    int count = 0;
    check(cudaGetDeviceCount(&count), "no usable CUDA device");
    return count;
  }

  std::vector<GpuDevice> devices() const override {
    const int count = deviceCount();
    std::vector<GpuDevice> result;
    for (int i = 0; i < count; ++i) {
      cudaDeviceProp properties{};
      check(cudaGetDeviceProperties(&properties, i), "cudaGetDeviceProperties");
      GpuDevice device;
      device.index = i;
      device.name = properties.name;
      device.totalBytes = static_cast<int64_t>(properties.totalGlobalMem);
      device.major = properties.major;
      device.minor = properties.minor;
      size_t freeBytes = 0, totalBytes = 0;
      check(cudaSetDevice(i), "cudaSetDevice");
      check(cudaMemGetInfo(&freeBytes, &totalBytes), "cudaMemGetInfo");
      device.freeBytes = static_cast<int64_t>(freeBytes);
      result.push_back(device);
    }
    return result;
  }

  std::unique_ptr<PcaKernels> createPcaKernels(const GpuKernelOptions& options) override {
    return makeCudaPcaKernels(options.device, options.memoryBytes, describe(options.device));
  }

  std::unique_ptr<SppKernels> createSppKernels(const GpuKernelOptions& options) override {
    return makeCudaSppKernels(options.device, options.memoryBytes, describe(options.device));
  }
  std::unique_ptr<PixelKernels> createPixelKernels(const GpuKernelOptions& options) override {
    return makeCudaPixelKernels(options.device, options.memoryBytes, describe(options.device));
  }
  std::unique_ptr<ColumnDetectKernels> createColumnDetectKernels(
      const GpuKernelOptions& options) override {
    return makeCudaColumnDetectKernels(options.device, options.memoryBytes,
                                       describe(options.device));
  }

 private:
  // "gpu 0 (NVIDIA H100 ..., cuBLAS, CUDA driver 13.0, runtime 13.0)"; throws DeviceError when
  // the device cannot be used.
  std::string describe(int device) const {
    const int count = deviceCount();
    if (count == 0) throw DeviceError("no CUDA device");
    if (device < 0 || device >= count)
      throw DeviceError("there is no GPU " + std::to_string(device) + " (" + std::to_string(count) +
                        " found)");
    cudaDeviceProp properties{};
    check(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
    // The library holds code for compute capability 8.0 and 9.0 (and PTX for newer GPUs).
    if (properties.major < 8)
      throw DeviceError(std::string(properties.name) + " has compute capability " +
                        std::to_string(properties.major) + "." + std::to_string(properties.minor) +
                        "; this build needs 8.0 or newer");
    return "gpu " + std::to_string(device) + " (" + properties.name + ", cuBLAS, " + versions() +
           ")";
  }
};

}  // namespace

}  // namespace hyperstream::cuda

extern "C" __attribute__((visibility("default"))) hyperstream::GpuRuntime*
hyperstream_gpu_runtime() {
  static hyperstream::cuda::CudaRuntime runtime;
  return &runtime;
}
