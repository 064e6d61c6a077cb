// The unmixing kernels on the CPU: blocks of pixels converted to float64 rows on the worker
// threads, their products with the search's weights or the endmembers by OpenBLAS's DGEMM (all
// cores), then each pixel scored or solved on the worker threads.

#include "core/Samples.h"
#include "core/WorkerThreads.h"
#include "unmixing/UnmixingKernels.h"

#include <QMutex>

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace hyperstream {

namespace {

constexpr int64_t kBlockPixels = 4096;  // a block's float64 rows stay within a few MiB

// Pixel p's values minus `center` into row p of `rows` (0 for invalid pixels, valid[p] = 0), and
// its squared distance from the center into energy[p].
template <class T>
void centreRows(const T* data, int bands, const ValidPixel<T>& isValid, const double* center,
                int64_t count, double* rows, unsigned char* valid, double* energy) {
  for (int64_t p = 0; p < count; ++p) {
    const T* pixel = data + p * bands;
    double* row = rows + p * bands;
    valid[p] = isValid(pixel) ? 1 : 0;
    double sum = 0;
    for (int b = 0; b < bands; ++b) {
      const double d = valid[p] ? static_cast<double>(pixel[b]) - center[b] : 0.0;
      row[b] = d;
      sum += d * d;
    }
    energy[p] = sum;
  }
}

double score(const PixelSearch& search, int slot, const double* z, double energy) {
  const int k = search.columns;
  switch (search.rule) {
    case SearchRule::Residual: {
      double projected = 0;
      for (int c = 0; c < k; ++c) projected += z[c] * z[c];
      return std::max(0.0, energy - projected);
    }
    case SearchRule::Norm: {
      double norm = 0;
      for (int c = 0; c < k; ++c) norm += z[c] * z[c];
      return norm;
    }
    case SearchRule::Linear: {
      double value = search.constants[slot];
      for (int c = 0; c < k; ++c) value += search.coefficients[slot * k + c] * z[c];
      return std::abs(value);
    }
    case SearchRule::Ratio:
      return z[1] != 0 ? std::abs(z[0] / z[1]) : -1;
  }
  return -1;
}

class CpuUnmixingKernels : public UnmixingKernels {
 public:
  CpuUnmixingKernels() : moments_(makeCpuPcaKernels()) {}

  std::string name() const override {
    return "cpu (" + std::to_string(threads_.count()) + " threads, OpenBLAS " +
           openblas_get_corename() + " kernels)";
  }
  bool usesEveryCore() const override { return true; }

  void prepare(int bands, SampleType type, int64_t maxStripPixels) override {
    CubeLayout layout;
    layout.bands = bands;
    layout.type = type;
    layout.maxStripPixels = maxStripPixels;
    moments_->prepare(layout);
  }

  void accumulateMoments(const StripView& strip) override { moments_->accumulateMoments(strip); }
  Moments takeMoments(int bands) override { return moments_->takeMoments(bands); }

  SearchFound search(const StripView& strip, const PixelSearch& search) override {
    SearchFound found;
    std::vector<Candidate>& best = found.best;
    best.resize(search.scoreCount());
    forEachBlock(strip, search.center.data(), [&](int64_t first, int64_t count) {
      multiply(count, strip.bands, search.columns, search.weights.data());
      threads_.split(count, [&](int64_t p0, int64_t p1) {
        std::vector<Candidate> mine(best.size());
        int64_t valid = 0;
        for (int64_t p = p0; p < p1; ++p) {
          if (!valid_[p]) continue;
          ++valid;
          const double* z = products_.data() + p * search.columns;
          for (size_t s = 0; s < mine.size(); ++s) {
            const Candidate c{score(search, static_cast<int>(s), z, energy_[p]),
                              strip.firstPixel + first + p};
            if (c.score >= 0 && c.beats(mine[s])) mine[s] = c;
          }
        }
        QMutexLocker lock(&mergeLock_);
        found.validPixels += valid;
        for (size_t s = 0; s < mine.size(); ++s)
          if (mine[s].beats(best[s])) best[s] = mine[s];
      });
    });
    return found;
  }

  UnmixStats unmix(const StripView& strip, const Unmixing& unmixing, void* abundances,
                   void* rmse) override {
    const std::vector<double> origin(strip.bands, 0.0);
    UnmixStats stats;
    forEachBlock(strip, origin.data(), [&](int64_t first, int64_t count) {
      // products_ = rows · spectraᵀ: each pixel's b = E x.
      products_.resize(static_cast<size_t>(count) * unmixing.endmembers);
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(count),
                  unmixing.endmembers, strip.bands, 1.0, rows_.data(), strip.bands,
                  unmixing.spectra.data(), strip.bands, 0.0, products_.data(), unmixing.endmembers);
      solved_.resize(static_cast<size_t>(count) * unmixing.endmembers);
      threads_.split(count, [&](int64_t p0, int64_t p1) {
        const UnmixStats mine = solveBlock(unmixing, p0, p1);
        QMutexLocker lock(&mergeLock_);
        stats.validPixels += mine.validPixels;
        stats.unsolved += mine.unsolved;
      });
      if (unmixing.rmse) residualEnergy(unmixing, count);
      withOutputType(unmixing.type, [&](auto sample) {
        using Out = decltype(sample);
        encode(unmixing, count, static_cast<Out*>(abundances) + first * unmixing.endmembers,
               rmse ? static_cast<Out*>(rmse) + first : nullptr);
      });
    });
    return stats;
  }

 private:
  // Converts the strip block by block into rows_ (centred on `center`), valid_ and energy_, and
  // calls work(first pixel of the block, pixels in it).
  template <class Work>
  void forEachBlock(const StripView& strip, const double* center, const Work& work) {
    if (strip.bandMajor) throw std::logic_error("unmixing kernels take pixel-interleaved strips");
    const int bands = strip.bands;
    withSampleType(strip.type, [&](auto sample) {
      using T = decltype(sample);
      const ValidPixel<T> isValid(strip.nodata, bands);
      const T* data = static_cast<const T*>(strip.data);
      for (int64_t first = 0; first < strip.pixels; first += kBlockPixels) {
        const int64_t count = std::min(kBlockPixels, strip.pixels - first);
        rows_.resize(static_cast<size_t>(count) * bands);
        valid_.resize(count);
        energy_.resize(count);
        threads_.split(count, [&](int64_t p0, int64_t p1) {
          centreRows(data + (first + p0) * bands, bands, isValid, center, p1 - p0,
                     rows_.data() + p0 * bands, valid_.data() + p0, energy_.data() + p0);
        });
        work(first, count);
      }
    });
  }

  // products_ = rows_ · weights (count x columns).
  void multiply(int64_t count, int bands, int columns, const double* weights) {
    products_.resize(static_cast<size_t>(count) * std::max(1, columns));
    if (columns == 0) return;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(count), columns, bands,
                1.0, rows_.data(), bands, weights, columns, 0.0, products_.data(), columns);
  }

  UnmixStats solveBlock(const Unmixing& unmixing, int64_t p0, int64_t p1) {
    const int p = unmixing.endmembers;
    AbundanceSolver<kMaxEndmembers> solver(unmixing.gram.data(), p, unmixing.method);
    UnmixStats stats;
    for (int64_t i = p0; i < p1; ++i) {
      if (!valid_[i]) continue;
      ++stats.validPixels;
      if (solver.solve(products_.data() + i * p, solved_.data() + i * p)) continue;
      ++stats.unsolved;
      valid_[i] = 0;
    }
    return stats;
  }

  // energy_ = |x − Eᵀa|² per pixel: rows_ −= solved_ · spectra, then the rows' squared norms.
  void residualEnergy(const Unmixing& unmixing, int64_t count) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(count), unmixing.bands,
                unmixing.endmembers, -1.0, solved_.data(), unmixing.endmembers,
                unmixing.spectra.data(), unmixing.bands, 1.0, rows_.data(), unmixing.bands);
    threads_.split(count, [&](int64_t p0, int64_t p1) {
      for (int64_t i = p0; i < p1; ++i) {
        const double* row = rows_.data() + i * unmixing.bands;
        double sum = 0;
        for (int b = 0; b < unmixing.bands; ++b) sum += row[b] * row[b];
        energy_[i] = sum;
      }
    });
  }

  template <class Out>
  void encode(const Unmixing& unmixing, int64_t count, Out* abundances, Out* rmse) const {
    const int p = unmixing.endmembers;
    const Out nan = std::numeric_limits<Out>::quiet_NaN();
    for (int64_t i = 0; i < count; ++i) {
      for (int e = 0; e < p; ++e)
        abundances[i * p + e] = valid_[i] ? static_cast<Out>(solved_[i * p + e]) : nan;
      if (rmse)
        rmse[i] = valid_[i] ? static_cast<Out>(std::sqrt(energy_[i] / unmixing.bands)) : nan;
    }
  }

  WorkerThreads threads_;
  std::unique_ptr<PcaKernels> moments_;
  QMutex mergeLock_;
  std::vector<double> rows_, energy_, products_, solved_;
  std::vector<unsigned char> valid_;
};

}  // namespace

std::unique_ptr<UnmixingKernels> makeCpuUnmixingKernels() {
  return std::make_unique<CpuUnmixingKernels>();
}

}  // namespace hyperstream
