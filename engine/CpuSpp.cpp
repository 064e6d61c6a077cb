// Spatial preprocessing on the CPU: all cores, vectorised over bands.

#include "CpuSpp.h"

#include "Samples.h"

#include <QThread>

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

namespace hyperstream {

namespace {

// Runs f(first, last) over [0, count) split between the machine's cores.
template <class F>
void inParallel(int64_t count, F&& f) {
  const int64_t threads = std::min<int64_t>(std::max(1, QThread::idealThreadCount()), count);
  if (threads <= 1) {
    f(int64_t{0}, count);
    return;
  }
  std::vector<std::thread> workers;
  for (int64_t t = 0; t < threads; ++t)
    workers.emplace_back([&, t] { f(count * t / threads, count * (t + 1) / threads); });
  for (std::thread& worker : workers) worker.join();
}

// Sum of squares in 8 running sums so that the compiler vectorises it without reassociating.
template <class T>
HYPERSTREAM_VECTOR_CLONES double sumOfSquares(const T* __restrict pixel, int bands, double scale) {
  double lanes[8] = {};
  int b = 0;
  for (; b + 8 <= bands; b += 8)
    for (int j = 0; j < 8; ++j) {
      const double v = static_cast<double>(pixel[b + j]) * scale;
      lanes[j] += v * v;
    }
  double sum = 0;
  for (; b < bands; ++b) sum += (pixel[b] * scale) * (pixel[b] * scale);
  for (double lane : lanes) sum += lane;
  return sum;
}

// 1 / |pixel|; samples so large that their squares overflow are scaled by the largest first.
template <class T>
double unitScale(const T* pixel, int bands) {
  const double norm2 = sumOfSquares(pixel, bands, 1.0);
  if (std::isfinite(norm2)) return 1.0 / std::sqrt(norm2);
  double largest = 0;
  for (int b = 0; b < bands; ++b)
    largest = std::max(largest, std::abs(static_cast<double>(pixel[b])));
  return 1.0 / (std::sqrt(sumOfSquares(pixel, bands, 1.0 / largest)) * largest);
}

template <class T>
void unitSpectra(const T* data, int64_t pixels, int bands, const ValidPixel<T>& isValid,
                 UnitBlock& block) {
  block.unit.resize(static_cast<size_t>(pixels) * bands);
  block.valid.resize(pixels);
  inParallel(pixels, [&](int64_t first, int64_t last) {
    for (int64_t p = first; p < last; ++p) {
      const T* pixel = data + p * bands;
      float* unit = &block.unit[p * bands];
      block.valid[p] = validSpectrum(pixel, bands, isValid);
      if (!block.valid[p]) {
        std::fill(unit, unit + bands, 0.0f);
        continue;
      }
      const double scale = unitScale(pixel, bands);
      for (int b = 0; b < bands; ++b) unit[b] = static_cast<float>(pixel[b] * scale);
    }
  });
}

// |u - v|^2, in 16 running sums so that the compiler vectorises it without reassociating.
HYPERSTREAM_VECTOR_CLONES float distance2(const float* __restrict u, const float* __restrict v,
                                          int bands) {
  float lanes[16] = {};
  int b = 0;
  for (; b + 16 <= bands; b += 16)
    for (int j = 0; j < 16; ++j) {
      const float d = u[b + j] - v[b + j];
      lanes[j] += d * d;
    }
  float sum = 0;
  for (; b < bands; ++b) sum += (u[b] - v[b]) * (u[b] - v[b]);
  for (float lane : lanes) sum += lane;
  return sum;
}

// Row or column `i + delta` under the border rule, or -1 when it is not used; `reflected` tells
// whether the mirror rule moved it.
int64_t neighbour(int64_t i, int delta, int64_t size, bool mirror, bool& reflected) {
  int64_t j = i + delta;
  reflected = false;
  if (j >= 0 && j < size) return j;
  if (!mirror) return -1;
  reflected = true;
  j = j < 0 ? -j : 2 * (size - 1) - j;  // the edge itself not repeated
  return j >= 0 && j < size ? j : -1;
}

// The spectral angle between unit spectra, 2 asin(|u - v| / 2): accurate for small angles, where
// arccos of a dot product is not. Neighbours' angles are mostly small; there asin's Taylor series
// (to t^11, relative error below 1e-8 for t < 0.25) is several times cheaper than asinf.
float spectralAngle(const float* u, const float* v, int bands) {
  const float t = std::min(1.0f, std::sqrt(distance2(u, v, bands)) * 0.5f);
  if (t >= 0.25f) return 2.0f * std::asin(t);
  const float t2 = t * t;
  return 2.0f * t *
         (1.0f +
          t2 * (1.0f / 6 + t2 * (3.0f / 40 +
                                 t2 * (15.0f / 336 + t2 * (105.0f / 3456 + t2 * 945.0f / 42240)))));
}

}  // namespace

double CpuSpp::run(const SppStrip& strip, const SppOutput& output) {
  const int bands = strip.bands;
  const int64_t width = strip.width;
  if (windowHalo_ != strip.halo) {
    window_ = Window(strip.halo);
    windowHalo_ = strip.halo;
  }
  const Window& window = window_;
  withSampleType(strip.type, [&](auto sample) {
    using T = decltype(sample);
    const T* samples = static_cast<const T*>(strip.data);
    unitSpectra(samples, strip.blockRows * width, bands, ValidPixel<T>(strip.nodata, bands),
                block_);
    float* alphaOut = output.alpha;
    float* rhoOut = output.rho;
    const int64_t pixels = strip.rows * width;
    // Every neighbour pair inside the strip is measured once, for both pixels: gamma is
    // symmetric. Angles go into a table, one slot per pixel and offset, summed in offset
    // order afterwards, so that alpha does not depend on strips or threads.
    const int offsetCount = static_cast<int>(window.offsets.size());
    angles_.assign(static_cast<size_t>(pixels) * offsetCount, -1.0f);  // < 0: no neighbour
    auto outputPixel = [&](int64_t row, int64_t col) -> int64_t {
      return row >= strip.row0 && row < strip.row0 + strip.rows ? (row - strip.row0) * width + col
                                                                : -1;
    };
    inParallel(pixels, [&](int64_t first, int64_t last) {
      for (int64_t i = first; i < last; ++i) {
        const int64_t row = strip.row0 + i / width;
        const int64_t col = i % width;
        const int64_t p = (row - strip.blockRow0) * width + col;  // in the block
        if (!block_.valid[p]) continue;
        const float* u = &block_.unit[p * bands];
        for (int o = 0; o < offsetCount; ++o) {
          const Window::Offset& offset = window.offsets[o];
          bool reflectedRow = false, reflectedCol = false;
          const int64_t r = neighbour(row, offset.dr, strip.height, strip.mirror, reflectedRow);
          const int64_t cc = neighbour(col, offset.dc, width, strip.mirror, reflectedCol);
          if (r < 0 || cc < 0) continue;
          const int64_t partner = reflectedRow || reflectedCol ? -1 : outputPixel(r, cc);
          if (!offset.forward && partner >= 0) continue;  // the partner measures it
          const int64_t q = (r - strip.blockRow0) * width + cc;
          if (!block_.valid[q]) continue;
          const float gamma = spectralAngle(u, &block_.unit[q * bands], bands);
          angles_[i * offsetCount + o] = gamma;
          if (partner >= 0) angles_[partner * offsetCount + offset.reverse] = gamma;
        }
      }
    });
    alphas_.assign(pixels, 0.0);
    inParallel(pixels, [&](int64_t first, int64_t last) {
      std::vector<double> displaced(bands);
      for (int64_t i = first; i < last; ++i) {
        const int64_t p = (strip.row0 - strip.blockRow0) * width + i;  // in the block
        if (!block_.valid[p]) {
          std::fill(displaced.begin(), displaced.end(), strip.outputNodata);
          alphaOut[i] = rhoOut[i] = std::numeric_limits<float>::quiet_NaN();
        } else {
          double weights = 0, weighted = 0;
          for (int o = 0; o < offsetCount; ++o) {
            const float gamma = angles_[i * offsetCount + o];
            if (gamma < 0) continue;
            weights += window.offsets[o].beta;
            weighted += window.offsets[o].beta * gamma;
          }
          const double alpha = weights > 0 ? weighted / weights : 0.0;
          const double shrink = 1 / ((1 + std::sqrt(alpha)) * (1 + std::sqrt(alpha)));
          const T* y = samples + p * bands;
          for (int b = 0; b < bands; ++b)
            displaced[b] =
                (static_cast<double>(y[b]) - strip.centroid[b]) * shrink + strip.centroid[b];
          alphaOut[i] = static_cast<float>(alpha);
          rhoOut[i] = static_cast<float>(1 / shrink);
          alphas_[i] = alpha;
        }
        if (strip.outputType == GDT_Float64)
          std::copy(displaced.begin(), displaced.end(),
                    static_cast<double*>(output.cube) + i * bands);
        else
          std::transform(displaced.begin(), displaced.end(),
                         static_cast<float*>(output.cube) + i * bands,
                         [](double v) { return static_cast<float>(v); });
      }
    });
  });
  double sum = 0;
  for (double a : alphas_) sum += a;
  return sum;
}

}  // namespace hyperstream
