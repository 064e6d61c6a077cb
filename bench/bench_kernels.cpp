// Compute floors of this machine, and the CPU backend's kernels against them:
//   bench_kernels [pixels] [bands]
// times DSYRK alone (the compute floor of the covariance), the backend's moments (validity,
// conversion, DSYRK) and its projection to 10 and to all components, on random uint16 pixels, from
// a pixel-interleaved strip and from the same strip band-major (as a band-interleaved file holds
// it).

#include "projection/PcaKernels.h"
#include "projection/PcaModel.h"

#include <cblas.h>

#include <QElapsedTimer>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

using namespace hyperstream;

namespace {
template <class F>
double medianSeconds(int repeats, F&& f) {
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    QElapsedTimer timer;
    timer.start();
    f();
    times.push_back(timer.nsecsElapsed() * 1e-9);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  const int64_t pixels = argc > 1 ? std::atoll(argv[1]) : int64_t{2300} * 73;
  const int bands = argc > 2 ? std::atoi(argv[2]) : 198;
  std::printf("OpenBLAS: %s, core %s, %d threads\n", openblas_get_config(), openblas_get_corename(),
              openblas_get_num_threads());
  std::mt19937 random(1);
  std::vector<uint16_t> strip(static_cast<size_t>(pixels) * bands);
  for (auto& v : strip) v = static_cast<uint16_t>(1000 + random() % 4000);
  std::vector<double> centred(strip.begin(), strip.end());
  std::vector<double> c(static_cast<size_t>(bands) * bands);
  const double flops = static_cast<double>(pixels) * bands * (bands + 1);  // SYRK's n b (b+1)

  const double syrk = medianSeconds(5, [&] {
    for (int64_t p = 0; p < pixels; p += 2300)
      cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, bands,
                  static_cast<int>(std::min<int64_t>(2300, pixels - p)), 1.0,
                  centred.data() + p * bands, bands, 1.0, c.data(), bands);
  });
  std::vector<double> nodata(bands, NAN);
  StripView view{strip.data(), SampleType::UInt16, pixels, bands, nodata.data(), 2300};
  auto backend = makeCpuPcaKernels();
  Moments total(bands);
  const double moments = medianSeconds(5, [&] {
    backend->accumulateMoments(view);
    total = backend->takeMoments(bands);
  });
  std::vector<std::string> warnings;
  const PcaModel model = fitPca(total, MatrixType::Covariance, warnings);
  const Projection projection = model.projection(10);
  OutputEncoding encoding;
  std::vector<float> out(static_cast<size_t>(pixels) * 10);
  const double project =
      medianSeconds(5, [&] { backend->project(view, projection, encoding, out.data()); });
  // Every component in float64, scored as RX scores them (the sum of their squares, one value a
  // pixel): RX's and ACE's arithmetic (bands² multiply-adds a pixel; their triangular factor does
  // half), against the cores' rate (bench_fma).
  Projection all = model.projection(model.componentCount());
  all.scores.whitened = all.components;
  OutputEncoding float64;
  float64.type = OutputType::Float64;
  std::vector<double> allOut(static_cast<size_t>(pixels));
  const double projectAll =
      medianSeconds(5, [&] { backend->project(view, all, float64, allOut.data()); });
  const double allMultiplyAdds = static_cast<double>(pixels) * bands * all.components;
  std::vector<uint16_t> byBand(strip.size());
  for (int64_t p = 0; p < pixels; ++p)
    for (int b = 0; b < bands; ++b) byBand[b * pixels + p] = strip[p * bands + b];
  StripView bandView = view;
  bandView.data = byBand.data();
  bandView.bandMajor = true;
  const double bandMoments = medianSeconds(5, [&] {
    backend->accumulateMoments(bandView);
    total = backend->takeMoments(bands);
  });
  const double bandProject =
      medianSeconds(5, [&] { backend->project(bandView, projection, encoding, out.data()); });
  const double gb = static_cast<double>(pixels) * bands * 2 / 1e9;
  std::printf("%lld pixels x %d bands (%.2f GB as uint16), medians of 5:\n",
              static_cast<long long>(pixels), bands, gb);
  std::printf("  DSYRK alone (k=2300 blocks): %8.4f s  %6.1f GFLOP/s\n", syrk, flops / syrk / 1e9);
  std::printf("  backend moments:             %8.4f s  %6.1f GFLOP/s equivalent, %.2f GB/s\n",
              moments, flops / moments / 1e9, gb / moments);
  std::printf("  backend projection, 10 PCs:  %8.4f s  %.2f GB/s\n", project, gb / project);
  std::printf("  float64 projection, %d PCs, scored: %8.4f s  %.1f G multiply-adds/s\n",
              all.components, projectAll, allMultiplyAdds / projectAll / 1e9);
  std::printf("  band-major moments:          %8.4f s  %.2f GB/s\n", bandMoments, gb / bandMoments);
  std::printf("  band-major projection:       %8.4f s  %.2f GB/s\n", bandProject, gb / bandProject);
  const double values = static_cast<double>(pixels) * bands / 1e9;
  std::printf(
      "  per 1e9 values: moments %.3f s, projection %.3f s, DSYRK %.3f s; band-major "
      "moments %.3f s, projection %.3f s\n",
      moments / values, project / values, syrk / values, bandMoments / values,
      bandProject / values);
  return 0;
}
