#include "detect/LocalRxJob.h"

#include "core/AddressSpace.h"
#include "core/Error.h"
#include "core/Samples.h"
#include "detect/DetectReport.h"
#include "detect/WindowComponents.h"
#include "io/OutputCheck.h"
#include "io/PendingRaster.h"
#include "pixels/PixelKernels.h"
#include "projection/PcaKernels.h"  // withOutputType
#include "run/DeviceSelection.h"
#include "run/Pipeline.h"
#include "run/StripPlan.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QObject>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

namespace hyperstream {

namespace {

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
    std::string path = path_ + "/" + name;
    pending_.add(path);
    return path;
  }

 private:
  PendingFiles pending_;
  std::string path_;
};

class LocalRxRun {
 public:
  LocalRxRun(const LocalRxOptions& options, Feedback& feedback)
      : options_(options),
        feedback_(feedback),
        starting_(options.device, options.gpuMemoryBytes,
                  {makeCpuPixelKernels, &GpuRuntime::createPixelKernels}) {
    total_.start();
  }

  LocalRxResult run() {
    checkOptions();
    openInput();
    checkOutputs();
    writeComponents();
    openComponents();
    planMemory();
    startKernels();
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
  void startKernels();
  void createOutput();
  void scorePass();
  void scoreStrip(const StripRange& range, const double* components, unsigned char* out);
  LocalRxResult finish();
  void writeReport();
  double componentNoise(const CovarianceResult& fit) const;
  QString regularisation() const;

  const LocalRxOptions& options_;
  Feedback& feedback_;
  QElapsedTimer total_;
  KernelStart<PixelKernels> starting_;  // the windows' device
  std::unique_ptr<PixelKernels> kernels_;
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
  if (options_.components != kSignalSubspace && options_.components != kSceneMaterials &&
      (options_.components < 2 || options_.components > kMaxLocalComponents))
    throw Error("COMPONENTS", "local RX scores in 2 to " + std::to_string(kMaxLocalComponents) +
                                  " principal components (or auto): each pixel's window "
                                  "covariance is factored");
  if (options_.shrinkage && !(*options_.shrinkage >= 0))
    throw Error("SHRINKAGE", "the shrinkage is a share of the mean component variance, 0 or more");
  if (options_.outputType != OutputType::Float32 && options_.outputType != OutputType::Float64)
    throw Error("OUTPUT_TYPE", "scores are written as Float32 or Float64");
}

void LocalRxRun::openInput() {
  const JobInput input = openJobInput(options_, options_.bands, "local RX", feedback_);
  result_.input = input.info;
  result_.bands = input.bands;
  // Each component is read once per pixel of its window.
  const int k = options_.components > 0 ? options_.components : 10;
  starting_.weigh({input.info.width * input.info.height * k * int64_t{8},
                   static_cast<double>(options_.window) * options_.window});
}

void LocalRxRun::checkOutputs() {
  OutputCheck outputs(rasterInputFiles("INPUT", result_.input.files), feedback_);
  outputs.rasterDestination("OUTPUT", options_.output);
  format_ = RasterFormat{outputDriver(options_.output, options_.format), options_.creationOptions};
  outputs.raster("OUTPUT", options_.output, format_, 1, gdalType(options_.outputType));
  if (!options_.htmlReport.empty()) outputs.file("OUTPUT_HTML_FILE", options_.htmlReport);
}

// The image's first K principal components, in Float64, in image geometry.
void LocalRxRun::writeComponents() {
  scratch_ = std::make_unique<ScratchFolder>(options_.output);
  componentsPath_ = scratch_->file("components.tif");
  CovarianceOptions pca;
  static_cast<JobOptions&>(pca) = options_;
  pca.output = componentsPath_;
  pca.gpuMemoryBytes = options_.gpuMemoryBytes;
  PartFeedback part(feedback_, 0.0, 40.0);
  const CovarianceResult fit = [&] {
    try {
      return writeWindowComponents(pca, options_.components, part);
    } catch (const Error& error) {
      if (error.parameter() != "OUTPUT") throw;
      // The user named no components file: say what it is and where its room is taken.
      throw Error("OUTPUT",
                  "local RX's temporary file of components (8 bytes a pixel and "
                  "component, beside OUTPUT '" +
                      options_.output +
                      "', removed at the end) could not be written: " + error.what());
    }
  }();
  result_.components = fit.components;
  result_.validPixels = fit.model.validPixels;
  result_.backend = "components on " + fit.backend;
  result_.pcaSeconds = fit.seconds.total;
  if (!options_.shrinkage) result_.noise = componentNoise(fit);
  if (result_.components > kMaxLocalComponents || result_.components < 2)
    throw Error("COMPONENTS", "the count gives " + std::to_string(result_.components) +
                                  " component(s); local RX scores in 2 to " +
                                  std::to_string(kMaxLocalComponents) + ": give a count");
}

// The components' noise variance, (1/K) Σ_k Σ_b v_kb² σ_b² with σ_b² HySime's noise of band b
// (its residual from its regression on the other bands) and v_k component k's loadings; 0, with a
// warning, where the fit has no estimate.
double LocalRxRun::componentNoise(const CovarianceResult& fit) const {
  if (!fit.subspace) {
    feedback_.warning(
        "no noise estimate for the windows' regularisation: their covariances are inverted as "
        "they are (SHRINKAGE regularises them)");
    return 0;
  }
  const PcaModel& model = fit.model;
  const std::vector<double>& noise = fit.subspace->noiseVariance;  // per non-constant band
  const int columns = model.componentCount();
  double sum = 0;
  for (int k = 0; k < result_.components; ++k) {
    size_t used = 0;
    for (int b = 0; b < model.bands; ++b) {
      if (std::binary_search(model.constantBands.begin(), model.constantBands.end(), b)) continue;
      const double loading = model.eigenvectors[static_cast<size_t>(b) * columns + k];
      sum += loading * loading * noise[used++];
    }
  }
  return sum / result_.components;
}

// How the windows' covariances are regularised, for the report.
QString LocalRxRun::regularisation() const {
  if (options_.shrinkage && *options_.shrinkage > 0)
    return QObject::tr("; C + εI, ε = %1 × the window's mean component variance")
        .arg(*options_.shrinkage);
  if (result_.noise > 0)
    return QObject::tr("; C + εI, ε = %1, the components' noise variance (HySime)")
        .arg(result_.noise, 0, 'g', 4);
  return {};
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
}

void LocalRxRun::startKernels() {
  kernels_ = starting_.get(feedback_);
  result_.backend += "; windows on " + kernels_->name();
  feedback_.info(QString("local RX in %1 component(s): window %2, guard %3; %4 strip(s) of %5 "
                         "rows on %6")
                     .arg(result_.components)
                     .arg(options_.window)
                     .arg(options_.guard)
                     .arg(plan_.strips.size())
                     .arg(plan_.stripRows)
                     .arg(QString::fromStdString(kernels_->name())));
  if (result_.noise > 0)
    feedback_.info(QString("each window's covariance + εI, ε = %1: the components' noise variance "
                           "(HySime; SHRINKAGE to choose another)")
                       .arg(result_.noise, 0, 'g', 4));
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
    scoreStrip(range, static_cast<const double*>(data), out);
  };
  stages.write = [&](const StripRange& range, const unsigned char* out) {
    output_->write(range.row0, range.rows, out, feedback_);
  };
  pipeline.run(plan_.strips, stages, feedback_, 40.0, 100.0);
}

// The validity of the buffered pixels (every component finite, none nodata), then the windows.
void LocalRxRun::scoreStrip(const StripRange& range, const double* components, unsigned char* out) {
  const int k = result_.components;
  const StripRange rows = haloRange(range);
  const int64_t buffered = rows.rows * width();
  valid_.resize(static_cast<size_t>(buffered));
  const ValidPixel<double> isValid(components_.nodata.data(), k);
  for (int64_t p = 0; p < buffered; ++p) valid_[p] = isValid(components + p * k) ? 1 : 0;
  WindowStrip strip;
  strip.components = components;
  strip.valid = valid_.data();
  strip.componentCount = k;
  strip.width = width();
  strip.firstRow = rows.row0;
  strip.rowCount = rows.rows;
  strip.scoreRow = range.row0;
  strip.scoreRows = range.rows;
  WindowRule rule{options_.window, options_.guard, options_.shrinkage.value_or(0.0),
                  options_.outputType};
  rule.noise = result_.noise;
  kernels_->windowScores(strip, rule, out);
  // Valid pixels the windows left as NaN: their background could not be factored.
  const unsigned char* scored = valid_.data() + (range.row0 - rows.row0) * width();
  const int64_t pixels = range.rows * width();
  for (int64_t p = 0; p < pixels; ++p) {
    const double score = options_.outputType == OutputType::Float64
                             ? reinterpret_cast<const double*>(out)[p]
                             : reinterpret_cast<const float*>(out)[p];
    if (scored[p] && std::isnan(score)) ++result_.unscoredPixels;
  }
}

LocalRxResult LocalRxRun::finish() {
  reader_.reset();
  components_.dataset.reset();
  if (feedback_.isCanceled()) throw Canceled();
  if (!options_.htmlReport.empty()) writeReport();
  output_->commit();
  if (result_.unscoredPixels > 0)
    feedback_.warning(QString("%1 valid pixel(s) left as nodata: their background has fewer than "
                              "two valid pixels or a singular covariance (a constant "
                              "neighbourhood, or no more valid pixels than components; a "
                              "shrinkage scores them)")
                          .arg(result_.unscoredPixels));
  result_.seconds = total_.nsecsElapsed() * 1e-9;
  return result_;
}

void LocalRxRun::writeReport() {
  DetectionPage page;
  page.heading = QObject::tr("Local anomaly detection (RX)");
  page.input = result_.input;
  page.bands = result_.bands;
  page.validPixels = result_.validPixels;
  page.facts = {
      {QObject::tr("Output"), QString::fromStdString(options_.output)},
      {QObject::tr("Statistics"),
       QObject::tr("each pixel's background: the %1 x %1 window around it less the %2 x %2 "
                   "guard window, in %3 principal component(s); %4 valid pixel(s) left "
                   "unscored%5")
           .arg(options_.window)
           .arg(options_.guard)
           .arg(result_.components)
           .arg(result_.unscoredPixels)
           .arg(regularisation())},
      {QObject::tr("Device"), QString::fromStdString(result_.backend)},
      {QObject::tr("Seconds"), QString::number(total_.nsecsElapsed() * 1e-9, 'f', 2)}};
  writeDetectionReport(page, output_->dataset(), options_.htmlReport);
}

}  // namespace

LocalRxOptions localRxOptions(const DetectOptions& options, int window, int guard) {
  if (!options.statsJson.empty())
    throw Error("OUTPUT_STATS",
                "local RX fits no image-wide covariance to write statistics of "
                "(each pixel has its own): leave the statistics out");
  LocalRxOptions local;
  static_cast<JobOptions&>(local) = options;
  local.window = window;
  local.guard = guard;
  if (options.detector.components != 0) local.components = options.detector.components;
  local.shrinkage = options.detector.shrinkage;
  local.gpuMemoryBytes = options.gpuMemoryBytes;
  local.htmlReport = options.htmlReport;
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
