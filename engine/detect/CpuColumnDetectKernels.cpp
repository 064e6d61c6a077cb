// The per-column detectors' kernels on the CPU: the columns split over the workers, each column's
// pixels added to its sums a group of rows at a time (detect/ColumnKernels' vector arithmetic),
// every sum in the image's order, so that the bits do not depend on the strips or the workers.

#include "core/WorkerThreads.h"
#include "detect/ColumnDetectKernels.h"
#include "detect/ColumnKernels.h"
#include "projection/PcaKernels.h"  // withOutputType

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

namespace hyperstream {

namespace {

int64_t packedSize(int bands) {
  return static_cast<int64_t>(bands) * (bands + 1) / 2;
}

// Up to columns::kWhitenedPixels valid pixels of one column waiting to be whitened together: their
// deviations from the column's mean band by band (the unused lanes 0), where their scores go.
template <class Out>
struct WhiteningLanes {
  explicit WhiteningLanes(int bands)
      : deviations(static_cast<size_t>(bands) * columns::kWhitenedPixels, 0.0),
        whitened(deviations.size()),
        pixel(bands) {}
  // Adds pixel x; returns how many are waiting.
  template <class T>
  int add(const T* x, const std::vector<double>& mean, Out* scoresOfX) {
    if (count == 0) std::fill(deviations.begin(), deviations.end(), 0.0);
    const auto bands = static_cast<int>(pixel.size());
    for (int b = 0; b < bands; ++b)
      deviations[static_cast<size_t>(b) * columns::kWhitenedPixels + count] =
          static_cast<double>(x[b]) - mean[b];
    scores[count] = scoresOfX;
    return ++count;
  }
  std::vector<double> deviations, whitened, pixel;
  Out* scores[columns::kWhitenedPixels] = {};
  int count = 0;
};

class CpuColumnDetectKernels final : public ColumnDetectKernels {
 public:
  std::string name() const override {
    return "cpu (" + std::to_string(threads_.count()) + " threads)";
  }
  bool usesEveryCore() const override { return true; }

  void prepare(const ColumnLayout& layout) override {
    layout_ = layout;
    sums_.assign(static_cast<size_t>(layout.width), ColumnSums{});
  }

  void addStrip(int64_t row0, int64_t rows, const void* strip) override {
    withSampleType(layout_.type, [&](auto sample) {
      using T = decltype(sample);
      const ValidPixel<T> isValid(layout_.nodata.data(), layout_.bands);
      threads_.split(layout_.width, [&](int64_t c0, int64_t c1) {
        std::vector<double> block;
        for (int64_t c = c0; c < c1; ++c)
          addColumn(static_cast<const T*>(strip), row0, rows, c, isValid, block);
      });
    });
  }

  void takeSums(int64_t column, ColumnSums& sums) override { sums = std::move(sums_[column]); }

  void setDetectors(std::vector<ColumnDetector> detectors) override {
    sums_ = {};
    columns_ = std::move(detectors);
  }

  void score(int64_t rows, const void* strip, void* scores) override {
    withOutputType(layout_.outputType, [&](auto outSample) {
      using Out = decltype(outSample);
      withSampleType(layout_.type, [&](auto sample) {
        using T = decltype(sample);
        // By columns: a column's factor stays in the cache over its rows.
        threads_.split(layout_.width, [&](int64_t c0, int64_t c1) {
          scoreColumns(rows, static_cast<const T*>(strip), c0, c1, static_cast<Out*>(scores));
        });
      });
    });
  }

 private:
  template <class T>
  void addColumn(const T* strip, int64_t row0, int64_t rows, int64_t column,
                 const ValidPixel<T>& isValid, std::vector<double>& block);
  template <class T>
  void addNoise(const T* x, int64_t row, ColumnSums& sums) const;
  template <class T, class Out>
  void scoreColumns(int64_t rows, const T* strip, int64_t c0, int64_t c1, Out* out) const;
  template <class Out>
  void scoreWhitened(const ColumnDetector& column, WhiteningLanes<Out>& lanes) const;

  ColumnLayout layout_;
  std::vector<ColumnSums> sums_;
  std::vector<ColumnDetector> columns_;
  mutable WorkerThreads threads_;
};

// The strip's valid pixels of one column into its sums, a group of rows at a time: the group's
// deviations as rows of a pixel-major block (pixels x bands), each s2 entry one dot product.
template <class T>
void CpuColumnDetectKernels::addColumn(const T* strip, int64_t row0, int64_t rows, int64_t column,
                                       const ValidPixel<T>& isValid, std::vector<double>& block) {
  const int bands = layout_.bands;
  ColumnSums& sums = sums_[column];
  const int stride = columns::paddedBands(bands);
  block.resize(static_cast<size_t>(stride) * kColumnGroupRows);  // the padding stays 0
  for (int64_t group = 0; group < rows; group += kColumnGroupRows) {
    int n = 0;
    for (int64_t r = group; r < std::min(rows, group + kColumnGroupRows); ++r) {
      const T* x = strip + (r * layout_.width + column) * bands;
      if (!isValid(x)) continue;
      if (sums.count == 0) {
        sums.shift.assign(x, x + bands);
        sums.s1.assign(bands, 0.0);
        sums.s2.assign(static_cast<size_t>(packedSize(bands)), 0.0);
        sums.low.assign(x, x + bands);
        sums.high.assign(x, x + bands);
        sums.noise.assign(bands, 0.0);
        sums.above.assign(x, x + bands);
      }
      ++sums.count;
      addNoise(x, row0 + r, sums);
      double* deviations = block.data() + static_cast<size_t>(n) * stride;
      for (int b = 0; b < bands; ++b) {
        const auto v = static_cast<double>(x[b]);
        const double d = v - sums.shift[b];
        deviations[b] = d;
        sums.low[b] = std::min(sums.low[b], v);
        sums.high[b] = std::max(sums.high[b], v);
        sums.s1[b] += d;
      }
      ++n;
    }
    if (n > 0) columns::addProducts(block.data(), n, bands, stride, sums.s2.data());
  }
}

// Pixel x of image row `row` into its column's noise sums, paired with the pixel above if valid.
template <class T>
void CpuColumnDetectKernels::addNoise(const T* x, int64_t row, ColumnSums& sums) const {
  const int bands = layout_.bands;
  const bool paired = sums.aboveRow == row - 1;
  for (int b = 0; b < bands; ++b) {
    const auto v = static_cast<double>(x[b]);
    if (paired) {
      const double difference = v - sums.above[b];
      sums.noise[b] += difference * difference;
    }
    sums.above[b] = v;
  }
  if (paired) ++sums.pairs;
  sums.aboveRow = row;
}

// Each column's pixels, scored: the matched filter one pixel at a time (a dot product per target),
// RX and ACE columns::kWhitenedPixels valid pixels at a time (their whitening).
template <class T, class Out>
void CpuColumnDetectKernels::scoreColumns(int64_t rows, const T* strip, int64_t c0, int64_t c1,
                                          Out* out) const {
  const int bands = layout_.bands, outputs = layout_.outputs;
  const ValidPixel<T> isValid(layout_.nodata.data(), bands);
  const Out nan = std::numeric_limits<Out>::quiet_NaN();
  WhiteningLanes<Out> lanes(bands);
  std::vector<double> d(bands);
  for (int64_t c = c0; c < c1; ++c) {
    const ColumnDetector& column = columns_[c];
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t p = r * layout_.width + c;
      const T* x = strip + p * bands;
      Out* scores = out + p * outputs;
      if (!column.scored || !isValid(x)) {
        std::fill(scores, scores + outputs, nan);
      } else if (layout_.method == DetectMethod::MatchedFilter) {
        for (int b = 0; b < bands; ++b) d[b] = static_cast<double>(x[b]) - column.mean[b];
        for (int t = 0; t < outputs; ++t)
          scores[t] = static_cast<Out>(columns::dot(column.filters[t].data(), d.data(), bands));
      } else if (lanes.add(x, column.mean, scores) == columns::kWhitenedPixels) {
        scoreWhitened(column, lanes);
      }
    }
    scoreWhitened(column, lanes);
  }
}

// RX's and ACE's scores of the pixels gathered in `lanes`, if any (then emptied).
template <class Out>
void CpuColumnDetectKernels::scoreWhitened(const ColumnDetector& column,
                                           WhiteningLanes<Out>& lanes) const {
  if (lanes.count == 0) return;
  const int bands = layout_.bands;
  columns::forwardSubstituteLanes(column.factor.data(), lanes.deviations.data(), bands,
                                  lanes.whitened.data());
  std::vector<double>& y = lanes.pixel;
  for (int l = 0; l < lanes.count; ++l) {
    for (int b = 0; b < bands; ++b)
      y[b] = lanes.whitened[static_cast<size_t>(b) * columns::kWhitenedPixels + l];
    const double distance = columns::dot(y.data(), y.data(), bands);
    Out* scores = lanes.scores[l];
    if (layout_.method == DetectMethod::Rx) {
      scores[0] = static_cast<Out>(distance);
      continue;
    }
    for (size_t t = 0; t < column.filters.size(); ++t) {
      const double along = columns::dot(column.filters[t].data(), y.data(), bands);
      scores[t] = static_cast<Out>(distance > 0 ? along * along / distance : 0.0);
    }
  }
  lanes.count = 0;
}

}  // namespace

std::unique_ptr<ColumnDetectKernels> makeCpuColumnDetectKernels() {
  return std::make_unique<CpuColumnDetectKernels>();
}

}  // namespace hyperstream
