#include "detect/ColumnDetectJob.h"

#include "core/AddressSpace.h"
#include "core/Error.h"
#include "core/Samples.h"
#include "core/WorkerThreads.h"
#include "detect/ColumnDetectKernels.h"
#include "detect/ColumnKernels.h"
#include "detect/DetectReport.h"
#include "io/EmptyBands.h"
#include "io/OutputCheck.h"
#include "io/PendingRaster.h"
#include "pixels/JobStrips.h"
#include "run/DeviceSelection.h"
#include "run/Pipeline.h"
#include "run/StripPlan.h"
#include "spectra/EndmemberTable.h"
#include "spectra/SpectralLibrary.h"
#include "stats/Moments.h"

#include <QElapsedTimer>
#include <QObject>

#include <lapacke.h>
#include <lapacke_utils.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <memory>

namespace hyperstream {

namespace {

// `auto`'s weight of this job's input against PCA's (run/DeviceSelection's JobWork): each pixel
// costs bands² multiply-adds in both passes, about five times PCA's time on the CPU.
constexpr double kWorkPerValue = 4.0;
// Columns factored per worker between two takes of their sums from the kernels.
constexpr int64_t kFitBatchPerWorker = 16;

int64_t packedSize(int bands) {
  return static_cast<int64_t>(bands) * (bands + 1) / 2;
}

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

class ColumnDetectRun {
 public:
  ColumnDetectRun(const ColumnDetectOptions& options, const DeviceChoice& device,
                  Feedback& feedback)
      : options_(options),
        feedback_(feedback),
        starting_(device, options.gpuMemoryBytes,
                  {makeCpuColumnDetectKernels, &GpuRuntime::createColumnDetectKernels}) {
    total_.start();
  }

  ColumnDetectResult run() {
    openInput();
    checkOutputs();
    planMemory();
    startKernels();
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
  void startKernels();
  void sumPass();
  void fitColumns();
  // A strip the way the kernels take it.
  const void* readStrip(const StripRange& range, unsigned char* buffer) {
    if (result_.bandMajor)
      reader_->readBandMajor(range.row0, range.rows, buffer);
    else
      reader_->read(range.row0, range.rows, buffer);
    return buffer;
  }
  ColumnDetector fitColumn(int64_t column, ColumnSums& sums) const;
  void factorColumn(int64_t column, int64_t pixels, std::vector<double>& c,
                    ColumnDetector& detector) const;
  void addTargetFilters(int64_t column, const std::vector<bool>& constant,
                        ColumnDetector& detector) const;
  void createOutput();
  void scorePass();
  ColumnDetectResult finish();
  void writeReport();
  QString epsilonText() const;

  const ColumnDetectOptions& options_;
  Feedback& feedback_;
  QElapsedTimer total_;
  KernelStart<ColumnDetectKernels> starting_;
  JobInput input_;
  ColumnDetectResult result_;
  std::vector<Target> targets_;
  RasterFormat format_;
  StripPlan plan_;
  int64_t inputRowBytes_ = 0, outputRowBytes_ = 0;
  std::unique_ptr<StripReader> reader_;
  std::unique_ptr<ColumnDetectKernels> kernels_;
  std::optional<HostBuffers> inputStrips_;  // both passes' input pool
  std::unique_ptr<PendingRaster> output_;
  WorkerThreads threads_;  // the fit's
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
  input_ = openJobInput(options_, options_.bands, "per-column detection", feedback_);
  const RasterInfo& info = input_.info;
  // Each value costs several times PCA's arithmetic (bands² per pixel in both passes).
  starting_.weigh(
      {info.width * info.height * static_cast<int64_t>(input_.bands.size()) * typeSize(info.type),
       kWorkPerValue});
  result_.input = info;
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
  const std::vector<InputFile>& targets = options_.targetTable.files;
  reads.insert(reads.end(), targets.begin(), targets.end());
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
  needs.rowMultiple = kColumnGroupRows;
  needs.requestedRows = options_.stripRows;
  plan_ = hyperstream::planMemory(info, left, needs);
  reader_ = std::make_unique<StripReader>(
      info, result_.bands, plan_.readers,
      plan_.mappableBytes(plan_.stripRows * needs.streamingRowBytes), 0);
}

void ColumnDetectRun::startKernels() {
  kernels_ = starting_.get(feedback_);
  result_.backend = kernels_->name();
  ColumnLayout layout;
  layout.width = width();
  layout.bands = bandCount();
  layout.type = input_.sampleType;
  layout.nodata = input_.nodata;
  layout.maxStripRows = plan_.stripRows;
  layout.method = options_.method;
  layout.outputs = outputBands();
  layout.outputType = options_.outputType;
  result_.bandMajor = readsBandMajor(result_.input, kernels_->takesBandMajor());
  layout.bandMajor = result_.bandMajor;
  kernels_->prepare(layout);
  const RasterInfo& info = result_.input;
  feedback_.info(QString("%1: %2 x %3 pixels, %4 bands; per-column statistics (%5 MiB); %6 "
                         "strip(s) of %7 rows, twice, on %8")
                     .arg(QString::fromStdString(options_.input))
                     .arg(info.width)
                     .arg(info.height)
                     .arg(bandCount())
                     .arg(result_.statisticsBytes >> 20)
                     .arg(plan_.strips.size())
                     .arg(plan_.stripRows)
                     .arg(QString::fromStdString(result_.backend)));
}

void ColumnDetectRun::sumPass() {
  const HostAllocator allocate = [this](size_t bytes) { return kernels_->allocateHost(bytes); };
  inputStrips_.emplace(allocate);
  StripPipeline pipeline(kInputBuffers, static_cast<size_t>(plan_.stripRows * inputRowBytes_), 0, 0,
                         kernels_->usesEveryCore(), allocate);
  pipeline.keepInputBuffersIn(*inputStrips_);
  StripPipeline::Stages stages;
  stages.read = [&](const StripRange& range, unsigned char* buffer) -> const void* {
    return readStrip(range, buffer);
  };
  stages.compute = [&](const StripRange& range, const void* data, unsigned char*) {
    kernels_->addStrip(range.row0, range.rows, data);
  };
  pipeline.run(plan_.strips, stages, feedback_, 0.0, 45.0);
}

// The columns' factors, a batch of columns at a time (their sums taken from the kernels, then
// freed), the batch's columns split over the workers, each factoring with one BLAS thread.
void ColumnDetectRun::fitColumns() {
  QElapsedTimer timer;
  timer.start();
  std::vector<ColumnDetector> columns(static_cast<size_t>(width()));
  const int64_t batch = kFitBatchPerWorker * threads_.count();
  std::vector<ColumnSums> sums;
  std::vector<std::exception_ptr> failures;
  for (int64_t first = 0; first < width(); first += batch) {
    if (feedback_.isCanceled()) throw Canceled();
    const int64_t count = std::min(batch, width() - first);
    sums.resize(static_cast<size_t>(count));
    for (int64_t k = 0; k < count; ++k) kernels_->takeSums(first + k, sums[k]);
    failures.assign(static_cast<size_t>(count), nullptr);
    threads_.split(count, [&](int64_t k0, int64_t k1) {
      for (int64_t k = k0; k < k1; ++k) try {
          columns[first + k] = fitColumn(first + k, sums[k]);
        } catch (...) {
          failures[k] = std::current_exception();
        }
    });
    for (int64_t k = 0; k < count; ++k) {  // in the columns' order: the same error, the same sum
      if (failures[k]) std::rethrow_exception(failures[k]);
      const ColumnDetector& column = columns[first + k];
      result_.validPixels += sums[k].count;
      if (column.scored)
        result_.meanEpsilon += column.epsilon;
      else
        ++result_.columnsUnscored;
    }
  }
  kernels_->setDetectors(std::move(columns));
  result_.fitSeconds = timer.nsecsElapsed() * 1e-9;
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
  const std::string where = " in column " + std::to_string(column);
  for (int b = 0; b < bands; ++b) {
    constant[b] = sums.low[b] == sums.high[b];
    checkBandScale(b, sums.low[b], sums.high[b], std::numeric_limits<double>::infinity(), where);
  }
  // Each worker's room for C (313 KB for 198 bands): the workers allocating a fresh one for every
  // column spent the fit in the kernel's page faults and memory map locks (16 cores).
  thread_local std::vector<double> c;
  c.assign(static_cast<size_t>(bands) * bands, 0.0);
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
    if (!std::isfinite(c[static_cast<size_t>(i) * bands + i]))
      throw varianceOverflow(i, std::max(std::abs(sums.low[i]), std::abs(sums.high[i])), where);
    if (!constant[i]) {
      meanVariance += c[static_cast<size_t>(i) * bands + i];
      ++varying;
    }
  }
  meanVariance /= std::max(1, varying);
  detector.epsilon =
      options_.shrinkage ? *options_.shrinkage * meanVariance : noiseVariance(sums, constant);
  for (int b = 0; b < bands; ++b) {
    double& diagonal = c[static_cast<size_t>(b) * bands + b];
    diagonal = constant[b] ? 1.0 : diagonal + detector.epsilon;
  }
  factorColumn(column, sums.count, c, detector);
  addTargetFilters(column, constant, detector);
  if (options_.method == DetectMethod::MatchedFilter) detector.factor.clear();  // linear
  detector.scored = true;
  return detector;
}

// C + εI (in `c`, row-major and symmetric) factored in place, C = L Lᵀ, L packed by rows into the
// detector; Error("SHRINKAGE") where C is singular to working precision.
void ColumnDetectRun::factorColumn(int64_t column, int64_t pixels, std::vector<double>& c,
                                   ColumnDetector& detector) const {
  const int bands = bandCount();
  double largest = 0;
  for (int b = 0; b < bands; ++b)
    largest = std::max(largest, c[static_cast<size_t>(b) * bands + b]);
  const auto singular = [&] {
    return Error("SHRINKAGE",
                 QString("column %1's covariance is singular to working precision (%2 valid "
                         "pixels for %3 bands, or bands that are combinations of others; ε = "
                         "%4): give a shrinkage (e.g. 1e-4)")
                     .arg(column)
                     .arg(pixels)
                     .arg(bands)
                     .arg(detector.epsilon, 0, 'g', 4)
                     .toStdString());
  };
  // C is symmetric, so its rows are also its columns: LAPACK factors it in place as it lies
  // (LAPACKE_dpotrf's row-major form copied it to columns and back), L(i, j) then at j * bands + i.
  if (LAPACKE_dtr_nancheck(LAPACK_COL_MAJOR, 'L', 'N', bands, c.data(), bands) ||
      LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', bands, c.data(), bands) != 0)
    throw singular();
  detector.factor.reserve(static_cast<size_t>(packedSize(bands)));
  for (int i = 0; i < bands; ++i) {
    const double pivot = c[static_cast<size_t>(i) * bands + i];
    if (pivot * pivot * kLargestCovarianceCondition < largest) throw singular();
    for (int j = 0; j <= i; ++j) detector.factor.push_back(c[static_cast<size_t>(j) * bands + i]);
  }
}

// The targets as this column sees them, whitened (u = L⁻¹ t): ACE's unit u, the matched filter's
// and CEM's w = L⁻ᵀ u / uᵀu.
void ColumnDetectRun::addTargetFilters(int64_t column, const std::vector<bool>& constant,
                                       ColumnDetector& detector) const {
  const int bands = bandCount();
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
    if (!options_.absorption && std::sqrt(power) < kLeastTargetDistance)
      throw Error("TARGETS", QString("target '%1' lies %2 standard deviations of column %3's "
                                     "background from its mean, less than %4: it is the mean "
                                     "within rounding; give a spectrum of a material")
                                 .arg(QString::fromStdString(target.name))
                                 .arg(std::sqrt(power), 0, 'g', 3)
                                 .arg(column)
                                 .arg(kLeastTargetDistance)
                                 .toStdString());
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
                         kernels_->usesEveryCore(),
                         [this](size_t bytes) { return kernels_->allocateHost(bytes); });
  pipeline.keepInputBuffersIn(*inputStrips_);
  StripPipeline::Stages stages;
  stages.read = [&](const StripRange& range, unsigned char* buffer) -> const void* {
    return readStrip(range, buffer);
  };
  stages.compute = [&](const StripRange& range, const void* data, unsigned char* out) {
    kernels_->score(range.rows, data, out);
  };
  stages.write = [&](const StripRange& range, const unsigned char* out) {
    output_->write(range.row0, range.rows, out, feedback_);
  };
  pipeline.run(plan_.strips, stages, feedback_, 45.0, 100.0);
  inputStrips_.reset();
}

ColumnDetectResult ColumnDetectRun::finish() {
  input_.dataset.reset();
  if (feedback_.isCanceled()) throw Canceled();
  result_.device = kernels_->deviceTimes();
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

ColumnDetectOptions perColumnOptions(const DetectOptions& options) {
  if (!options.statsJson.empty())
    throw Error("OUTPUT_STATS",
                "per-column detection fits no image-wide covariance to write "
                "statistics of (each column has its own): leave the statistics "
                "out");
  if (options.detector.components != 0)
    throw Error("COMPONENTS", "per-column detection scores in every band (no components)");
  ColumnDetectOptions column;
  static_cast<JobOptions&>(column) = options;
  column.method = options.detector.method;
  column.targetTable = options.targetTable;
  column.absorption = options.detector.absorption;
  column.shrinkage = options.detector.shrinkage;
  column.htmlReport = options.htmlReport;
  column.gpuMemoryBytes = options.gpuMemoryBytes;
  return column;
}

ColumnDetectResult runColumnDetection(const ColumnDetectOptions& options, Feedback& feedback) {
  try {
    const DeviceChoice device = oneGpuOf(options.device, "per-column detection", "", feedback);
    return leavingOutEmptyBands(
        options, "detection", feedback, [&](const ColumnDetectOptions& bands) {
          return retryingOnTheCpu(device, feedback, [&](const DeviceChoice& chosen) {
            return ColumnDetectRun(bands, chosen, feedback).run();
          });
        });
  } catch (...) {
    rethrowAsJobError(options.ramBytes);
  }
}

}  // namespace hyperstream
