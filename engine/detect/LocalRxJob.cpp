#include "detect/LocalRxJob.h"

#include "core/AddressSpace.h"
#include "core/Error.h"
#include "core/Samples.h"
#include "core/WorkerThreads.h"
#include "io/OutputCheck.h"
#include "io/PendingRaster.h"
#include "pca/PcaKernels.h"  // withOutputType
#include "run/Pipeline.h"
#include "run/StripPlan.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

namespace hyperstream {

namespace {

constexpr int kInputBuffers = 3;
constexpr int kOutputBuffers = 2;
// A Cholesky pivot this far below the largest variance: the covariance is singular to working
// precision (as the global and per-column detectors').
constexpr double kLargestCondition = 1e13;

// Progress of a part of a job: [from, to] of the whole; log and cancel go through.
class PartFeedback : public Feedback {
 public:
  PartFeedback(Feedback& whole, double from, double to) : whole_(whole), from_(from), to_(to) {}
  void setProgress(double percent) override {
    whole_.setProgress(from_ + (to_ - from_) * percent / 100.0);
  }
  void log(Level level, const QString& message) override { whole_.log(level, message); }
  bool isCanceled() const override { return whole_.isCanceled(); }

 private:
  Feedback& whole_;
  double from_, to_;
};

// The components' file: in a hidden folder beside the output (the output's disk, which has room
// for the output), removed with its folder when the job ends, and by the next run there when
// this process dies.
class ScratchFolder {
 public:
  explicit ScratchFolder(const std::string& beside) : path_(makePendingFolder(beside, pending_)) {}
  ~ScratchFolder() { QDir(QString::fromStdString(path_)).removeRecursively(); }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  std::string file(const std::string& name) {
    const std::string path = path_ + "/" + name;
    pending_.add(path);
    return path;
  }

 private:
  PendingFiles pending_;
  std::string path_;
};

// One pixel's score from its background: the window's valid pixels outside the guard square.
// Work memory is per thread.
class WindowScorer {
 public:
  struct Rows {
    const double* components;    // buffered rows, pixel-interleaved
    const unsigned char* valid;  // per buffered pixel
    int64_t firstRow, rowCount;  // the buffered rows in the image
    int64_t width;
  };

  WindowScorer(int components, int window, int guard, double shrinkage)
      : k_(components),
        halo_(window / 2),
        guardHalo_(guard / 2),
        shrinkage_(shrinkage),
        mean_(components),
        covariance_(static_cast<size_t>(components) * components),
        d_(components) {}

  // NaN when the background has fewer than two valid pixels or its covariance is singular.
  double score(const Rows& rows, int64_t row, int64_t column) {
    const int64_t n = backgroundMean(rows, row, column);
    if (n < 2) return std::numeric_limits<double>::quiet_NaN();
    backgroundCovariance(rows, row, column, n);
    if (!factor()) return std::numeric_limits<double>::quiet_NaN();
    const double* y = rows.components + ((row - rows.firstRow) * rows.width + column) * k_;
    for (int i = 0; i < k_; ++i) d_[i] = y[i] - mean_[i];
    return whitenedSquare();
  }

 private:
  // Calls f(y) for each background pixel, rows then columns in image order.
  template <class F>
  void forEachBackground(const Rows& rows, int64_t row, int64_t column, F&& f) const {
    const int64_t r0 = std::max(rows.firstRow, row - halo_);
    const int64_t r1 = std::min(rows.firstRow + rows.rowCount - 1, row + halo_);
    const int64_t c0 = std::max<int64_t>(0, column - halo_);
    const int64_t c1 = std::min(rows.width - 1, column + halo_);
    for (int64_t r = r0; r <= r1; ++r) {
      const bool guardRow = std::abs(r - row) <= guardHalo_;
      const int64_t first = (r - rows.firstRow) * rows.width;
      for (int64_t c = c0; c <= c1; ++c) {
        if (guardRow && std::abs(c - column) <= guardHalo_) continue;
        if (!rows.valid[first + c]) continue;
        f(rows.components + (first + c) * k_);
      }
    }
  }

  int64_t backgroundMean(const Rows& rows, int64_t row, int64_t column) {
    std::fill(mean_.begin(), mean_.end(), 0.0);
    int64_t n = 0;
    double* __restrict mean = mean_.data();
    const int k = k_;
    forEachBackground(rows, row, column, [&](const double* __restrict y) {
      ++n;
      for (int i = 0; i < k; ++i) mean[i] += y[i];
    });
    for (double& m : mean_) m /= static_cast<double>(n);
    return n;
  }

  // C = Σ (y − m)(y − m)ᵀ / (n − 1) + εI, the lower triangle used.
  void backgroundCovariance(const Rows& rows, int64_t row, int64_t column, int64_t n) {
    std::fill(covariance_.begin(), covariance_.end(), 0.0);
    double* __restrict c = covariance_.data();
    double* __restrict d = d_.data();
    const double* __restrict mean = mean_.data();
    const int k = k_;
    forEachBackground(rows, row, column, [&](const double* __restrict y) {
      for (int i = 0; i < k; ++i) d[i] = y[i] - mean[i];
      for (int i = 0; i < k; ++i) {
        const double di = d[i];
        double* __restrict ci = c + static_cast<size_t>(i) * k;
        for (int j = 0; j < k; ++j) ci[j] += di * d[j];
      }
    });
    const double scale = 1.0 / static_cast<double>(n - 1);
    double trace = 0;
    for (int i = 0; i < k; ++i) {
      for (int j = 0; j <= i; ++j) covariance_[static_cast<size_t>(i) * k + j] *= scale;
      trace += covariance_[static_cast<size_t>(i) * k + i];
    }
    const double epsilon = shrinkage_ * trace / k;
    for (int i = 0; i < k; ++i) covariance_[static_cast<size_t>(i) * k + i] += epsilon;
  }

  // The lower Cholesky factor in place; false where a pivot is not above the largest variance
  // divided by kLargestCondition.
  bool factor() {
    const int k = k_;
    double* a = covariance_.data();
    double largest = 0;
    for (int i = 0; i < k; ++i) largest = std::max(largest, a[static_cast<size_t>(i) * k + i]);
    if (!(largest > 0)) return false;
    for (int j = 0; j < k; ++j) {
      double* rowJ = a + static_cast<size_t>(j) * k;
      double pivot = rowJ[j];
      for (int m = 0; m < j; ++m) pivot -= rowJ[m] * rowJ[m];
      if (!(pivot > largest / kLargestCondition)) return false;
      rowJ[j] = std::sqrt(pivot);
      for (int i = j + 1; i < k; ++i) {
        double* rowI = a + static_cast<size_t>(i) * k;
        double sum = rowI[j];
        for (int m = 0; m < j; ++m) sum -= rowI[m] * rowJ[m];
        rowI[j] = sum / rowJ[j];
      }
    }
    return true;
  }

  // |L⁻¹ d|².
  double whitenedSquare() {
    const int k = k_;
    const double* a = covariance_.data();
    double square = 0;
    for (int i = 0; i < k; ++i) {
      const double* rowI = a + static_cast<size_t>(i) * k;
      double sum = d_[i];
      for (int m = 0; m < i; ++m) sum -= rowI[m] * d_[m];
      d_[i] = sum / rowI[i];
      square += d_[i] * d_[i];
    }
    return square;
  }

  int k_;
  int64_t halo_, guardHalo_;
  double shrinkage_;
  std::vector<double> mean_, covariance_, d_;
};

class LocalRxRun {
 public:
  LocalRxRun(const LocalRxOptions& options, Feedback& feedback)
      : options_(options), feedback_(feedback) {
    total_.start();
  }

  LocalRxResult run() {
    checkOptions();
    openInput();
    checkOutputs();
    writeComponents();
    openComponents();
    planMemory();
    createOutput();
    scorePass();
    return finish();
  }

 private:
  int halo() const { return options_.window / 2; }
  int64_t width() const { return result_.input.width; }
  StripRange haloRange(const StripRange& range) const {
    const int64_t first = std::max<int64_t>(0, range.row0 - halo());
    return {first, std::min(result_.input.height, range.row0 + range.rows + halo()) - first};
  }
  void checkOptions() const;
  void openInput();
  void checkOutputs();
  void writeComponents();
  void openComponents();
  void planMemory();
  void createOutput();
  void scorePass();
  template <class Out>
  void scoreStrip(const StripRange& range, const double* components, Out* out);
  LocalRxResult finish();

  const LocalRxOptions& options_;
  Feedback& feedback_;
  QElapsedTimer total_;
  LocalRxResult result_;
  RasterFormat format_;
  std::unique_ptr<ScratchFolder> scratch_;
  std::string componentsPath_;
  JobInput components_;
  StripPlan plan_;
  int64_t inputRowBytes_ = 0, outputRowBytes_ = 0;
  std::unique_ptr<StripReader> reader_;
  std::vector<unsigned char> valid_;
  std::unique_ptr<PendingRaster> output_;
  WorkerThreads threads_;
};

void LocalRxRun::checkOptions() const {
  if (options_.window < 3 || options_.window % 2 == 0 || options_.window > kMaxWindow)
    throw Error("WINDOW", "the background window's side is an odd number of pixels from 3 to " +
                              std::to_string(kMaxWindow) + ", not " +
                              std::to_string(options_.window));
  if (options_.guard < 1 || options_.guard % 2 == 0 || options_.guard >= options_.window)
    throw Error("GUARD",
                "the guard window's side is an odd number of pixels from 1 (the pixel "
                "itself) to less than the window's (" +
                    std::to_string(options_.window) + "), not " + std::to_string(options_.guard));
  if (options_.components != kSignalSubspace &&
      (options_.components < 1 || options_.components > kMaxLocalComponents))
    throw Error("COMPONENTS", "local RX scores in 1 to " + std::to_string(kMaxLocalComponents) +
                                  " principal components (or auto): each pixel's window "
                                  "covariance is factored");
  if (!(options_.shrinkage >= 0))
    throw Error("SHRINKAGE", "the shrinkage is a share of the mean component variance, 0 or more");
  if (options_.outputType != OutputType::Float32 && options_.outputType != OutputType::Float64)
    throw Error("OUTPUT_TYPE", "scores are written as Float32 or Float64");
}

void LocalRxRun::openInput() {
  const JobInput input = openJobInput(options_, options_.bands, "local RX", feedback_);
  result_.input = input.info;
  result_.bands = input.bands;
}

void LocalRxRun::checkOutputs() {
  OutputCheck outputs(rasterInputFiles("INPUT", result_.input.files), feedback_);
  outputs.rasterDestination("OUTPUT", options_.output);
  format_ = RasterFormat{outputDriver(options_.output, options_.format), options_.creationOptions};
  outputs.raster("OUTPUT", options_.output, format_, 1, gdalType(options_.outputType));
}

// The image's first K principal components, in Float64, in image geometry.
void LocalRxRun::writeComponents() {
  scratch_ = std::make_unique<ScratchFolder>(options_.output);
  componentsPath_ = scratch_->file("components.tif");
  PcaOptions pca;
  static_cast<JobOptions&>(pca) = options_;
  pca.output = componentsPath_;
  pca.format = "GTiff";
  pca.creationOptions = {};
  pca.outputType = OutputType::Float64;
  pca.orthorectify = false;
  pca.kind = PcaJobKind::Transform;
  pca.components = options_.components;
  pca.gpuMemoryBytes = options_.gpuMemoryBytes;
  PartFeedback part(feedback_, 0.0, 40.0);
  const PcaResult fit = runPca(pca, part);
  result_.components = fit.components;
  result_.validPixels = fit.model.validPixels;
  result_.backend = "components on " + fit.backend;
  result_.pcaSeconds = fit.seconds.total;
  if (result_.components > kMaxLocalComponents)
    throw Error("COMPONENTS", "the signal subspace has " + std::to_string(result_.components) +
                                  " dimensions, more than local RX's " +
                                  std::to_string(kMaxLocalComponents) + ": give a count");
}

void LocalRxRun::openComponents() {
  components_ = openJobInput(componentsPath_, {}, {}, std::nullopt, "local RX");
}

// A strip, its halo rows and the validity of each of their pixels; the output strips.
void LocalRxRun::planMemory() {
  const RasterInfo& info = components_.info;
  const int k = result_.components;
  inputRowBytes_ = info.width * k * int64_t{8};
  outputRowBytes_ = info.width * typeSize(gdalType(options_.outputType));
  StripNeeds needs;
  needs.rowsToDo = info.height;
  needs.bands = k;
  needs.mayCopyInput = false;
  needs.haloRows = halo();
  needs.residentRowBytes = kOutputBuffers * outputRowBytes_ + info.width;
  needs.streamingRowBytes = kInputBuffers * inputRowBytes_ + needs.residentRowBytes;
  needs.leastStrips = 4;
  needs.requestedRows = options_.stripRows;
  plan_ = hyperstream::planMemory(info, options_.ramBytes, needs);
  reader_ = std::make_unique<StripReader>(
      info, components_.bands, plan_.readers,
      plan_.mappableBytes(plan_.bufferedRows * needs.streamingRowBytes), 2 * halo());
  result_.backend += "; windows on the cpu (" + std::to_string(threads_.count()) + " threads)";
  feedback_.info(QString("local RX in %1 component(s): window %2, guard %3; %4 strip(s) of %5 "
                         "rows on the CPU (%6 threads)")
                     .arg(k)
                     .arg(options_.window)
                     .arg(options_.guard)
                     .arg(plan_.strips.size())
                     .arg(plan_.stripRows)
                     .arg(threads_.count()));
}

void LocalRxRun::createOutput() {
  output_ = createLike(result_.input, options_.output, format_, 1, gdalType(options_.outputType));
  GDALRasterBand* band = output_->dataset().GetRasterBand(1);
  band->SetNoDataValue(std::numeric_limits<double>::quiet_NaN());
  band->SetDescription(QString("Local RX (window %1, guard %2, %3 components)")
                           .arg(options_.window)
                           .arg(options_.guard)
                           .arg(result_.components)
                           .toUtf8()
                           .constData());
}

void LocalRxRun::scorePass() {
  StripPipeline pipeline(kInputBuffers, static_cast<size_t>(plan_.bufferedRows * inputRowBytes_),
                         kOutputBuffers, static_cast<size_t>(plan_.stripRows * outputRowBytes_),
                         true);
  StripPipeline::Stages stages;
  stages.read = [&](const StripRange& range, unsigned char* buffer) -> const void* {
    const StripRange rows = haloRange(range);
    reader_->read(rows.row0, rows.rows, buffer);
    return buffer;
  };
  stages.compute = [&](const StripRange& range, const void* data, unsigned char* out) {
    withOutputType(options_.outputType, [&](auto sample) {
      using Out = decltype(sample);
      if constexpr (std::is_floating_point_v<Out>)
        scoreStrip(range, static_cast<const double*>(data), reinterpret_cast<Out*>(out));
    });
  };
  stages.write = [&](const StripRange& range, const unsigned char* out) {
    output_->write(range.row0, range.rows, out, feedback_);
  };
  pipeline.run(plan_.strips, stages, feedback_, 40.0, 100.0);
}

template <class Out>
void LocalRxRun::scoreStrip(const StripRange& range, const double* components, Out* out) {
  const int k = result_.components;
  const StripRange rows = haloRange(range);
  const int64_t buffered = rows.rows * width();
  valid_.resize(static_cast<size_t>(buffered));
  const ValidPixel<double> isValid(components_.nodata.data(), k);
  threads_.split(buffered, [&](int64_t first, int64_t last) {
    for (int64_t p = first; p < last; ++p) valid_[p] = isValid(components + p * k) ? 1 : 0;
  });
  const WindowScorer::Rows window{components, valid_.data(), rows.row0, rows.rows, width()};
  const int64_t pixels = range.rows * width();
  std::vector<int64_t> unscored(static_cast<size_t>(threads_.count()), 0);
  threads_.onEach([&](int worker) {
    WindowScorer scorer(k, options_.window, options_.guard, options_.shrinkage);
    const int64_t first = pixels * worker / threads_.count();
    const int64_t last = pixels * (worker + 1) / threads_.count();
    for (int64_t p = first; p < last; ++p) {
      const int64_t row = range.row0 + p / width(), column = p % width();
      double score = std::numeric_limits<double>::quiet_NaN();
      if (valid_[(row - rows.row0) * width() + column]) {
        score = scorer.score(window, row, column);
        if (std::isnan(score)) ++unscored[worker];
      }
      out[p] = static_cast<Out>(score);
    }
  });
  for (const int64_t count : unscored) result_.unscoredPixels += count;
}

LocalRxResult LocalRxRun::finish() {
  reader_.reset();
  components_.dataset.reset();
  if (feedback_.isCanceled()) throw Canceled();
  output_->commit();
  if (result_.unscoredPixels > 0)
    feedback_.warning(QString("%1 valid pixel(s) left as nodata: their background has fewer than "
                              "two valid pixels or a singular covariance (a constant "
                              "neighbourhood; a shrinkage scores them)")
                          .arg(result_.unscoredPixels));
  result_.seconds = total_.nsecsElapsed() * 1e-9;
  return result_;
}

}  // namespace

LocalRxOptions localRxOptions(const PcaOptions& options, int window, int guard) {
  LocalRxOptions local;
  static_cast<JobOptions&>(local) = options;
  local.window = window;
  local.guard = guard;
  if (options.detector.components != 0) local.components = options.detector.components;
  local.shrinkage = options.detector.shrinkage;
  local.gpuMemoryBytes = options.gpuMemoryBytes;
  return local;
}

LocalRxResult runLocalRx(const LocalRxOptions& options, Feedback& feedback) {
  try {
    return LocalRxRun(options, feedback).run();
  } catch (...) {
    rethrowAsJobError(options.ramBytes);
  }
}

}  // namespace hyperstream
