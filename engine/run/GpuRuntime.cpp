#include "run/GpuRuntime.h"

#include "core/Error.h"
#include "core/Feedback.h"

#include <QDir>
#include <QFileInfo>
#include <QLibrary>
#include <QMutex>
#include <QThread>

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>

namespace hyperstream {

namespace {

constexpr const char* kLibraryName = "libhyperstream_cuda.so";

// Where the CUDA library may be: beside the code holding the engine (the CLI, the QGIS plugin's
// library), the build tree's cuda/ folder, an install's lib/hyperstream/.
QStringList candidatePaths() {
  if (const char* explicitPath = std::getenv("HYPERSTREAM_CUDA_LIBRARY"))
    return {QString::fromLocal8Bit(explicitPath)};
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&gpuRuntime), &info) == 0 || !info.dli_fname) return {};
  const QDir here = QFileInfo(QString::fromLocal8Bit(info.dli_fname)).absoluteDir();
  return {here.filePath(kLibraryName), here.filePath(QString("../cuda/") + kLibraryName),
          here.filePath(QString("../lib/hyperstream/") + kLibraryName)};
}

}  // namespace

GpuRuntime* gpuRuntime(std::string* whyNot) {
  // Loaded once and never unloaded: backends and page-locked buffers point into it.
  static QMutex mutex;
  static bool tried = false;
  static GpuRuntime* runtime = nullptr;
  static std::string failure;
  QMutexLocker lock(&mutex);
  if (!tried) {
    tried = true;
    failure = "this build of Hyperstream has no CUDA backend (" + std::string(kLibraryName) +
              " not found)";
    for (const QString& path : candidatePaths()) {
      if (!QFileInfo::exists(path)) continue;
      auto* library = new QLibrary(path);  // kept loaded for the process's lifetime
      if (!library->load()) {
        failure = "the CUDA backend cannot be loaded: " + library->errorString().toStdString();
        delete library;
        break;
      }
      auto entry = reinterpret_cast<GpuRuntimeEntry>(library->resolve(kGpuRuntimeSymbol));
      if (!entry) {
        failure = path.toStdString() + " is not a Hyperstream CUDA backend";
        break;
      }
      runtime = entry();
      break;
    }
  }
  if (!runtime && whyNot) *whyNot = failure;
  return runtime;
}

bool gpuDriverPresent(std::string* whyNot) {
  // Kept loaded, as the CUDA backend would load it anyway.
  static void* const driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver) {
    *whyNot = "no NVIDIA driver (libcuda.so.1 not found)";
    return false;
  }
  using Init = int (*)(unsigned int);
  using Count = int (*)(int*);
  const auto init = reinterpret_cast<Init>(dlsym(driver, "cuInit"));
  const auto count = reinterpret_cast<Count>(dlsym(driver, "cuDeviceGetCount"));
  int devices = 0;
  if (!init || !count) {
    *whyNot = "libcuda.so.1 is not an NVIDIA driver library";
  } else if (const int status = init(0)) {
    *whyNot = "the NVIDIA driver does not start (CUDA error " + std::to_string(status) + ")";
  } else if (count(&devices) != 0 || devices < 1) {
    *whyNot = "no CUDA device";
  }
  return devices > 0;
}

namespace {

// Set once a GPU backend started in this process: later jobs pay no start for the GPU.
std::atomic<bool> gpuRunning{false};

// Input bytes per CPU core below which a job is done faster on the CPU than on a GPU that has to
// start first.
constexpr int64_t kGpuWorthBytesPerCore = 16ll << 20;

QString mebibytes(double bytes) { return QString::number(bytes / (1 << 20), 'f', 0) + " MiB"; }

}  // namespace

std::string tooSmallForGpu(const JobWork& work, int cores, bool gpuStarted) {
  if (gpuStarted) return {};
  const double weighted = static_cast<double>(work.bytes) * work.weight;
  const double worth = static_cast<double>(kGpuWorthBytesPerCore) * cores;
  if (weighted >= worth) return {};
  return QString("%1 of work on %2 CPU cores, below the %3 from which a GPU makes up for its start")
      .arg(mebibytes(weighted))
      .arg(cores)
      .arg(mebibytes(worth))
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

namespace {

// The GPU backend for GPU `index`; throws DeviceError.
std::unique_ptr<ComputeBackend> startGpu(int index, int64_t gpuMemoryBytes) {
  std::string whyNot;
  GpuRuntime* runtime = gpuRuntime(&whyNot);
  if (!runtime) throw DeviceError(whyNot);
  GpuBackendOptions options;
  options.device = index;
  options.memoryBytes = gpuMemoryBytes;
  std::unique_ptr<ComputeBackend> backend = runtime->createBackend(options);
  gpuRunning = true;
  return backend;
}

}  // namespace

std::unique_ptr<ComputeBackend> selectBackend(const DeviceChoice& device, const JobWork& work,
                                              int64_t gpuMemoryBytes, Feedback& feedback) {
  if (device.isCpu()) return makeCpuBackend();
  if (!device.isAuto()) {
    if (device.severalGpus())
      throw Error("DEVICE", "one backend runs on one GPU ('" + device.text() + "' lists several)");
    try {
      return startGpu(device.gpuIndices().front(), gpuMemoryBytes);
    } catch (const DeviceError& e) {
      throw Error("DEVICE", std::string("GPU requested, but no usable GPU: ") + e.what());
    }
  }
  std::string whyNot;
  if (gpuDriverPresent(&whyNot)) {
    whyNot = tooSmallForGpu(work, std::max(1, QThread::idealThreadCount()), gpuRunning);
    if (!whyNot.empty()) {
      feedback.info(QString::fromStdString("Device auto: the CPU, for " + whyNot));
      return makeCpuBackend();
    }
    try {
      return startGpu(0, gpuMemoryBytes);
    } catch (const DeviceError& e) {
      whyNot = e.what();
    }
  }
  feedback.info(QString::fromStdString("No usable GPU (" + whyNot + "); running on the CPU"));
  return makeCpuBackend();
}

namespace {

// Keeps what a backend's selection says for the job to pass on.
class Recorder : public Feedback {
 public:
  explicit Recorder(std::vector<std::string>& said) : said_(said) {}
  void setProgress(double) override {}
  void log(Level, const QString& message) override { said_.push_back(message.toStdString()); }
  bool isCanceled() const override { return false; }

 private:
  std::vector<std::string>& said_;
};

}  // namespace

BackendStart::BackendStart(const DeviceChoice& device, const JobWork& work,
                           int64_t gpuMemoryBytes)
    : backend_(device.isCpu() ? std::async(std::launch::deferred, [] { return makeCpuBackend(); })
                              : std::async(std::launch::async, [this, device, work, gpuMemoryBytes] {
                                  Recorder recorder(said_);
                                  return selectBackend(device, work, gpuMemoryBytes, recorder);
                                })) {}

std::unique_ptr<ComputeBackend> BackendStart::get(Feedback& feedback) {
  std::unique_ptr<ComputeBackend> backend = backend_.get();
  for (const std::string& message : said_) feedback.info(QString::fromStdString(message));
  return backend;
}

}  // namespace hyperstream
