#include "detect/ColumnDetectJob.h"

#include "core/AddressSpace.h"
#include "core/BlasThreads.h"
#include "core/Error.h"
#include "core/Samples.h"
#include "core/WorkerThreads.h"
#include "detect/ColumnKernels.h"
#include "detect/DetectReport.h"
#include "detect/SpectralLibrary.h"
#include "io/OutputCheck.h"
#include "io/PendingRaster.h"
#include "pca/PcaKernels.h"  // withOutputType
#include "run/Pipeline.h"
#include "run/StripPlan.h"
#include "unmixing/EndmemberTable.h"

#include <QElapsedTimer>
#include <QObject>

#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

namespace hyperstream {

namespace {

constexpr int kInputBuffers = 3;
constexpr int kOutputBuffers = 2;
// A column's pixels are added to its sums a group of rows at a time (a product of the group's
// deviations with themselves, in cache); strips hold whole groups, so that the groups, and the
// sums, are the same whatever the strips.
constexpr int kGroupRows = 32;
// A Cholesky pivot this far below the largest variance: the covariance is singular to working
// precision (as the global detector's eigenvalue spread).
constexpr double kLargestCondition = 1e13;

int64_t packedSize(int bands) {
  return static_cast<int64_t>(bands) * (bands + 1) / 2;
}

// One column's running sums about a fixed shift (its first valid pixel), so that large DN means
// cancel before they are squared: s1 = Σ d, s2 = Σ d dᵀ (upper triangle, packed by rows),
// d = x − shift. Groups of kGroupRows rows are added in the image's order.
// With them, the noise: Σ (x_r − x_{r−1})² per band over the column's vertically adjacent valid
// pixels (`pairs` of them; `above`: its last valid pixel, on row aboveRow).
struct ColumnSums {
  int64_t count = 0;
  std::vector<double> shift, s1, s2;
  std::vector<double> low, high;  // per band, for constant bands
  std::vector<double> noise, above;
  int64_t pairs = 0, aboveRow = -2;
};

// The column's noise variance, over its varying bands: half the mean squared difference of its
// vertically adjacent pixels (0 without any).
double noiseVariance(const ColumnSums& sums, const std::vector<bool>& constant) {
  if (sums.pairs == 0) return 0;
  double total = 0;
  int varying = 0;
  for (size_t b = 0; b < constant.size(); ++b)
    if (!constant[b]) {
      total += sums.noise[b] / (2.0 * static_cast<double>(sums.pairs));
      ++varying;
    }
  return total / std::max(1, varying);
}

// One column's detector: its mean, the packed lower Cholesky factor of C + εI (rows i: j ≤ i),
// per target the matched filter w = C⁻¹t / tᵀC⁻¹t (mf) or û = L⁻¹t / |L⁻¹t| (ace).
struct ColumnDetector {
  bool scored = false;
  double epsilon = 0;  // added to the covariance's diagonal
  std::vector<double> mean, factor;
  std::vector<std::vector<double>> filters;
};

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

class ColumnDetectRun {
 public:
  ColumnDetectRun(const ColumnDetectOptions& options, Feedback& feedback)
      : options_(options), feedback_(feedback) {
    total_.start();
  }

  ColumnDetectResult run() {
    openInput();
    checkOutputs();
    planMemory();
    sumPass();
    fitColumns();
    createOutput();
    scorePass();
    return finish();
  }

 private:
  int bandCount() const { return static_cast<int>(result_.bands.size()); }
  int outputBands() const {
    return options_.method == DetectMethod::Rx ? 1 : static_cast<int>(targets_.size());
  }
  int64_t width() const { return result_.input.width; }
  void openInput();
  void checkOutputs();
  void planMemory();
  void sumPass();
  void addStrip(const StripRange& range, const void* data);
  template <class T>
  void addColumn(const T* strip, const StripRange& range, int64_t column,
                 const ValidPixel<T>& isValid, std::vector<double>& block);
  template <class T>
  void addNoise(const T* x, int64_t row, ColumnSums& sums) const;
  void fitColumns();
  ColumnDetector fitColumn(int64_t column, ColumnSums& sums) const;
  void createOutput();
  void scorePass();
  template <class T, class Out>
  void scoreColumns(const StripRange& range, const T* strip, int64_t c0, int64_t c1,
                    Out* out) const;
  template <class Out>
  void scoreWhitened(const ColumnDetector& column, WhiteningLanes<Out>& lanes) const;
  ColumnDetectResult finish();
  void writeReport();
  QString epsilonText() const;

  const ColumnDetectOptions& options_;
  Feedback& feedback_;
  QElapsedTimer total_;
  JobInput input_;
  ColumnDetectResult result_;
  std::vector<Target> targets_;
  RasterFormat format_;
  StripPlan plan_;
  int64_t inputRowBytes_ = 0, outputRowBytes_ = 0;
  std::unique_ptr<StripReader> reader_;
  std::vector<ColumnSums> sums_;
  std::vector<ColumnDetector> columns_;
  std::unique_ptr<PendingRaster> output_;
  WorkerThreads threads_;
};

void ColumnDetectRun::openInput() {
  if (options_.method == DetectMethod::Cem)
    throw Error("METHOD",
                "per-column detection takes rx, mf or ace (CEM's correlation matrix "
                "has no per-column form here)");
  if (options_.outputType != OutputType::Float32 && options_.outputType != OutputType::Float64)
    throw Error("OUTPUT_TYPE", "scores are written as Float32 or Float64");
  if (options_.shrinkage && !(*options_.shrinkage >= 0))
    throw Error("SHRINKAGE", "the shrinkage is a share of the mean band variance, 0 or more");
  if (options_.device.kind() == DeviceChoice::Kind::Gpus)
    throw Error("DEVICE", "per-column detection runs on the CPU (device cpu or auto)");
  input_ = openJobInput(options_, options_.bands, "per-column detection", feedback_);
  result_.input = input_.info;
  if (checkAddressSpace(options_.ramBytes)) result_.input.mappable = false;
  result_.bands = input_.bands;
  if (options_.method != DetectMethod::Rx) {
    targets_ = targetsForImage(options_.targetTable, result_.input, result_.bands);
    if (targets_.empty()) throw Error("TARGETS", "no target spectrum given");
  }
  const std::string label = options_.method == DetectMethod::MatchedFilter ? "MF" : "ACE";
  if (options_.method == DetectMethod::Rx)
    result_.bandNames.push_back("RX (Mahalanobis distance, per column)");
  for (const Target& target : targets_) result_.bandNames.push_back(label + ": " + target.name);
}

void ColumnDetectRun::checkOutputs() {
  std::vector<InputFile> reads = rasterInputFiles("INPUT", result_.input.files);
  OutputCheck outputs(std::move(reads), feedback_);
  outputs.rasterDestination("OUTPUT", options_.output);
  format_ = RasterFormat{outputDriver(options_.output, options_.format), options_.creationOptions};
  outputs.raster("OUTPUT", options_.output, format_, outputBands(), gdalType(options_.outputType));
  if (!options_.htmlReport.empty()) outputs.file("OUTPUT_HTML_FILE", options_.htmlReport);
}

// The columns' sums (then their factors, in the same place) are held for the whole run; the
// strips get what is left of the budget.
void ColumnDetectRun::planMemory() {
  const int bands = bandCount();
  const int64_t perColumn = (packedSize(bands) + 7 * static_cast<int64_t>(bands) +
                             static_cast<int64_t>(targets_.size()) * bands) *
                            static_cast<int64_t>(sizeof(double));
  result_.statisticsBytes = perColumn * width();
  const int64_t left = options_.ramBytes - result_.statisticsBytes;
  if (left < (16ll << 20))
    throw Error("RAM_MB",
                QString("the statistics of %1 columns of %2 bands take %3 MiB: give a RAM budget "
                        "of at least %4 MiB")
                    .arg(width())
                    .arg(bands)
                    .arg(result_.statisticsBytes >> 20)
                    .arg((result_.statisticsBytes >> 20) + 64)
                    .toStdString());
  const RasterInfo& info = result_.input;
  inputRowBytes_ = info.width * bands * typeSize(info.type);
  outputRowBytes_ = info.width * outputBands() * typeSize(gdalType(options_.outputType));
  StripNeeds needs;
  needs.rowsToDo = info.height;
  needs.bands = bands;
  needs.mayCopyInput = false;
  needs.residentRowBytes = kOutputBuffers * outputRowBytes_;
  needs.streamingRowBytes = kInputBuffers * inputRowBytes_ + needs.residentRowBytes;
  needs.leastStrips = 4;
  needs.rowMultiple = kGroupRows;
  needs.requestedRows = options_.stripRows;
  plan_ = hyperstream::planMemory(info, left, needs);
  reader_ = std::make_unique<StripReader>(
      info, result_.bands, plan_.readers,
      plan_.mappableBytes(plan_.stripRows * needs.streamingRowBytes), 0);
  feedback_.info(QString("%1: %2 x %3 pixels, %4 bands; per-column statistics (%5 MiB); %6 "
                         "strip(s) of %7 rows, twice, on the CPU (%8 threads)")
                     .arg(QString::fromStdString(options_.input))
                     .arg(info.width)
                     .arg(info.height)
                     .arg(bands)
                     .arg(result_.statisticsBytes >> 20)
                     .arg(plan_.strips.size())
                     .arg(plan_.stripRows)
                     .arg(threads_.count()));
  result_.backend = "cpu (" + std::to_string(threads_.count()) + " threads)";
}

void ColumnDetectRun::sumPass() {
  sums_.assign(static_cast<size_t>(width()), ColumnSums{});
  StripPipeline pipeline(kInputBuffers, static_cast<size_t>(plan_.stripRows * inputRowBytes_), 0, 0,
                         true);
  StripPipeline::Stages stages;
  stages.read = [&](const StripRange& range, unsigned char* buffer) -> const void* {
    reader_->read(range.row0, range.rows, buffer);
    return buffer;
  };
  stages.compute = [&](const StripRange& range, const void* data, unsigned char*) {
    addStrip(range, data);
  };
  pipeline.run(plan_.strips, stages, feedback_, 0.0, 45.0);
}

void ColumnDetectRun::addStrip(const StripRange& range, const void* data) {
  withSampleType(input_.sampleType, [&](auto sample) {
    using T = decltype(sample);
    const ValidPixel<T> isValid(input_.nodata.data(), bandCount());
    threads_.split(width(), [&](int64_t c0, int64_t c1) {
      std::vector<double> block;
      for (int64_t c = c0; c < c1; ++c)
        addColumn(static_cast<const T*>(data), range, c, isValid, block);
    });
  });
}

// The strip's valid pixels of one column into its sums, a group of rows at a time: the group's
// deviations as rows of a pixel-major block (pixels x bands), each s2 entry one dot product.
template <class T>
void ColumnDetectRun::addColumn(const T* strip, const StripRange& range, int64_t column,
                                const ValidPixel<T>& isValid, std::vector<double>& block) {
  const int bands = bandCount();
  const int64_t rows = range.rows;
  ColumnSums& sums = sums_[column];
  const int stride = columns::paddedBands(bands);
  block.resize(static_cast<size_t>(stride) * kGroupRows);  // the padding stays 0
  for (int64_t group = 0; group < rows; group += kGroupRows) {
    int n = 0;
    for (int64_t r = group; r < std::min(rows, group + kGroupRows); ++r) {
      const T* x = strip + (r * width() + column) * bands;
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
      addNoise(x, range.row0 + r, sums);
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
void ColumnDetectRun::addNoise(const T* x, int64_t row, ColumnSums& sums) const {
  const int bands = bandCount();
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

// Each column's factor on the calling thread (LAPACK's own threads, as the fits elsewhere).
void ColumnDetectRun::fitColumns() {
  columns_.resize(static_cast<size_t>(width()));
  const BlasThreadsHere threads(fitBlasThreads(bandCount()));
  for (int64_t c = 0; c < width(); ++c) {
    if (feedback_.isCanceled()) throw Canceled();
    columns_[c] = fitColumn(c, sums_[c]);
    result_.validPixels += sums_[c].count;
    sums_[c] = ColumnSums{};  // its memory back before the next column's factor
    if (columns_[c].scored)
      result_.meanEpsilon += columns_[c].epsilon;
    else
      ++result_.columnsUnscored;
  }
  const int64_t scored = width() - result_.columnsUnscored;
  if (scored > 0) result_.meanEpsilon /= static_cast<double>(scored);
  if (result_.columnsUnscored > 0)
    feedback_.warning(QString("%1 column(s) with fewer than two valid pixels are written as "
                              "nodata")
                          .arg(result_.columnsUnscored));
}

ColumnDetector ColumnDetectRun::fitColumn(int64_t column, ColumnSums& sums) const {
  const int bands = bandCount();
  ColumnDetector detector;
  if (sums.count < 2) return detector;
  const auto n = static_cast<double>(sums.count);
  detector.mean.resize(bands);
  for (int b = 0; b < bands; ++b) detector.mean[b] = sums.shift[b] + sums.s1[b] / n;
  // C = (s2 − s1 s1ᵀ / n) / (n − 1); bands constant in this column are left out (unit
  // variance, no covariance, no target there: they add nothing to any score).
  std::vector<bool> constant(bands);
  for (int b = 0; b < bands; ++b) constant[b] = sums.low[b] == sums.high[b];
  std::vector<double> c(static_cast<size_t>(bands) * bands, 0.0);
  const double* row = sums.s2.data();
  double meanVariance = 0;
  int varying = 0;
  for (int i = 0; i < bands; ++i) {
    for (int j = i; j < bands; ++j) {
      const double value =
          constant[i] || constant[j] ? 0.0 : (row[j - i] - sums.s1[i] * sums.s1[j] / n) / (n - 1);
      c[static_cast<size_t>(i) * bands + j] = c[static_cast<size_t>(j) * bands + i] = value;
    }
    row += bands - i;
    if (!constant[i]) {
      meanVariance += c[static_cast<size_t>(i) * bands + i];
      ++varying;
    }
  }
  meanVariance /= std::max(1, varying);
  detector.epsilon =
      options_.shrinkage ? *options_.shrinkage * meanVariance : noiseVariance(sums, constant);
  double largest = 0;
  for (int b = 0; b < bands; ++b) {
    double& diagonal = c[static_cast<size_t>(b) * bands + b];
    diagonal = constant[b] ? 1.0 : diagonal + detector.epsilon;
    largest = std::max(largest, diagonal);
  }
  const auto singular = [&] {
    return Error("SHRINKAGE",
                 QString("column %1's covariance is singular to working precision (%2 valid "
                         "pixels for %3 bands, or bands that are combinations of others; ε = "
                         "%4): give a shrinkage (e.g. 1e-4)")
                     .arg(column)
                     .arg(sums.count)
                     .arg(bands)
                     .arg(detector.epsilon, 0, 'g', 4)
                     .toStdString());
  };
  if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', bands, c.data(), bands) != 0) throw singular();
  detector.factor.reserve(static_cast<size_t>(packedSize(bands)));
  for (int i = 0; i < bands; ++i) {
    const double pivot = c[static_cast<size_t>(i) * bands + i];
    if (pivot * pivot * kLargestCondition < largest) throw singular();
    for (int j = 0; j <= i; ++j) detector.factor.push_back(c[static_cast<size_t>(i) * bands + j]);
  }
  // The targets as this column sees them, whitened: u = L⁻¹ t.
  std::vector<double> t(bands), u(bands);
  for (const Target& target : targets_) {
    for (int b = 0; b < bands; ++b)
      t[b] = constant[b]           ? 0.0
             : options_.absorption ? -detector.mean[b] * target.spectrum[b]
                                   : target.spectrum[b] - detector.mean[b];
    columns::forwardSubstitute(detector.factor.data(), t.data(), bands, u.data());
    const double power = columns::dot(u.data(), u.data(), bands);
    if (!(power > 0))
      throw Error("TARGETS", "target '" + target.name + "' equals column " +
                                 std::to_string(column) + "'s mean: it cannot be told from it");
    if (options_.method == DetectMethod::Ace) {
      for (double& v : u) v /= std::sqrt(power);
      detector.filters.push_back(u);
    } else {  // w = L⁻ᵀ u / power
      std::vector<double> w(u);
      for (int i = bands - 1; i >= 0; --i) {
        for (int k = i + 1; k < bands; ++k)
          w[i] -= detector.factor[static_cast<size_t>(packedSize(k)) + i] * w[k];
        w[i] /= detector.factor[static_cast<size_t>(packedSize(i)) + i];
      }
      for (double& v : w) v /= power;
      detector.filters.push_back(std::move(w));
    }
  }
  if (options_.method == DetectMethod::MatchedFilter) detector.factor.clear();  // linear
  detector.scored = true;
  return detector;
}

void ColumnDetectRun::createOutput() {
  output_ = createLike(result_.input, options_.output, format_, outputBands(),
                       gdalType(options_.outputType));
  for (int b = 0; b < outputBands(); ++b) {
    GDALRasterBand* band = output_->dataset().GetRasterBand(b + 1);
    band->SetNoDataValue(std::numeric_limits<double>::quiet_NaN());
    band->SetDescription(result_.bandNames[b].c_str());
  }
}

void ColumnDetectRun::scorePass() {
  StripPipeline pipeline(kInputBuffers, static_cast<size_t>(plan_.stripRows * inputRowBytes_),
                         kOutputBuffers, static_cast<size_t>(plan_.stripRows * outputRowBytes_),
                         true);
  StripPipeline::Stages stages;
  stages.read = [&](const StripRange& range, unsigned char* buffer) -> const void* {
    reader_->read(range.row0, range.rows, buffer);
    return buffer;
  };
  stages.compute = [&](const StripRange& range, const void* data, unsigned char* out) {
    withOutputType(options_.outputType, [&](auto outSample) {
      using Out = decltype(outSample);
      withSampleType(input_.sampleType, [&](auto sample) {
        using T = decltype(sample);
        // By columns: a column's factor stays in the cache over its rows.
        threads_.split(width(), [&](int64_t c0, int64_t c1) {
          scoreColumns(range, static_cast<const T*>(data), c0, c1, reinterpret_cast<Out*>(out));
        });
      });
    });
  };
  stages.write = [&](const StripRange& range, const unsigned char* out) {
    output_->write(range.row0, range.rows, out, feedback_);
  };
  pipeline.run(plan_.strips, stages, feedback_, 45.0, 100.0);
}

// Each column's pixels, scored: the matched filter one pixel at a time (a dot product per target),
// RX and ACE columns::kWhitenedPixels valid pixels at a time (their whitening).
template <class T, class Out>
void ColumnDetectRun::scoreColumns(const StripRange& range, const T* strip, int64_t c0, int64_t c1,
                                   Out* out) const {
  const int bands = bandCount(), outputs = outputBands();
  const ValidPixel<T> isValid(input_.nodata.data(), bands);
  const Out nan = std::numeric_limits<Out>::quiet_NaN();
  WhiteningLanes<Out> lanes(bands);
  std::vector<double> d(bands);
  for (int64_t c = c0; c < c1; ++c) {
    const ColumnDetector& column = columns_[c];
    for (int64_t r = 0; r < range.rows; ++r) {
      const int64_t p = r * width() + c;
      const T* x = strip + p * bands;
      Out* scores = out + p * outputs;
      if (!column.scored || !isValid(x)) {
        std::fill(scores, scores + outputs, nan);
      } else if (options_.method == DetectMethod::MatchedFilter) {
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
void ColumnDetectRun::scoreWhitened(const ColumnDetector& column,
                                    WhiteningLanes<Out>& lanes) const {
  if (lanes.count == 0) return;
  const int bands = bandCount();
  columns::forwardSubstituteLanes(column.factor.data(), lanes.deviations.data(), bands,
                                  lanes.whitened.data());
  std::vector<double>& y = lanes.pixel;
  for (int l = 0; l < lanes.count; ++l) {
    for (int b = 0; b < bands; ++b)
      y[b] = lanes.whitened[static_cast<size_t>(b) * columns::kWhitenedPixels + l];
    const double distance = columns::dot(y.data(), y.data(), bands);
    Out* scores = lanes.scores[l];
    if (options_.method == DetectMethod::Rx) {
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

ColumnDetectResult ColumnDetectRun::finish() {
  input_.dataset.reset();
  if (feedback_.isCanceled()) throw Canceled();
  if (!options_.htmlReport.empty()) writeReport();
  output_->commit();
  result_.seconds = total_.nsecsElapsed() * 1e-9;
  return result_;
}

void ColumnDetectRun::writeReport() {
  DetectionPage page;
  page.heading = detectorTitle(options_.method) + QObject::tr(", each column's statistics");
  page.input = result_.input;
  page.bands = result_.bands;
  page.validPixels = result_.validPixels;
  page.facts = {
      {QObject::tr("Output"), QString::fromStdString(options_.output)},
      {QObject::tr("Statistics"),
       QObject::tr("each image column's own mean and covariance; %1 column(s) with fewer than two "
                   "valid pixels left unscored%2")
           .arg(result_.columnsUnscored)
           .arg(epsilonText())},
      {QObject::tr("Device"), QString::fromStdString(result_.backend)},
      {QObject::tr("Seconds"), QString::number(total_.nsecsElapsed() * 1e-9, 'f', 2)}};
  page.targets = targets_;
  page.absorption = options_.absorption;
  writeDetectionReport(page, output_->dataset(), options_.htmlReport);
}

// The regularisation as the report states it.
QString ColumnDetectRun::epsilonText() const {
  if (!options_.shrinkage)
    return QObject::tr(
               "; C + εI, ε = the column's noise variance (half the mean squared "
               "difference of vertically adjacent pixels; %1 on average)")
        .arg(result_.meanEpsilon, 0, 'g', 4);
  if (*options_.shrinkage > 0)
    return QObject::tr("; C + εI, ε = %1 × the column's mean band variance")
        .arg(*options_.shrinkage);
  return {};
}

}  // namespace

ColumnDetectOptions perColumnOptions(const PcaOptions& options) {
  if (options.detector.components != 0)
    throw Error("COMPONENTS", "per-column detection scores in every band (no components)");
  ColumnDetectOptions column;
  static_cast<JobOptions&>(column) = options;
  column.method = options.detector.method;
  column.targetTable = options.targetTable;
  column.absorption = options.detector.absorption;
  column.shrinkage = options.detector.shrinkage;
  column.htmlReport = options.htmlReport;
  return column;
}

ColumnDetectResult runColumnDetection(const ColumnDetectOptions& options, Feedback& feedback) {
  try {
    return ColumnDetectRun(options, feedback).run();
  } catch (...) {
    rethrowAsJobError(options.ramBytes);
  }
}

}  // namespace hyperstream
