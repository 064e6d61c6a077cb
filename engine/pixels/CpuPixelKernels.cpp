// The unmixing kernels on the CPU: each strip split once between the worker threads, each pixel
// converted to float64 and multiplied by the search's weights or the endmembers in dot products
// of eight interleaved partial sums (vectorised without reassociating: the same sums on any CPU),
// then scored or solved. Every pixel is computed on its own, so the results do not depend on the
// strips or the threads. (BLAS calls per small block of pixels spent their time waking threads on
// 16 cores.) The moments are the PCA kernels'.

#include "core/Samples.h"
#include "core/WorkerThreads.h"
#include "pixels/PixelKernels.h"

#include <QMutex>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace hyperstream {

namespace {

constexpr int kPartialSums = 8;
constexpr int64_t kGatherPixels = 64;  // of a band-major strip, gathered pixel by pixel

int padded(int bands) {
  return (bands + kPartialSums - 1) / kPartialSums * kPartialSums;
}

// Σ a[i] b[i] over `n` (a multiple of 8) as eight partial sums over i mod 8, added pairwise.
__attribute__((always_inline)) inline double dot(const double* __restrict a,
                                                 const double* __restrict b, int n) {
  double partial[kPartialSums] = {};
  for (int i = 0; i < n; i += kPartialSums)
    for (int j = 0; j < kPartialSums; ++j) partial[j] += a[i + j] * b[i + j];
  return ((partial[0] + partial[1]) + (partial[2] + partial[3])) +
         ((partial[4] + partial[5]) + (partial[6] + partial[7]));
}

// Σ (a[i] - b[i])² over `n` (a multiple of 8), in the partial sums of dot().
__attribute__((always_inline)) inline double squaredDistance(const double* __restrict a,
                                                             const double* __restrict b, int n) {
  double partial[kPartialSums] = {};
  for (int i = 0; i < n; i += kPartialSums)
    for (int j = 0; j < kPartialSums; ++j) {
      const double d = a[i + j] - b[i + j];
      partial[j] += d * d;
    }
  return ((partial[0] + partial[1]) + (partial[2] + partial[3])) +
         ((partial[4] + partial[5]) + (partial[6] + partial[7]));
}

// A pixel's angles to `spectra` unit rows of padded(bands) values: its direction x/|x| into `u`
// (padded), then 2 asin(|u - s|/2) per row into `angles`; false for a pixel of zero norm.
template <class T>
HYPERSTREAM_VECTOR_CLONES bool pixelAngles(const T* __restrict x, int bands,
                                           const double* __restrict units, int spectra,
                                           double* __restrict u, double* __restrict angles) {
  const int n = padded(bands);
  for (int b = 0; b < bands; ++b) u[b] = static_cast<double>(x[b]);
  for (int b = bands; b < n; ++b) u[b] = 0;
  const double norm = std::sqrt(dot(u, u, n));
  if (!(norm > 0)) return false;
  for (int b = 0; b < bands; ++b) u[b] /= norm;
  for (int k = 0; k < spectra; ++k)
    angles[k] =
        2 * std::asin(std::min(
                1.0, std::sqrt(squaredDistance(u, units + static_cast<int64_t>(k) * n, n)) / 2));
  return true;
}

// A pixel's deviations d = x − center into `d` (zero-padded to a multiple of 8), its energy |d|²
// (unless `energy` is null) and its products z[c] = d · rows[c] for `columns` rows of
// padded(bands) values.
template <class T>
HYPERSTREAM_VECTOR_CLONES void projectPixel(const T* __restrict x, int bands,
                                            const double* __restrict center,
                                            const double* __restrict rows, int columns,
                                            double* __restrict d, double* __restrict z,
                                            double* __restrict energy) {
  const int n = padded(bands);
  for (int b = 0; b < bands; ++b) d[b] = static_cast<double>(x[b]) - center[b];
  for (int b = bands; b < n; ++b) d[b] = 0;
  if (energy) *energy = dot(d, d, n);
  for (int c = 0; c < columns; ++c) z[c] = dot(d, rows + static_cast<int64_t>(c) * n, n);
}

// A pixel's squared residual |x − Σ_e a_e spectrum_e|² (spectra as padded rows).
template <class T>
HYPERSTREAM_VECTOR_CLONES double residualEnergy(const T* __restrict x, int bands,
                                                const double* __restrict spectra, int endmembers,
                                                const double* __restrict a, double* __restrict r) {
  const int n = padded(bands);
  for (int b = 0; b < bands; ++b) r[b] = static_cast<double>(x[b]);
  for (int b = bands; b < n; ++b) r[b] = 0;
  for (int e = 0; e < endmembers; ++e) {
    const double* s = spectra + static_cast<int64_t>(e) * n;
    for (int b = 0; b < n; ++b) r[b] -= a[e] * s[b];
  }
  return dot(r, r, n);
}

// `columns` rows of `bands` values (weights given as bands x columns, or already as rows), each
// padded with zeros to a multiple of 8.
std::vector<double> paddedRows(const double* values, int bands, int columns, bool transpose) {
  const int n = padded(bands);
  std::vector<double> rows(static_cast<size_t>(std::max(1, columns)) * n, 0.0);
  for (int c = 0; c < columns; ++c)
    for (int b = 0; b < bands; ++b)
      rows[static_cast<size_t>(c) * n + b] = transpose
                                                 ? values[static_cast<size_t>(b) * columns + c]
                                                 : values[static_cast<size_t>(c) * bands + b];
  return rows;
}

class CpuPixelKernels : public PixelKernels {
 public:
  CpuPixelKernels() : moments_(makeCpuPcaKernels()) {}

  std::string name() const override {
    return "cpu (" + std::to_string(threads_.count()) + " threads)";
  }
  bool usesEveryCore() const override { return true; }
  // Band-major strips are gathered 64 pixels at a time: the same arithmetic, the same bits.
  bool takesBandMajor() const override { return true; }

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
    const std::vector<double> rows =
        paddedRows(search.weights.data(), search.bands, search.columns, true);
    const ScoreRule rule = search.scoreRule();
    forEachPixel(
        strip,
        [&](const auto* x, int64_t p, Scratch& scratch, PartialSearch& mine) {
          double energy = 0;  // only the Residual rule reads it
          projectPixel(x, strip.bands, search.center.data(), rows.data(), search.columns,
                       scratch.deviations.data(), scratch.z,
                       search.rule == SearchRule::Residual ? &energy : nullptr);
          ++mine.valid;
          for (size_t s = 0; s < mine.best.size(); ++s) {
            const Candidate c{pixelScore(rule, static_cast<int>(s), scratch.z, energy),
                              strip.firstPixel + p};
            if (c.score >= 0 && c.beats(mine.best[s])) mine.best[s] = c;
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
    for (int64_t p = 0; p < strip.pixels; ++p)  // invalid pixels stay NaN
      std::fill_n(kept_.data() + (strip.firstPixel + p) * k, k,
                  std::numeric_limits<double>::quiet_NaN());
    const std::vector<double> rows =
        paddedRows(projection.weights.data(), projection.bands, k, true);
    SearchFound unused;
    forEachPixel(
        strip,
        [&](const auto* x, int64_t p, Scratch& scratch, PartialSearch&) {
          projectPixel(x, strip.bands, projection.center.data(), rows.data(), k,
                       scratch.deviations.data(), scratch.z, nullptr);
          double* out = kept_.data() + (strip.firstPixel + p) * k;
          for (int c = 0; c < k; ++c) out[c] = scratch.z[c] + projection.offset[c];
        },
        unused);
  }

  void keepEnergy(const StripView& strip) override {
    kept_.resize(static_cast<size_t>(pixels_));
    keptColumns_ = 1;
    std::fill_n(kept_.data() + strip.firstPixel, strip.pixels,
                std::numeric_limits<double>::quiet_NaN());  // invalid pixels stay NaN
    const std::vector<double> origin(strip.bands, 0.0);
    SearchFound unused;
    forEachPixel(
        strip,
        [&](const auto* x, int64_t p, Scratch& scratch, PartialSearch&) {
          double energy = 0;
          projectPixel(x, strip.bands, origin.data(), nullptr, 0, scratch.deviations.data(),
                       scratch.z, &energy);
          kept_[strip.firstPixel + p] = energy;
        },
        unused);
  }

  void deflateKept(const StripView& strip, const std::vector<double>& direction) override {
    const std::vector<double> origin(strip.bands, 0.0);
    const std::vector<double> row = paddedRows(direction.data(), strip.bands, 1, false);
    SearchFound unused;
    forEachPixel(
        strip,
        [&](const auto* x, int64_t p, Scratch& scratch, PartialSearch&) {
          projectPixel(x, strip.bands, origin.data(), row.data(), 1, scratch.deviations.data(),
                       scratch.z, nullptr);
          kept_[strip.firstPixel + p] -= scratch.z[0] * scratch.z[0];
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

  int64_t classify(const StripView& strip, const AngleLibrary& library, uint16_t* classes,
                   void* bestAngle, void* angles) override {
    int64_t valid = 0;
    const std::vector<double> units =
        paddedRows(library.units.data(), library.bands, library.spectra, false);
    withOutputType(library.type, [&](auto sample) {
      using Out = decltype(sample);
      threads_.split(strip.pixels, [&](int64_t p0, int64_t p1) {
        const int64_t mine = withSampleType(strip.type, [&](auto value) {
          using T = decltype(value);
          return classifyRange<T, Out>(strip, library, units.data(), p0, p1, classes,
                                       static_cast<Out*>(bestAngle), static_cast<Out*>(angles));
        });
        QMutexLocker lock(&mergeLock_);
        valid += mine;
      });
    });
    return valid;
  }

  void windowScores(const WindowStrip& strip, const WindowRule& rule, void* scores) override {
    withOutputType(rule.type, [&](auto sample) {
      using Out = decltype(sample);
      if constexpr (std::is_floating_point_v<Out>) {
        auto* out = static_cast<Out*>(scores);
        const int64_t groups = (strip.width + kWindowLanes - 1) / kWindowLanes;  // per row
        threads_.split(strip.scoreRows * groups, [&](int64_t g0, int64_t g1) {
          WindowScorer scorer(strip.componentCount, rule);
          double lanes[kWindowLanes];
          for (int64_t g = g0; g < g1; ++g) {
            const int64_t row = strip.scoreRow + g / groups;
            const int64_t column = g % groups * kWindowLanes;
            scorer.score(strip, row, column, lanes);
            const int64_t count = std::min<int64_t>(kWindowLanes, strip.width - column);
            Out* rowScores = out + (row - strip.scoreRow) * strip.width + column;
            for (int64_t l = 0; l < count; ++l) rowScores[l] = static_cast<Out>(lanes[l]);
          }
        });
      }
    });
  }

 private:
  struct PartialSearch {
    std::vector<Candidate> best;
    int64_t valid = 0;
  };

  // A worker's buffers: a pixel's deviations (padded) and its products.
  struct Scratch {
    explicit Scratch(int bands) : deviations(static_cast<size_t>(padded(bands))) {}
    std::vector<double> deviations;
    double z[kMaxEndmembers] = {};
  };

  // Pixels [first, first + count) of the strip, each pixel's bands together: where they lie in a
  // pixel-interleaved strip, gathered into `buffer` from a band-major one (count <= 64: the
  // gather stays in the cache).
  template <class T>
  static const T* pixelsOf(const StripView& strip, int64_t first, int count,
                           std::vector<T>& buffer) {
    const T* data = static_cast<const T*>(strip.data);
    if (!strip.bandMajor) return data + first * strip.bands;
    buffer.resize(static_cast<size_t>(count) * strip.bands);
    for (int b = 0; b < strip.bands; ++b) {
      const T* band = data + b * strip.pixels + first;
      for (int i = 0; i < count; ++i) buffer[static_cast<size_t>(i) * strip.bands + b] = band[i];
    }
    return buffer.data();
  }

  // Calls work(pixel's samples, its index in the strip, scratch, partial) for each valid pixel
  // of the strip, each worker with a partial result merged into `found` at the end.
  template <class Work>
  void forEachPixel(const StripView& strip, const Work& work, SearchFound& found) {
    withSampleType(strip.type, [&](auto sample) {
      using T = decltype(sample);
      const ValidPixel<T> isValid(strip.nodata, strip.bands);
      threads_.split(strip.pixels, [&](int64_t p0, int64_t p1) {
        PartialSearch mine{std::vector<Candidate>(found.best.size()), 0};
        Scratch scratch(strip.bands);
        std::vector<T> gathered;
        for (int64_t first = p0; first < p1; first += kGatherPixels) {
          const int count = static_cast<int>(std::min<int64_t>(kGatherPixels, p1 - first));
          const T* block = pixelsOf(strip, first, count, gathered);
          for (int i = 0; i < count; ++i) {
            const T* x = block + static_cast<int64_t>(i) * strip.bands;
            if (isValid(x)) work(x, first + i, scratch, mine);
          }
        }
        QMutexLocker lock(&mergeLock_);
        found.validPixels += mine.valid;
        for (size_t s = 0; s < mine.best.size(); ++s)
          if (mine.best[s].beats(found.best[s])) found.best[s] = mine.best[s];
      });
    });
  }

  // Pixels [p0, p1) of the strip: b = E x, the active-set solve, the residual.
  template <class T, class Out>
  UnmixStats unmixRange(const StripView& strip, const Unmixing& unmixing, int64_t p0, int64_t p1,
                        Out* abundances, Out* rmse) {
    const int p = unmixing.endmembers, bands = strip.bands;
    const ValidPixel<T> isValid(strip.nodata, bands);
    std::vector<T> gathered;
    const T* block = nullptr;
    int64_t blockFirst = 0;
    const std::vector<double> origin(bands, 0.0);
    const std::vector<double> spectra = paddedRows(unmixing.spectra.data(), bands, p, false);
    AbundanceSolver<kMaxEndmembers> solver(unmixing.gram.data(), p, unmixing.method);
    const Out nan = std::numeric_limits<Out>::quiet_NaN();
    Scratch scratch(bands);
    UnmixStats stats;
    double a[kMaxEndmembers];
    for (int64_t i = p0; i < p1; ++i) {
      if (i == p0 || i - blockFirst == kGatherPixels) {
        blockFirst = i;
        block = pixelsOf(strip, i, static_cast<int>(std::min<int64_t>(kGatherPixels, p1 - i)),
                         gathered);
      }
      const T* x = block + (i - blockFirst) * bands;
      Out* out = abundances + i * p;
      bool valid = isValid(x);
      if (valid) {
        ++stats.validPixels;
        projectPixel(x, bands, origin.data(), spectra.data(), p, scratch.deviations.data(),
                     scratch.z, nullptr);
        valid = solver.solve(scratch.z, a);
        if (!valid) ++stats.unsolved;
      }
      for (int e = 0; e < p; ++e) out[e] = valid ? static_cast<Out>(a[e]) : nan;
      if (rmse)
        rmse[i] = valid ? static_cast<Out>(std::sqrt(residualEnergy(x, bands, spectra.data(), p, a,
                                                                    scratch.deviations.data()) /
                                                     bands))
                        : nan;
    }
    return stats;
  }

  // Pixels [p0, p1) of the strip: their angles, the smallest and its class.
  template <class T, class Out>
  int64_t classifyRange(const StripView& strip, const AngleLibrary& library, const double* units,
                        int64_t p0, int64_t p1, uint16_t* classes, Out* bestAngle, Out* angles) {
    const int k = library.spectra, bands = strip.bands;
    const ValidPixel<T> isValid(strip.nodata, bands);
    const Out nan = std::numeric_limits<Out>::quiet_NaN();
    std::vector<T> gathered;
    std::vector<double> direction(static_cast<size_t>(padded(bands)));
    std::vector<double> found(static_cast<size_t>(k));
    int64_t valid = 0;
    for (int64_t first = p0; first < p1; first += kGatherPixels) {
      const int count = static_cast<int>(std::min<int64_t>(kGatherPixels, p1 - first));
      const T* block = pixelsOf(strip, first, count, gathered);
      for (int i = 0; i < count; ++i) {
        const int64_t p = first + i;
        const T* x = block + static_cast<int64_t>(i) * bands;
        const bool isPixel = isValid(x);
        valid += isPixel ? 1 : 0;
        const bool measured =
            isPixel && pixelAngles(x, bands, units, k, direction.data(), found.data());
        int best = 0;
        for (int s = 1; s < k; ++s)
          if (found[s] < found[best]) best = s;
        classes[p] = measured && found[best] <= library.maxAngle ? static_cast<uint16_t>(best + 1)
                                                                 : uint16_t{0};
        bestAngle[p] = measured ? static_cast<Out>(found[best]) : nan;
        if (angles)
          for (int s = 0; s < k; ++s)
            angles[p * k + s] = measured ? static_cast<Out>(found[s]) : nan;
      }
    }
    return valid;
  }

  WorkerThreads threads_;
  std::unique_ptr<PcaKernels> moments_;
  QMutex mergeLock_;
  int64_t pixels_ = 0;        // of the image
  std::vector<double> kept_;  // pixels x keptColumns_
  int keptColumns_ = 0;
};

}  // namespace

std::unique_ptr<PixelKernels> makeCpuPixelKernels() {
  return std::make_unique<CpuPixelKernels>();
}

}  // namespace hyperstream
