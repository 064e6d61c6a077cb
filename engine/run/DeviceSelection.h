#pragma once
// Where a job's kernels run: the user's DeviceChoice made into the kernels of one device, started
// on a thread of their own, and the GPU -> CPU retry.

#include "core/Device.h"
#include "core/Error.h"
#include "core/Feedback.h"
#include "run/GpuRuntime.h"
#include "run/Kernels.h"

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

namespace hyperstream {

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

// How an algorithm makes its kernels on the CPU and on a GPU.
template <class K>
struct KernelMaker {
  std::unique_ptr<K> (*cpu)();
  std::unique_ptr<K> (GpuRuntime::*gpu)(const GpuKernelOptions&);
};

// The kernels for `device` (auto, cpu or one GPU). `auto` takes the GPU when one is usable and
// the job is large enough (tooSmallForGpu), and says on `feedback` what it chose and why; a GPU
// asked for but not usable throws Error("DEVICE").
std::unique_ptr<Kernels> startKernels(
    const DeviceChoice& device, const JobWork& work, int64_t gpuMemoryBytes, Feedback& feedback,
    const std::function<std::unique_ptr<Kernels>()>& onCpu,
    const std::function<std::unique_ptr<Kernels>(GpuRuntime&, const GpuKernelOptions&)>& onGpu);

// startKernels on a thread of its own: starting a GPU (the CUDA driver and a context, 0.2-0.3 s
// on an H100) then overlaps the job's opening of its input, the checks of its outputs and its
// planning. A GPU or the CPU named by the user starts at once; `auto` starts once weigh() has
// told it the job's size. get() waits for the kernels, passes on what startKernels said (so that
// a job failing first says nothing about devices) and throws what it threw; the destructor waits
// too.
template <class K>
class KernelStart {
 public:
  KernelStart(const DeviceChoice& device, int64_t gpuMemoryBytes, KernelMaker<K> make)
      : device_(device), gpuMemoryBytes_(gpuMemoryBytes), make_(make) {
    if (!device.isAuto()) start(JobWork{});
  }
  // For `auto`: the job's size, which decides the device.
  void weigh(const JobWork& work) {
    if (device_.isAuto()) start(work);
  }
  std::unique_ptr<K> get(Feedback& feedback) {
    std::unique_ptr<Kernels> kernels = kernels_.get();
    for (const std::string& message : said_) feedback.info(QString::fromStdString(message));
    return std::unique_ptr<K>(static_cast<K*>(kernels.release()));  // made by make_
  }

 private:
  void start(const JobWork& work);
  DeviceChoice device_;
  int64_t gpuMemoryBytes_;
  KernelMaker<K> make_;
  std::vector<std::string> said_;  // startKernels' messages, all of level Info
  std::future<std::unique_ptr<Kernels>> kernels_;
};

// Keeps what startKernels says for KernelStart to pass on.
class RecordingFeedback : public Feedback {
 public:
  explicit RecordingFeedback(std::vector<std::string>& said) : said_(said) {}
  void setProgress(double) override {}
  void log(Level, const QString& message) override { said_.push_back(message.toStdString()); }
  bool isCanceled() const override { return false; }

 private:
  std::vector<std::string>& said_;
};

template <class K>
void KernelStart<K>::start(const JobWork& work) {
  const KernelMaker<K> make = make_;
  auto onCpu = [make]() -> std::unique_ptr<Kernels> { return make.cpu(); };
  if (device_.isCpu()) {
    kernels_ = std::async(std::launch::deferred, onCpu);
    return;
  }
  kernels_ = std::async(std::launch::async, [this, work, make, onCpu] {
    RecordingFeedback recorder(said_);
    return startKernels(device_, work, gpuMemoryBytes_, recorder, onCpu,
                        [make](GpuRuntime& runtime, const GpuKernelOptions& options) {
                          return std::unique_ptr<Kernels>((runtime.*make.gpu)(options));
                        });
  });
}

// The GPUs of a choice of several (gpu:N,M,... or gpu:all), checked against the GPUs found;
// throws Error("DEVICE").
std::vector<int> resolveGpus(const DeviceChoice& device);

// A job that runs on one device: for a choice of several GPUs, the first of them (saying so,
// and `why` one is enough); any other choice as it is.
DeviceChoice oneGpuOf(const DeviceChoice& device, const std::string& job, const std::string& why,
                      Feedback& feedback);

// Throws Error("DEVICE") for a GPU asked for by name; says that an `auto` run goes on on the CPU.
void reportGpuFailure(const DeviceChoice& device, const DeviceError& error, Feedback& feedback);

// Runs `job` on `device`; when a GPU fails (DeviceError) in an `auto` run, says so and runs it
// again on the CPU (nothing was written: outputs are renamed into place at the very end). A GPU
// asked for by name fails with Error("DEVICE").
template <class Job>
auto retryingOnTheCpu(const DeviceChoice& device, Feedback& feedback, const Job& job) {
  try {
    return job(device);
  } catch (const DeviceError& error) {
    reportGpuFailure(device, error, feedback);
  }
  return job(DeviceChoice::cpu());
}

}  // namespace hyperstream
