// The GPU backend's compute stages on a cube already in memory, as PcaJob drives them (strips of
// 64 MiB, the cube resident on the device), with the device's own clock:
//   bench_backend [ROWS] [COLS] [BANDS] [COMPONENTS] [ROUNDS] [GPU COUNTS]
// Round 1 is cold (CUDA loads kernels lazily on their first launch); later rounds are warm. With
// more than one GPU, each GPU takes a band of rows in a thread of its own, as `--gpus` does; the
// moments are merged on the host and each GPU projects its rows; the compute stages then take as
// long as the slowest GPU. GPU COUNTS is a list ("1,2"): each round runs every count in turn on
// the same cube, so that their ratio is measured side by side.

#include "core/Error.h"
#include "projection/PcaKernels.h"
#include "projection/PcaModel.h"
#include "run/GpuRuntime.h"

#include <QElapsedTimer>
#include <QThread>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <vector>

using namespace hyperstream;

int main(int argc, char** argv) {
  const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 2300;
  const int64_t cols = argc > 2 ? std::atoll(argv[2]) : 2300;
  const int bands = argc > 3 ? std::atoi(argv[3]) : 198;
  const int components = argc > 4 ? std::atoi(argv[4]) : 10;
  const int rounds = argc > 5 ? std::atoi(argv[5]) : 4;
  std::vector<int> gpuCounts;
  for (const QString& count : QString(argc > 6 ? argv[6] : "1").split(','))
    gpuCounts.push_back(std::max(1, count.toInt()));
  const int mostGpus = *std::max_element(gpuCounts.begin(), gpuCounts.end());
  std::string whyNot;
  GpuRuntime* runtime = gpuRuntime(&whyNot);
  if (!runtime) {
    std::fprintf(stderr, "no GPU backend: %s\n", whyNot.c_str());
    return 1;
  }
  try {  // before the cube is made
    const int found = runtime->deviceCount();
    if (found < mostGpus) {
      std::fprintf(stderr, "%d GPU(s) asked for, %d found\n", mostGpus, found);
      return 1;
    }
  } catch (const DeviceError& e) {
    std::fprintf(stderr, "no usable GPU: %s\n", e.what());
    return 1;
  }
  // Correlated uint16 spectra: a few smooth factors plus noise. Blocks of rows are filled on every
  // core, each from its own seed, so the cube does not depend on the thread count (one thread took
  // minutes for a 5 GB cube).
  const int64_t pixels = rows * cols;
  // Page-locked, as a job's strip buffers are (copies from pageable memory ran at 5-8 GB/s, staged
  // by the calling thread).
  const std::unique_ptr<PcaKernels> allocator = runtime->createPcaKernels(GpuKernelOptions{});
  const HostMemory memory = allocator->allocateHost(static_cast<size_t>(pixels) * bands * 2);
  auto* cube = reinterpret_cast<uint16_t*>(memory.get());
  constexpr int64_t kBlockRows = 16;
  std::atomic<int64_t> nextBlock{0};
  auto fillBlocks = [&] {
    for (int64_t block = nextBlock++; block * kBlockRows < rows; block = nextBlock++) {
      std::mt19937 random(static_cast<unsigned>(block + 1));
      std::normal_distribution<double> normal;
      const int64_t end = std::min(rows, (block + 1) * kBlockRows) * cols;
      for (int64_t p = block * kBlockRows * cols; p < end; ++p) {
        const double a = normal(random), b = normal(random);
        for (int k = 0; k < bands; ++k)
          cube[p * bands + k] = static_cast<uint16_t>(std::clamp<long>(
              std::lround(3000 + 400 * a * (1 + k % 7) + 150 * b * (k % 3) + 20 * normal(random)),
              0, 65535));
      }
    }
  };
  std::vector<std::thread> fillers(std::max(1, QThread::idealThreadCount()));
  for (std::thread& filler : fillers) filler = std::thread(fillBlocks);
  for (std::thread& filler : fillers) filler.join();
  const std::vector<double> nodata(bands, NAN);
  const int64_t stripRows = std::max<int64_t>(1, (64ll << 20) / (cols * bands * 2));
  std::printf("%lld x %lld x %d uint16 (%.2f GB), strips of %lld rows, %d components\n",
              static_cast<long long>(rows), static_cast<long long>(cols), bands,
              pixels * bands * 2 / 1e9, static_cast<long long>(stripRows), components);
  // Runs work(gpu) for every GPU at once, one thread each.
  auto onEveryGpu = [&](int gpus, const std::function<void(int)>& work) {
    std::vector<std::unique_ptr<QThread>> threads;
    for (int gpu = 0; gpu < gpus; ++gpu) {
      threads.emplace_back(QThread::create([&work, gpu] { work(gpu); }));
      threads.back()->start();
    }
    for (auto& thread : threads) thread->wait();
  };
  // One round on `gpus` GPUs; returns the compute stages' time (the slowest GPU's).
  auto runRound = [&](int round, int gpus) {
    std::vector<std::unique_ptr<PcaKernels>> backends(gpus);
    std::vector<bool> resident(gpus);
    std::vector<Moments> parts(gpus);
    auto rowsOf = [&](int gpu) {  // as rowShare: [g * rows / gpus, (g + 1) * rows / gpus)
      return std::pair<int64_t, int64_t>{rows * gpu / gpus, rows * (gpu + 1) / gpus};
    };
    auto view = [&](int64_t first, int64_t row0, int64_t n, bool withData) {
      StripView v;
      v.data = withData ? cube + row0 * cols * bands : nullptr;
      v.type = SampleType::UInt16;
      v.pixels = n * cols;
      v.bands = bands;
      v.nodata = nodata.data();
      v.firstPixel = (row0 - first) * cols;
      return v;
    };
    onEveryGpu(gpus, [&](int gpu) {
      GpuKernelOptions options;
      options.device = gpu;
      backends[gpu] = runtime->createPcaKernels(options);
      const auto [first, end] = rowsOf(gpu);
      CubeLayout layout{(end - first) * cols, bands, SampleType::UInt16, stripRows * cols, bands};
      resident[gpu] = backends[gpu]->prepare(layout);
    });
    QElapsedTimer wall;
    wall.start();
    onEveryGpu(gpus, [&](int gpu) {
      const auto [first, end] = rowsOf(gpu);
      for (int64_t row = first; row < end; row += stripRows)
        backends[gpu]->accumulateMoments(view(first, row, std::min(stripRows, end - row), true));
      parts[gpu] = backends[gpu]->takeMoments(bands);
    });
    Moments moments(bands);
    for (const Moments& part : parts) moments.merge(part);
    const double pass1 = wall.nsecsElapsed() * 1e-9;
    std::vector<std::string> warnings;
    const PcaModel model = fitPca(moments, MatrixType::Covariance, warnings);
    const Projection projection = model.projection(components);
    OutputEncoding encoding;
    wall.start();
    onEveryGpu(gpus, [&](int gpu) {
      const auto [first, end] = rowsOf(gpu);
      std::vector<float> out(static_cast<size_t>(stripRows * cols) * components);
      for (int64_t row = first; row < end; row += stripRows)
        backends[gpu]->project(view(first, row, std::min(stripRows, end - row), !resident[gpu]),
                               projection, encoding, out.data());
    });
    const double pass2 = wall.nsecsElapsed() * 1e-9;
    double slowest = 0;
    for (int gpu = 0; gpu < gpus; ++gpu) {
      const DeviceTimes t = backends[gpu]->deviceTimes();
      slowest = std::max(slowest, t.moments + t.projection);
      std::printf(
          "round %d%s, gpu %d: device moments %.1f ms, projection %.1f ms (sum %.1f ms); upload "
          "%.1f ms (%.1f GB/s), download %.1f ms\n",
          round, round == 1 ? " (cold)" : "", gpu, t.moments * 1e3, t.projection * 1e3,
          (t.moments + t.projection) * 1e3, t.upload * 1e3, t.uploadBytes / t.upload / 1e9,
          t.download * 1e3);
    }
    std::printf(
        "round %d: %d GPU(s), compute stages %.1f ms (slowest GPU); host pass 1 %.1f ms, "
        "pass 2 %.1f ms\n",
        round, gpus, slowest * 1e3, pass1 * 1e3, pass2 * 1e3);
    return slowest;
  };
  for (int round = 1; round <= rounds; ++round) {
    std::vector<double> seconds(gpuCounts.size());
    for (size_t k = 0; k < gpuCounts.size(); ++k) seconds[k] = runRound(round, gpuCounts[k]);
    for (size_t k = 1; k < seconds.size(); ++k)
      std::printf("round %d: %d GPU(s) %.2fx faster than %d\n", round, gpuCounts[k],
                  seconds[0] / seconds[k], gpuCounts[0]);
  }
  return 0;
}
