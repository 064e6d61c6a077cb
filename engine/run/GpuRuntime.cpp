#include "run/GpuRuntime.h"

#include "core/Error.h"
#include "core/Feedback.h"

#include <QDir>
#include <QFileInfo>
#include <QLibrary>
#include <QMutex>

#include <dlfcn.h>

#include <algorithm>
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

std::vector<int> gpuList(const std::string& device) {
  const bool all = device == "gpu:all";
  if (!all && (device.rfind("gpu:", 0) != 0 || device.find(',') == std::string::npos)) return {};
  std::vector<int> gpus;
  if (!all)
    for (const QString& part : QString::fromStdString(device.substr(4)).split(',')) {
      bool ok = false;
      const int index = part.trimmed().toInt(&ok);
      if (!ok || index < 0)
        throw Error("DEVICE",
                    "'" + part.toStdString() + "' in '" + device + "' is not a GPU number");
      if (std::find(gpus.begin(), gpus.end(), index) != gpus.end())
        throw Error("DEVICE",
                    "GPU " + std::to_string(index) + " is listed twice in '" + device + "'");
      gpus.push_back(index);
    }
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
  if (all) {
    for (int index = 0; index < found; ++index) gpus.push_back(index);
    if (gpus.empty()) throw Error("DEVICE", "GPUs requested, but no CUDA device was found");
  }
  for (const int index : gpus)
    if (index >= found)
      throw Error("DEVICE",
                  "no GPU " + std::to_string(index) + ": " + std::to_string(found) + " found");
  return gpus;
}

int parseDevice(const std::string& device) {
  if (device == "auto") return -1;
  if (device == "cpu") return -2;
  if (device == "gpu") return 0;
  if (device.rfind("gpu:", 0) == 0) {
    const QString index = QString::fromStdString(device.substr(4));
    bool ok = false;
    const int value = index.toInt(&ok);
    if (ok && value >= 0) return value;
  }
  if (device == "gpu:all" ||
      (device.rfind("gpu:", 0) == 0 && device.find(',') != std::string::npos))
    return 0;  // several GPUs: see gpuList
  throw Error("DEVICE",
              "unknown device '" + device + "' (auto, cpu, gpu, gpu:N, gpu:N,M,... or gpu:all)");
}

std::unique_ptr<ComputeBackend> selectBackend(const std::string& device, int64_t gpuMemoryBytes,
                                              Feedback& feedback) {
  const int index = parseDevice(device);
  if (index == -2) return makeCpuBackend();
  std::string whyNot;
  if (GpuRuntime* runtime = gpuRuntime(&whyNot)) {
    try {
      GpuBackendOptions options;
      options.device = std::max(0, index);
      options.memoryBytes = gpuMemoryBytes;
      return runtime->createBackend(options);
    } catch (const DeviceError& e) {
      whyNot = e.what();
    }
  }
  if (index >= 0) throw Error("DEVICE", "GPU requested, but no usable GPU: " + whyNot);
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

BackendStart::BackendStart(const std::string& device, int64_t gpuMemoryBytes)
    : backend_(device == "cpu" ? std::async(std::launch::deferred, [] { return makeCpuBackend(); })
                               : std::async(std::launch::async, [this, device, gpuMemoryBytes] {
                                   Recorder recorder(said_);
                                   return selectBackend(device, gpuMemoryBytes, recorder);
                                 })) {}

std::unique_ptr<ComputeBackend> BackendStart::get(Feedback& feedback) {
  std::unique_ptr<ComputeBackend> backend = backend_.get();
  for (const std::string& message : said_) feedback.info(QString::fromStdString(message));
  return backend;
}

}  // namespace hyperstream
