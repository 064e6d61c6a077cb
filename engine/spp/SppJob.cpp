#include "spp/SppJob.h"

#include "core/AddressSpace.h"
#include "core/Error.h"
#include "core/Samples.h"
#include "io/EmptyBands.h"
#include "io/OutputCheck.h"
#include "io/PendingRaster.h"
#include "io/SpectralMetadata.h"
#include "run/DeviceSelection.h"
#include "run/Pipeline.h"
#include "run/StripPlan.h"
#include "spp/CpuSpp.h"
#include "spp/SppKernels.h"
#include "spp/SppNoise.h"
#include "stats/Moments.h"

#include <QElapsedTimer>
#include <QThread>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>

namespace hyperstream {

namespace {

// One run of the job, as named steps: plan, the centroid pass, the SPP pass, commit.
class SppRun {
 public:
  SppRun(const SppOptions& options, const DeviceChoice& device, Feedback& feedback)
      : options_(options),
        feedback_(feedback),
        starting_(device, 0, {makeCpuSppKernels, &GpuRuntime::createSppKernels}) {
    total_.start();
  }

  SppResult run() {
    openInput();
    checkOutputs();
    planMemory();
    copyCompressedInput();
    startKernels();
    centroidPass();
    createOutputs();
    sppPass();
    return finish();
  }

 private:
  int bandCount() const { return static_cast<int>(result_.bands.size()); }
  GDALDataType outputType() const { return gdalType(options_.outputType); }
  int halo() const { return options_.window / 2; }
  // The strip's rows and the halo rows the image has around them.
  StripRange haloRange(const StripRange& range) const {
    const int64_t first = std::max<int64_t>(0, range.row0 - halo());
    return StripRange{first,
                      std::min(result_.input.height, range.row0 + range.rows + halo()) - first};
  }

  void openInput();
  void checkOutputs();
  void planMemory();
  void copyCompressedInput();
  void startKernels();
  void centroidPass();
  void checkCentroid(double largest);
  void reportNoise(const SppNoise& noise);
  void createOutputs();
  void sppPass();
  SppStrip sppStrip(const StripRange& range, const void* data) const;
  SppResult finish();

  const SppOptions& options_;
  Feedback& feedback_;
  QElapsedTimer total_;
  KernelStart<SppKernels> starting_;
  JobInput input_;
  SppResult result_;
  RasterFormat format_, alphaFormat_, rhoFormat_;
  StripNeeds needs_;
  StripPlan plan_;
  int64_t inputRowBytes_ = 0, outputRowBytes_ = 0;
  std::unique_ptr<SppKernels> kernels_;
  std::unique_ptr<DecompressedCopy> copy_;  // read instead of a compressed input
  std::unique_ptr<StripReader> reader_;
  HostMemory cube_{nullptr, [](unsigned char*) {}};
  double outputNodata_ = 0;
  std::unique_ptr<PendingRaster> output_, alphaRaster_, rhoRaster_;
  double alphaSum_ = 0;
};

void SppRun::openInput() {
  input_ = openJobInput(options_, options_.bands, "SPP", feedback_);
  const RasterInfo& info = input_.info;
  // A window 5 pixels wide is about as much work per byte as PCA's; it grows with the window's
  // area.
  starting_.weigh(
      {info.width * info.height * static_cast<int64_t>(input_.bands.size()) * typeSize(info.type),
       options_.window * options_.window / 25.0});
  result_.input = info;
  if (checkAddressSpace(options_.ramBytes)) result_.input.mappable = false;
  result_.bands = input_.bands;
}

void SppRun::checkOutputs() {
  OutputCheck outputs(rasterInputFiles("INPUT", result_.input.files), feedback_);
  outputs.rasterDestination("OUTPUT", options_.output);
  if (!options_.alphaOutput.empty())
    outputs.rasterDestination("OUTPUT_ALPHA", options_.alphaOutput);
  if (!options_.rhoOutput.empty()) outputs.rasterDestination("OUTPUT_RHO", options_.rhoOutput);
  format_ = RasterFormat{outputDriver(options_.output, options_.format), options_.creationOptions};
  if (!options_.alphaOutput.empty())
    alphaFormat_ = formatBeside(format_, "OUTPUT_ALPHA", options_.alphaOutput, options_.format);
  if (!options_.rhoOutput.empty())
    rhoFormat_ = formatBeside(format_, "OUTPUT_RHO", options_.rhoOutput, options_.format);
  outputs.raster("OUTPUT", options_.output, format_, bandCount(), outputType());
  if (!options_.alphaOutput.empty())
    outputs.raster("OUTPUT_ALPHA", options_.alphaOutput, alphaFormat_, 1, GDT_Float32);
  if (!options_.rhoOutput.empty())
    outputs.raster("OUTPUT_RHO", options_.rhoOutput, rhoFormat_, 1, GDT_Float32);
}

// Per buffered row: the input in its type (a pool of buffers), the CPU's working memory (unit
// vectors and angles), and the outputs; the window's halo rows come on top of each strip.
void SppRun::planMemory() {
  const RasterInfo& info = result_.input;
  const int bands = bandCount();
  inputRowBytes_ = info.width * bands * typeSize(info.type);
  outputRowBytes_ = info.width * (bands * int64_t{typeSize(outputType())} + int64_t{8});
  needs_.rowsToDo = info.height;
  needs_.bands = bands;
  needs_.residentRowBytes =
      CpuSpp::bytesPerRow(info.width, bands, options_.window) + kOutputBuffers * outputRowBytes_;
  needs_.streamingRowBytes = kInputBuffers * inputRowBytes_ + needs_.residentRowBytes;
  needs_.haloRows = halo();
  needs_.leastStrips = 4;  // so that computing one strip overlaps writing another
  needs_.requestedRows = options_.stripRows;
  plan_ = hyperstream::planMemory(info, options_.ramBytes, needs_);
  result_.resident = plan_.cubeFits;
}

void SppRun::copyCompressedInput() {
  copy_ = decompressIfStreamed(result_.input, result_.bands, options_.ramBytes, needs_,
                               options_.output, plan_, feedback_);
}

void SppRun::startKernels() {
  const RasterInfo& info = result_.input;
  kernels_ = starting_.get(feedback_);
  result_.backend = kernels_->name();
  result_.stripRows = plan_.stripRows;  // as planned, after any copy of the input
  feedback_.info(QString("%1: %2 x %3 pixels, %4 bands; window %5 (%6 border), %7 strip(s) of "
                         "%8 rows%9 on %10")
                     .arg(QString::fromStdString(options_.input))
                     .arg(info.width)
                     .arg(info.height)
                     .arg(bandCount())
                     .arg(options_.window)
                     .arg(options_.border == SppBorder::Mirror ? "mirror" : "truncate")
                     .arg(plan_.strips.size())
                     .arg(plan_.stripRows)
                     .arg(result_.resident ? " (the cube stays in memory between the passes)" : "")
                     .arg(QString::fromStdString(result_.backend)));
  // The reader may map as much of the file as the buffers leave of the budget.
  const int64_t bufferBytes =
      (result_.resident ? plan_.cubeBytes() : 0) + plan_.bufferedRows * needs_.streamingRowBytes;
  reader_ = std::make_unique<StripReader>(copy_ ? copy_->info() : info,
                                          copy_ ? copy_->bands() : result_.bands, plan_.readers,
                                          plan_.mappableBytes(bufferBytes), 2 * halo());
  if (result_.resident) cube_ = kernels_->allocateHost(static_cast<size_t>(plan_.cubeBytes()));
}

// Pass 1: the centroid c of the valid pixels, summed in pixel order (the same for any strips),
// and for noise-adjusted SPP the noise.
void SppRun::centroidPass() {
  const int bands = bandCount();
  const int64_t width = result_.input.width;
  std::optional<SppNoise> noise;
  if (options_.noiseAdjusted) noise.emplace(width, bands);
  std::vector<double> sum(bands, 0.0);
  int64_t count = 0;
  double largest = 0;  // |value| over the valid pixels
  StripPipeline pipeline(result_.resident ? 0 : kInputBuffers,
                         static_cast<size_t>(plan_.stripRows * inputRowBytes_), 0, 0, false);
  StripPipeline::Stages stages;
  stages.read = [&](const StripRange& range, unsigned char* buffer) -> const void* {
    unsigned char* target = result_.resident ? cube_.get() + range.row0 * inputRowBytes_ : buffer;
    reader_->read(range.row0, range.rows, target);
    return target;
  };
  stages.compute = [&](const StripRange& range, const void* data, unsigned char*) {
    withSampleType(input_.sampleType, [&](auto sample) {
      using T = decltype(sample);
      const ValidPixel<T> isValid(input_.nodata.data(), bands);
      const T* pixel = static_cast<const T*>(data);
      if (noise) noise->add(pixel, range.rows, isValid);
      for (int64_t p = 0; p < range.rows * width; ++p, pixel += bands) {
        if (!validSpectrum(pixel, bands, isValid)) continue;
        ++count;
        for (int b = 0; b < bands; ++b) {
          const auto value = static_cast<double>(pixel[b]);
          sum[b] += value;
          largest = std::max(largest, std::abs(value));
        }
      }
    });
  };
  pipeline.run(plan_.strips, stages, feedback_, 0.0, 20.0);
  if (count == 0) throw NoValidPixel("the input has no valid pixel (finite, not nodata, non-zero)");
  result_.validPixels = count;
  result_.centroid.resize(bands);
  for (int b = 0; b < bands; ++b) result_.centroid[b] = sum[b] / static_cast<double>(count);
  checkCentroid(largest);
  if (noise) reportNoise(*noise);
}

void SppRun::reportNoise(const SppNoise& noise) {
  result_.noiseVariance = noise.trace();
  result_.noisePairs = noise.pairs();
  feedback_.info(QString("noise: %1 per band (RMS standard deviation, from %2 diagonal pairs); "
                         "each angle less what it explains")
                     .arg(std::sqrt(result_.noiseVariance / bandCount()), 0, 'g', 4)
                     .arg(result_.noisePairs));
}

// Values near float64's limit overflow the sums; beyond Float32's, they become infinities in a
// Float32 output (y' lies within |y| + 2|c| <= 3 x the largest value).
void SppRun::checkCentroid(double largest) {
  const std::string largestText = QString::number(largest, 'g', 3).toStdString();
  if (!std::all_of(result_.centroid.begin(), result_.centroid.end(),
                   [](double v) { return std::isfinite(v); }) ||
      largest > std::numeric_limits<double>::max() / 3)
    throw Error("INPUT", "values up to " + largestText +
                             " are too large for float64 sums: mark them as nodata or rescale "
                             "the input");
  // Spectral angles take products of two pixels' values: below this they underflow.
  if (largest > 0 && largest < kSmallestSpread)
    throw Error("INPUT", "values at most " + largestText +
                             " are too small for the products of spectral angles in float64 "
                             "(at least 1e-140): rescale the input");
  if (outputType() == GDT_Float32 && 3 * largest > std::numeric_limits<float>::max())
    throw Error("OUTPUT_TYPE", "values up to " + largestText +
                                   " may move beyond what Float32 holds (3.4e38): choose Float64");
}

// Invalid pixels: the input's nodata where it declares one, NaN otherwise; alpha and rho: NaN.
void SppRun::createOutputs() {
  const RasterInfo& info = result_.input;
  const std::vector<double>& nodata = input_.nodata;
  const auto declared =
      std::find_if(nodata.begin(), nodata.end(), [](double v) { return !std::isnan(v); });
  outputNodata_ = declared != nodata.end() ? *declared : std::numeric_limits<double>::quiet_NaN();
  auto create = [&](const std::string& path, const RasterFormat& format, int bands,
                    GDALDataType type, double noValue) {
    auto raster = createLike(info, path, format, bands, type);
    for (int b = 1; b <= bands; ++b) raster->dataset().GetRasterBand(b)->SetNoDataValue(noValue);
    return raster;
  };
  output_ = create(options_.output, format_, bandCount(), outputType(), outputNodata_);
  for (int b = 0; b < bandCount(); ++b)
    if (!info.bandDescriptions[result_.bands[b] - 1].empty())
      output_->dataset().GetRasterBand(b + 1)->SetDescription(
          info.bandDescriptions[result_.bands[b] - 1].c_str());
  writeSpectralMetadata(output_->dataset(),
                        bandSpectraOf(info.wavelengths, info.fwhm, info.goodBands, result_.bands));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  if (!options_.alphaOutput.empty())
    alphaRaster_ = create(options_.alphaOutput, alphaFormat_, 1, GDT_Float32, nan);
  if (!options_.rhoOutput.empty())
    rhoRaster_ = create(options_.rhoOutput, rhoFormat_, 1, GDT_Float32, nan);
}

SppStrip SppRun::sppStrip(const StripRange& range, const void* data) const {
  const StripRange rows = haloRange(range);
  SppStrip strip;
  strip.data = data;
  strip.type = input_.sampleType;
  strip.bands = bandCount();
  strip.nodata = input_.nodata.data();
  strip.width = result_.input.width;
  strip.height = result_.input.height;
  strip.blockRow0 = rows.row0;
  strip.blockRows = rows.rows;
  strip.row0 = range.row0;
  strip.rows = range.rows;
  strip.halo = halo();
  strip.mirror = options_.border == SppBorder::Mirror;
  strip.centroid = result_.centroid.data();
  strip.noiseVariance = result_.noiseVariance;
  strip.outputType = options_.outputType;
  strip.outputNodata = outputNodata_;
  return strip;
}

// Pass 2: strips with their halo rows in, displaced spectra, alpha and rho out.
void SppRun::sppPass() {
  const int64_t width = result_.input.width;
  const int64_t outputCubeBytes = plan_.stripRows * width * bandCount() * typeSize(outputType());
  StripPipeline pipeline(result_.resident ? 0 : kInputBuffers,
                         static_cast<size_t>(plan_.bufferedRows * inputRowBytes_), kOutputBuffers,
                         static_cast<size_t>(plan_.stripRows * outputRowBytes_),
                         kernels_->usesEveryCore(),
                         [this](size_t bytes) { return kernels_->allocateHost(bytes); });
  StripPipeline::Stages stages;
  stages.read = [&](const StripRange& range, unsigned char* buffer) -> const void* {
    const StripRange rows = haloRange(range);
    if (result_.resident) return cube_.get() + rows.row0 * inputRowBytes_;
    reader_->read(rows.row0, rows.rows, buffer);
    return buffer;
  };
  stages.compute = [&](const StripRange& range, const void* data, unsigned char* out) {
    auto* alpha = reinterpret_cast<float*>(out + outputCubeBytes);
    alphaSum_ += kernels_->spatialPreprocess(sppStrip(range, data),
                                             {out, alpha, alpha + range.rows * width});
  };
  stages.write = [&](const StripRange& range, const unsigned char* out) {
    output_->write(range.row0, range.rows, out, feedback_);
    const auto* alphaOut = out + outputCubeBytes;
    if (alphaRaster_) alphaRaster_->write(range.row0, range.rows, alphaOut, feedback_);
    if (rhoRaster_)
      rhoRaster_->write(range.row0, range.rows, alphaOut + range.rows * width * 4, feedback_);
  };
  pipeline.run(plan_.strips, stages, feedback_, 20.0, 100.0);
}

SppResult SppRun::finish() {
  input_.dataset.reset();
  if (feedback_.isCanceled()) throw Canceled();
  result_.meanAlpha = alphaSum_ / static_cast<double>(result_.validPixels);
  result_.device = kernels_->deviceTimes();
  output_->commit();
  if (alphaRaster_) alphaRaster_->commit();
  if (rhoRaster_) rhoRaster_->commit();
  result_.seconds = total_.nsecsElapsed() * 1e-9;
  return result_;
}

void checkOptions(const SppOptions& options) {
  if (options.window < 3 || options.window > 15 || options.window % 2 == 0)
    throw Error("WINDOW", "the window must be odd, from 3 to 15 pixels (" +
                              std::to_string(options.window) + " given)");
  if (options.outputType == OutputType::Byte)
    throw Error("OUTPUT_TYPE", "SPP writes Float32 or Float64");
  if (options.ramBytes < (16ll << 20))
    throw Error("RAM_MB", "the RAM budget must be at least 16 MiB");
}

}  // namespace

// The whole job, on the CPU or on the device given.
static SppResult runSppOn(const SppOptions& options, const DeviceChoice& device,
                          Feedback& feedback) {
  checkOptions(options);
  return SppRun(options, device, feedback).run();
}

static SppResult runSppOnDevice(const SppOptions& options, Feedback& feedback) {
  if (options.device.severalGpus())
    throw Error("DEVICE", "SPP runs on one device: auto, cpu, gpu or gpu:N (several GPUs, '" +
                              options.device.text() + "', are for PCA)");
  return retryingOnTheCpu(options.device, feedback, [&](const DeviceChoice& device) {
    return runSppOn(options, device, feedback);
  });
}

SppResult runSpp(const SppOptions& options, Feedback& feedback) {
  try {
    return leavingOutEmptyBands(options, "SPP", feedback, [&](const SppOptions& chosen) {
      return runSppOnDevice(chosen, feedback);
    });
  } catch (...) {
    rethrowAsJobError(options.ramBytes);
  }
}

}  // namespace hyperstream
