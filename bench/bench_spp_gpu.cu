// The SPP kernels alone, warm, on a cube already on the GPU (docs/benchmarks.md, "SPP on the
// H100"):
//   bench_spp_gpu [ROWS] [COLS] [BANDS] [WINDOW...]
// Times (median of 10, CUDA events) the unit-spectra, alpha and displacement kernels for each
// window on a random uint16 cube with smooth spectra, truncate border, Float32 output.

#include "CudaTiming.h"
#include "Kernels.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

namespace {

template <class T>
T* deviceArray(size_t count) {
  void* p = nullptr;
  ok(cudaMalloc(&p, count * sizeof(T)), "cudaMalloc");
  return static_cast<T*>(p);
}

double medianMs(const std::function<void()>& work) {
  return medianGpuSeconds(10, work) * 1e3;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace hyperstream::cuda;
  const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 350;
  const int64_t cols = argc > 2 ? std::atoll(argv[2]) : 350;
  const int bands = argc > 3 ? std::atoi(argv[3]) : 188;
  std::vector<int> windows;
  for (int i = 4; i < argc; ++i) windows.push_back(std::atoi(argv[i]));
  if (windows.empty()) windows = {3, 5, 7, 9, 11, 13, 15};
  const int64_t pixels = rows * cols;

  // Smooth spectra: a few random mixtures of two shapes plus noise, like a real scene's DN.
  std::vector<uint16_t> cube(static_cast<size_t>(pixels) * bands);
  std::mt19937 random(7);
  std::uniform_real_distribution<double> uniform(0, 1);
  for (int64_t p = 0; p < pixels; ++p) {
    const double mix = uniform(random);
    for (int b = 0; b < bands; ++b) {
      const double x = static_cast<double>(b) / bands;
      const double value =
          2000 + 1500 * mix * std::sin(3 * x) + 800 * (1 - mix) * x * x + 40 * uniform(random);
      cube[static_cast<size_t>(p) * bands + b] = static_cast<uint16_t>(value);
    }
  }
  auto* raw = deviceArray<uint16_t>(cube.size());
  ok(cudaMemcpy(raw, cube.data(), cube.size() * sizeof(uint16_t), cudaMemcpyHostToDevice), "copy");
  auto* nodata = deviceArray<uint16_t>(bands);
  auto* hasNodata = deviceArray<unsigned char>(bands);
  ok(cudaMemset(nodata, 0, bands * sizeof(uint16_t)), "memset");
  ok(cudaMemset(hasNodata, 0, bands), "memset");
  auto* unit = deviceArray<float>(cube.size());
  auto* valid = deviceArray<unsigned char>(pixels);
  auto* alpha = deviceArray<float>(2 * pixels);
  auto* out = deviceArray<float>(cube.size());
  auto* centroid = deviceArray<double>(bands);
  ok(cudaMemset(centroid, 0, bands * sizeof(double)), "memset");

  cudaDeviceProp properties{};
  ok(cudaGetDeviceProperties(&properties, 0), "properties");
  std::printf("%s, %lld x %lld x %d uint16\n", properties.name, static_cast<long long>(rows),
              static_cast<long long>(cols), bands);
  const double unitMs = medianMs(
      [&] { sppUnitSpectra(raw, pixels, bands, nodata, hasNodata, unit, valid, nullptr); });
  sppAlpha(unit, valid, cols, rows, 0, rows, 0, rows, bands, 1, false, alpha, alpha + pixels,
           nullptr);  // rho for the displacement
  const double displaceMs = medianMs(
      [&] { sppDisplace(raw, valid, alpha + pixels, pixels, bands, centroid, 0.0, out, nullptr); });
  std::printf("unit spectra %.3f ms, displacement %.3f ms\n", unitMs, displaceMs);
  std::printf("window\talpha_ms\tall_kernels_ms\tpair_GB_per_s\n");
  for (const int window : windows) {
    const int halo = window / 2;
    const double alphaMs = medianMs([&] {
      sppAlpha(unit, valid, cols, rows, 0, rows, 0, rows, bands, halo, false, alpha, alpha + pixels,
               nullptr);
    });
    // Unit-spectra bytes the alpha kernel would read if every pair came from memory.
    const double pairBytes = static_cast<double>(pixels) * (window * window - 1) * bands * 4;
    std::printf("%d\t%.3f\t%.3f\t%.0f\n", window, alphaMs, unitMs + alphaMs + displaceMs,
                pairBytes / (alphaMs * 1e6));
  }
  return 0;
}
