#include "run/GpuRuntime.h"

#include <QDir>
#include <QFileInfo>
#include <QLibrary>
#include <QMutex>

#include <dlfcn.h>

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
  // An executable started through PATH is named by its bare argv[0]: ask the kernel instead.
  QString file = QString::fromLocal8Bit(info.dli_fname);
  if (!file.contains('/')) file = QFileInfo(QStringLiteral("/proc/self/exe")).canonicalFilePath();
  const QDir here = QFileInfo(file).absoluteDir();
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

}  // namespace hyperstream
