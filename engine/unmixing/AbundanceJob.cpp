#include "unmixing/AbundanceJob.h"

#include "core/AddressSpace.h"
#include "core/BlasThreads.h"
#include "core/Error.h"
#include "io/EmptyBands.h"
#include "io/OutputCheck.h"
#include "io/PendingRaster.h"
#include "pixels/JobStrips.h"
#include "run/DeviceSelection.h"
#include "run/JobGroup.h"
#include "run/Pipeline.h"
#include "run/StripPlan.h"
#include "spectra/SpectralLibrary.h"
#include "unmixing/AbundanceReport.h"

#include <QElapsedTimer>
#include <QMutexLocker>

#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

namespace hyperstream {

namespace {

// Endmembers whose Gram matrix is worse conditioned than this give abundances dominated by
// rounding (its square root is the spectra's own condition number).
constexpr double kLargestCondition = 1e14;

struct MethodName {
  AbundanceMethod method;
  const char* name;
};
constexpr MethodName kMethods[] = {{AbundanceMethod::Fcls, "fcls"},
                                   {AbundanceMethod::Nnls, "nnls"},
                                   {AbundanceMethod::Ucls, "ucls"}};

// Eigenvalues of the Gram matrix, ascending.
std::vector<double> gramEigenvalues(std::vector<double> gram, int n) {
  const BlasThreadsHere threads(fitBlasThreads(n));
  std::vector<double> values(n);
  if (LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'N', 'U', n, gram.data(), n, values.data()) != 0)
    throw Error("ENDMEMBERS", "the eigenvalues of the endmembers' Gram matrix did not converge");
  return values;
}

// One worker's run: the whole image, or its band of rows when several GPUs share the job.
class AbundanceRun {
 public:
  AbundanceRun(const AbundanceOptions& options, const DeviceChoice& device, Feedback& feedback,
               JobGroup& group)
      : options_(options),
        feedback_(feedback),
        group_(group),
        starting_(device, 0, {makeCpuPixelKernels, &GpuRuntime::createPixelKernels}) {
    total_.start();
  }

  AbundanceResult run() {
    openInput();
    readEndmembers();
    checkOutputs();
    planMemory();
    startKernels();
    createOutputs();
    unmixPass();
    return finish();
  }

 private:
  int bandCount() const { return static_cast<int>(result_.bands.size()); }
  GDALDataType outputType() const { return gdalType(options_.outputType); }
  void openInput();
  void readEndmembers();
  void checkOutputs();
  void planMemory();
  void startKernels();
  void createOutputs();
  void unmixPass();
  void mergeStats();
  AbundanceResult finish();
  PendingRaster& output(std::unique_ptr<PendingRaster> rankZeros,
                        std::unique_ptr<PendingRaster>& own);

  const AbundanceOptions& options_;
  Feedback& feedback_;
  JobGroup& group_;
  RowShare share_;
  QElapsedTimer total_;
  KernelStart<PixelKernels> starting_;
  JobInput input_;
  AbundanceResult result_;
  Unmixing model_;
  std::vector<InputFile> endmemberFiles_;  // every file the endmembers were read from
  RasterFormat format_, rmseFormat_;
  StreamedInput streamed_;
  int64_t inputRowBytes_ = 0, abundanceRowBytes_ = 0, rmseRowBytes_ = 0;
  std::unique_ptr<PixelKernels> kernels_;
  std::unique_ptr<PendingRaster> ownOutput_, ownRmse_;  // alone; a group keeps shared ones
  PendingRaster* output_ = nullptr;
  PendingRaster* rmseRaster_ = nullptr;
  UnmixStats stats_;
};

void AbundanceRun::openInput() {
  input_ = openJobInput(options_, options_.bands, "unmixing", feedback_);
  const RasterInfo& info = input_.info;
  share_ = rowShare(group_.rank(), group_.size(), info.height);
  if (share_.count < 1)
    throw Error("DEVICE", std::to_string(group_.size()) + " GPUs for an image of " +
                              std::to_string(info.height) + " rows: at most one per row");
  starting_.weigh(
      {info.width * share_.count * static_cast<int64_t>(input_.bands.size()) * typeSize(info.type),
       1.0});
  result_.input = info;
  if (checkAddressSpace(options_.ramBytes)) result_.input.mappable = false;
  result_.bands = input_.bands;
}

void AbundanceRun::readEndmembers() {
  // Any table of spectra, its columns matched to the selected bands as every algorithm does.
  const SpectralLibrary library = readEndmemberSpectra({options_.endmembers, "", options_.layer});
  endmemberFiles_ = library.files;
  result_.endmembers.bandNames = bandColumnNames(result_.input, result_.bands);
  for (Target& spectrum : libraryOnBands(library, result_.input, result_.bands, "ENDMEMBERS")) {
    Endmember e;
    e.id = spectrum.name;
    e.row = e.col = -1;
    e.spectrum = std::move(spectrum.spectrum);
    result_.endmembers.endmembers.push_back(std::move(e));
  }
  model_ =
      unmixingModel(result_.endmembers, bandCount(), options_.method, &result_.conditionNumber);
  model_.type = options_.outputType;
  model_.rmse = !options_.rmseOutput.empty();
}

void AbundanceRun::checkOutputs() {
  std::vector<InputFile> reads = rasterInputFiles("INPUT", result_.input.files);
  reads.push_back(plainInputFile("ENDMEMBERS", options_.endmembers));
  reads.insert(reads.end(), endmemberFiles_.begin(), endmemberFiles_.end());
  OutputCheck outputs(std::move(reads), feedback_);
  outputs.rasterDestination("OUTPUT", options_.output);
  if (!options_.rmseOutput.empty()) outputs.rasterDestination("OUTPUT_RMSE", options_.rmseOutput);
  format_ = RasterFormat{outputDriver(options_.output, options_.format), options_.creationOptions};
  if (!options_.rmseOutput.empty())
    rmseFormat_ = formatBeside(format_, "OUTPUT_RMSE", options_.rmseOutput, options_.format);
  outputs.raster("OUTPUT", options_.output, format_, model_.endmembers, outputType());
  if (!options_.rmseOutput.empty())
    outputs.raster("OUTPUT_RMSE", options_.rmseOutput, rmseFormat_, 1, outputType());
  if (!options_.htmlReport.empty()) outputs.file("OUTPUT_HTML_FILE", options_.htmlReport);
}

// Per buffered row: the input in its type (a pool of buffers) and the outputs (two buffers); the
// kernels' float64 blocks are a few MiB whatever the strip.
void AbundanceRun::planMemory() {
  const RasterInfo& info = result_.input;
  const int size = typeSize(outputType());
  inputRowBytes_ = info.width * bandCount() * typeSize(info.type);
  abundanceRowBytes_ = info.width * model_.endmembers * size;
  rmseRowBytes_ = model_.rmse ? info.width * size : 0;
  OnePassShape shape;
  shape.firstRow = share_.first;
  shape.rows = share_.count;
  shape.sharing = group_.size();
  shape.inputBuffers = kInputBuffers;
  shape.outputBuffers = kOutputBuffers;
  shape.outputRowBytes = abundanceRowBytes_ + rmseRowBytes_;
  shape.requestedRows = options_.stripRows;
  streamed_ =
      streamOnePass(info, result_.bands, shape, options_.ramBytes, options_.output, feedback_);
  result_.stripRows = streamed_.plan.stripRows;
}

void AbundanceRun::startKernels() {
  kernels_ = starting_.get(feedback_);
  result_.backend = describeBackends(group_.gatherText(kernels_->name()));
  const RasterInfo& info = result_.input;
  CubeLayout layout;
  layout.bands = bandCount();
  layout.type = input_.sampleType;
  layout.maxStripPixels = streamed_.plan.stripRows * info.width;
  kernels_->prepare(layout);  // one pass: nothing to keep
  feedback_.info(QString("%1: %2 x %3 pixels, %4 bands, %5 endmembers (%6, Gram condition "
                         "number %7); %8 strip(s) of %9 rows on %10")
                     .arg(QString::fromStdString(options_.input))
                     .arg(info.width)
                     .arg(info.height)
                     .arg(bandCount())
                     .arg(model_.endmembers)
                     .arg(QString::fromStdString(abundanceMethodName(options_.method)).toUpper())
                     .arg(result_.conditionNumber, 0, 'g', 3)
                     .arg(streamed_.plan.strips.size())
                     .arg(streamed_.plan.stripRows)
                     .arg(QString::fromStdString(result_.backend)));
}

// Rank 0 creates the outputs; workers sharing the job write their rows into the same ones.
void AbundanceRun::createOutputs() {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const bool creates = group_.rank() == 0;
  std::unique_ptr<PendingRaster> abundances, rmse;
  if (creates) {
    abundances =
        createLike(result_.input, options_.output, format_, model_.endmembers, outputType());
    for (int e = 0; e < model_.endmembers; ++e) {
      GDALRasterBand* band = abundances->dataset().GetRasterBand(e + 1);
      band->SetNoDataValue(nan);
      band->SetDescription(result_.endmembers.endmembers[e].id.c_str());
    }
  }
  output_ = &output(std::move(abundances), ownOutput_);
  if (!model_.rmse) return;
  if (creates) {
    rmse = createLike(result_.input, options_.rmseOutput, rmseFormat_, 1, outputType());
    rmse->dataset().GetRasterBand(1)->SetNoDataValue(nan);
    rmse->dataset().GetRasterBand(1)->SetDescription("RMSE");
  }
  rmseRaster_ = &output(std::move(rmse), ownRmse_);
}

PendingRaster& AbundanceRun::output(std::unique_ptr<PendingRaster> rankZeros,
                                    std::unique_ptr<PendingRaster>& own) {
  if (group_.size() > 1) return group_.shareOutput(std::move(rankZeros));
  own = std::move(rankZeros);
  return *own;
}

void AbundanceRun::unmixPass() {
  const int64_t abundanceBytes = streamed_.plan.stripRows * abundanceRowBytes_;
  StripPipeline pipeline(
      kInputBuffers, static_cast<size_t>(streamed_.plan.stripRows * inputRowBytes_), kOutputBuffers,
      static_cast<size_t>(streamed_.plan.stripRows * (abundanceRowBytes_ + rmseRowBytes_)),
      kernels_->usesEveryCore(), [this](size_t bytes) { return kernels_->allocateHost(bytes); });
  StripPipeline::Stages stages;
  const bool bandMajor =
      readsBandMajor(streamed_.source(result_.input), kernels_->takesBandMajor());
  stages.read = [&](const StripRange& range, unsigned char* buffer) {
    return streamed_.read(range, buffer, bandMajor);
  };
  stages.compute = [&](const StripRange& range, const void* data, unsigned char* out) {
    const UnmixStats strip =
        kernels_->unmix(jobStrip(input_, range, data, streamed_.groupRows, bandMajor), model_, out,
                        model_.rmse ? out + abundanceBytes : nullptr);
    stats_.validPixels += strip.validPixels;
    stats_.unsolved += strip.unsolved;
  };
  stages.write = [&](const StripRange& range, const unsigned char* out) {
    QMutexLocker lock(group_.size() > 1 ? &group_.outputLock() : nullptr);
    output_->write(range.row0, range.rows, out, feedback_);
    if (rmseRaster_) rmseRaster_->write(range.row0, range.rows, out + abundanceBytes, feedback_);
  };
  pipeline.run(streamed_.plan.strips, stages, feedback_, 0.0, 100.0);
}

// Every worker's counts, summed in rank order.
void AbundanceRun::mergeStats() {
  const std::vector<std::vector<double>> all = group_.gatherNumbers(
      {static_cast<double>(stats_.validPixels), static_cast<double>(stats_.unsolved)});
  stats_ = UnmixStats{};
  for (const std::vector<double>& worker : all) {
    stats_.validPixels += static_cast<int64_t>(worker[0]);
    stats_.unsolved += static_cast<int64_t>(worker[1]);
  }
}

// Rank 0 writes the report and commits once every worker has written its rows; the others wait
// for that, so that the shared outputs outlive no writer.
AbundanceResult AbundanceRun::finish() {
  input_.dataset.reset();
  if (feedback_.isCanceled()) throw Canceled();
  mergeStats();  // also: every worker's rows are written
  if (stats_.unsolved > 0)
    feedback_.warning(QString("%1 pixel(s) did not settle within the active-set iterations and "
                              "were written as nodata")
                          .arg(stats_.unsolved));
  result_.validPixels = stats_.validPixels;
  result_.device = kernels_->deviceTimes();
  result_.seconds = total_.nsecsElapsed() * 1e-9;
  if (group_.rank() != 0) {
    group_.synchronize();
    return result_;
  }
  if (!options_.htmlReport.empty())
    writeAbundanceReport(result_, options_, output_->dataset(),
                         rmseRaster_ ? &rmseRaster_->dataset() : nullptr);
  output_->commit();
  if (rmseRaster_) rmseRaster_->commit();
  group_.synchronize();
  result_.seconds = total_.nsecsElapsed() * 1e-9;
  return result_;
}

void checkOptions(const AbundanceOptions& options) {
  if (options.outputType != OutputType::Float32 && options.outputType != OutputType::Float64)
    throw Error("OUTPUT_TYPE", "abundances are written as Float32 or Float64");
  if (options.ramBytes < (16ll << 20))
    throw Error("RAM_MB", "the RAM budget must be at least 16 MiB");
}

}  // namespace

std::string abundanceMethodName(AbundanceMethod method) {
  for (const MethodName& m : kMethods)
    if (m.method == method) return m.name;
  return {};
}

AbundanceMethod parseAbundanceMethod(const std::string& name) {
  for (const MethodName& m : kMethods)
    if (name == m.name) return m.method;
  throw Error("METHOD", "'" + name + "' is not an abundance method: fcls, nnls or ucls");
}

Unmixing unmixingModel(const EndmemberTable& table, int bands, AbundanceMethod method,
                       double* conditionNumber) {
  const auto count = static_cast<int>(table.endmembers.size());
  if (static_cast<int>(table.bandNames.size()) != bands)
    throw Error("ENDMEMBERS", "the endmember table has " + std::to_string(table.bandNames.size()) +
                                  " bands, the image's selected bands are " +
                                  std::to_string(bands) +
                                  ": select the bands the endmembers "
                                  "were extracted with (BANDS, --bands)");
  if (count > kMaxEndmembers || count > bands)
    throw Error("ENDMEMBERS", "the table lists " + std::to_string(count) + " endmembers: at most " +
                                  std::to_string(std::min(kMaxEndmembers, bands)) +
                                  " (and no more than the bands) can be unmixed");
  Unmixing model;
  model.bands = bands;
  model.endmembers = count;
  model.method = method;
  for (const Endmember& e : table.endmembers)
    model.spectra.insert(model.spectra.end(), e.spectrum.begin(), e.spectrum.end());
  model.gram.assign(static_cast<size_t>(count) * count, 0.0);
  for (int i = 0; i < count; ++i)
    for (int j = 0; j < count; ++j)
      for (int b = 0; b < bands; ++b)
        model.gram[static_cast<size_t>(i) * count + j] +=
            model.spectra[static_cast<size_t>(i) * bands + b] *
            model.spectra[static_cast<size_t>(j) * bands + b];
  const std::vector<double> values = gramEigenvalues(model.gram, count);
  const double condition = values.back() / values.front();
  if (!(values.front() > 0) || !(condition < kLargestCondition))
    throw Error("ENDMEMBERS",
                "the endmember spectra are linearly dependent (their Gram matrix's "
                "condition number is " +
                    (values.front() > 0 ? QString::number(condition, 'g', 3).toStdString()
                                        : std::string("infinite")) +
                    "): remove duplicated or mixed endmembers");
  if (conditionNumber) *conditionNumber = condition;
  return model;
}

namespace {

// One thread per GPU, each with its band of rows and its share of the RAM budget. A GPU's error
// fails the job: the others cannot finish it alone (device cpu reruns it on the CPU).
AbundanceResult runOnGpus(const AbundanceOptions& options, const std::vector<int>& gpus,
                          Feedback& feedback) {
  const int count = static_cast<int>(gpus.size());
  feedback.info(QString("%1 GPUs, one band of rows each").arg(count));
  AbundanceResult result;
  ThreadGroup threads(count);
  try {
    threads.run([&](JobGroup& group) {
      AbundanceOptions mine = options;
      mine.device = DeviceChoice::gpu(gpus[group.rank()]);
      mine.ramBytes = std::max<int64_t>(16ll << 20, options.ramBytes / count);
      if (group.rank() == 0) {
        result = AbundanceRun(mine, mine.device, feedback, group).run();
      } else {
        CancelOnly quiet(feedback);
        AbundanceRun(mine, mine.device, quiet, group).run();
      }
    });
  } catch (const DeviceError& e) {
    throw Error("DEVICE", std::string("a GPU failed: ") + e.what() +
                              "; a job shared by several GPUs is not rerun on the CPU (device "
                              "cpu does that)");
  }
  return result;
}

AbundanceResult runOnDevices(const AbundanceOptions& options, Feedback& feedback) {
  checkOptions(options);
  if (options.device.severalGpus()) {
    const std::vector<int> gpus = resolveGpus(options.device);
    if (gpus.size() > 1) return runOnGpus(options, gpus, feedback);
    AbundanceOptions one = options;
    one.device = DeviceChoice::gpu(gpus[0]);
    return runOnDevices(one, feedback);
  }
  return retryingOnTheCpu(options.device, feedback, [&](const DeviceChoice& device) {
    JobGroup alone;
    return AbundanceRun(options, device, feedback, alone).run();
  });
}

}  // namespace

AbundanceResult runAbundances(const AbundanceOptions& options, Feedback& feedback) {
  try {
    return leavingOutEmptyBands(
        options, "abundances", feedback,
        [&](const AbundanceOptions& bands) { return runOnDevices(bands, feedback); });
  } catch (...) {
    rethrowAsJobError(options.ramBytes);
  }
}

}  // namespace hyperstream
