// Where a GPU run's fixed costs go, step by step in the order a PCA job meets them: loading the
// CUDA backend's library, finding the devices, creating the backend (context, streams, cuBLAS),
// planning a cube (device allocations), page-locked strip buffers, and tearing it all down.
//   bench_gpu_startup [ROWS] [COLS] [BANDS] [BUFFER_MIB] [BUFFERS] [sequential|parallel]
//                     [exit|quick-exit]
// Prints each step's seconds, and the wall-clock times at main's entry and exit (seconds since
// the epoch) so that a script can tell process start and exit apart from the steps. `parallel`
// page-locks the buffers from a thread each; `quick-exit` ends with std::_Exit, skipping the
// static destructors (CUDA's runtime tears its context down in one).

#include "core/Error.h"
#include "run/ComputeBackend.h"
#include "run/GpuRuntime.h"

#include <QElapsedTimer>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace hyperstream;

namespace {

double epochSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  const double entered = epochSeconds();
  const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 2300;
  const int64_t cols = argc > 2 ? std::atoll(argv[2]) : 2300;
  const int bands = argc > 3 ? std::atoi(argv[3]) : 198;
  const size_t bufferBytes = static_cast<size_t>(argc > 4 ? std::atoll(argv[4]) : 64) << 20;
  const int buffers = argc > 5 ? std::atoi(argv[5]) : 5;
  const bool parallel = argc > 6 && std::string(argv[6]) == "parallel";
  const bool quickExit = argc > 7 && std::string(argv[7]) == "quick-exit";
  QElapsedTimer timer;
  auto step = [&](const char* what) {
    std::printf("%-44s %8.4f s\n", what, timer.nsecsElapsed() * 1e-9);
    timer.start();
  };
  timer.start();
  std::string whyNot;
  GpuRuntime* runtime = gpuRuntime(&whyNot);
  if (!runtime) {
    std::fprintf(stderr, "no GPU backend: %s\n", whyNot.c_str());
    return 1;
  }
  step("load libhyperstream_cuda.so");
  try {
    runtime->devices();
    step("find the devices (the driver's start)");
    std::unique_ptr<ComputeBackend> backend = runtime->createBackend(GpuBackendOptions{});
    step("create the backend (context, streams, cuBLAS)");
    CubeLayout layout;
    layout.pixels = rows * cols;
    layout.bands = bands;
    layout.type = GDT_UInt16;
    layout.maxStripPixels =
        std::max<int64_t>(1, static_cast<int64_t>(bufferBytes) / (int64_t{2} * bands));
    layout.maxComponents = bands;
    const bool resident = backend->prepare(layout);
    step(resident ? "plan the cube (resident on the device)" : "plan the cube (streamed)");
    {
      std::vector<HostMemory> pool;
      if (parallel) {
        for (int i = 0; i < buffers; ++i) pool.emplace_back(nullptr, [](unsigned char*) {});
        std::vector<std::thread> threads;
        threads.reserve(buffers);
        for (int i = 0; i < buffers; ++i)
          threads.emplace_back([&, i] { pool[i] = backend->allocateHost(bufferBytes); });
        for (std::thread& thread : threads) thread.join();
      } else {
        for (int i = 0; i < buffers; ++i) pool.push_back(backend->allocateHost(bufferBytes));
      }
      step(parallel ? "page-locked buffers, a thread each" : "page-locked buffers");
    }
    step("free the page-locked buffers");
    backend.reset();
    step("destroy the backend");
  } catch (const DeviceError& e) {
    std::fprintf(stderr, "GPU error: %s\n", e.what());
    return 1;
  }
  std::printf("main entered %.4f left %.4f\n", entered, epochSeconds());
  if (quickExit) {
    std::fflush(stdout);
    std::_Exit(0);
  }
  return 0;
}
