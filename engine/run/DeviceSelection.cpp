#include "run/DeviceSelection.h"

#include <QThread>

#include <algorithm>
#include <atomic>

namespace hyperstream {

namespace {

// Set once GPU kernels started in this process: later jobs pay no start for the GPU.
std::atomic<bool> gpuRunning{false};

// Input bytes per CPU core below which a job is done faster on the CPU than on a GPU that has to
// start first.
constexpr int64_t kGpuWorthBytesPerCore = 16ll << 20;

QString sizeText(double bytes) {
  return bytes < (1 << 20) ? QString::number(bytes / (1 << 10), 'f', 0) + " KiB"
                           : QString::number(bytes / (1 << 20), 'f', 0) + " MiB";
}

}  // namespace

std::string tooSmallForGpu(const JobWork& work, int cores, bool gpuStarted) {
  if (gpuStarted) return {};
  const double weighted = static_cast<double>(work.bytes) * work.weight;
  const double worth = static_cast<double>(kGpuWorthBytesPerCore) * cores;
  if (weighted >= worth) return {};
  return QString("%1 of work on %2 CPU cores, below the %3 from which a GPU makes up for its start")
      .arg(sizeText(weighted))
      .arg(cores)
      .arg(sizeText(worth))
      .toStdString();
}

std::vector<int> resolveGpus(const DeviceChoice& device) {
  std::string whyNot;
  GpuRuntime* runtime = gpuRuntime(&whyNot);
  // Only counted here: each GPU's thread starts its own context, side by side.
  int found = 0;
  try {
    if (!runtime) throw DeviceError(whyNot);
    found = runtime->deviceCount();
  } catch (const DeviceError& e) {
    throw Error("DEVICE", "GPUs requested, but no usable GPU: " + std::string(e.what()));
  }
  std::vector<int> gpus = device.gpuIndices();
  if (device.allGpus()) {
    for (int index = 0; index < found; ++index) gpus.push_back(index);
    if (gpus.empty()) throw Error("DEVICE", "GPUs requested, but no CUDA device was found");
  }
  for (const int index : gpus)
    if (index >= found)
      throw Error("DEVICE",
                  "no GPU " + std::to_string(index) + ": " + std::to_string(found) + " found");
  return gpus;
}

std::unique_ptr<Kernels> startKernels(
    const DeviceChoice& device, const JobWork& work, int64_t gpuMemoryBytes, Feedback& feedback,
    const std::function<std::unique_ptr<Kernels>()>& onCpu,
    const std::function<std::unique_ptr<Kernels>(GpuRuntime&, const GpuKernelOptions&)>& onGpu) {
  // The kernels on GPU `index`; throws DeviceError.
  auto startGpu = [&](int index) {
    std::string whyNot;
    GpuRuntime* runtime = gpuRuntime(&whyNot);
    if (!runtime) throw DeviceError(whyNot);
    std::unique_ptr<Kernels> kernels = onGpu(*runtime, GpuKernelOptions{index, gpuMemoryBytes});
    gpuRunning = true;
    return kernels;
  };
  if (device.isCpu()) return onCpu();
  if (!device.isAuto()) {
    if (device.severalGpus())
      throw Error("DEVICE",
                  "one job's kernels run on one GPU ('" + device.text() + "' lists several)");
    try {
      return startGpu(device.gpuIndices().front());
    } catch (const DeviceError& e) {
      throw Error("DEVICE", std::string("GPU requested, but no usable GPU: ") + e.what());
    }
  }
  // Small jobs go to the CPU before the driver is even looked at (cuInit takes 0.1 s).
  std::string whyNot = tooSmallForGpu(work, std::max(1, QThread::idealThreadCount()), gpuRunning);
  if (!whyNot.empty()) {
    feedback.info(QString::fromStdString("Device auto: the CPU, for " + whyNot));
    return onCpu();
  }
  if (gpuDriverPresent(&whyNot)) {
    try {
      return startGpu(0);
    } catch (const DeviceError& e) {
      whyNot = e.what();
    }
  }
  feedback.info(QString::fromStdString("No usable GPU (" + whyNot + "); running on the CPU"));
  return onCpu();
}

DeviceChoice oneGpuOf(const DeviceChoice& device, const std::string& job, const std::string& why,
                      Feedback& feedback) {
  if (!device.severalGpus()) return device;
  const std::vector<int> gpus = resolveGpus(device);
  if (gpus.size() > 1)
    feedback.info(QString::fromStdString(job + " runs on one GPU (GPU " +
                                         std::to_string(gpus.front()) + ")" + why));
  return DeviceChoice::gpu(gpus.front());
}

void reportGpuFailure(const DeviceChoice& device, const DeviceError& error, Feedback& feedback) {
  if (!device.isAuto()) throw Error("DEVICE", std::string("the GPU failed: ") + error.what());
  feedback.warning(QString("The GPU failed (%1); running again on the CPU").arg(error.what()));
}

}  // namespace hyperstream
