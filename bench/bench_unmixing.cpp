// The unmixing chain file to file in one long-lived process, as QGIS runs its algorithms: each
// round runs, for each endmember count P, the I/O floor of the abundances (read the image, write
// P Float32 bands), ATGP, VCA and N-FINDR (writing the endmember table) and FCLS abundances from
// VCA's endmembers. Round 1 pays the process's first use of the device; later rounds are what a
// second run in a QGIS session pays. Prints every run, then the median of the rounds after the
// first (of all rounds when there is one).
//   bench_unmixing INPUT WORKDIR [DEVICE] [ROUNDS] [P...]

#include "DeviceOption.h"
#include "IoFloor.h"
#include "core/Feedback.h"
#include "unmixing/AbundanceJob.h"
#include "unmixing/EndmemberJob.h"

#include <QElapsedTimer>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

using namespace hyperstream;

namespace {

class QuietFeedback : public Feedback {
 public:
  void setProgress(double) override {}
  void log(Level level, const QString& message) override {
    if (level == Level::Warning) std::printf("    warning: %s\n", message.toUtf8().constData());
  }
  bool isCanceled() const override { return false; }
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_unmixing INPUT WORKDIR [DEVICE] [ROUNDS] [P...]\n");
    return 2;
  }
  const std::string input = argv[1], work = argv[2];
  const std::string device = argc > 3 ? argv[3] : "auto";
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 3;
  std::vector<int> counts;
  for (int i = 5; i < argc; ++i) counts.push_back(std::atoi(argv[i]));
  if (counts.empty()) counts = {6, 12};
  QuietFeedback feedback;
  QElapsedTimer timer;
  std::map<std::string, std::vector<double>> times;  // by "P=6 vca", later rounds
  auto record = [&](int round, const std::string& what, double seconds, const std::string& info) {
    std::printf("round %d  %-16s %.3f s  %s\n", round, what.c_str(), seconds, info.c_str());
    std::fflush(stdout);
    if (round > 1 || rounds == 1) times[what].push_back(seconds);
  };
  try {
    for (int round = 1; round <= rounds; ++round)
      for (const int p : counts) {
        const std::string tag = "P=" + std::to_string(p) + " ";
        std::remove((work + "/floor.tif").c_str());
        timer.start();
        const bench::IoFloorTimes floor = bench::ioFloor(input, work + "/floor.tif", p, 1);
        record(round, tag + "floor", timer.nsecsElapsed() * 1e-9,
               "read " + std::to_string(floor.read) + ", write " + std::to_string(floor.write));
        for (const EndmemberMethod method :
             {EndmemberMethod::Atgp, EndmemberMethod::Vca, EndmemberMethod::Nfindr}) {
          EndmemberOptions options;
          options.input = input;
          options.output = work + "/" + endmemberMethodName(method) + ".csv";
          options.device = parseDevice(device);
          options.search.method = method;
          options.search.count = p;
          timer.start();
          const EndmemberResult result = runEndmembers(options, feedback);
          record(round, tag + endmemberMethodName(method), timer.nsecsElapsed() * 1e-9,
                 std::to_string(result.search.passes) + " passes, " +
                     (result.resident ? "resident, " : "streamed, ") + result.backend);
        }
        AbundanceOptions options;
        options.input = input;
        options.endmembers = work + "/vca.csv";
        options.output = work + "/fcls" + std::to_string(round) + ".tif";
        options.device = parseDevice(device);
        std::remove(options.output.c_str());
        timer.start();
        const AbundanceResult result = runAbundances(options, feedback);
        const DeviceTimes& d = result.device;
        record(round, tag + "fcls", timer.nsecsElapsed() * 1e-9,
               "device: upload " + std::to_string(d.upload) + ", unmix " + std::to_string(d.unmix) +
                   ", download " + std::to_string(d.download) + "; " + result.backend);
        std::remove(options.output.c_str());
      }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_unmixing: %s\n", e.what());
    return 1;
  }
  std::printf("medians (%s):\n", rounds > 1 ? "rounds 2 and later" : "one round");
  for (const auto& [what, values] : times)
    std::printf("  %-16s %.3f s\n", what.c_str(), median(values));
  return 0;
}
