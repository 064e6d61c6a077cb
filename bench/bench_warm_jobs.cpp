// File to file in one long-lived process, as QGIS runs its algorithms: each round runs the I/O
// floor and a PCA job (10 Float32 components) on PCA_INPUT, then the floor and an SPP job (window
// 11, Float32) on SPP_INPUT, all in this process. Round 1 pays the process's first use of the
// device (library, driver, first kernel launches); later rounds are what a second run in a QGIS
// session pays.
//   bench_warm_jobs PCA_INPUT SPP_INPUT WORKDIR [DEVICE] [ROUNDS] [STRIP_ROWS]
// Every run writes a new file (replacing a finished one would add freeing its pages to the run).
// Prints each run's wall time and, for the jobs, their own stage times and their messages with
// the seconds since the job began (a coarse timeline: the first message comes once the backend
// has planned the job, the PCA's second once pass 1 and the fit are done). STRIP_ROWS > 0 sets
// the PCA's strip height (0: the engine's choice).

#include "DeviceOption.h"
#include "IoFloor.h"
#include "core/Feedback.h"
#include "pca/PcaJob.h"
#include "spp/SppJob.h"

#include <QElapsedTimer>

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace hyperstream;

namespace {

// A job's options with its input, output and device set, the rest left at their defaults.
template <class Options>
Options jobOptions(const std::string& input, const std::string& output, const std::string& device) {
  Options options;
  options.input = input;
  options.output = output;
  options.device = parseDevice(device);
  return options;
}

// Prints every message with the seconds since restart().
class TimelineFeedback : public Feedback {
 public:
  void restart() { clock_.start(); }
  void setProgress(double) override {}
  void log(Level, const QString& message) override {
    std::printf("    +%.3f s  %s\n", clock_.nsecsElapsed() * 1e-9, message.toUtf8().constData());
  }
  bool isCanceled() const override { return false; }

 private:
  QElapsedTimer clock_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: bench_warm_jobs PCA_INPUT SPP_INPUT WORKDIR [DEVICE] [ROUNDS] "
                 "[STRIP_ROWS]\n");
    return 2;
  }
  const std::string pcaInput = argv[1], sppInput = argv[2], work = argv[3];
  const std::string device = argc > 4 ? argv[4] : "auto";
  const int rounds = argc > 5 ? std::atoi(argv[5]) : 3;
  const int64_t stripRows = argc > 6 ? std::atoll(argv[6]) : 0;
  TimelineFeedback feedback;
  QElapsedTimer timer;
  auto floor = [&](int round, const char* job, const std::string& input, int components) {
    std::remove((work + "/floor.tif").c_str());
    timer.start();
    const bench::IoFloorTimes times = bench::ioFloor(input, work + "/floor.tif", components, 1);
    std::printf("round %d  %s floor %.3f s (read %.3f, write %.3f)\n", round, job,
                timer.nsecsElapsed() * 1e-9, times.read, times.write);
  };
  try {
    for (int round = 1; round <= rounds; ++round) {
      floor(round, "pca", pcaInput, 10);
      auto pca = jobOptions<PcaOptions>(pcaInput, work + "/pcs.tif", device);
      pca.components = 10;
      pca.stripRows = stripRows;
      std::remove(pca.output.c_str());
      timer.start();
      feedback.restart();
      const PcaResult pcaResult = runPca(pca, feedback);
      const StageTimes& stages = pcaResult.seconds;
      std::printf(
          "round %d  pca job   %.3f s (setup %.3f, read %.3f, moments %.3f, eigen %.3f, "
          "projection %.3f, write %.3f, total %.3f; device: upload %.3f, moments %.3f, "
          "projection %.3f, download %.3f; %s)\n",
          round, timer.nsecsElapsed() * 1e-9, stages.setup, stages.read, stages.moments,
          stages.eigen, stages.projection, stages.write, stages.total, stages.device.upload,
          stages.device.moments, stages.device.projection, stages.device.download,
          pcaResult.backend.c_str());
      floor(round, "spp", sppInput, 0);  // as many bands as the input
      // SPP runs on one device: GPU 0 when PCA is given several.
      const bool gpuList = device == "gpu:all" || device.find(',') != std::string::npos;
      auto spp = jobOptions<SppOptions>(sppInput, work + "/spp.tif", gpuList ? "gpu" : device);
      spp.window = 11;
      std::remove(spp.output.c_str());
      timer.start();
      feedback.restart();
      const SppResult sppResult = runSpp(spp, feedback);
      std::printf("round %d  spp job   %.3f s (total %.3f; %s)\n", round,
                  timer.nsecsElapsed() * 1e-9, sppResult.seconds, sppResult.backend.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_warm_jobs: %s\n", e.what());
    return 1;
  }
  return 0;
}
