// The unmixing kernels on the CPU: each strip split once between the worker threads, each thread
// taking its pixels eight at a time, one per vector lane: their products with the search's weights
// or the endmembers (a few columns: BLAS calls per small block spent their time waking threads on
// 16 cores), then each pixel scored or solved. Every pixel's sums run in band order on its own
// lane, so the results do not depend on the strips or the threads. The moments are the PCA
// kernels'.

#include "core/Samples.h"
#include "core/WorkerThreads.h"
#include "unmixing/UnmixingKernels.h"

#include <QMutex>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace hyperstream {

namespace {

constexpr int kLanes = 8;  // pixels per step: one AVX-512 vector of doubles, two AVX2 ones

// Eight pixels' products z[c][lane] = Σ_b (x[lane][b] − center[b]) weights[b][c] (columns ≤ 32)
// and energy[lane] = Σ_b (x[lane][b] − center[b])²; lanes past `count` repeat the last pixel.
template <class T>
HYPERSTREAM_VECTOR_CLONES void projectLanes(const T* __restrict pixels, int count, int bands,
                                            const double* __restrict center,
                                            const double* __restrict weights, int columns,
                                            double (*__restrict z)[kLanes],
                                            double* __restrict energy) {
  const T* lane[kLanes];
  for (int l = 0; l < kLanes; ++l) lane[l] = pixels + std::min(l, count - 1) * bands;
  for (int c = 0; c < columns; ++c)
    for (int l = 0; l < kLanes; ++l) z[c][l] = 0;
  for (int l = 0; l < kLanes; ++l) energy[l] = 0;
  double d[kLanes];
  for (int b = 0; b < bands; ++b) {
    for (int l = 0; l < kLanes; ++l) d[l] = static_cast<double>(lane[l][b]) - center[b];
    for (int l = 0; l < kLanes; ++l) energy[l] += d[l] * d[l];
    const double* w = weights + static_cast<int64_t>(b) * columns;
    for (int c = 0; c < columns; ++c)
      for (int l = 0; l < kLanes; ++l) z[c][l] += d[l] * w[c];
  }
}

// Eight pixels' squared residuals |x − Σ_e a_e spectrum_e|² (abundances a[e][lane]).
template <class T>
HYPERSTREAM_VECTOR_CLONES void residualLanes(const T* __restrict pixels, int count, int bands,
                                             const double* __restrict spectra, int endmembers,
                                             const double (*__restrict a)[kLanes],
                                             double* __restrict energy) {
  const T* lane[kLanes];
  for (int l = 0; l < kLanes; ++l) lane[l] = pixels + std::min(l, count - 1) * bands;
  for (int l = 0; l < kLanes; ++l) energy[l] = 0;
  double r[kLanes];
  for (int b = 0; b < bands; ++b) {
    for (int l = 0; l < kLanes; ++l) r[l] = static_cast<double>(lane[l][b]);
    for (int e = 0; e < endmembers; ++e) {
      const double s = spectra[static_cast<int64_t>(e) * bands + b];
      for (int l = 0; l < kLanes; ++l) r[l] -= a[e][l] * s;
    }
    for (int l = 0; l < kLanes; ++l) energy[l] += r[l] * r[l];
  }
}

double score(const PixelSearch& search, int slot, const double (*z)[kLanes], int lane,
             double energy) {
  const int k = search.columns;
  switch (search.rule) {
    case SearchRule::Residual: {
      double projected = 0;
      for (int c = 0; c < k; ++c) projected += z[c][lane] * z[c][lane];
      return std::max(0.0, energy - projected);
    }
    case SearchRule::Norm: {
      double norm = 0;
      for (int c = 0; c < k; ++c) norm += z[c][lane] * z[c][lane];
      return norm;
    }
    case SearchRule::Linear: {
      double value = search.constants[slot];
      for (int c = 0; c < k; ++c) value += search.coefficients[slot * k + c] * z[c][lane];
      return std::abs(value);
    }
    case SearchRule::Ratio:
      return z[1][lane] != 0 ? std::abs(z[0][lane] / z[1][lane]) : -1;
  }
  return -1;
}

class CpuUnmixingKernels : public UnmixingKernels {
 public:
  CpuUnmixingKernels() : moments_(makeCpuPcaKernels()) {}

  std::string name() const override {
    return "cpu (" + std::to_string(threads_.count()) + " threads)";
  }
  bool usesEveryCore() const override { return true; }

  bool prepare(const CubeLayout& layout) override {
    moments_->prepare(layout);
    pixels_ = layout.pixels;
    return false;
  }

  void accumulateMoments(const StripView& strip) override { moments_->accumulateMoments(strip); }
  Moments takeMoments(int bands) override { return moments_->takeMoments(bands); }

  SearchFound search(const StripView& strip, const PixelSearch& search) override {
    SearchFound found;
    found.best.resize(search.scoreCount());
    const std::vector<double> weights = paddedWeights(search);
    forEachLaneBlock(
        strip,
        [&](auto* pixels, const auto& isValid, int64_t first, int count, PartialSearch& mine) {
          double z[kMaxEndmembers][kLanes], energy[kLanes];
          projectLanes(pixels, count, strip.bands, search.center.data(), weights.data(),
                       search.columns, z, energy);
          for (int l = 0; l < count; ++l) {
            if (!isValid(pixels + static_cast<int64_t>(l) * strip.bands)) continue;
            ++mine.valid;
            for (size_t s = 0; s < mine.best.size(); ++s) {
              const Candidate c{score(search, static_cast<int>(s), z, l, energy[l]),
                                strip.firstPixel + first + l};
              if (c.score >= 0 && c.beats(mine.best[s])) mine.best[s] = c;
            }
          }
        },
        found);
    return found;
  }

  void keepProjection(const StripView& strip, const KeptProjection& projection) override {
    const int k = projection.columns;
    if (k < 1 || k > kMaxEndmembers)
      throw std::logic_error("kept projections have 1 to 32 columns");
    kept_.resize(static_cast<size_t>(pixels_) * k);
    keptColumns_ = k;
    SearchFound unused;
    forEachLaneBlock(
        strip,
        [&](auto* pixels, const auto& isValid, int64_t first, int count, PartialSearch&) {
          double z[kMaxEndmembers][kLanes], energy[kLanes];
          projectLanes(pixels, count, strip.bands, projection.center.data(),
                       projection.weights.data(), k, z, energy);
          for (int l = 0; l < count; ++l) {
            double* out = kept_.data() + (strip.firstPixel + first + l) * k;
            const bool valid = isValid(pixels + static_cast<int64_t>(l) * strip.bands);
            for (int c = 0; c < k; ++c)
              out[c] =
                  valid ? z[c][l] + projection.offset[c] : std::numeric_limits<double>::quiet_NaN();
          }
        },
        unused);
  }

  SearchFound searchKept(const PixelSearch& search) override {
    const std::vector<double> none(keptColumns_, std::numeric_limits<double>::quiet_NaN());
    StripView view;
    view.data = kept_.data();
    view.type = SampleType::Float64;
    view.pixels = pixels_;
    view.bands = keptColumns_;
    view.nodata = none.data();  // NaN marks the invalid pixels
    view.groupPixels = pixels_;
    return this->search(view, search);
  }

  std::vector<double> keptValues(int64_t pixel) override {
    const double* values = kept_.data() + pixel * keptColumns_;
    return {values, values + keptColumns_};
  }

  UnmixStats unmix(const StripView& strip, const Unmixing& unmixing, void* abundances,
                   void* rmse) override {
    UnmixStats stats;
    withOutputType(unmixing.type, [&](auto sample) {
      using Out = decltype(sample);
      threads_.split(strip.pixels, [&](int64_t p0, int64_t p1) {
        const UnmixStats mine = withSampleType(strip.type, [&](auto value) {
          using T = decltype(value);
          return unmixRange<T, Out>(strip, unmixing, p0, p1, static_cast<Out*>(abundances),
                                    static_cast<Out*>(rmse));
        });
        QMutexLocker lock(&mergeLock_);
        stats.validPixels += mine.validPixels;
        stats.unsolved += mine.unsolved;
      });
    });
    return stats;
  }

 private:
  struct PartialSearch {
    std::vector<Candidate> best;
    int64_t valid = 0;
  };

  // The search's weights with at least one column (Residual searches start with none).
  static std::vector<double> paddedWeights(const PixelSearch& search) {
    if (search.columns > kMaxEndmembers)
      throw std::logic_error("a search has at most kMaxEndmembers columns");
    return search.columns > 0 ? search.weights : std::vector<double>(search.bands, 0.0);
  }

  // Calls work(pixels, validity test, first pixel, count <= 8, partial) for each block of eight
  // pixels of the strip, each worker with a partial result merged into `found` at the end.
  template <class Work>
  void forEachLaneBlock(const StripView& strip, const Work& work, SearchFound& found) {
    if (strip.bandMajor) throw std::logic_error("unmixing kernels take pixel-interleaved strips");
    withSampleType(strip.type, [&](auto sample) {
      using T = decltype(sample);
      const ValidPixel<T> isValid(strip.nodata, strip.bands);
      const T* data = static_cast<const T*>(strip.data);
      threads_.split(strip.pixels, [&](int64_t p0, int64_t p1) {
        PartialSearch mine{std::vector<Candidate>(found.best.size()), 0};
        for (int64_t p = p0; p < p1; p += kLanes) {
          const int count = static_cast<int>(std::min<int64_t>(kLanes, p1 - p));
          work(data + p * strip.bands, isValid, p, count, mine);
        }
        QMutexLocker lock(&mergeLock_);
        found.validPixels += mine.valid;
        for (size_t s = 0; s < mine.best.size(); ++s)
          if (mine.best[s].beats(found.best[s])) found.best[s] = mine.best[s];
      });
    });
  }

  // Pixels [p0, p1) of the strip: b = E x eight at a time, the active-set solves, the residuals.
  template <class T, class Out>
  UnmixStats unmixRange(const StripView& strip, const Unmixing& unmixing, int64_t p0, int64_t p1,
                        Out* abundances, Out* rmse) {
    const int p = unmixing.endmembers, bands = strip.bands;
    const ValidPixel<T> isValid(strip.nodata, bands);
    const T* data = static_cast<const T*>(strip.data);
    const std::vector<double> origin(bands, 0.0);
    std::vector<double> transposed(static_cast<size_t>(bands) * p);  // bands x endmembers
    for (int e = 0; e < p; ++e)
      for (int b = 0; b < bands; ++b) transposed[b * p + e] = unmixing.spectra[e * bands + b];
    AbundanceSolver<kMaxEndmembers> solver(unmixing.gram.data(), p, unmixing.method);
    const Out nan = std::numeric_limits<Out>::quiet_NaN();
    UnmixStats stats;
    double products[kMaxEndmembers][kLanes], solved[kMaxEndmembers][kLanes], energy[kLanes];
    for (int64_t first = p0; first < p1; first += kLanes) {
      const int count = static_cast<int>(std::min<int64_t>(kLanes, p1 - first));
      const T* pixels = data + first * bands;
      projectLanes(pixels, count, bands, origin.data(), transposed.data(), p, products, energy);
      bool valid[kLanes];
      for (int l = 0; l < kLanes; ++l) {
        valid[l] = l < count && isValid(pixels + static_cast<int64_t>(l) * bands);
        double b[kMaxEndmembers], a[kMaxEndmembers];
        for (int e = 0; e < p; ++e) b[e] = products[e][l];
        if (valid[l]) {
          ++stats.validPixels;
          if (!solver.solve(b, a)) {
            ++stats.unsolved;
            valid[l] = false;
          }
        }
        for (int e = 0; e < p; ++e) solved[e][l] = valid[l] ? a[e] : 0.0;
      }
      if (rmse) residualLanes(pixels, count, bands, unmixing.spectra.data(), p, solved, energy);
      for (int l = 0; l < count; ++l) {
        Out* out = abundances + (first + l) * p;
        for (int e = 0; e < p; ++e) out[e] = valid[l] ? static_cast<Out>(solved[e][l]) : nan;
        if (rmse) rmse[first + l] = valid[l] ? static_cast<Out>(std::sqrt(energy[l] / bands)) : nan;
      }
    }
    return stats;
  }

  WorkerThreads threads_;
  std::unique_ptr<PcaKernels> moments_;
  QMutex mergeLock_;
  int64_t pixels_ = 0;        // of the image
  std::vector<double> kept_;  // pixels x keptColumns_
  int keptColumns_ = 0;
};

}  // namespace

std::unique_ptr<UnmixingKernels> makeCpuUnmixingKernels() {
  return std::make_unique<CpuUnmixingKernels>();
}

}  // namespace hyperstream
