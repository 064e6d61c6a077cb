// The scene's material count (materials/MaterialCount.h) on whole rasters: the signal subspace's
// dimension, the reconstruction curve, the count, and the time the curve takes (median of 3), so
// that the estimate's cost and its answers on real scenes can be looked at together.
//
//   build/bench/bench_material_count ../shared/data/*.tif
#include "core/Error.h"
#include "io/Raster.h"
#include "materials/MaterialCount.h"
#include "pixels/PixelKernels.h"
#include "stats/SignalSubspace.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

using namespace hyperstream;

int main(int argc, char** argv) {
  ensureGdalDrivers();
  for (int i = 1; i < argc; ++i) {
    try {
      JobInput input = openJobInput(argv[i], {}, {}, {}, "the material count");
      const RasterInfo& info = input.info;
      const std::vector<double> cube =
          readWindowAsDouble(*input.dataset, input.bands, 0, 0, info.width, info.height, "INPUT");
      StripView strip;
      strip.data = cube.data();
      strip.type = SampleType::Float64;
      strip.pixels = info.width * info.height;
      strip.bands = static_cast<int>(input.bands.size());
      strip.nodata = input.nodata.data();
      strip.groupPixels = strip.pixels;
      const std::unique_ptr<PixelKernels> kernels = makeCpuPixelKernels();
      CubeLayout layout;
      layout.pixels = strip.pixels;
      layout.bands = strip.bands;
      layout.maxStripPixels = strip.pixels;
      kernels->prepare(layout);
      kernels->accumulateMoments(strip);
      const Moments moments = kernels->takeMoments(strip.bands);
      std::vector<int> varying;
      for (int b = 0; b < moments.bands; ++b)
        if (moments.maximum[b] > moments.minimum[b]) varying.push_back(b);
      const int dimension = estimateSignalSubspace(moments, varying).dimension;
      std::vector<double> seconds;
      MaterialCount count;
      for (int run = 0; run < 3; ++run) {
        const auto start = std::chrono::steady_clock::now();
        PixelSampler sampler(strip.pixels, kMaterialSamplePixels);
        sampler.take(strip);
        count = countMaterials(sampler.sample(), dimension, kMaxEndmembers);
        seconds.push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
      std::sort(seconds.begin(), seconds.end());
      std::printf("%s: %d materials (HySime %d) from %lld pixels, %.2f s; %s\n", argv[i],
                  count.count, dimension, static_cast<long long>(count.samplePixels), seconds[1],
                  count.curveText().c_str());
    } catch (const Error& e) {
      std::printf("%s: %s\n", argv[i], e.what());
    }
  }
}
